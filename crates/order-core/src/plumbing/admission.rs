//! Admission control and deadlines, the same for both APIs: shed early instead of queueing to
//! death.
//!
//! At most `MAX_IN_FLIGHT` orders are admitted at once; a request waits at most
//! `QUEUE_TIMEOUT_MS` for a place, then gets 503 `overloaded` — before authentication,
//! reservation or charge. It does not wait at all when the queue ahead of it cannot drain within
//! half of `QUEUE_TIMEOUT_MS` at the rate places are being given back (`MAX_IN_FLIGHT` ÷ the mean time an
//! order holds its place): under sustained overload a refusal takes microseconds, not the
//! queue timeout. Neither waits when the CPU is saturated: the event loop that received the request
//! then runs the tasks it wakes later than `MAX_LOOP_LAG_MS` (see [`LoopLag`]), and an order
//! admitted now would only slow down those in flight — in reactive-api, whose `MAX_IN_FLIGHT` is
//! a bound on memory far above what one CPU serves, this is the limit that binds while the
//! critical path is short. Where it is long, memory binds first: reactive-api then admits no
//! more orders than its pod's memory holds (`MemoryPlaces`, `ORDER_MEMORY_KIB`). An admitted
//! order carries a [`Ticket`]: its deadline
//! (`REQUEST_DEADLINE_MS` from arrival: work that has not reached the charge by then stops) and
//! whether its client is still there (a client gone before the reservation cancels the work;
//! after it, the work runs to completion so that no reserved key or charge is abandoned).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::error::ApiError;
use crate::plumbing::metrics::Metrics;
use crate::plumbing::settings::CommonSettings;

pub struct Admission {
    /// `None`: no limit (`MAX_IN_FLIGHT=0`, the original experiment's behaviour).
    permits: Option<Arc<Semaphore>>,
    max: usize,
    queue: Arc<Queue>,
    queue_timeout: Duration,
    /// `Duration::ZERO`: no refusal on loop lag.
    max_lag: Duration,
    deadline: Duration,
    /// reactive-api with `MAX_IN_FLIGHT` unset: no more orders than its pod's memory holds.
    memory: Option<MemoryPlaces>,
    metrics: Arc<Metrics>,
}

impl Admission {
    /// `default_max` is the API's own default for an unset `MAX_IN_FLIGHT`.
    pub fn new(settings: &CommonSettings, default_max: usize, metrics: Arc<Metrics>) -> Self {
        let max = settings.max_in_flight.unwrap_or(default_max);
        show_limit(&metrics, max);
        Admission {
            permits: (max > 0).then(|| Arc::new(Semaphore::new(max))),
            max,
            queue: Arc::new(Queue::default()),
            queue_timeout: settings.queue_timeout(),
            max_lag: Duration::from_millis(settings.max_loop_lag_ms),
            deadline: settings.request_deadline(),
            memory: None,
            metrics,
        }
    }

    /// Bounds the orders admitted at once by the pod's memory limit too, at `ORDER_MEMORY_KIB`
    /// (`default_kib` when unset) an order (`MemoryPlaces`) — unless `MAX_IN_FLIGHT` was set,
    /// which is then the operator's count, or the KiB are 0.
    pub fn bounded_by_memory(self, settings: &CommonSettings, default_kib: u64) -> Self {
        let kib = settings.order_memory_kib.unwrap_or(default_kib);
        if settings.max_in_flight.is_none() && kib > 0 {
            let places =
                MemoryPlaces::new(kib * 1024, self.max, crate::plumbing::cgroup::memory_limit);
            return self.with_memory(places);
        }
        self
    }

    /// The places in force from the start: `orders_admission_limit` says them before the first
    /// order (the lab records the gauge as the API's `MAX_IN_FLIGHT`).
    fn with_memory(mut self, memory: MemoryPlaces) -> Self {
        show_limit(&self.metrics, memory.places.load(Ordering::Relaxed));
        self.memory = Some(memory);
        self
    }

