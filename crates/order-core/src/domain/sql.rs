//! The SQL both APIs run, word for word. diesel (`sql_query`) and sqlx (`query`) both bind `$n`
//! parameters, so one text serves both and a reader need not diff two query builders to trust
//! that the two services do the same database work. Parameter types are spelled out with casts.

/// Reserves `(seller_id, reference_id)`, or takes the key over when its lease has expired: an
/// `IN_PROGRESS` key (no charge was ever asked for: any request may have it), or a `CHARGING` key
/// of the same request (the retry resumes that charge). Returns the attempt number, the key row's
/// own id (part of a fresh charge's gateway key), the state and, for a `CHARGING` takeover, the
/// charge to resume; no row when the key is taken.
/// `$1` seller_id, `$2` reference_id, `$3` request_hash, `$4` lease in seconds (float8).
///
/// Its commit does not wait for its WAL to reach the disk (`synchronous_commit = off` for this
/// statement's own transaction, set by `set_config(…, true)` in the statement itself: in
/// autocommit there is no transaction block for a `SET LOCAL`, and the setting is read when the
/// transaction commits, before it reverts). A reservation lost in a crash costs nothing: nothing
/// has been charged under it, no answer but a 409 was ever given from it, and the client's retry
/// makes it again. Whatever is decided from it durably is flushed with it: the WAL is one
/// sequence, so the next durable commit — the `CHARGING` mark, before the gateway sees the card,
/// or the outcome — writes the reservation to disk first. In `DB_TX_SCOPE=request` the
/// reservation shares the request's transaction, which [`DURABLE_COMMIT`] makes durable again
/// before it commits. One WAL flush per order fewer (docs/benchmarks.md).
pub const RESERVE_KEY: &str = "\
INSERT INTO idempotency_keys (seller_id, reference_id, request_hash, state, attempt, lease_expires_at)
SELECT $1::text, $2::text, $3::text, 'IN_PROGRESS', 1, now() + make_interval(secs => $4::float8)
  FROM (SELECT set_config('synchronous_commit', 'off', true)) AS no_flush_wait
ON CONFLICT (seller_id, reference_id) DO UPDATE
   SET attempt = idempotency_keys.attempt + 1,
       request_hash = EXCLUDED.request_hash,
       lease_expires_at = EXCLUDED.lease_expires_at,
       updated_at = now()
 WHERE idempotency_keys.lease_expires_at < now()
   AND (idempotency_keys.state = 'IN_PROGRESS'
        OR (idempotency_keys.state = 'CHARGING'
            AND idempotency_keys.request_hash = EXCLUDED.request_hash))
RETURNING attempt, key_id::text AS key_id, state, gateway_key, pending_order";

/// Sent before a request-scope transaction (`DB_TX_SCOPE=request`) commits: its commit waits
/// for its WAL again (the server's `synchronous_commit`), whatever [`RESERVE_KEY`] set for it.
pub const DURABLE_COMMIT: &str = "SET LOCAL synchronous_commit TO DEFAULT";

