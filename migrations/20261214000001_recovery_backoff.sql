-- Charge safety, continued.
--
-- key_id: the key row's own id, made when the key is first reserved and kept across attempts. It
-- is part of the charge's gateway idempotency key (<seller>:<reference>:<key_id>:<attempt>), so
-- a database restored from a backup, or a second database behind the same gateway, never
-- re-issues a key the gateway has already answered with another order's charge.
--
-- deferrals / next_attempt_at: recovery's back-off for a key it could not settle (the gateway or
-- the database failing). A deferred key is not claimed again before next_attempt_at, so a pass
-- always ends and an outage costs no CPU; a client's retry is not held back by it.
ALTER TABLE idempotency_keys
    ADD COLUMN key_id          UUID        NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN deferrals       INTEGER     NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT '-infinity';
