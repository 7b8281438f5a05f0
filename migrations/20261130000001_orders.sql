-- The order API's schema, shared by blocking-api (diesel) and reactive-api (sqlx).
-- Card numbers and CVVs are never stored: only the last four digits.

-- The idempotency key is reserved before any side effect. The database decides races:
-- (seller_id, reference_id) is the primary key, so two concurrent attempts cannot both insert.
CREATE TABLE idempotency_keys (
    seller_id        TEXT        NOT NULL,
    reference_id     TEXT        NOT NULL,
    -- SHA-256 of the canonical request body: the same key with another body is refused.
    request_hash     TEXT        NOT NULL,
    state            TEXT        NOT NULL CHECK (state IN ('IN_PROGRESS', 'COMPLETED')),
    -- Incremented when an expired lease is taken over; fences out the stale attempt.
    attempt          INTEGER     NOT NULL DEFAULT 1,
    lease_expires_at TIMESTAMPTZ NOT NULL,
    -- The first completed outcome (201, 402, 422), replayed byte for byte.
    response_status  INTEGER,
    response_body    TEXT,
    order_id         TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (seller_id, reference_id),
    CHECK (state = 'IN_PROGRESS' OR (response_status IS NOT NULL AND response_body IS NOT NULL))
);

CREATE TABLE customers (
    id         BIGSERIAL   PRIMARY KEY,
    full_name  TEXT        NOT NULL,
    tax_id     TEXT        NOT NULL,
    street     TEXT        NOT NULL,
    number     TEXT        NOT NULL,
    state      TEXT        NOT NULL,
    city       TEXT        NOT NULL,
    locality   TEXT        NOT NULL,
    zip_code   TEXT        NOT NULL,
    complement TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE orders (
    id                  TEXT        PRIMARY KEY,
    seller_id           TEXT        NOT NULL,
    reference_id        TEXT        NOT NULL,
    customer_id         BIGINT      NOT NULL REFERENCES customers (id),
    status              TEXT        NOT NULL,
    amount              BIGINT      NOT NULL CHECK (amount > 0),
    installments        INTEGER     NOT NULL,
    payment_method      TEXT        NOT NULL,
    card_last4          TEXT        NOT NULL CHECK (length(card_last4) = 4),
    payment_code        TEXT        NOT NULL,
    payment_status      TEXT        NOT NULL,
    risk_recommendation TEXT        NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (seller_id, reference_id),
    FOREIGN KEY (seller_id, reference_id) REFERENCES idempotency_keys (seller_id, reference_id)
);

CREATE TABLE order_items (
    order_id TEXT    NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name     TEXT    NOT NULL,
    quantity BIGINT  NOT NULL CHECK (quantity > 0),
    value    BIGINT  NOT NULL CHECK (value > 0),
    PRIMARY KEY (order_id, position)
);

CREATE INDEX orders_customer_id_idx ON orders (customer_id);