    /// Refuses at once while `lag` (the event loop this request arrived on) is more than
    /// `MAX_LOOP_LAG_MS` above what the pod's own throttling explains ([`LoopLag::stall`]), else waits up to `QUEUE_TIMEOUT_MS` for a place. The [`ClientGuard`]
    /// stays with the handler; the [`Ticket`] goes with the work.
    pub async fn admit(&self, lag: &LoopLag) -> Result<(Ticket, ClientGuard), ApiError> {
        let arrived = Instant::now();
        if !self.max_lag.is_zero() && lag.smoothed() > self.max_lag + lag.stall() {
            self.metrics
                .shed
                .with_label_values(&["overloaded_loop_lag"])
                .inc();
            return Err(ApiError::Overloaded);
        }
        if let Some(memory) = &self.memory {
            let places = memory.places(&self.metrics);
            if usize::try_from(self.metrics.admitted.get()).unwrap_or(0) >= places {
                return Err(self.shed(ApiError::Overloaded));
            }
        }
        let permit = match &self.permits {
            None => None,
            Some(permits) => match permits.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    let ahead = self.queue.waiting.load(Ordering::Relaxed);
                    // Half the timeout: a waiter that expects to need all of it times out about
                    // as often as not, and then its refusal took the whole timeout.
                    if self.queue.expected_wait(ahead + 1, self.max) > self.queue_timeout / 2 {
                        return Err(self.shed(ApiError::Overloaded));
                    }
                    let _waiting = Waiting::enter(&self.queue);
                    let wait = permits.clone().acquire_owned();
                    match tokio::time::timeout(self.queue_timeout, wait).await {
                        Ok(Ok(permit)) => Some(permit),
                        // Timed out (or the semaphore closed, which never happens): refuse.
                        _ => return Err(self.shed(ApiError::Overloaded)),
                    }
                }
            },
        };
        self.metrics.admitted.inc();
        let client_gone = Arc::new(AtomicBool::new(false));
        let ticket = Ticket {
            place: permit.map(|permit| (permit, Instant::now(), self.queue.clone())),
            deadline: arrived + self.deadline,
            client_gone: client_gone.clone(),
            metrics: self.metrics.clone(),
        };
        let guard = ClientGuard {
            client_gone,
            answered: false,
        };
        Ok((ticket, guard))
    }

    fn shed(&self, error: ApiError) -> ApiError {
        self.metrics.shed.with_label_values(&[error.code()]).inc();
        error
    }
}

/// The places a pod's memory holds: (its cgroup's memory limit − [`MEMORY_RESERVE`]) ÷ the
/// memory an order in flight takes, at least one and at most `MAX_IN_FLIGHT`'s default; no limit
/// readable, no bound. Why: in reactive-api an order waiting on its dependencies costs memory
/// (its task, its connections' buffers), not a thread, so a long critical path fills the pod's
/// memory long before the CPU — measured in 128 MiB at 22 s, the kernel killed it at 1,500–1,650
/// orders in flight, 4 % above the rate it served, with `MAX_IN_FLIGHT` at 4,096. Read again
/// when a second has passed since the last read (the lab moves an API into its cgroup after it
/// started); `orders_admission_limit` shows the places in force.
struct MemoryPlaces {
    order_bytes: u64,
    max: usize,
    read_limit: fn() -> Option<u64>,
    places: AtomicUsize,
    /// When the limit was last read, ms after `origin`.
    read_at_ms: AtomicU64,
    origin: Instant,
    /// How long a read holds: a second.
    every: Duration,
}

/// What a process takes before its first order, left out of the places: reactive-api's RSS
/// with none in flight was 17–23 MiB in the lab's pods.
pub const MEMORY_RESERVE: u64 = 24 << 20;

