//! A dependency slowed down in the middle of a run (`--inject`), carried out through mock-deps'
//! admin API. The plan itself, and what it does to Little's law, is [`lab_results::inject`].

use std::time::Duration;

use anyhow::Result;
use lab_results::MockLatencies;
use lab_results::inject::Injection;

use crate::run::set_mock_latencies;

/// Sleeps to the start, slows the dependency, sleeps the duration, restores it.
pub async fn apply(injection: Injection, deps_url: String, base: MockLatencies) -> Result<()> {
    tokio::time::sleep(Duration::from_secs_f64(injection.start_s)).await;
    let slowed = injection.dependency.with(base, injection.latency_ms);
    set_mock_latencies(&deps_url, slowed).await?;
    tokio::time::sleep(Duration::from_secs_f64(injection.duration_s)).await;
    set_mock_latencies(&deps_url, base).await
}
