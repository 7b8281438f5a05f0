//! What every handler, the recovery loop and the event relay share: one [`AppState`] per process.
//!
//! Its own module (not `startup`'s) so that the modules it is handed to import it from below
//! instead of from the module that builds them.

use std::sync::Arc;

use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::admission::Admission;
use order_core::plumbing::events::EventsMode;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::CommonSettings;

use crate::broker::BlockingBroker;
use crate::pool::ReadPool;
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
    /// The threads of `GET /orders/{id}`, apart from the orders', behind the reads' admission.
    pub reads: ReadPool,
    pub events: Events,
}

/// The mode and, unless it is `off`, the broker.
pub struct Events {
    pub mode: EventsMode,
    pub broker: Option<BlockingBroker>,
}

impl Events {
    pub async fn connect(
        s: &order_core::plumbing::settings::EventsSettings,
    ) -> anyhow::Result<Self> {
        let broker = match s.events_mode {
            EventsMode::Off => None,
            _ => Some(BlockingBroker::connect(&s.nats_url, s.nats_timeout()).await?),
        };
        Ok(Events {
            mode: s.events_mode,
            broker,
        })
    }
}