impl MemoryPlaces {
    /// Reads the limit at once.
    fn new(order_bytes: u64, max: usize, read_limit: fn() -> Option<u64>) -> Self {
        MemoryPlaces {
            order_bytes,
            max,
            read_limit,
            places: AtomicUsize::new(places_within(read_limit(), order_bytes, max)),
            read_at_ms: AtomicU64::new(0),
            origin: Instant::now(),
            every: Duration::from_secs(1),
        }
    }

    /// The places now, the limit read again if a second has passed since the last read.
    fn places(&self, metrics: &Metrics) -> usize {
        let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.read_at_ms.load(Ordering::Relaxed);
        let every = u64::try_from(self.every.as_millis()).unwrap_or(u64::MAX);
        let due = now.saturating_sub(last) >= every;
        if due
            && self
                .read_at_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let places = places_within((self.read_limit)(), self.order_bytes, self.max);
            self.places.store(places, Ordering::Relaxed);
            show_limit(metrics, places);
        }
        self.places.load(Ordering::Relaxed)
    }
}

/// `orders_admission_limit`: the orders admitted at once now.
fn show_limit(metrics: &Metrics, places: usize) {
    metrics
        .admission_limit
        .set(i64::try_from(places).unwrap_or(i64::MAX));
}

/// (`limit` − [`MEMORY_RESERVE`]) ÷ `order_bytes`, between 1 and `max`; `max` without a limit.
pub fn places_within(limit: Option<u64>, order_bytes: u64, max: usize) -> usize {
    let Some(limit) = limit else { return max };
    let places = limit.saturating_sub(MEMORY_RESERVE) / order_bytes.max(1);
    usize::try_from(places)
        .unwrap_or(usize::MAX)
        .clamp(1, max.max(1))
}

/// How late an event loop runs the tasks it wakes: a probe task on the loop sleeps one tick and
/// measures how much later than asked it runs again, smoothed (weight 1/8, so that one
/// descheduling of the process on a shared machine does not read as saturation). On an idle
/// loop that is the timer's granularity, under 1 ms; when the CPU is saturated, every woken task
/// waits behind all the others that are ready, and so does the probe.
///
/// In a pod with a CPU quota below its CFS period the probe also meets the pod's own stalls: at
/// 0.125 CPU and a 10 ms period every thread may wait up to 9.4 ms for the next period while the
/// CPU is, on average, far from spent (measured: reactive-api refused at 209/s with a flat 5 ms
/// threshold and served 351/s without it, every step 100 % 2xx). The probe therefore also keeps
/// that stall ([`crate::plumbing::throttling::cfs_stall`], read again every second since the lab
/// moves an API into its cgroup after it started), and admission refuses only on lateness above
/// it: queueing for the CPU, not the quota's rhythm.
#[derive(Debug, Default)]
pub struct LoopLag {
    smoothed_us: AtomicU64,
    stall_us: AtomicU64,
}

impl LoopLag {
    const TICK: Duration = Duration::from_millis(10);
    /// Ticks between two reads of the cgroup's quota (one second).
    const STALL_EVERY: u32 = 100;

    /// Starts a probe on the current Tokio runtime — call it on the event loop to watch (each
    /// actix worker builds its app on its own loop). The probe stops with the runtime or once
    /// the returned handle is dropped.
    pub fn spawn(metrics: Arc<Metrics>) -> Arc<LoopLag> {
        let lag = Arc::new(LoopLag::default());
        lag.set_stall(crate::plumbing::throttling::cfs_stall(), &metrics);
        tokio::spawn(Self::probe(Arc::downgrade(&lag), metrics));
        lag
    }

    async fn probe(lag: Weak<LoopLag>, metrics: Arc<Metrics>) {
        for tick in 1u32.. {
            let asked = Instant::now();
            tokio::time::sleep(Self::TICK).await;
            let late = asked.elapsed().saturating_sub(Self::TICK);
            let Some(lag) = lag.upgrade() else { return };
            lag.record(late);
            metrics.loop_lag.set(lag.smoothed().as_secs_f64());
            if tick % Self::STALL_EVERY == 0 {
                lag.set_stall(crate::plumbing::throttling::cfs_stall(), &metrics);
            }
        }
    }

