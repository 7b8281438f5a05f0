//! Carrying out a run's fault plan (`--faults`): payment faults through mock-deps' admin API for
//! the whole measured run; the API killed (`kill -9`) and started again with the same settings;
//! the API restarted as a platform does (`rolling_restart.rs`); PostgreSQL restarted
//! `-m immediate`; and the outages with a length, each begun and ended on time: PostgreSQL frozen (the latency proxy in front of it frozen), slow uploads
//! (`slow_uploads.rs`), the payment gateway unreachable (mock-deps' `gateway_unreachable`), the
//! broker's acknowledgements slowed (the NATS proxy's round trip, `slow_broker.rs`). Each
//! fault happens at its time on the run's own clock and becomes a mark on the run's timeline (a red
//! marker on the report's charts); an outage still under way when the run ends is ended then.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{rolling_restart, slow_broker, slow_uploads};
use crate::lab::Lab;
use crate::run::patch_mock_config;
use crate::services::{ApiProcess, Database};
use lab_results::TimelineMark;
use lab_results::faults::{
    API_READY_LABEL, BROKER_ACK_LABEL, DB_FREEZE_LABEL, DB_RESTART_LABEL, FaultPlan,
    GATEWAY_DOWN_LABEL, KILL_LABEL, SLOW_UPLOADS_LABEL,
};
use loadgen::clock::Clock;
use mock_deps::BadAnswer;
use mock_deps::admin::{ConfigPatch, EndpointPatch};

/// What the fault task hands back.
struct Outcome {
    /// The API process (restarted, if it was killed).
    process: Option<ApiProcess>,
    marks: Vec<TimelineMark>,
    /// The first error, if a fault could not be carried out.
    error: Option<anyhow::Error>,
    /// Outbox rows unsent when a `broker-ack` fault ended.
    broker_backlog: Option<u64>,
}

/// What [`Lab::end_faults`] gives back.
pub(crate) struct Ended {
    pub process: Option<ApiProcess>,
    /// The faults' marks (the payment faults' one at t = 0 first).
    pub marks: Vec<TimelineMark>,
    /// Outbox rows unsent when a `broker-ack` fault ended.
    pub broker_backlog: Option<u64>,
}

/// The faults of one run, under way.
pub(crate) struct Running {
    plan: Option<FaultPlan>,
    stop: Arc<Notify>,
    task: JoinHandle<Outcome>,
}

impl Lab {
    /// Turns the payment faults on and starts the task that kills and restarts on `clock`.
    /// Takes the API process (the task may restart it); [`Lab::end_faults`] gives it back.
    pub(crate) async fn start_faults(
        &self,
        process: Option<ApiProcess>,
        api_url: &str,
        clock: Clock,
    ) -> Result<Running> {
        let stop = Arc::new(Notify::new());
        let Some(plan) = self.faults else {
            let task = tokio::spawn(async move { Outcome::nothing(process) });
            return Ok(Running {
                plan: None,
                stop,
                task,
            });
        };
        if plan.has_payment_faults() {
            patch_mock_config(&self.deps_url, &payment_faults(&plan))
                .await
                .context("turning the payment faults on")?;
        }
        let reach = Reach {
            db: self.db.clone(),
            db_proxy: self.db_proxy.clone(),
            broker_proxy: self.broker.as_ref().map(|b| b.proxy()),
            deps_url: self.deps_url.clone(),
            api_url: api_url.to_owned(),
        };
        let task = tokio::spawn(carry_out(plan, process, reach, clock, stop.clone()));
        Ok(Running {
            plan: Some(plan),
            stop,
            task,
        })
    }

    /// Cancels the faults not yet due, waits for one under way, turns the payment faults off.
    pub(crate) async fn end_faults(&self, running: Running) -> Result<Ended> {
        running.stop.notify_one();
        let Outcome {
            process,
            mut marks,
            error,
            broker_backlog,
        } = running.task.await.context("the fault task failed")?;
        if let Some(plan) = running.plan.filter(FaultPlan::has_payment_faults) {
            patch_mock_config(&self.deps_url, &payment_faults(&FaultPlan::default()))
                .await
                .context("turning the payment faults off")?;
            marks.insert(
                0,
                TimelineMark {
                    t: 0.0,
                    label: plan.describe_payment(),
                },
            );
        }
        if let Some(e) = error {
            if let Some(p) = process {
                tokio::task::spawn_blocking(move || p.stop()).await??;
            }
            return Err(e.context("carrying out the fault plan"));
        }
        Ok(Ended {
            process,
            marks,
            broker_backlog,
        })
    }
}

