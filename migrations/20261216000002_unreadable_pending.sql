-- unreadable_since: when recovery first found a key's pending order unreadable by its release (a
-- field it does not know, written by a newer release, or one it misses). Such a key is never
-- voided for it: it stays CHARGING, put off like any other deferred key, until a release that can
-- read it completes it. Recovery's gauge counts these keys (recovery_unreadable_deferred), and a
-- key is logged by name the first time only.
ALTER TABLE idempotency_keys ADD COLUMN unreadable_since TIMESTAMPTZ;