    fn set_stall(&self, stall: Duration, metrics: &Metrics) {
        let us = u64::try_from(stall.as_micros()).unwrap_or(u64::MAX);
        self.stall_us.store(us, Ordering::Relaxed);
        metrics.loop_lag_stall.set(stall.as_secs_f64());
    }

    fn record(&self, late: Duration) {
        let sample = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        let old = self.smoothed_us.load(Ordering::Relaxed);
        self.smoothed_us
            .store(moving_average(old, sample, 8), Ordering::Relaxed);
    }

    /// The smoothed lateness (zero for a loop without a probe).
    pub fn smoothed(&self) -> Duration {
        Duration::from_micros(self.smoothed_us.load(Ordering::Relaxed))
    }

    /// The lateness the pod's CFS quota explains (zero without a quota or a probe).
    pub fn stall(&self) -> Duration {
        Duration::from_micros(self.stall_us.load(Ordering::Relaxed))
    }
}

/// The wait for a place: how many wait now, and how long an order holds its place (a moving
/// average, µs; 0 until the first order gave its place back).
#[derive(Default)]
struct Queue {
    waiting: AtomicUsize,
    mean_hold_us: AtomicU64,
}

impl Queue {
    /// How long the `position`-th waiter should expect to wait for one of `max` places; zero while
    /// nothing is known yet (then it waits up to the queue timeout).
    fn expected_wait(&self, position: usize, max: usize) -> Duration {
        let hold = self.mean_hold_us.load(Ordering::Relaxed);
        Duration::from_micros(hold.saturating_mul(position as u64) / max.max(1) as u64)
    }

    /// Folds one order's holding time into the average (weight 1/16; a lost race between two
    /// updates only drops a sample).
    fn record_hold(&self, held: Duration) {
        let sample = u64::try_from(held.as_micros()).unwrap_or(u64::MAX);
        let old = self.mean_hold_us.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            moving_average(old, sample, 16)
        };
        self.mean_hold_us.store(new, Ordering::Relaxed);
    }
}

/// `old` moved towards `sample` by 1/`weight` of the difference (integer, never overflows).
fn moving_average(old: u64, sample: u64, weight: u64) -> u64 {
    old - old / weight + sample / weight
}

/// Counts a request among the waiters for as long as it waits (also when its handler is dropped).
struct Waiting<'a>(&'a Queue);

