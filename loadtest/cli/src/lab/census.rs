//! The order events counted after a run: every order in PostgreSQL against every subject in the
//! broker's stream — an order without its event is lost, a subject with more than one message
//! duplicated, an event without its order orphaned. The events scenario's count, and the
//! slowed-broker fault's (`faults/slow_broker.rs`).

use std::collections::BTreeMap;

use anyhow::Result;
use event_broker::Broker;
use sqlx::Connection;

/// Every order in the database at `database_url` against every subject in `broker`'s stream.
pub(crate) async fn census(broker: &Broker, database_url: &str) -> Result<Census> {
    let subjects = broker.census().await?;
    let mut conn = sqlx::PgConnection::connect(database_url).await?;
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_all(&mut conn)
        .await?;
    conn.close().await.ok();
    Ok(Census::of(&ids, &subjects))
}

/// The stream against the orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    pub orders: u64,
    /// Messages in the stream.
    pub messages: u64,
    /// Orders without an event.
    pub lost: u64,
    /// Messages beyond the first of a subject.
    pub duplicated: u64,
    /// Subjects of no order (an event whose order was rolled back).
    pub orphaned: u64,
}

impl Census {
    pub fn of(order_ids: &[String], subjects: &BTreeMap<String, u64>) -> Self {
        let orders: std::collections::BTreeSet<String> = order_ids
            .iter()
            .map(|id| event_broker::subject_of(id))
            .collect();
        Census {
            orders: orders.len() as u64,
            messages: subjects.values().sum(),
            lost: orders.iter().filter(|s| !subjects.contains_key(*s)).count() as u64,
            duplicated: subjects.values().map(|n| n.saturating_sub(1)).sum(),
            orphaned: subjects.keys().filter(|s| !orders.contains(*s)).count() as u64,
        }
    }
}
