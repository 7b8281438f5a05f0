//! What every handler, the recovery loop and the event relay share: one [`AppState`] per process.
//!
//! Its own module (not `startup`'s) so that the modules it is handed to import it from below
//! instead of from the module that builds them.

use std::sync::Arc;
use std::time::Duration;

use event_broker::Broker;
use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::admission::Admission;
use order_core::plumbing::events::EventsMode;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::read_admission::ReadAdmission;
use order_core::plumbing::settings::CommonSettings;

use crate::{batch, clients::Deps, db::Db};

/// What every handler shares.
pub struct AppState {
    pub settings: CommonSettings,
    pub db: Db,
    /// The persist batch writer (`PERSIST_BATCH_MAX` > 1), or nothing.
    pub batch: batch::Writer,
    pub deps: Deps,
    pub metrics: Arc<Metrics>,
    pub hash_key: RequestHashKey,
    pub admission: Admission,
    /// The admission of `GET /orders/{id}`, apart from the orders'.
    pub reads: ReadAdmission,
    pub events: Events,
}

/// How long the API waits at start-up for NATS and its JetStream to be usable.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

/// The mode and, unless it is `off`, the broker.
pub struct Events {
    pub mode: EventsMode,
    pub broker: Option<Broker>,
}

impl Events {
    pub async fn connect(
        s: &order_core::plumbing::settings::EventsSettings,
    ) -> anyhow::Result<Self> {
        let broker = match s.events_mode {
            EventsMode::Off => None,
            _ => Some(Broker::connect(&s.nats_url, s.nats_timeout(), CONNECT_PATIENCE).await?),
        };
        Ok(Events {
            mode: s.events_mode,
            broker,
        })
    }
}
