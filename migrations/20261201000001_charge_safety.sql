-- Charge safety. Before the gateway is called, the key is marked CHARGING together with what
-- recovery needs (the gateway idempotency key, the amount, the pending order without card number
-- or CVV); from then on the row is never deleted, and every charge ends as one order or one void.
-- request_hash is now an HMAC-SHA256 under REQUEST_HASH_KEY, without the CVV (same column).

ALTER TABLE idempotency_keys
    DROP CONSTRAINT idempotency_keys_state_check,
    DROP CONSTRAINT idempotency_keys_check,
    ADD COLUMN gateway_key   TEXT,
    ADD COLUMN amount        BIGINT,
    ADD COLUMN pending_order TEXT,
    ADD CONSTRAINT idempotency_keys_state_check
        CHECK (state IN ('IN_PROGRESS', 'CHARGING', 'COMPLETED')),
    ADD CONSTRAINT idempotency_keys_outcome_check
        CHECK (state <> 'COMPLETED' OR (response_status IS NOT NULL AND response_body IS NOT NULL)),
    ADD CONSTRAINT idempotency_keys_charging_check
        CHECK (state <> 'CHARGING'
               OR (gateway_key IS NOT NULL AND amount IS NOT NULL AND pending_order IS NOT NULL));

-- The recovery loop's scan: only keys in CHARGING, oldest lease first.
CREATE INDEX idempotency_keys_charging_idx ON idempotency_keys (lease_expires_at)
    WHERE state = 'CHARGING';

-- The gateway idempotency key of the order's charge: one charge, one order (checked by the lab's
-- money invariants against the gateway's ledger).
ALTER TABLE orders ADD COLUMN payment_key TEXT UNIQUE;