/// The order document of key row `k`'s order, rebuilt from the order's own rows, byte for byte
/// what `serde_json` wrote into the key's `response_body` when the order was made (the fields in
/// `OrderDocument`'s order; `to_json` escapes a string as serde does for the characters the
/// contract admits; `created_at` in chrono's form: the fraction to 0, 3 or 6 digits, `Z`). The
/// answer to a replay or a read of an order whose key's stored body the retention sweep dropped
/// ([`EXPIRE_KEY_RESPONSES`]). A scalar subquery: PostgreSQL runs it only where the `COALESCE` it
/// stands in reaches it, so a key that still has its body costs nothing more.
macro_rules! order_document {
    () => {
        "(SELECT '{\"id\":' || to_json(o.id)::text
        || ',\"reference_id\":' || to_json(o.reference_id)::text
        || ',\"status\":' || to_json(o.status)::text
        || ',\"seller_id\":' || to_json(o.seller_id)::text
        || ',\"amount\":' || o.amount::text
        || ',\"installments\":' || o.installments::text
        || ',\"payment\":{\"method\":' || to_json(o.payment_method)::text
        || ',\"code\":' || to_json(o.payment_code)::text
        || ',\"status\":' || to_json(o.payment_status)::text
        || ',\"card_last4\":' || to_json(o.card_last4)::text
        || '},\"risk\":{\"recommendation\":' || to_json(o.risk_recommendation)::text
        || '},\"items\":['
        || (SELECT string_agg('{\"name\":' || to_json(i.name)::text
                              || ',\"quantity\":' || i.quantity::text
                              || ',\"value\":' || i.value::text || '}', ',' ORDER BY i.position)
              FROM order_items i WHERE i.order_id = o.id)
        || '],\"customer\":{\"full_name\":' || to_json(c.full_name)::text
        || ',\"tax_id\":' || to_json(c.tax_id)::text
        || ',\"address\":{\"street\":' || to_json(c.street)::text
        || ',\"number\":' || to_json(c.number)::text
        || ',\"state\":' || to_json(c.state)::text
        || ',\"city\":' || to_json(c.city)::text
        || ',\"locality\":' || to_json(c.locality)::text
        || ',\"zip_code\":' || to_json(c.zip_code)::text
        || ',\"complement\":' || COALESCE(to_json(c.complement)::text, 'null')
        || '}},\"created_at\":\"'
        || to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')
        || CASE WHEN f.us = 0 THEN ''
                WHEN f.us % 1000 = 0 THEN '.' || lpad((f.us / 1000)::text, 3, '0')
                ELSE '.' || lpad(f.us::text, 6, '0') END
        || 'Z\"}'
   FROM orders o
   JOIN customers c ON c.id = o.customer_id
  CROSS JOIN LATERAL (SELECT extract(microseconds FROM o.created_at)::int8 % 1000000 AS us) f
  WHERE o.id = k.order_id)"
    };
}