/// mock-deps' configuration for the plan's payment faults (`PUT /admin/config`); the default
/// plan's turns them off (and leaves the hang time as it is).
fn payment_faults(plan: &FaultPlan) -> ConfigPatch {
    ConfigPatch {
        payment: Some(EndpointPatch {
            error_rate: Some(plan.payment_error_rate),
            hang_rate: Some(plan.payment_hang_rate),
            charged_error_rate: Some(plan.payment_charged_error_rate),
            answer_fault_rate: Some(plan.payment_cut_rate),
            answer_fault: Some(BadAnswer::Cut),
            ..EndpointPatch::default()
        }),
        hang_ms: plan.hang_ms,
        ..ConfigPatch::default()
    }
}

/// What the faults act on.
struct Reach {
    db: Option<Arc<Database>>,
    /// The latency proxy between the API and PostgreSQL (started for a `db-freeze`).
    db_proxy: Option<Arc<latency_proxy::LatencyProxy>>,
    /// The latency proxy between the API and NATS (started for a `broker-ack`).
    broker_proxy: Option<Arc<latency_proxy::LatencyProxy>>,
    deps_url: String,
    api_url: String,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    KillApi { down: Duration },
    RollingRestart,
    RestartDb,
    Begin(Outage),
    End(Outage),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outage {
    DbFreeze,
    SlowUploads(u32),
    GatewayDown,
    BrokerAck(u64),
}

/// The plan's steps in time order (a step's end after its beginning when both fall together).
fn steps(plan: &FaultPlan) -> Vec<(f64, Step)> {
    let mut steps: Vec<(f64, Step)> = Vec::new();
    if let Some(at) = plan.kill_api_at_s {
        let down = Duration::from_secs_f64(plan.api_down_s);
        steps.push((at, Step::KillApi { down }));
    }
    if let Some(at) = plan.rolling_restart_at_s {
        steps.push((at, Step::RollingRestart));
    }
    if let Some(at) = plan.restart_db_at_s {
        steps.push((at, Step::RestartDb));
    }
    let outages = [
        plan.db_freeze.map(|w| (Outage::DbFreeze, w)),
        plan.slow_uploads
            .map(|s| (Outage::SlowUploads(s.connections), s.window)),
        plan.gateway_down.map(|w| (Outage::GatewayDown, w)),
        plan.broker_ack
            .map(|b| (Outage::BrokerAck(b.ack_ms), b.window)),
    ];
    for (outage, window) in outages.into_iter().flatten() {
        steps.push((window.at_s, Step::Begin(outage)));
        steps.push((window.end_s(), Step::End(outage)));
    }
    // Stable: equal times keep the order above.
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    steps
}

/// Outages under way, for their end.
#[derive(Default)]
struct Under {
    uploads: Option<slow_uploads::Held>,
    begun: Vec<Outage>,
    /// Outbox rows unsent when the broker's acknowledgements were prompt again.
    broker_backlog: Option<u64>,
}

impl Outcome {
    fn nothing(process: Option<ApiProcess>) -> Outcome {
        Outcome {
            process,
            marks: Vec::new(),
            error: None,
            broker_backlog: None,
        }
    }
}

impl Reach {
    /// Begins `outage`; returns the mark's label.
    async fn begin(&self, outage: Outage, under: &mut Under) -> Result<String> {
        let label = match outage {
            Outage::DbFreeze => {
                let proxy = self
                    .db_proxy
                    .as_ref()
                    .context("no database proxy to freeze")?;
                proxy.set_frozen(true);
                format!("{DB_FREEZE_LABEL} (its proxy moves no byte)")
            }
            Outage::SlowUploads(n) => {
                let held = slow_uploads::open(&self.api_url, n).await?;
                let label = format!(
                    "{SLOW_UPLOADS_LABEL}: {} of {n} connections hold an order's body back \
                     (one byte every {} s)",
                    held.opened(),
                    slow_uploads::TRICKLE.as_secs()
                );
                under.uploads = Some(held);
                label
            }
            Outage::GatewayDown => {
                patch_mock_config(&self.deps_url, &gateway(true)).await?;
                format!("{GATEWAY_DOWN_LABEL} (pay, lookup and void hang)")
            }
            Outage::BrokerAck(ms) => {
                let proxy = self
                    .broker_proxy
                    .as_ref()
                    .context("no NATS proxy to slow")?;
                proxy.set_rtt(Duration::from_millis(ms));
                format!(
                    "{BROKER_ACK_LABEL}: {ms} ms added to every round trip to NATS (each \
                     acknowledgement takes at least that)"
                )
            }
        };
        under.begun.push(outage);
        Ok(label)
    }

