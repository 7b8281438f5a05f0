-- Order events (issue 10). With EVENTS_MODE=outbox the order's transaction also writes its
-- `order.created` event here; a relay publishes it to NATS JetStream (Nats-Msg-Id = event_id, so
-- the stream drops a second copy) and marks it sent. The payload holds no card data.

CREATE TABLE order_outbox (
    event_id   TEXT        PRIMARY KEY,
    order_id   TEXT        NOT NULL REFERENCES orders (id),
    subject    TEXT        NOT NULL,
    payload    TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at    TIMESTAMPTZ
);

-- The relay's scan and the backlog gauge: only unsent events, oldest first.
CREATE INDEX order_outbox_unsent_idx ON order_outbox (created_at) WHERE sent_at IS NULL;