/// Reads a taken key. `$1` seller_id, `$2` reference_id. A completed order's key whose stored
/// body the retention sweep dropped answers with its order's document, rebuilt from the order's
/// rows (`order_document!`): the same bytes.
pub const FIND_KEY: &str = concat!(
    "SELECT k.request_hash, k.state, k.response_status,
       COALESCE(k.response_body, ",
    order_document!(),
    ") AS response_body, k.order_id
  FROM idempotency_keys k
 WHERE k.seller_id = $1 AND k.reference_id = $2"
);

/// Commits, before the gateway sees the card, what recovery needs should anything fail after it:
/// the charge's gateway key, its amount and the pending order. Renews the lease from this point.
/// Zero rows: this attempt lost its lease, and nothing was charged.
/// `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` gateway_key, `$5` amount,
/// `$6` pending_order (JSON), `$7` lease in seconds (float8).
pub const MARK_CHARGING: &str = "\
UPDATE idempotency_keys
   SET state = 'CHARGING', gateway_key = $4, amount = $5, pending_order = $6,
       lease_expires_at = now() + make_interval(secs => $7::float8), updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3 AND state = 'IN_PROGRESS'";

/// Gives up an attempt after a transient failure: its lease ends now, so the client's retry may
/// take the key over at once. The row stays: a `CHARGING` key keeps its charge for the retry or
/// recovery, and attempt numbers (part of gateway keys) never restart.
/// `$1` seller_id, `$2` reference_id, `$3` attempt.
pub const RELEASE_KEY: &str = "\
UPDATE idempotency_keys
   SET lease_expires_at = now(), updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3
   AND state IN ('IN_PROGRESS', 'CHARGING')";

/// Marks the key completed with the outcome to replay. Zero rows means this attempt lost its
/// lease (or already completed it). `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` status,
/// `$5` body, `$6` order_id.
///
/// The pending order goes: only a `CHARGING` key needs it (recovery's, or a retry's, way to
/// finish the charge), and a completed key is rewritten whole into the WAL — keeping it would
/// write the order a second time for nothing (about 500 bytes an order; docs/benchmarks.md).
pub const COMPLETE_KEY: &str = "\
UPDATE idempotency_keys
   SET state = 'COMPLETED', response_status = $4, response_body = $5, order_id = $6,
       pending_order = NULL, updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3
   AND state IN ('IN_PROGRESS', 'CHARGING')";

/// Recovery: claims up to `$2` keys left in `CHARGING` whose lease expired and whose back-off
/// (`next_attempt_at`, see [`DEFER_KEY`]) has passed, as a new attempt with a lease of `$1`
/// seconds. `SKIP LOCKED`: concurrent passes (other instances) take other keys.
pub const CLAIM_CHARGING: &str = "\
UPDATE idempotency_keys k
   SET attempt = k.attempt + 1,
       lease_expires_at = now() + make_interval(secs => $1::float8),
       updated_at = now()
  FROM (SELECT seller_id, reference_id
          FROM idempotency_keys
         WHERE state = 'CHARGING' AND lease_expires_at < now() AND next_attempt_at <= now()
         ORDER BY lease_expires_at
         LIMIT $2
           FOR UPDATE SKIP LOCKED) due
 WHERE k.seller_id = due.seller_id AND k.reference_id = due.reference_id
RETURNING k.seller_id, k.reference_id, k.attempt, k.gateway_key, k.amount, k.pending_order,
          k.deferrals";

/// Recovery could not settle a claimed key now (the gateway or the database failed): its lease
/// ends, and the next pass leaves it alone for `$4` seconds (a growing back-off,
/// `order_core::domain::recovery::backoff`), so that a pass always ends and an outage costs no CPU. A
/// client's retry may still take the key over at once. Fenced by the attempt.
/// `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` back-off in seconds (float8).
pub const DEFER_KEY: &str = "\
UPDATE idempotency_keys
   SET lease_expires_at = now(), deferrals = deferrals + 1,
       next_attempt_at = now() + make_interval(secs => $4::float8), updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3 AND state = 'CHARGING'";

/// Recovery found the claimed key's pending order unreadable by this release: put off as
/// [`DEFER_KEY`] does, and marked (`unreadable_since`, kept from its first time). Returns whether
/// this is the first time: the mark is `now()`, the start of this statement's own transaction, only
/// when this statement set it. No row: the claim is stale. Same binds as [`DEFER_KEY`].
pub const DEFER_UNREADABLE: &str = "\
UPDATE idempotency_keys
   SET lease_expires_at = now(), deferrals = deferrals + 1,
       next_attempt_at = now() + make_interval(secs => $4::float8),
       unreadable_since = COALESCE(unreadable_since, now()), updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3 AND state = 'CHARGING'
RETURNING unreadable_since = now() AS first";

/// Recovery, immediately before it voids a charge at the gateway: re-asserts its claim — still
/// this attempt's, still `CHARGING`, no order made under this payment key — and renews the lease
/// for `$4` seconds, so no retry can take the key over while the void is on its way. No row: the
/// claim is stale (another attempt owns the key, or the order exists), and nothing is voided.
/// `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` lease in seconds (float8).
pub const REASSERT_CLAIM: &str = "\
UPDATE idempotency_keys k
   SET lease_expires_at = now() + make_interval(secs => $4::float8), updated_at = now()
 WHERE k.seller_id = $1 AND k.reference_id = $2 AND k.attempt = $3 AND k.state = 'CHARGING'
   AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.payment_key = k.gateway_key)";

/// Recovery's gauges: keys in `CHARGING` that recovery has had to put off at least once, and of
/// them those whose pending order a release could not read ([`DEFER_UNREADABLE`]).
pub const DEFERRED_KEYS: &str = "\
SELECT count(*) AS deferred,
       count(*) FILTER (WHERE unreadable_since IS NOT NULL) AS unreadable
  FROM idempotency_keys
 WHERE state = 'CHARGING' AND deferrals > 0";

/// Recovery: the gateway never charged this key (and it is now voided there): back to a fresh,
/// expired `IN_PROGRESS` reservation, so the client's retry starts over under a new gateway key.
/// `$1` seller_id, `$2` reference_id, `$3` attempt.
pub const RELEASE_UNCHARGED: &str = "\
UPDATE idempotency_keys
   SET state = 'IN_PROGRESS', gateway_key = NULL, amount = NULL, pending_order = NULL,
       unreadable_since = NULL, lease_expires_at = now(), updated_at = now()
 WHERE seller_id = $1 AND reference_id = $2 AND attempt = $3 AND state = 'CHARGING'";

