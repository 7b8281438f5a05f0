-- Empties the order tables between runs: the lab (loadtest's invariants::TRUNCATE) and
-- scripts/k8s-local.sh (psql) both read this file.
TRUNCATE idempotency_keys, order_outbox, order_items, orders, customers RESTART IDENTITY;
