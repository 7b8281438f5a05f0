//! Prometheus metrics with the same names in both APIs (see docs/lab-interfaces.md).
//!
//! Pool gauges are refreshed when `/metrics` is scraped; waiting-for-a-connection, acquire time
//! and timeouts are measured around every acquire by the APIs' `db` modules, because neither
//! r2d2 nor sqlx reports its waiters.

use std::time::Instant;

use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

/// Latency buckets from 1 ms to 60 s: the lab's latencies span both ends.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0,
    7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
    pub in_flight: IntGauge,
    pub db_pool_max: IntGauge,
    pub db_pool_in_use: IntGauge,
    pub db_pool_idle: IntGauge,
    pub db_pool_waiting: IntGauge,
    pub db_acquire_timeouts: IntCounter,
    pub db_acquire_seconds: Histogram,
    pub db_tx_seconds: HistogramVec,
    pub dep_seconds: HistogramVec,
    /// Dependency answers refused (`order_core::domain::deps::answer`), by dependency and reason.
    pub dep_answers_refused: IntCounterVec,
    /// Passes of the recovery loop, and what it did to each key it settled.
    pub recovery_passes: IntCounter,
    pub recovery_actions: IntCounterVec,
    /// Keys in `CHARGING` that recovery has put off at least once (the gateway or the database
    /// failing, or a key a person must look at), as of the last pass.
    pub recovery_deferred_keys: IntGauge,
    /// Of those, the keys whose pending order a release could not read (a newer release's),
    /// left for a release that can.
    pub recovery_unreadable_deferred: IntGauge,
    /// Rows the retention sweep dropped, by kind (`order_core::domain::retention::Swept`).
    pub retention_swept: IntCounterVec,
    /// Persist attempts repeated on a fresh connection after a database failure.
    pub persist_retries: IntCounter,
    /// Admission control: the limit, the orders admitted now, and those refused or stopped.
    pub admission_limit: IntGauge,
    pub admitted: IntGauge,
    pub shed: IntCounterVec,
    /// Reads refused by their own admission (`read_admission`), by reason.
    pub reads_refused: IntCounterVec,
    /// How late the event loop runs the tasks it wakes (smoothed; see `admission::LoopLag`).
    pub loop_lag: Gauge,
    /// The part of that lateness the pod's own CFS throttling explains (`throttling::cfs_stall`):
    /// the loop-lag rule refuses only above it.
    pub loop_lag_stall: Gauge,
    /// The client connection cap (`MAX_CONNECTIONS`, `connection_cap`), and the connections
    /// above it whose requests were refused.
    pub connections_limit: IntGauge,
    pub connections_refused: IntCounter,
    pub blocking: Option<BlockingPoolMetrics>,
    /// The order events (`EVENTS_MODE`, `order_core::plumbing::events`).
    pub events: crate::plumbing::events::EventMetrics,
    /// The cgroup's CPU throttling, read at each scrape.
    pub cpu_throttling: crate::plumbing::throttling::CpuThrottling,
}

/// blocking-api only: the bounded pool every order request runs on.
pub struct BlockingPoolMetrics {
    pub threads: IntGauge,
    pub busy: IntGauge,
    pub queued: IntGauge,
}

/// `api_allocator_info{allocator="…"} 1`: the global allocator the binary was built with. It is
/// part of the execution model (a thread-per-request service holds an allocator's per-thread
/// caches once per thread), so the lab reads it from the API instead of assuming it.
pub fn allocator_info(allocator: &str) -> Box<dyn prometheus::core::Collector> {
    let info = prometheus::IntGaugeVec::new(
        Opts::new("api_allocator_info", "The global allocator of this build"),
        &["allocator"],
    )
    .expect("a valid metric");
    info.with_label_values(&[allocator]).set(1);
    Box::new(info)
}

impl Metrics {
    /// Registers a collector of another module (e.g. the persist batch writer's).
    pub fn register(&self, collector: Box<dyn prometheus::core::Collector>) {
        self.registry
            .register(collector)
            .expect("metric names are unique");
    }