/// Completes the key with its 201 (dropping its pending order, as [`COMPLETE_KEY`] does) and
/// writes the order — customer, order and items — in one statement (data-modifying CTEs, atomic on its own: no BEGIN/COMMIT round trips). Fenced by the
/// attempt: when the key is no longer this attempt's, nothing is written and the count is 0.
/// `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` response status, `$5` response body,
/// `$6` order id; customer `$7`..`$15`: full_name, tax_id, street, number, state, city, locality,
/// zip_code, complement; order `$16` status, `$17` amount, `$18` installments, `$19`
/// payment_method, `$20` card_last4, `$21` payment_code, `$22` payment_status, `$23`
/// risk_recommendation, `$24` created_at, `$25` payment_key (the gateway idempotency key of the
/// order's charge); items `$26` positions, `$27` names, `$28` quantities, `$29` values (arrays of
/// equal length).
pub const PERSIST_ORDER: &str = "\
WITH k AS (
    UPDATE idempotency_keys
       SET state = 'COMPLETED', response_status = $4::int4, response_body = $5::text,
           order_id = $6::text, pending_order = NULL, updated_at = now()
     WHERE seller_id = $1::text AND reference_id = $2::text AND attempt = $3::int4
       AND state IN ('IN_PROGRESS', 'CHARGING')
 RETURNING seller_id, reference_id
), c AS (
    INSERT INTO customers (full_name, tax_id, street, number, state, city, locality, zip_code,
                           complement)
    SELECT $7::text, $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::text,
           $15::text
      FROM k
 RETURNING id
), o AS (
    INSERT INTO orders (id, seller_id, reference_id, customer_id, status, amount, installments,
                        payment_method, card_last4, payment_code, payment_status,
                        risk_recommendation, created_at, payment_key)
    SELECT $6::text, k.seller_id, k.reference_id, c.id, $16::text, $17::int8, $18::int4,
           $19::text, $20::text, $21::text, $22::text, $23::text, $24::timestamptz, $25::text
      FROM k, c
 RETURNING id
), i AS (
    INSERT INTO order_items (order_id, position, name, quantity, value)
    SELECT o.id, t.position, t.name, t.quantity, t.value
      FROM o, UNNEST($26::int4[], $27::text[], $28::int8[], $29::int8[])
              AS t(position, name, quantity, value)
)
SELECT count(*) AS completed FROM k";

/// The order document of `$1` (order id) if it belongs to seller `$2`: as stored with its key, or
/// rebuilt from the order's rows once the retention sweep dropped that copy.
pub const FIND_ORDER: &str = concat!(
    "SELECT COALESCE(k.response_body, ",
    order_document!(),
    ") AS response_body
  FROM orders ord
  JOIN idempotency_keys k ON k.seller_id = ord.seller_id AND k.reference_id = ord.reference_id
 WHERE ord.id = $1 AND ord.seller_id = $2"
);

// ---- Retention (`KEY_RETENTION_DAYS`, `OUTBOX_RETENTION_HOURS`, `order_core::domain::retention`) ----

/// Retention: drops the stored body of up to `$2` completed keys with an order whose completion
/// is older than `$1` seconds (float8). The row stays — its hash, state, status and order id —
/// so a replay never charges again: it is answered from the order's rows ([`FIND_KEY`]). The
/// keys without an order (402, 422) keep their short error body. `SKIP LOCKED`: a key another
/// session holds is left to the next pass. Returns the count.
pub const EXPIRE_KEY_RESPONSES: &str = "\
WITH due AS (
    SELECT seller_id, reference_id
      FROM idempotency_keys
     WHERE state = 'COMPLETED' AND order_id IS NOT NULL AND response_body IS NOT NULL
       AND updated_at < now() - make_interval(secs => $1::float8)
     ORDER BY updated_at
     LIMIT $2
       FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE idempotency_keys k
       SET response_body = NULL, updated_at = now()
      FROM due
     WHERE k.seller_id = due.seller_id AND k.reference_id = due.reference_id
 RETURNING 1
)
SELECT count(*) AS swept FROM expired";

/// Retention: deletes up to `$2` outbox events sent more than `$1` seconds (float8) ago; JetStream
/// has them, and its duplicate window is minutes. Returns the count.
pub const DELETE_SENT_OUTBOX: &str = "\
WITH due AS (
    SELECT event_id
      FROM order_outbox
     WHERE sent_at < now() - make_interval(secs => $1::float8)
     ORDER BY sent_at
     LIMIT $2
       FOR UPDATE SKIP LOCKED
), deleted AS (
    DELETE FROM order_outbox o USING due WHERE o.event_id = due.event_id RETURNING 1
)
SELECT count(*) AS swept FROM deleted";

