//! The `order.created` event and how an order's transaction and its publication are tied
//! (`EVENTS_MODE`) — decided once, here, for both APIs.
//!
//! - `off`: no event (the default: no broker on an order's path, as the experiments without
//!   events measure it).
//! - `two-phase`: PostgreSQL as a two-phase participant with the broker as the last resource.
//!   The order's transaction ends with `PREPARE TRANSACTION` ([`prepared_gid`]); the event is
//!   published and acknowledged; then `COMMIT PREPARED` (`ROLLBACK PREPARED` when the broker
//!   refused it). The connection and the key's row locks are held until the broker answers.
//!   A transaction left prepared (a crash, an unanswered publish) is resolved by recovery:
//!   committed if the event is in the stream, else rolled back ([`in_doubt_action`]), once it
//!   is older than a live request can hold it ([`in_doubt_after`]); a finish that finds the
//!   transaction already finished reads back what happened ([`finished_elsewhere`]).
//! - `after-commit`: commit, then publish. An event whose publication fails, or whose process
//!   dies in between, is lost — the lab counts it.
//! - `outbox`: the event is written in the order's transaction (`order_outbox`); a relay
//!   publishes it (`Nats-Msg-Id` = event id) and marks it sent: at least once, never lost. The
//!   relay claims rows with a lease and publishes with no transaction open, so a broker slower
//!   than `DB_STATEMENT_TIMEOUT_MS` (which also ends idle transactions) still drains the backlog.
//!
//! The event carries the order id, seller, reference id, amount and creation time — no card
//! data, no customer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use prometheus::{Gauge, Histogram, HistogramOpts, IntCounterVec, IntGauge, Opts, Registry};
use serde::{Deserialize, Serialize};

use crate::domain::order::OrderDocument;

pub use crate::plumbing::events_mode::EventsMode;

/// The event's type, in its body.
pub const EVENT_TYPE: &str = "order.created";

/// Prefix of the gids of this lab's prepared transactions (`pg_prepared_xacts.gid`).
pub const GID_PREFIX: &str = "order-lab:";

/// `order.created`, as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderCreated {
    pub event_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub order_id: String,
    pub seller_id: String,
    pub reference_id: String,
    pub amount: i64,
    pub created_at: String,
}