    /// `blocking_threads` is `Some(max threads)` for blocking-api, `None` for reactive-api.
    pub fn new(pool_size: u32, blocking_threads: Option<usize>) -> Self {
        let registry = Registry::new();
        let reg = |c: Box<dyn prometheus::core::Collector>| {
            registry.register(c).expect("metric names are unique");
        };
        let http_requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests by route, method and status",
            ),
            &["route", "method", "status"],
        )
        .unwrap();
        let http_duration = HistogramVec::new(
            HistogramOpts::new("http_request_duration_seconds", "Time to the response head")
                .buckets(LATENCY_BUCKETS.to_vec()),
            &["route", "method"],
        )
        .unwrap();
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).unwrap();
        let in_flight = gauge("http_requests_in_flight", "Requests being handled");
        let db_pool_max = gauge("db_pool_max_connections", "Configured pool size");
        let db_pool_in_use = gauge("db_pool_connections_in_use", "Connections checked out");
        let db_pool_idle = gauge("db_pool_connections_idle", "Open connections not in use");
        let db_pool_waiting = gauge("db_pool_waiting", "Requests waiting for a connection");
        let db_acquire_timeouts = IntCounter::new(
            "db_pool_acquire_timeouts_total",
            "Acquires that gave up after DB_POOL_TIMEOUT_MS",
        )
        .unwrap();
        let db_acquire_seconds = Histogram::with_opts(
            HistogramOpts::new("db_pool_acquire_duration_seconds", "Wait for a connection")
                .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .unwrap();
        let db_tx_seconds = HistogramVec::new(
            HistogramOpts::new(
                "db_transaction_duration_seconds",
                "Connection held, by purpose",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["kind"],
        )
        .unwrap();
        let dep_seconds = HistogramVec::new(
            HistogramOpts::new(
                "dependency_request_duration_seconds",
                "Calls to dependencies",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["dependency", "outcome"],
        )
        .unwrap();
        let dep_answers_refused = IntCounterVec::new(
            Opts::new(
                "dependency_answers_refused_total",
                "Dependency answers refused: too_large (over DEPS_ANSWER_MAX_BYTES), cut_short, \
                 timed_out (not whole within the call's timeout), malformed, content_type",
            ),
            &["dependency", "reason"],
        )
        .unwrap();
        let recovery_passes = IntCounter::new(
            "recovery_passes_total",
            "Passes of the loop that settles keys left in CHARGING",
        )
        .unwrap();
        let recovery_actions = IntCounterVec::new(
            Opts::new(
                "recovery_actions_total",
                "Keys settled by recovery: completed, declined, released, voided, deferred, superseded",
            ),
            &["action"],
        )
        .unwrap();
        let recovery_deferred_keys = IntGauge::new(
            "recovery_deferred_keys",
            "Keys in CHARGING that recovery has put off at least once, as of its last pass",
        )
        .unwrap();
        let recovery_unreadable_deferred = IntGauge::new(
            "recovery_unreadable_deferred",
            "Keys in CHARGING whose pending order a release could not read (a field it does not \
             know, or one it misses), left charged for a release that can, as of the last pass",
        )
        .unwrap();
        let retention_swept = IntCounterVec::new(
            Opts::new(
                "retention_swept_total",
                "Rows the retention sweep dropped: key_responses (stored order documents of keys \
                 past KEY_RETENTION_DAYS), outbox_events (sent events past OUTBOX_RETENTION_HOURS)",
            ),
            &["kind"],
        )
        .unwrap();
        let persist_retries = IntCounter::new(
            "persist_retries_total",
            "Persists retried on a fresh connection after a database failure",
        )
        .unwrap();
        let admission_limit = gauge(
            "orders_admission_limit",
            "Orders admitted at once: MAX_IN_FLIGHT, or fewer where the pod's memory holds fewer (ORDER_MEMORY_KIB); 0: no limit",
        );
        let admitted = gauge(
            "orders_admitted_in_flight",
            "Orders admitted and not finished",
        );
        let shed = IntCounterVec::new(
            Opts::new(
                "orders_shed_total",
                "Orders refused or stopped before the charge: overloaded (no place in time), \
                 overloaded_loop_lag (the CPU is saturated), deadline_exceeded, \
                 client_closed_request",
            ),
            &["reason"],
        )
        .unwrap();
        let reads_refused = IntCounterVec::new(
            Opts::new(
                "reads_refused_total",
                "Reads (GET /orders/{id}) refused 503 overloaded by their own admission: \
                 queue_full (READ_QUEUE waiting already), queue_timeout (no place within \
                 QUEUE_TIMEOUT_MS)",
            ),
            &["reason"],
        )
        .unwrap();
        let loop_lag = Gauge::new(
            "event_loop_lag_seconds",
            "How late the event loop runs a task it woke, smoothed (refused above \
             event_loop_stall_seconds + MAX_LOOP_LAG_MS)",
        )
        .unwrap();
        let loop_lag_stall = Gauge::new(
            "event_loop_stall_seconds",
            "The longest stall of a period the pod's CPU quota explains (period - quota / CPUs)",
        )
        .unwrap();
        let connections_limit = gauge(
            "http_connections_limit",
            "MAX_CONNECTIONS: client connections held at once",
        );
        let connections_refused = IntCounter::new(
            "http_connections_refused_total",
            "Requests answered 503 too_many_connections on a connection above MAX_CONNECTIONS",
        )
        .unwrap();
        db_pool_max.set(i64::from(pool_size));
        reg(Box::new(http_requests.clone()));
        reg(Box::new(http_duration.clone()));
        for g in [
            &in_flight,
            &db_pool_max,
            &db_pool_in_use,
            &db_pool_idle,
            &db_pool_waiting,
        ] {
            reg(Box::new(g.clone()));
        }
        reg(Box::new(db_acquire_timeouts.clone()));
        reg(Box::new(db_acquire_seconds.clone()));
        reg(Box::new(db_tx_seconds.clone()));
        reg(Box::new(dep_seconds.clone()));
        reg(Box::new(dep_answers_refused.clone()));
        reg(Box::new(recovery_passes.clone()));
        reg(Box::new(recovery_actions.clone()));
        reg(Box::new(recovery_deferred_keys.clone()));
        reg(Box::new(recovery_unreadable_deferred.clone()));
        reg(Box::new(retention_swept.clone()));
        reg(Box::new(persist_retries.clone()));
        reg(Box::new(admission_limit.clone()));
        reg(Box::new(admitted.clone()));
        reg(Box::new(shed.clone()));
        reg(Box::new(reads_refused.clone()));
        reg(Box::new(loop_lag.clone()));
        reg(Box::new(loop_lag_stall.clone()));
        reg(Box::new(connections_limit.clone()));
        reg(Box::new(connections_refused.clone()));
        let blocking = blocking_threads.map(|max| {
            let b = BlockingPoolMetrics {
                threads: gauge("blocking_pool_threads", "Maximum blocking threads"),
                busy: gauge("blocking_pool_busy", "Blocking threads running a request"),
                queued: gauge(
                    "blocking_pool_queued",
                    "Requests waiting for a blocking thread",
                ),
            };
            b.threads.set(max as i64);
            for g in [&b.threads, &b.busy, &b.queued] {
                reg(Box::new(g.clone()));
            }
            b
        });
        let events = crate::plumbing::events::EventMetrics::new(&registry, LATENCY_BUCKETS);
        let cpu_throttling = crate::plumbing::throttling::CpuThrottling::new();
        cpu_throttling.collectors().into_iter().for_each(reg);
        Metrics {
            events,
            cpu_throttling,
            registry,
            http_requests,
            http_duration,
            in_flight,
            db_pool_max,
            db_pool_in_use,
            db_pool_idle,
            db_pool_waiting,
            db_acquire_timeouts,
            db_acquire_seconds,
            db_tx_seconds,
            dep_seconds,
            dep_answers_refused,
            recovery_passes,
            recovery_actions,
            recovery_deferred_keys,
            recovery_unreadable_deferred,
            retention_swept,
            persist_retries,
            admission_limit,
            admitted,
            shed,
            reads_refused,
            loop_lag,
            loop_lag_stall,
            connections_limit,
            connections_refused,
            blocking,
        }
    }

    /// Refreshes the pool gauges from the pool's own view: `open` connections, `idle` of them.
    pub fn set_pool(&self, open: u32, idle: u32) {
        self.db_pool_idle.set(i64::from(idle));
        self.db_pool_in_use
            .set(i64::from(open.saturating_sub(idle)));
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        self.cpu_throttling.refresh();
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_default()
    }

    /// Starts timing a connection acquire; counts the caller as waiting until it finishes.
    pub fn start_acquire(&self) -> AcquireTimer<'_> {
        self.db_pool_waiting.inc();
        AcquireTimer {
            metrics: self,
            start: Instant::now(),
            done: false,
        }
    }

    pub fn observe_dependency(&self, dependency: &str, ok: bool, start: Instant) {
        let outcome = if ok { "ok" } else { "error" };
        self.dep_seconds
            .with_label_values(&[dependency, outcome])
            .observe(start.elapsed().as_secs_f64());
    }

    /// Times how long a connection is held for one purpose (reserve, persist, request).
    pub fn tx_timer(&self, kind: &str) -> prometheus::HistogramTimer {
        self.db_tx_seconds.with_label_values(&[kind]).start_timer()
    }
}

/// Dropped without [`AcquireTimer::finish`] (a cancelled future), it still stops counting the
/// waiter, so the gauge cannot drift.
pub struct AcquireTimer<'a> {
    metrics: &'a Metrics,
    start: Instant,
    done: bool,
}

impl AcquireTimer<'_> {
    pub fn finish(mut self, timed_out: bool) {
        self.done = true;
        self.metrics.db_pool_waiting.dec();
        self.metrics
            .db_acquire_seconds
            .observe(self.start.elapsed().as_secs_f64());
        if timed_out {
            self.metrics.db_acquire_timeouts.inc();
        }
    }
}

impl Drop for AcquireTimer<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.metrics.db_pool_waiting.dec();
        }
    }
}