    /// Ends `outage` if it is under way; returns the mark's label.
    async fn end(&self, outage: Outage, under: &mut Under) -> Result<Option<String>> {
        let Some(i) = under.begun.iter().position(|o| *o == outage) else {
            return Ok(None);
        };
        under.begun.remove(i);
        Ok(Some(match outage {
            Outage::DbFreeze => {
                if let Some(proxy) = &self.db_proxy {
                    proxy.set_frozen(false);
                }
                "PostgreSQL thawed".to_owned()
            }
            Outage::SlowUploads(_) => match under.uploads.take() {
                Some(held) => {
                    let closed = held.close().await;
                    format!(
                        "slow-upload connections closed ({} of {} cut short by the API before)",
                        closed.cut_short, closed.opened
                    )
                }
                None => "slow-upload connections closed".to_owned(),
            },
            Outage::GatewayDown => {
                // Counted before the gateway is back: what recovery then has to settle.
                let charging = match &self.db {
                    Some(db) => charging_keys(&db.url).await.map_or_else(
                        |e| format!("CHARGING keys not counted: {e:#}"),
                        |n| {
                            format!(
                                "{n} keys CHARGING; recovery claims {} at a time",
                                order_core::domain::recovery::CLAIM_BATCH
                            )
                        },
                    ),
                    None => "CHARGING keys not counted: no database".to_owned(),
                };
                patch_mock_config(&self.deps_url, &gateway(false)).await?;
                format!("payment gateway reachable again ({charging})")
            }
            Outage::BrokerAck(_) => {
                // Counted before the broker is prompt again: what the relay then has to send.
                let backlog = match &self.db {
                    Some(db) => slow_broker::unsent(&db.url).await.ok(),
                    None => None,
                };
                if let Some(proxy) = &self.broker_proxy {
                    proxy.set_rtt(Duration::ZERO);
                }
                under.broker_backlog = backlog;
                match backlog {
                    Some(n) => {
                        format!("broker acknowledgements prompt again ({n} outbox rows unsent)")
                    }
                    None => "broker acknowledgements prompt again (outbox backlog not counted)"
                        .to_owned(),
                }
            }
        }))
    }
}

/// Keys left `CHARGING` (a charge whose fate the API does not know yet).
async fn charging_keys(database_url: &str) -> Result<i64> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(database_url).await?;
    let (n,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM idempotency_keys WHERE state = 'CHARGING'")
            .fetch_one(&mut conn)
            .await?;
    Ok(n)
}

/// mock-deps' configuration for a reachable (or not) gateway.
fn gateway(unreachable: bool) -> ConfigPatch {
    ConfigPatch {
        gateway_unreachable: Some(unreachable),
        ..ConfigPatch::default()
    }
}

/// The plan's steps, each at its time on the run's clock until the run ends (`stop`), then the
/// outages still under way ended.
async fn carry_out(
    plan: FaultPlan,
    process: Option<ApiProcess>,
    reach: Reach,
    clock: Clock,
    stop: Arc<Notify>,
) -> Outcome {
    let Some(t0) = first_arrival(&clock, &stop).await else {
        return Outcome::nothing(process);
    };
    let mut c = Carrying {
        reach,
        process,
        t0,
        marks: Vec::new(),
        under: Under::default(),
    };
    let mut failed = None;
    for (due, step) in steps(&plan) {
        tokio::select! {
            _ = tokio::time::sleep_until((t0 + Duration::from_secs_f64(due)).into()) => {}
            _ = stop.notified() => break,
        }
        if let Err(e) = c.step(step).await {
            failed = Some(e);
            break;
        }
    }
    c.end_under_way(&mut failed).await;
    Outcome {
        process: c.process,
        marks: c.marks,
        error: failed,
        broker_backlog: c.under.broker_backlog,
    }
}

/// When the first arrival is due (the clock is set then); `None` if the run stopped before.
async fn first_arrival(clock: &Clock, stop: &Notify) -> Option<Instant> {
    loop {
        if let Some(t0) = clock.get() {
            return Some(*t0);
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = stop.notified() => return None,
        }
    }
}

/// The plan under way: what it acts on, the API's process (the lab's, when it started it), the
/// run's t = 0, the marks so far and the outages begun.
struct Carrying {
    reach: Reach,
    process: Option<ApiProcess>,
    t0: Instant,
    marks: Vec<TimelineMark>,
    under: Under,
}

impl Carrying {
    /// A timeline mark at `when`, seconds into the run.
    fn mark(&mut self, when: Instant, label: String) {
        let t = when.saturating_duration_since(self.t0).as_secs_f64();
        self.marks.push(TimelineMark { t, label });
    }

