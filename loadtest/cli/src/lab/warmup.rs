//! Between runs: an empty database and ledger, and a short warm-up that is not measured.

use std::time::Duration;

use anyhow::{Context, Result};

use super::Lab;
use crate::invariants;
use crate::run::reset_mock;
use loadgen::driver::DriverConfig;
use loadgen::profile::{Model, Phase, Profile};

/// Warm-up arrival rate, requests/s.
const WARMUP_RATE: f64 = 10.0;

impl Lab {
    pub(super) fn warmup_s(&self) -> f64 {
        self.args.warmup_s * self.args.load.duration_scale
    }

    pub(super) async fn fresh_state(&self) -> Result<()> {
        if let (Some(b), Some(url)) = (&self.broker, &self.database_url) {
            // The relay sends what it has before the tables are emptied, or it would publish
            // the warm-up's events into the run's stream.
            b.drain(url).await;
        }
        if let Some(url) = &self.database_url {
            invariants::truncate(url).await?;
        }
        if let Some(b) = &self.broker {
            b.empty_stream().await.context("emptying the stream")?;
        }
        reset_mock(&self.deps_url)
            .await
            .context("resetting mock-deps")
    }

    pub(super) async fn warm_up(&self, url: &str) -> Result<()> {
        let duration_s = self.warmup_s();
        if duration_s * WARMUP_RATE < 1.0 {
            return Ok(());
        }
        let phase = Phase {
            name: "warm-up".to_owned(),
            start_s: 0.0,
            duration_s,
            from_rate: WARMUP_RATE,
            to_rate: WARMUP_RATE,
        };
        let profile = Profile {
            name: "warm-up".to_owned(),
            model: Model::Open,
            phases: vec![phase],
            duration_scale: 1.0,
        };
        let timeout = Duration::from_secs_f64(self.args.load.request_timeout_s);
        let cfg = DriverConfig {
            max_in_flight: self.max_in_flight,
            sellers: self.args.load.sellers,
            ..DriverConfig::new(url, profile, format!("{}w", self.run_id), timeout)
        };
        loadgen::driver::drive(cfg, Default::default())
            .await
            .context("warm-up")?;
        Ok(())
    }
}
