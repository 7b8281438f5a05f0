//! State shared by every worker: live config, payment ledger, counters.

use std::sync::RwLock;

use crate::config::MockConfig;
use crate::ledger::LedgerStore;
use crate::stats::StatsStore;

#[derive(Debug)]
pub(crate) struct State {
    /// Read (and copied out) once per request; written only by the admin surface.
    config: RwLock<MockConfig>,
    pub ledger: LedgerStore,
    pub stats: StatsStore,
}

impl State {
    pub fn new(config: MockConfig) -> Self {
        Self {
            config: RwLock::new(config),
            ledger: LedgerStore::default(),
            stats: StatsStore::default(),
        }
    }

    pub fn config(&self) -> MockConfig {
        // The config is plain data: a panicked writer cannot leave it inconsistent.
        *self.config.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the config with `f(current)` atomically with respect to other updates.
    pub fn update_config<E>(
        &self,
        f: impl FnOnce(MockConfig) -> Result<MockConfig, E>,
    ) -> Result<MockConfig, E> {
        let mut guard = self.config.write().unwrap_or_else(|p| p.into_inner());
        let next = f(*guard)?;
        *guard = next;
        Ok(next)
    }
}
