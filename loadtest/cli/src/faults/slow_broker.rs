//! The broker of a `broker-ack` fault: a lab-started `nats-server -js` behind an adjustable
//! latency proxy, the API publishing through its outbox (`EVENTS_MODE=outbox`) to the proxy. The
//! fault sets the proxy's round trip to the fault's delay for its window, so every JetStream
//! acknowledgement the relay waits for takes at least that long; orders themselves never wait on
//! the broker in this mode. After the run the lab waits for the relay to drain the outbox and
//! counts the orders against the stream (`lab::census::census`, the events scenario's count).
//!
//! Between runs the outbox is drained before the tables are emptied and the stream is recreated
//! after, so that no event of the warm-up or of the run before lands in the next run's stream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use event_broker::Broker;
use lab_results::faults::{BrokerAck, BrokerRecord};
use labkit::nats::EphemeralNats;
use latency_proxy::LatencyProxy;

use crate::api_env::EventsEnv;
use crate::lab::census::census;
use crate::scenario::events::one_run::pending;
use order_core::plumbing::events_mode::EventsMode;

/// The API's `NATS_TIMEOUT_MS` in these runs: its default, so that the row says whether the
/// default (10 s) outlasts the fault's acknowledgements (7 s in the scenario).
fn nats_timeout_ms() -> u64 {
    order_core::plumbing::settings::EventsSettings::default().nats_timeout_ms
}
/// The longest wait for the relay to empty the outbox (after the run, and between runs).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// NATS, the proxy in front of it, and a client of the lab's straight to NATS.
pub(crate) struct SlowBroker {
    // Dropped last: the proxy and the client go before the server.
    proxy: Arc<LatencyProxy>,
    client: Broker,
    _nats: EphemeralNats,
}

impl SlowBroker {
    /// Starts `nats-server -js` and the proxy (no delay yet).
    pub async fn start() -> Result<Self> {
        let nats = tokio::task::spawn_blocking(EphemeralNats::start)
            .await?
            .context("starting nats-server for the broker-ack fault")?;
        let upstream = ([127, 0, 0, 1], nats.port()).into();
        let proxy = LatencyProxy::start_adjustable(upstream, Duration::ZERO)
            .await
            .context("starting the NATS latency proxy")?;
        let timeout = Duration::from_secs(10);
        let client = Broker::connect(&nats.url(), timeout, timeout)
            .await
            .context("connecting the lab to NATS")?;
        Ok(SlowBroker {
            proxy: Arc::new(proxy),
            client,
            _nats: nats,
        })
    }

    /// The proxy, for the fault task to slow and restore.
    pub fn proxy(&self) -> Arc<LatencyProxy> {
        self.proxy.clone()
    }

    /// The API's settings for publishing through the proxy.
    pub fn events(&self) -> EventsEnv {
        EventsEnv {
            mode: EventsMode::Outbox,
            nats_url: format!("nats://{}", self.proxy.local_addr()),
            nats_timeout_ms: nats_timeout_ms(),
        }
    }

    /// Waits (at most [`DRAIN_LIMIT`]) until no outbox row is unsent; returns the seconds it
    /// took, or `None` when the wait ran out, and the rows then unsent.
    pub async fn drain(&self, database_url: &str) -> (Option<f64>, u64) {
        let since = Instant::now();
        let mut unsent = u64::MAX;
        while since.elapsed() < DRAIN_LIMIT {
            if let Ok(p) = pending(database_url).await {
                unsent = p.unsent.max(0) as u64;
                if unsent == 0 {
                    return (Some(since.elapsed().as_secs_f64()), 0);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (None, unsent)
    }

    /// An empty stream (after the tables were emptied).
    pub async fn empty_stream(&self) -> Result<()> {
        let _ = self.client.delete_stream().await;
        self.client.ensure_stream().await
    }

    /// Drains the outbox and counts the orders against the stream.
    pub async fn record(
        &self,
        database_url: &str,
        fault: BrokerAck,
        backlog_at_outage_end: Option<u64>,
    ) -> Result<BrokerRecord> {
        let (drain_s, backlog_after_drain) = self.drain(database_url).await;
        let c = census(&self.client, database_url)
            .await
            .context("counting the orders against the stream")?;
        Ok(BrokerRecord {
            ack_ms: fault.ack_ms,
            nats_timeout_ms: nats_timeout_ms(),
            backlog_at_outage_end,
            backlog_after_drain,
            drain_s,
            orders: c.orders,
            events_in_stream: c.messages,
            events_lost: c.lost,
            events_duplicated: c.duplicated,
            events_orphaned: c.orphaned,
        })
    }
}

/// Outbox rows not yet sent, for the fault's end.
pub(super) async fn unsent(database_url: &str) -> Result<u64> {
    Ok(pending(database_url).await?.unsent.max(0) as u64)
}