/// The readiness probe.
pub const PING: &str = "SELECT 1";

// ---- Order events (`EVENTS_MODE`, `order_core::plumbing::events`) ----

/// Outbox: the order's event, written in the order's transaction. `$1` event_id, `$2` order_id,
/// `$3` subject, `$4` payload (JSON).
pub const INSERT_OUTBOX: &str = "\
INSERT INTO order_outbox (event_id, order_id, subject, payload)
VALUES ($1::text, $2::text, $3::text, $4::text)";

/// Outbox relay: claims up to `$1` unsent events that no live claim holds, oldest first, for `$2`
/// seconds (float8) under token `$3`, in one short statement: the rows are locked only while it
/// runs (`SKIP LOCKED`: concurrent relays take other rows), never across the publication.
pub const CLAIM_OUTBOX: &str = "\
WITH claimed AS (
    UPDATE order_outbox o
       SET claimed_until = now() + make_interval(secs => $2::float8), claim_token = $3::text
      FROM (SELECT event_id
              FROM order_outbox
             WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
             ORDER BY created_at
             LIMIT $1
               FOR UPDATE SKIP LOCKED) due
     WHERE o.event_id = due.event_id
 RETURNING o.event_id, o.subject, o.payload, o.created_at
)
SELECT event_id, subject, payload FROM claimed ORDER BY created_at";

/// Outbox relay: settles claim `$1` — the events JetStream acknowledged (`$2`, text[]) are
/// marked sent, the others released for the next pass. Fenced by the token: rows whose claim ran
/// out and were claimed again belong to that relay, and are left to it.
pub const SETTLE_OUTBOX_CLAIM: &str = "\
UPDATE order_outbox
   SET sent_at = CASE WHEN event_id = ANY($2::text[]) THEN now() END,
       claimed_until = NULL, claim_token = NULL
 WHERE claim_token = $1::text AND sent_at IS NULL";

/// Outbox backlog, at a cost bounded whatever its size: the unsent events counted up to
/// [`OUTBOX_BACKLOG_CAP`] (a larger backlog reads as the cap), and the age in seconds of the
/// oldest (0 when none), both read from the unsent rows' partial index
/// (`order_outbox_unsent_idx`), never a scan of the table. A relay reads it at most once a second,
/// not per pass (`events::EventMetrics::outbox_gauges_due` says why).
pub const OUTBOX_BACKLOG: &str = "\
SELECT (SELECT count(*) FROM (SELECT 1 FROM order_outbox WHERE sent_at IS NULL LIMIT 10000) capped)
           AS backlog,
       COALESCE(extract(epoch FROM now() - (SELECT min(created_at) FROM order_outbox
                                             WHERE sent_at IS NULL)), 0)::float8 AS oldest_age_s";

/// The most unsent events [`OUTBOX_BACKLOG`] counts (its `LIMIT`).
pub const OUTBOX_BACKLOG_CAP: i64 = 10_000;

/// Two-phase, after a `COMMIT`/`ROLLBACK PREPARED` of gid `$1` failed: whether it is still
/// prepared, and whether its order `$2` exists (what a finish by someone else left).
pub const PREPARED_OUTCOME: &str = "\
SELECT EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE gid = $1::text) AS still_prepared,
       EXISTS (SELECT 1 FROM orders WHERE id = $2::text) AS order_made";

/// Two-phase, at start-up: how many transactions the server may keep prepared (0: none).
pub const MAX_PREPARED_TRANSACTIONS: &str = "SHOW max_prepared_transactions";

/// Two-phase recovery: this database's prepared transactions of ours (`$1` gid prefix), with
/// their age in seconds. Gids are cluster-wide; a prepared transaction can only be finished
/// from its own database.
pub const PREPARED_TRANSACTIONS: &str = "\
SELECT gid, extract(epoch FROM now() - prepared)::float8 AS age_s
  FROM pg_prepared_xacts
 WHERE database = current_database() AND starts_with(gid, $1::text)
 ORDER BY prepared";