    async fn step(&mut self, step: Step) -> Result<()> {
        match step {
            Step::Begin(outage) => {
                let begun = Instant::now();
                let label = self.reach.begin(outage, &mut self.under).await?;
                self.mark(begun, label);
                Ok(())
            }
            Step::End(outage) => {
                let ended = Instant::now();
                if let Some(label) = self.reach.end(outage, &mut self.under).await? {
                    self.mark(ended, label);
                }
                Ok(())
            }
            Step::KillApi { down } => self.kill_api(down).await,
            Step::RollingRestart => self.rolling_restart().await,
            Step::RestartDb => self.restart_db().await,
        }
    }

    /// `kill -9` of the API, and the same process started again `down` later.
    async fn kill_api(&mut self, down: Duration) -> Result<()> {
        let Some(mut p) = self.process.take() else {
            return Ok(()); // --targets: not the lab's process to kill
        };
        let (p, killed, ready, r) = tokio::task::spawn_blocking(move || {
            let killed = Instant::now();
            let r = p.kill().and_then(|()| {
                std::thread::sleep(down);
                p.restart()
            });
            (p, killed, Instant::now(), r)
        })
        .await
        .map_err(|e| anyhow::anyhow!("the kill/restart task failed: {e}"))?;
        self.mark(
            killed,
            format!("{KILL_LABEL} (restarted {} s later)", down.as_secs_f64()),
        );
        if r.is_ok() {
            self.mark(ready, format!("{API_READY_LABEL} (pid {})", p.pid));
        }
        self.process = Some(p);
        r
    }

    /// The API restarted as a platform does (`rolling_restart.rs`).
    async fn rolling_restart(&mut self) -> Result<()> {
        let Some(mut p) = self.process.take() else {
            return Ok(()); // --targets: not the lab's process to restart
        };
        let (p, r) = tokio::task::spawn_blocking(move || {
            let r = rolling_restart::carry_out(&mut p);
            (p, r)
        })
        .await
        .map_err(|e| anyhow::anyhow!("the rolling restart task failed: {e}"))?;
        let r = r.map(|done| {
            for (when, label) in done.marks(p.pid) {
                self.mark(when, label);
            }
        });
        self.process = Some(p);
        r
    }

    /// PostgreSQL restarted `-m immediate` (a crash and its recovery).
    async fn restart_db(&mut self) -> Result<()> {
        let Some(db) = self.reach.db.clone() else {
            return Ok(());
        };
        let start = Instant::now();
        let r = tokio::task::spawn_blocking(move || db.restart_immediate())
            .await
            .map_err(|e| anyhow::anyhow!("the restart task failed: {e}"))
            .and_then(|r| r);
        self.mark(start, DB_RESTART_LABEL.to_owned());
        let pid = r?;
        self.mark(
            Instant::now(),
            format!("PostgreSQL accepting connections again (pid {pid})"),
        );
        Ok(())
    }

    /// The run ended (or a fault failed) with outages under way: ends them, or the next run
    /// would start into them; the first error is kept.
    async fn end_under_way(&mut self, failed: &mut Option<anyhow::Error>) {
        for outage in self.under.begun.clone() {
            let ended = Instant::now();
            match self.reach.end(outage, &mut self.under).await {
                Ok(Some(label)) => self.mark(ended, format!("{label} (at the run's end)")),
                Ok(None) => {}
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "carry_out_tests.rs"]
mod tests;
