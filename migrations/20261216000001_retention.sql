-- Retention: the data of an order's request does not grow for ever (`order_core::retention`).
--
-- A completed key whose order exists keeps its row (hash, state, status, order id: a replay must
-- never charge again) but, after KEY_RETENTION_DAYS, not its stored body: that body is the order
-- document, which the order's own rows hold, and a replay or a read is answered from them
-- (`sql::FIND_KEY`, `sql::FIND_ORDER`). So a completed key may hold no body now. A release
-- before this one answers 500 for such a key (it reads the body only): no charge, no order lost.
ALTER TABLE idempotency_keys
    DROP CONSTRAINT idempotency_keys_outcome_check,
    ADD CONSTRAINT idempotency_keys_outcome_check
        CHECK (state <> 'COMPLETED' OR response_status IS NOT NULL);

-- The sweep's scan: completed keys with an order that still hold their body, oldest first.
CREATE INDEX idempotency_keys_retained_idx ON idempotency_keys (updated_at)
    WHERE state = 'COMPLETED' AND order_id IS NOT NULL AND response_body IS NOT NULL;

-- The sweep's scan of sent outbox events, deleted after OUTBOX_RETENTION_HOURS.
CREATE INDEX order_outbox_sent_idx ON order_outbox (sent_at) WHERE sent_at IS NOT NULL;