impl<'a> Waiting<'a> {
    fn enter(queue: &'a Queue) -> Self {
        queue.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(queue)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An admitted order's place, deadline and client; the place is given back when it is dropped.
pub struct Ticket {
    /// The place (none without a limit), when it was taken, and the queue to tell how long it was
    /// held.
    place: Option<(OwnedSemaphorePermit, Instant, Arc<Queue>)>,
    deadline: Instant,
    client_gone: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
}

impl Ticket {
    /// Before work that precedes the charge: stop if the deadline has passed.
    pub fn check_deadline(&self) -> Result<(), ApiError> {
        if Instant::now() >= self.deadline {
            return Err(self.shed(ApiError::DeadlineExceeded));
        }
        Ok(())
    }

    /// Just before the key is reserved: the last point where the work may simply stop.
    pub fn before_reservation(&self) -> Result<(), ApiError> {
        if self.client_gone.load(Ordering::Acquire) {
            return Err(self.shed(ApiError::ClientGone));
        }
        self.check_deadline()
    }

    /// A failed call made before the charge whose timeout the deadline cut short is reported as
    /// the deadline, not as the dependency.
    pub fn explain(&self, error: ApiError) -> ApiError {
        match error {
            ApiError::DependencyUnavailable { .. } if Instant::now() >= self.deadline => {
                self.shed(ApiError::DeadlineExceeded)
            }
            other => other,
        }
    }

    /// The timeout of a call made before the charge: `cap`, or less if the deadline is nearer.
    pub fn timeout(&self, cap: Duration) -> Duration {
        cap.min(self.deadline.saturating_duration_since(Instant::now()))
    }

    fn shed(&self, error: ApiError) -> ApiError {
        self.metrics.shed.with_label_values(&[error.code()]).inc();
        error
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.metrics.admitted.dec();
        if let Some((_permit, since, queue)) = &self.place {
            queue.record_hold(since.elapsed());
        }
    }
}

/// Held by the handler while the work runs: dropped unanswered (actix drops a handler whose client
/// disconnected), it tells the work that nobody waits for it any more.
pub struct ClientGuard {
    client_gone: Arc<AtomicBool>,
    answered: bool,
}

impl ClientGuard {
    /// The work finished and its answer is on its way.
    pub fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        if !self.answered {
            self.client_gone.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop without a probe: no lag.
    static IDLE: LoopLag = LoopLag {
        smoothed_us: AtomicU64::new(0),
        stall_us: AtomicU64::new(0),
    };

    /// A loop whose probe read `late_ms` in a pod whose quota explains stalls of `stall_ms`.
    fn lagging(late_ms: u64, stall_ms: u64) -> LoopLag {
        LoopLag {
            smoothed_us: AtomicU64::new(late_ms * 1000),
            stall_us: AtomicU64::new(stall_ms * 1000),
        }
    }

    /// `a` refuses the next order `overloaded` within `within`: at once, not after waiting.
    async fn refused_within(a: &Admission, lag: &LoopLag, within: Duration) {
        let start = Instant::now();
        assert!(matches!(
            a.admit(lag).await.err(),
            Some(ApiError::Overloaded)
        ));
        assert!(
            start.elapsed() < within,
            "refused without waiting out the queue timeout: {:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn lateness_the_pods_own_throttling_explains_is_not_refused() {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.max_loop_lag_ms = 5;
        let a = Admission::new(&s, 1000, Arc::new(Metrics::new(1, None)));
        // 0.125 CPU, 10 ms period: stalls up to 9.4 ms are the quota's rhythm.
        assert!(a.admit(&lagging(9, 9)).await.is_ok(), "within the stall");
        assert!(a.admit(&lagging(13, 9)).await.is_ok(), "4 ms above it");
        assert!(matches!(
            a.admit(&lagging(15, 9)).await.err(),
            Some(ApiError::Overloaded)
        ));
        // Without a quota the threshold is MAX_LOOP_LAG_MS alone, as before.
        assert!(a.admit(&lagging(6, 0)).await.is_err(), "no quota: 6 > 5 ms");
    }

    #[tokio::test]
    async fn without_max_in_flight_the_pods_memory_bounds_the_orders_admitted_at_once() {
        const MIB: u64 = 1 << 20;
        // The pod's limit as the cgroup says it; the lab changes it by moving the process.
        static LIMIT: AtomicU64 = AtomicU64::new(MEMORY_RESERVE + 3 * MIB + 5);
        let metrics = Arc::new(Metrics::new(1, None));
        let s = CommonSettings::new("postgres://x", "http://y");
        // A pod holding 3 orders of 1 MiB above the reserve, read again at every admission.
        let mut places = MemoryPlaces::new(MIB, 1000, || Some(LIMIT.load(Ordering::Relaxed)));
        places.every = Duration::ZERO;
        let a = Admission::new(&s, 1000, metrics.clone()).with_memory(places);
        assert_eq!(
            metrics.admission_limit.get(),
            3,
            "the places in force before the first order"
        );
        let mut tickets = Vec::new();
        for _ in 0..3 {
            tickets.push(a.admit(&IDLE).await.expect("within the memory's places"));
        }
        refused_within(&a, &IDLE, Duration::from_millis(50)).await;
        assert!(
            a.metrics
                .render()
                .contains(r#"orders_shed_total{reason="overloaded"} 1"#)
        );
        tickets.pop();
        tickets.push(a.admit(&IDLE).await.expect("a place given back is taken"));
        // Moved into a pod with room for 5: two more.
        LIMIT.store(MEMORY_RESERVE + 5 * MIB, Ordering::Relaxed);
        tickets.push(a.admit(&IDLE).await.expect("a fourth place"));
        tickets.push(a.admit(&IDLE).await.expect("a fifth place"));
        assert!(a.admit(&IDLE).await.is_err(), "no sixth");
        assert_eq!(metrics.admission_limit.get(), 5);

        // MAX_IN_FLIGHT set is the operator's count; ORDER_MEMORY_KIB=0 turns the bound off.
        let mut explicit = s.clone();
        explicit.max_in_flight = Some(10);
        assert!(
            Admission::new(&explicit, 1000, metrics.clone())
                .bounded_by_memory(&explicit, 100)
                .memory
                .is_none()
        );
        let mut off = s.clone();
        off.order_memory_kib = Some(0);
        assert!(
            Admission::new(&off, 1000, metrics.clone())
                .bounded_by_memory(&off, 100)
                .memory
                .is_none()
        );
    }

    #[test]
    fn the_places_are_the_limit_less_the_reserve_over_an_orders_memory() {
        // reactive-api's default in the lab's 128 MiB pod: 104 MiB ÷ 100 KiB.
        assert_eq!(places_within(Some(128 << 20), 100 << 10, 4096), 1064);
        assert_eq!(
            places_within(Some(1 << 30), 100 << 10, 4096),
            4096,
            "at most the max"
        );
        assert_eq!(
            places_within(Some(16 << 20), 100 << 10, 4096),
            1,
            "at least one"
        );
        assert_eq!(
            places_within(None, 100 << 10, 4096),
            4096,
            "no limit read: no bound"
        );
    }

    fn admission(max: usize, queue_ms: u64, deadline_ms: u64) -> Admission {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.max_in_flight = Some(max);
        s.queue_timeout_ms = queue_ms;
        s.request_deadline_ms = deadline_ms;
        Admission::new(&s, 1, Arc::new(Metrics::new(1, None)))
    }

    #[tokio::test]
    async fn beyond_the_limit_is_overloaded_after_the_queue_timeout() {
        let a = admission(1, 20, 30_000);
        let first = a.admit(&IDLE).await.unwrap();
        let start = Instant::now();
        let err = a.admit(&IDLE).await.err().unwrap();
        assert!(matches!(err, ApiError::Overloaded));
        assert!(start.elapsed() >= Duration::from_millis(20));
        drop(first);
        assert!(a.admit(&IDLE).await.is_ok(), "the place is given back");
        assert!(
            a.metrics
                .render()
                .contains(r#"orders_shed_total{reason="overloaded"} 1"#)
        );
    }

    #[tokio::test]
    async fn a_queue_that_cannot_drain_in_time_is_refused_at_once() {
        let a = admission(2, 100, 30_000);
        let held = (a.admit(&IDLE).await.unwrap(), a.admit(&IDLE).await.unwrap());
        // Orders have been holding their place for 1 s each: with 2 places, the first waiter
        // would wait ~0.5 s, more than the 100 ms queue timeout.
        a.queue.record_hold(Duration::from_secs(1));
        refused_within(&a, &IDLE, Duration::from_millis(50)).await;
        // Orders that hold their place 80 ms: a waiter expects 40 ms and does wait for a place.
        a.queue.mean_hold_us.store(0, Ordering::Relaxed);
        a.queue.record_hold(Duration::from_millis(80));
        let waiter = a.admit(&IDLE);
        let release = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(held);
        };
        let (admitted, ()) = tokio::join!(waiter, release);
        assert!(admitted.is_ok(), "admitted once a place came back");
        assert_eq!(a.queue.waiting.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_hold_time_is_a_moving_average() {
        let q = Queue::default();
        assert_eq!(q.expected_wait(10, 2), Duration::ZERO, "nothing known yet");
        q.record_hold(Duration::from_millis(1600));
        assert_eq!(q.expected_wait(1, 2), Duration::from_millis(800));
        q.record_hold(Duration::ZERO);
        assert_eq!(q.mean_hold_us.load(Ordering::Relaxed), 1_500_000);
    }

    #[tokio::test]
    async fn zero_means_no_limit() {
        let a = admission(0, 1, 30_000);
        let held: Vec<_> = futures_util::future::join_all((0..100).map(|_| a.admit(&IDLE))).await;
        assert!(held.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn a_gone_client_stops_the_work_before_the_reservation_only() {
        let a = admission(2, 1, 30_000);
        let (ticket, guard) = a.admit(&IDLE).await.unwrap();
        assert!(ticket.before_reservation().is_ok());
        drop(guard); // the handler was dropped: the client disconnected
        assert!(matches!(
            ticket.before_reservation(),
            Err(ApiError::ClientGone)
        ));
        assert!(
            ticket.check_deadline().is_ok(),
            "past the reservation, work goes on"
        );
        let (answered, guard) = a.admit(&IDLE).await.unwrap();
        guard.answered();
        assert!(answered.before_reservation().is_ok());
    }

    #[tokio::test]
    async fn the_deadline_counts_from_arrival() {
        let a = admission(1, 1, 0);
        let (ticket, guard) = a.admit(&IDLE).await.unwrap();
        assert!(matches!(
            ticket.check_deadline(),
            Err(ApiError::DeadlineExceeded)
        ));
        assert_eq!(ticket.timeout(Duration::from_secs(10)), Duration::ZERO);
        guard.answered();
    }

    #[test]
    fn a_saturated_loop_refuses_at_once_and_admits_again_when_it_recovers() {
        // A current-thread runtime, as an actix worker's; tasks that hog it stand in for orders
        // that keep its only CPU busy.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut s = CommonSettings::new("postgres://x", "http://y");
            s.max_loop_lag_ms = 20;
            let metrics = Arc::new(Metrics::new(1, None));
            let a = Admission::new(&s, 1000, metrics.clone());
            let lag = LoopLag::spawn(metrics.clone());
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(lag.smoothed() < Duration::from_millis(20), "{lag:?}");
            assert!(a.admit(&lag).await.is_ok(), "an idle loop admits");

            let hog = tokio::spawn(async {
                loop {
                    std::thread::sleep(Duration::from_millis(60));
                    tokio::task::yield_now().await;
                }
            });
            // Each probe tick now waits ~60 ms behind the hog: after a few, the smoothed lag
            // is past 20 ms.
            tokio::time::sleep(Duration::from_millis(600)).await;
            assert!(lag.smoothed() > Duration::from_millis(20), "{lag:?}");
            refused_within(&a, &lag, Duration::from_millis(5)).await;
            assert!(
                metrics
                    .render()
                    .contains(r#"orders_shed_total{reason="overloaded_loop_lag"} 1"#)
            );

            hog.abort();
            tokio::time::sleep(Duration::from_millis(600)).await;
            assert!(lag.smoothed() < Duration::from_millis(20), "{lag:?}");
            assert!(
                a.admit(&lag).await.is_ok(),
                "admits again once it recovered"
            );

            // MAX_LOOP_LAG_MS=0: lag never refuses.
            s.max_loop_lag_ms = 0;
            let unlimited = Admission::new(&s, 1000, metrics.clone());
            lag.record(Duration::from_secs(10));
            assert!(unlimited.admit(&lag).await.is_ok());
        });
    }
}