impl OrderCreated {
    /// The event of a created order. Its id is derived from the order id, so every copy of it
    /// (an after-commit retry, an outbox redelivery) has the same `Nats-Msg-Id`.
    pub fn of(doc: &OrderDocument) -> Self {
        OrderCreated {
            event_id: event_id(&doc.id),
            kind: EVENT_TYPE.to_owned(),
            order_id: doc.id.clone(),
            seller_id: doc.seller_id.clone(),
            reference_id: doc.reference_id.clone(),
            amount: doc.amount,
            created_at: timestamp(doc.created_at),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// The event id of an order's `order.created`.
pub fn event_id(order_id: &str) -> String {
    format!("{EVENT_TYPE}:{order_id}")
}

fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The gid of an order's prepared transaction: `order-lab:<order id>`. `None` for an id with
/// characters other than `[A-Za-z0-9_-]`: the gid is spliced into `PREPARE TRANSACTION '…'`,
/// which takes no bind parameters, so only ids of our own shape (`ORDER_<UUID>`) are accepted.
pub fn prepared_gid(order_id: &str) -> Option<String> {
    let safe = !order_id.is_empty()
        && order_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    safe.then(|| format!("{GID_PREFIX}{order_id}"))
}

/// The order id a gid of ours names (and only ours).
pub fn order_of_gid(gid: &str) -> Option<&str> {
    let order_id = gid.strip_prefix(GID_PREFIX)?;
    prepared_gid(order_id).map(|_| order_id)
}

/// A fresh token for an outbox relay's claim (`sql::CLAIM_OUTBOX`): its settlement touches only
/// rows still under it.
pub fn claim_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// `PREPARE TRANSACTION`, `COMMIT PREPARED`, `ROLLBACK PREPARED` for a gid of [`prepared_gid`].
pub fn prepare_sql(gid: &str) -> String {
    format!("PREPARE TRANSACTION '{gid}'")
}

pub fn commit_prepared_sql(gid: &str) -> String {
    format!("COMMIT PREPARED '{gid}'")
}

pub fn rollback_prepared_sql(gid: &str) -> String {
    format!("ROLLBACK PREPARED '{gid}'")
}

/// How old a prepared transaction must be before recovery treats it as in doubt: older than a live
/// request can hold it before it starts finishing it itself. From its `PREPARE TRANSACTION` the
/// request publishes the event, send and acknowledgement bounded by `NATS_TIMEOUT_MS` as a whole
/// (`event_broker::Broker::publish`: one bound for both, where a bound for each would allow twice
/// that), and, with no answer, looks the event up in the stream, bounded by `NATS_TIMEOUT_MS` again
/// (`Broker::contains`). Then it sends `COMMIT` or `ROLLBACK PREPARED`, which locks the
/// transaction: a finish by recovery from then on fails as busy instead of racing it, and one that
/// got there first is read back by the request ([`finished_elsewhere`]). [`IN_DOUBT_MARGIN`] covers
/// what lies between the bounded steps: the prepare's answer reaching the request, the finish
/// reaching the server, and a loaded machine's scheduling.
pub fn in_doubt_after(nats_timeout: Duration) -> Duration {
    let (publication, look_up) = (nats_timeout, nats_timeout);
    publication + look_up + IN_DOUBT_MARGIN
}

/// See [`in_doubt_after`].
pub const IN_DOUBT_MARGIN: Duration = Duration::from_secs(1);

/// What became of a prepared transaction whose `COMMIT PREPARED` or `ROLLBACK PREPARED` failed,
/// as read back from the database (`sql::PREPARED_OUTCOME`): still prepared (`None`: the failure
/// stands, and recovery resolves it later), or finished by someone else — recovery, or the live
/// request racing it (`42704`, no such prepared transaction, on the loser's side) — committed if
/// its order is there, rolled back if not. Never guessed, so a finish that lost the race neither
/// voids nor fails an order that was made.
pub fn finished_elsewhere(still_prepared: bool, order_made: bool) -> Option<InDoubt> {
    match (still_prepared, order_made) {
        (true, _) => None,
        (false, true) => Some(InDoubt::Commit),
        (false, false) => Some(InDoubt::Rollback),
    }
}

/// What recovery does with a transaction left prepared: commit it if the event reached the
/// stream (the order must exist, as its event says), else roll it back (neither exists; the key
/// stays `CHARGING` and the charge is settled by the key's own recovery, event included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InDoubt {
    Commit,
    Rollback,
}

pub fn in_doubt_action(event_in_stream: bool) -> InDoubt {
    if event_in_stream {
        InDoubt::Commit
    } else {
        InDoubt::Rollback
    }
}

/// How often a relay reads the outbox gauges at most ([`EventMetrics::outbox_gauges_due`]).
pub const OUTBOX_GAUGES_EVERY: Duration = Duration::from_secs(1);

/// The events' metrics (same names in both APIs).
pub struct EventMetrics {
    /// Events acknowledged by JetStream, by mode and whether JetStream found it a duplicate.
    pub published: IntCounterVec,
    /// Publications that got no acknowledgement: `refused` or `unknown` (no answer).
    pub failed: IntCounterVec,
    /// From sending an event to its acknowledgement.
    pub publish_seconds: Histogram,
    /// Outbox rows not yet sent, counted up to `sql::OUTBOX_BACKLOG_CAP` (refreshed by the relay,
    /// see [`EventMetrics::outbox_gauges_due`]).
    pub outbox_backlog: IntGauge,
    /// Age of the oldest outbox row not yet sent, 0 when none (refreshed with the backlog).
    pub outbox_oldest_unsent: Gauge,
    /// When the outbox gauges are next due, in milliseconds from `created`.
    outbox_gauges_next_ms: AtomicU64,
    created: Instant,
    /// This database's prepared transactions of ours left in doubt (refreshed by recovery).
    pub in_doubt: IntGauge,
    /// Prepared transactions recovery resolved: `commit` or `rollback`.
    pub in_doubt_resolved: IntCounterVec,
}

impl EventMetrics {
    pub fn new(registry: &Registry, buckets: &[f64]) -> Self {
        let m = EventMetrics {
            published: IntCounterVec::new(
                Opts::new(
                    "events_published_total",
                    "order.created events JetStream acknowledged",
                ),
                &["mode", "duplicate"],
            )
            .unwrap(),
            failed: IntCounterVec::new(
                Opts::new(
                    "events_publish_failures_total",
                    "Publications without acknowledgement: refused, or unknown (no answer)",
                ),
                &["mode", "why"],
            )
            .unwrap(),
            publish_seconds: Histogram::with_opts(
                HistogramOpts::new(
                    "events_publish_duration_seconds",
                    "From sending an event to JetStream's acknowledgement",
                )
                .buckets(buckets.to_vec()),
            )
            .unwrap(),
            outbox_backlog: IntGauge::new(
                "events_outbox_backlog",
                "Outbox events not yet sent, counted up to 10000 (a larger backlog reads 10000), \
                 read by the relay at most once a second",
            )
            .unwrap(),
            outbox_oldest_unsent: Gauge::new(
                "events_outbox_oldest_unsent_seconds",
                "Age of the oldest outbox event not yet sent (0: none), read by the relay at most \
                 once a second",
            )
            .unwrap(),
            in_doubt: IntGauge::new(
                "events_in_doubt_prepared_transactions",
                "Prepared transactions left in doubt (two-phase), at the last recovery pass",
            )
            .unwrap(),
            in_doubt_resolved: IntCounterVec::new(
                Opts::new(
                    "events_in_doubt_resolved_total",
                    "Prepared transactions recovery committed or rolled back",
                ),
                &["action"],
            )
            .unwrap(),
            outbox_gauges_next_ms: AtomicU64::new(0),
            created: Instant::now(),
        };
        for c in [
            Box::new(m.published.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(m.failed.clone()),
            Box::new(m.publish_seconds.clone()),
            Box::new(m.outbox_backlog.clone()),
            Box::new(m.outbox_oldest_unsent.clone()),
            Box::new(m.in_doubt.clone()),
            Box::new(m.in_doubt_resolved.clone()),
        ] {
            registry.register(c).expect("metric names are unique");
        }
        m
    }

    /// Whether a relay pass reads the outbox gauges (`sql::OUTBOX_BACKLOG`): at most once per
    /// [`OUTBOX_GAUGES_EVERY`], whichever pass comes first.
    ///
    /// Not per pass: a draining relay runs its passes back to back (`RELAY_BATCH`, 256 events
    /// each), and the capped count reads up to 10,000 index entries and their rows — measured
    /// 3.5 ms on a vacuumed outbox and 18–47 ms with 50,000 unsent rows whose claims' old
    /// versions were not yet vacuumed — so per pass it would cost the database most when the
    /// backlog is largest. Once a second it costs a bounded amount per second and nothing per
    /// pass, whatever the backlog, and the gauges stay fresher than a scrape needs (the lab
    /// samples every 200 ms and sees a peak at most a second late). No exact O(1) count was
    /// taken: a counter row kept by the writers would serialise every order's transaction on
    /// it, and the planner's estimate lags the backlog by a vacuum.
    pub fn outbox_gauges_due(&self) -> bool {
        let now = u64::try_from(self.created.elapsed().as_millis()).unwrap_or(u64::MAX);
        let next = self.outbox_gauges_next_ms.load(Ordering::Relaxed);
        let every = OUTBOX_GAUGES_EVERY.as_millis() as u64;
        now >= next
            && self
                .outbox_gauges_next_ms
                .compare_exchange(next, now + every, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Counts publications that took `elapsed_s` each: `Ok(duplicate)` acknowledged (timed, and
    /// labelled with whether JetStream already had it), `Err(kind)` failed (`refused`, `unknown`).
    pub fn record<'k>(
        &self,
        mode: EventsMode,
        elapsed_s: f64,
        outcomes: impl IntoIterator<Item = Result<bool, &'k str>>,
    ) {
        let mode = mode.as_str();
        for outcome in outcomes {
            match outcome {
                Ok(duplicate) => {
                    self.publish_seconds.observe(elapsed_s);
                    let duplicate = if duplicate { "true" } else { "false" };
                    self.published.with_label_values(&[mode, duplicate]).inc();
                }
                Err(kind) => self.failed.with_label_values(&[mode, kind]).inc(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outbox_gauges_are_due_once_a_second_whatever_the_passes() {
        let mut m = EventMetrics::new(&Registry::new(), &[1.0]);
        assert!(m.outbox_gauges_due(), "the first pass reads them");
        for _ in 0..100 {
            assert!(!m.outbox_gauges_due(), "read again within the second");
        }
        // A second later, as the clock sees it.
        m.created -= OUTBOX_GAUGES_EVERY;
        assert!(m.outbox_gauges_due());
        assert!(!m.outbox_gauges_due());
    }

    #[test]
    fn gids_accept_only_our_order_ids() {
        let id = crate::domain::order::new_order_id();
        let gid = prepared_gid(&id).unwrap();
        assert_eq!(order_of_gid(&gid), Some(id.as_str()));
        assert_eq!(prepare_sql(&gid), format!("PREPARE TRANSACTION '{gid}'"));
        for bad in ["", "x'; DROP TABLE orders; --", "a b", "a.b"] {
            assert_eq!(prepared_gid(bad), None, "{bad:?}");
        }
        assert_eq!(order_of_gid("someone-else:ORDER_1"), None);
    }

    #[test]
    fn in_doubt_follows_the_stream() {
        assert_eq!(in_doubt_action(true), InDoubt::Commit);
        assert_eq!(in_doubt_action(false), InDoubt::Rollback);
    }

    #[test]
    fn a_transaction_finished_elsewhere_is_read_back() {
        assert_eq!(finished_elsewhere(true, true), None);
        assert_eq!(finished_elsewhere(true, false), None);
        assert_eq!(finished_elsewhere(false, true), Some(InDoubt::Commit));
        assert_eq!(finished_elsewhere(false, false), Some(InDoubt::Rollback));
    }

    #[test]
    fn modes_parse_as_written() {
        use clap::ValueEnum;
        for m in [
            EventsMode::Off,
            EventsMode::TwoPhase,
            EventsMode::AfterCommit,
            EventsMode::Outbox,
        ] {
            assert_eq!(EventsMode::from_str(m.as_str(), false), Ok(m));
        }
    }
}
