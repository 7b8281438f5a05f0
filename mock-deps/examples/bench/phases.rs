//! The two measurements. Every figure printed comes from a counter named next to it: request
//! counts and latencies from this generator's own clock, memory and CPU from `/proc/<mock pid>`,
//! in-flight counts and charges from the mock's `/admin/stats` and `/admin/ledger`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use order_core::domain::deps::{PAY_PATH, RISK_PATH};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::raw_http::{Conn, SourcePorts, post_json};
use crate::{Mock, proc_readings};

/// An auto-resizing histogram of µs with 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

pub struct Throughput {
    connections: usize,
    requests: usize,
    non_200: usize,
    secs: f64,
    /// Latencies in µs, 3 significant digits (the lab's own histograms' precision).
    latency_us: Histogram<u64>,
    mock_cpu: f64,
    generator_cpu: f64,
}

/// Closed loop: each connection sends its next request as soon as the previous answer is in.
/// Requests started during `warmup` are not counted.
pub async fn throughput(
    mock: &Mock,
    connections: usize,
    warmup: Duration,
    measure: Duration,
) -> anyhow::Result<Throughput> {
    mock.put_config(json!({"risk": {"latency_ms": 0, "jitter_ms": 0}}))
        .await?;
    let body =
        r#"{"seller_id":"shop-1","reference_id":"ref-1","amount":15000,"tax_id":"12345678901"}"#;
    let request: Arc<[u8]> = post_json(RISK_PATH, &[], body, false).into();
    let start = Instant::now() + warmup;
    let end = start + measure;
    let mut tasks = JoinSet::new();
    for _ in 0..connections {
        let (request, addr) = (Arc::clone(&request), mock.addr);
        tasks.spawn(async move {
            let mut conn = Conn::connect(addr).await?;
            let (mut latencies, mut non_200) = (new_histogram(), 0);
            loop {
                let sent = Instant::now();
                if sent >= end {
                    return Ok::<_, std::io::Error>((latencies, non_200));
                }
                let status = conn.send(&request).await?;
                if sent >= start {
                    latencies
                        .saturating_record(sent.elapsed().as_micros().min(u64::MAX as u128) as u64);
                    non_200 += usize::from(status != 200);
                }
            }
        });
    }
    tokio::time::sleep_until(start.into()).await;
    let (cpu0, gen0, t0) = (
        mock.cpu_seconds(),
        proc_readings::cpu_seconds(None),
        Instant::now(),
    );
    tokio::time::sleep_until(end.into()).await;
    let (cpu1, gen1, secs) = (
        mock.cpu_seconds(),
        proc_readings::cpu_seconds(None),
        t0.elapsed().as_secs_f64(),
    );
    let mut latency_us = new_histogram();
    let mut non_200 = 0;
    for result in tasks.join_all().await {
        let (latencies, bad) = result?;
        latency_us.add(&latencies)?;
        non_200 += bad;
    }
    Ok(Throughput {
        connections,
        requests: latency_us.len() as usize,
        non_200,
        secs,
        latency_us,
        mock_cpu: cpu1 - cpu0,
        generator_cpu: gen1 - gen0,
    })
}

impl Throughput {
    /// The latency at quantile `p` (1.0: the maximum), ms; NaN when nothing was measured.
    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latency_us.is_empty() {
            return f64::NAN;
        }
        self.latency_us.value_at_quantile(p) as f64 / 1000.0
    }

    pub fn print(&self) {
        println!(
            "\n[1] throughput: POST /risk-analysis/validate, latency 0, {} keep-alive connections, {:.1} s",
            self.connections, self.secs
        );
        println!(
            "    requests: {} ({} non-200) -> {:.0} req/s",
            self.requests,
            self.non_200,
            self.requests as f64 / self.secs
        );
        println!(
            "    latency: p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, max {:.3} ms",
            self.percentile_ms(0.50),
            self.percentile_ms(0.99),
            self.percentile_ms(0.999),
            self.percentile_ms(1.0)
        );
        println!(
            "    CPU over the window: mock {:.2} s ({:.0}% of one core), generator {:.2} s ({:.0}%)",
            self.mock_cpu,
            100.0 * self.mock_cpu / self.secs,
            self.generator_cpu,
            100.0 * self.generator_cpu / self.secs
        );
        println!(
            "    -> {:.0} requests per CPU-second of the mock (requests / mock CPU time)",
            self.requests as f64 / self.mock_cpu
        );
    }
}

pub struct Held {
    target: usize,
    latency: Duration,
    peak_in_flight: u64,
    secs_to_peak: f64,
    secs_to_written: Option<f64>,
    source_ports: (u16, u16),
    rss_before_kib: u64,
    rss_peak_kib: u64,
    rss_after_kib: u64,
    hwm_kib: u64,
    ok: usize,
    other: usize,
    errors: usize,
    first_error: Option<String>,
    ledger: mock_deps::Ledger,
    mock_cpu: f64,
    secs: f64,
}

