//! The open-model scheduler: one goose transaction that runs the whole arrival schedule.
//!
//! It sleeps until each arrival's intended time and spawns the request as its own task, whether or
//! not earlier ones have returned; an arrival finding `max_in_flight` requests open is counted
//! `not_sent`. Finished requests come back over a channel and are recorded into goose's metrics
//! here (goose's `GooseUser` is only reachable from its transaction); each task has already
//! written its start, outcome and latency into the recorder itself. See `driver.rs` for why.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use goose::prelude::*;
use tokio::sync::mpsc;

use crate::clock::since;
use crate::http::Outcome;
use crate::profile::Arrival;
use crate::recorder::SLOW_US;
use crate::shared::Shared;

/// The stress rule's latency limit, seconds.
const SLOW_S: f64 = SLOW_US as f64 / 1e6;

/// A finished request, as reported to the scheduler for goose's metrics.
pub(crate) struct Done {
    pub(crate) latency: Duration,
    pub(crate) outcome: Outcome,
}

pub(crate) async fn record_in_goose(user: &mut GooseUser, done: Done) -> TransactionResult {
    let o = done.outcome;
    let name = if o.is_not_sent() {
        "/orders (not sent)"
    } else {
        "/orders"
    };
    user.record_custom_request_duration(
        "POST",
        name,
        done.latency,
        o.is_success(),
        o.status,
        o.error.as_deref(),
    )
    .await
}

/// The open-model scheduler: the whole schedule in one goose transaction.
pub(crate) async fn schedule(user: &mut GooseUser, s: Arc<Shared>) -> TransactionResult {
    let t0 = s.start_open().await;
    let (tx, mut rx) = mpsc::unbounded_channel::<Done>();
    let mut arrivals = s.cfg.sharding.shard.arrivals(&s.cfg.profile).peekable();
    let (mut launched, mut reported) = (0u64, 0u64);
    let mut stress_judged = 0usize;
    let mut stopped = false;
    loop {
        let next = if stopped {
            None
        } else {
            arrivals.peek().copied()
        };
        let Some(a) = next else {
            if reported == launched {
                break;
            }
            s.progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .draining(launched - reported);
            if let Some(done) = rx.recv().await {
                reported += 1;
                record_in_goose(user, done).await?;
            }
            continue;
        };
        let due = t0 + Duration::from_secs_f64(a.at_s);
        if Instant::now() < due {
            tokio::select! {
                _ = tokio::time::sleep_until(due.into()) => {}
                Some(done) = rx.recv() => {
                    reported += 1;
                    record_in_goose(user, done).await?;
                    continue;
                }
            }
        }
        arrivals.next();
        let judged = s.cfg.profile.phases.get(stress_judged);
        let ripe = judged.is_some_and(|p| a.at_s >= p.start_s + p.duration_s + SLOW_S);
        if s.cfg.profile.is_stress() && stress_judged < a.phase && ripe {
            // Step k is judged once its last request is 10 s old: a request still open is then
            // slower than 10 s for sure. The knee in the results is recomputed from final data.
            let failed = s.rec().phases[stress_judged].step_failed();
            stress_judged += 1;
            if failed {
                s.phases_run.store(a.phase as u64, Ordering::SeqCst);
                stopped = true;
                continue;
            }
        }
        if goose::is_killswitch_triggered() {
            s.phases_run.store(a.phase as u64 + 1, Ordering::SeqCst);
            stopped = true;
        }
        s.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .arrival(a.phase);
        launched += 1;
        launch(&s, t0, a, tx.clone());
    }
    Ok(())
}

fn launch(s: &Arc<Shared>, t0: Instant, a: Arrival, tx: mpsc::UnboundedSender<Done>) {
    let Arrival { at_s, phase, .. } = a;
    s.rec().offered(at_s, phase);
    s.tally
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(a.index);
    if s.in_flight.load(Ordering::SeqCst) >= s.cfg.max_in_flight {
        s.rec().not_sent(at_s, phase);
        let _ = tx.send(Done {
            latency: Duration::ZERO,
            outcome: Outcome::not_sent(),
        });
        return;
    }
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    let request = s.bodies.request(a.index);
    let s = s.clone();
    tokio::spawn(async move {
        let intended = t0 + Duration::from_secs_f64(at_s);
        let start = Instant::now();
        s.rec().sent(
            since(t0, start),
            start.saturating_duration_since(intended),
            phase,
        );
        let outcome = s.send(t0, &request).await;
        let end = Instant::now();
        s.answered(t0, end);
        let latency = end.saturating_duration_since(intended);
        {
            let mut rec = s.rec();
            rec.completed(at_s, since(t0, end), latency, phase, &outcome.kind);
            rec.keys.note(&request, &outcome.kind);
        }
        s.in_flight.fetch_sub(1, Ordering::SeqCst);
        let _ = tx.send(Done { latency, outcome });
    });
}
