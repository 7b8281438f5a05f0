//! A timer with sub-millisecond precision, shared by every connection of one proxy.
//!
//! Why not `tokio::time::sleep_until`: tokio's timer wheel has a 1 ms granularity and rounds
//! deadlines up, so a 0.15 ms sleep takes ~1.1 ms and a 1 ms one ~2.1 ms (measured on the lab
//! box). That would turn experiment D's 0.3 ms RTT into ~2.3 ms. One OS thread per proxy (not
//! per connection) instead keeps a heap of deadlines and waits on a condition variable, whose
//! timeout is an hrtimer: accurate to the thread's timer slack, which it lowers to 1 ns.
//!
//! Even so, a task resumes some tens of microseconds after its deadline (timer interrupt,
//! then a cross-thread wake-up; more on a VM whose CPUs went idle): measured on the lab VM,
//! ~70 µs per direction, so ~0.14 ms on every round trip, half of the experiment's 0.3 ms. So
//! the clock learns that lateness: it fires `lead` before each deadline and nudges `lead` by
//! `LEAD_STEP` after every wake-up, up when the task resumed late and down when early. That
//! tracks the median lateness, so a chunk is written at its deadline on median, with single
//! writes early by at most `MAX_LEAD`. Ordering is unaffected: each direction's writer still
//! writes its chunks one after another.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// The most a deadline is anticipated; also bounds how early a single write can be.
pub const MAX_LEAD: Duration = Duration::from_micros(250);
/// How far one wake-up moves the lead: ~35 wake-ups to learn 70 µs, small enough not to jitter.
const LEAD_STEP: Duration = Duration::from_micros(2);

#[derive(Clone)]
pub(crate) struct Clock {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// How long before a deadline to fire, in nanoseconds.
    lead: AtomicU64,
}

#[derive(Default)]
struct State {
    queue: BinaryHeap<Reverse<Entry>>,
    /// Tie-breaker so that equal deadlines fire in the order they were scheduled.
    seq: u64,
    stopped: bool,
}

struct Entry {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl Clock {
    pub(crate) fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            lead: AtomicU64::new(0),
        });
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("latency-proxy-clock".into())
            .spawn(move || run(&thread_shared))?;
        Ok(Self { shared })
    }

    /// Completes at `at` on median (see the module doc), or right away once stopped.
    pub(crate) async fn sleep_until(&self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            // Overdue already (a backlog): nothing to wait for, nothing to learn.
            return;
        }
        let lead = Duration::from_nanos(self.shared.lead.load(Ordering::Relaxed));
        let fire = at.checked_sub(lead).unwrap_or(now);
        if fire > now {
            let (wake, woken) = oneshot::channel();
            {
                let mut state = self.shared.lock();
                if state.stopped {
                    return;
                }
                // The thread only needs waking when this becomes the earliest deadline.
                let earliest = state.queue.peek().is_none_or(|Reverse(e)| fire < e.at);
                let seq = state.seq;
                state.seq += 1;
                state.queue.push(Reverse(Entry {
                    at: fire,
                    seq,
                    wake,
                }));
                if earliest {
                    self.shared.changed.notify_one();
                }
            }
            if woken.await.is_err() {
                // The clock stopped and dropped the entry.
                return;
            }
        }
        self.shared.learn(Instant::now() >= at);
    }

    /// Ends the thread; pending and later sleeps complete at once.
    pub(crate) fn stop(&self) {
        self.shared.lock().stopped = true;
        self.shared.changed.notify_one();
    }
}

impl Shared {
    fn learn(&self, late: bool) {
        let step = LEAD_STEP.as_nanos() as u64;
        let max = MAX_LEAD.as_nanos() as u64;
        // Racing updates from several writers may lose a step; the estimate only drifts less.
        let lead = self.lead.load(Ordering::Relaxed);
        let lead = if late {
            (lead + step).min(max)
        } else {
            lead.saturating_sub(step)
        };
        self.lead.store(lead, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; if it did, the heap would still be valid.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn run(shared: &Shared) {
    // The default 50 µs slack would add ~0.1 ms to every round trip. Best effort: any thread
    // may lower its own slack, but not every OS has the notion.
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_timerslack(1) {
        tracing::debug!(%error, "latency proxy: cannot lower the timer slack");
    }
    let mut state = shared.lock();
    loop {
        if state.stopped {
            state.queue.clear();
            return;
        }
        let now = Instant::now();
        match state.queue.peek().map(|Reverse(e)| e.at) {
            None => {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner)
            }
            Some(at) if at <= now => {
                if let Some(Reverse(entry)) = state.queue.pop() {
                    let _ = entry.wake.send(());
                }
            }
            Some(at) => {
                state = shared
                    .changed
                    .wait_timeout(state, at - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signed error of a wake-up, in microseconds: negative is early.
    fn error_us(at: Instant, now: Instant) -> f64 {
        if now >= at {
            (now - at).as_secs_f64() * 1e6
        } else {
            -(at - now).as_secs_f64() * 1e6
        }
    }

    #[tokio::test]
    async fn sleeps_end_on_time_on_median_and_never_too_early() {
        let clock = Clock::start().unwrap();
        let mut errors = Vec::new();
        for i in 0..300 {
            let at = Instant::now() + Duration::from_micros(300);
            clock.sleep_until(at).await;
            let error = error_us(at, Instant::now());
            assert!(error >= -(MAX_LEAD.as_secs_f64() * 1e6), "woke too early");
            // The first wake-ups are spent learning the lead.
            if i >= 100 {
                errors.push(error);
            }
        }
        errors.sort_by(f64::total_cmp);
        let lead = clock.shared.lead.load(Ordering::Relaxed) / 1000;
        eprintln!(
            "clock error for 300 µs sleeps: median {:+.0} µs (p10 {:+.0}, p90 {:+.0}), lead {lead} µs",
            errors[100], errors[20], errors[180]
        );
        assert!(errors[100].abs() < 100.0, "{errors:?}");
        clock.stop();
        // After stop, sleeps no longer wait.
        let start = Instant::now();
        clock.sleep_until(start + Duration::from_secs(5)).await;
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