/// Opens `target` connections, each sending one `POST /gateway/pay` (unique key) that the mock
/// holds for `latency`, samples the mock's RSS while they are all in flight, then checks that
/// every one was answered 200 and charged exactly once.
pub async fn in_flight(mock: &Mock, target: usize, latency: Duration) -> anyhow::Result<Held> {
    let latency_ms = latency.as_millis() as u64;
    mock.put_config(json!({"payment": {"latency_ms": latency_ms, "jitter_ms": 0}}))
        .await?;
    mock.reset().await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss_before_kib, cpu0) = (proc_readings::rss_kib(mock.pid), mock.cpu_seconds());
    let body = r#"{"amount":15000,"installments":1,"payment_method":{"type":"CREDIT_CARD","card":{"number":"4111111111111111","holder":"Bench","cvv":"123","expiration_date":"12/30"}}}"#;
    // Bounded connection attempts keep the accept queue from overflowing (a dropped SYN costs a
    // 1 s retransmit); once a request is written its permit goes back.
    let connecting = Arc::new(Semaphore::new(512));
    let (ephemeral_start, _) = proc_readings::ephemeral_ports().unwrap_or((32_768, 60_999));
    let first = ephemeral_start
        .saturating_sub(target as u16 + 2_000)
        .max(1_024);
    let ports = Arc::new(SourcePorts::new(first..ephemeral_start));
    let written = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for i in 0..target {
        let (connecting, addr) = (Arc::clone(&connecting), mock.addr);
        let (written, ports) = (Arc::clone(&written), Arc::clone(&ports));
        tasks.spawn(async move {
            let permit = connecting.acquire_owned().await.expect("semaphore open");
            let key = format!("bench-{i}");
            let request = post_json(PAY_PATH, &[("Idempotency-Key", &key)], body, true);
            let mut conn = Conn::connect_from(addr, &ports).await?;
            conn.write(&request).await?;
            drop(permit);
            written.fetch_add(1, Relaxed);
            conn.read_response().await
        });
    }
    let (mut peak_in_flight, mut secs_to_peak, mut rss_peak_kib) = (0, 0.0, 0);
    let mut secs_to_written = None;
    while started.elapsed() < latency * 2 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if secs_to_written.is_none() && written.load(Relaxed) == target {
            secs_to_written = Some(started.elapsed().as_secs_f64());
        }
        let in_flight = mock.stats().await?.payment.in_flight;
        if in_flight > peak_in_flight {
            peak_in_flight = in_flight;
            secs_to_peak = started.elapsed().as_secs_f64();
            rss_peak_kib = proc_readings::rss_kib(mock.pid);
        }
        if in_flight as usize >= target || (in_flight < peak_in_flight && in_flight > 0) {
            break; // all in, or the first answers already left
        }
    }
    let (mut ok, mut other, mut errors, mut first_error) = (0, 0, 0, None);
    for result in tasks.join_all().await {
        match result {
            Ok(200) => ok += 1,
            Ok(_) => other += 1,
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let ledger = mock.ledger().await?;
    Ok(Held {
        target,
        latency,
        peak_in_flight,
        secs_to_peak,
        secs_to_written,
        source_ports: (first, ephemeral_start - 1),
        rss_before_kib,
        rss_peak_kib,
        rss_after_kib: proc_readings::rss_kib(mock.pid),
        hwm_kib: proc_readings::hwm_kib(mock.pid),
        ok,
        other,
        errors,
        first_error,
        ledger,
        mock_cpu: mock.cpu_seconds() - cpu0,
        secs,
    })
}

impl Held {
    pub fn all_ok(&self) -> bool {
        let charged = self.ledger.charges == self.target as u64;
        self.ok == self.target && charged && self.ledger.keys_charged_more_than_once == 0
    }

    pub fn print(&self) {
        println!(
            "\n[2] memory: POST /gateway/pay held {} s, {} concurrent requests, one connection each",
            self.latency.as_secs(),
            self.target
        );
        println!(
            "    client source ports {}-{}, bound by the bench below the kernel's ephemeral range",
            self.source_ports.0, self.source_ports.1
        );
        let written = match self.secs_to_written {
            Some(secs) => format!("all written after {secs:.1} s"),
            None => "not all written before the first answers".to_owned(),
        };
        println!(
            "    in flight at peak (mock /admin/stats): {} after {:.2} s ({written})",
            self.peak_in_flight, self.secs_to_peak
        );
        let delta_kib = self.rss_peak_kib.saturating_sub(self.rss_before_kib);
        println!(
            "    mock RSS: before {} KiB, with all in flight {} KiB (+{} KiB), after {} KiB, VmHWM {} KiB",
            self.rss_before_kib, self.rss_peak_kib, delta_kib, self.rss_after_kib, self.hwm_kib
        );
        if self.peak_in_flight > 0 {
            println!(
                "    -> {:.0} bytes of mock RSS per in-flight request (RSS delta / in flight)",
                (delta_kib * 1024) as f64 / self.peak_in_flight as f64
            );
        }
        println!(
            "    answers: {} x 200, {} other status, {} I/O errors{} ({:.1} s in all)",
            self.ok,
            self.other,
            self.errors,
            self.first_error
                .as_deref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
            self.secs
        );
        println!(
            "    ledger: charges {}, distinct_keys {}, keys_charged_more_than_once {}",
            self.ledger.charges, self.ledger.distinct_keys, self.ledger.keys_charged_more_than_once
        );
        println!(
            "    mock CPU for the phase: {:.2} s; verdict: {}",
            self.mock_cpu,
            if self.all_ok() { "OK" } else { "FAILED" }
        );
    }
}
