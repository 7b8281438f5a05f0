//! The closed model (`closed-C-N`) is `ab -c C -n N`: C clients send N requests between them, each
//! its next when the last answered, so a client held up by one slow answer leaves its share to the
//! others; a client whose request was refused pauses before its next (with `transport_pause`);
//! and [`loadgen::sampler::Peaks`] keeps the highest value of the gauges it watches.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use loadgen::driver::{DriverConfig, LoopControl, drive_with};
use loadgen::profile::Profile;
use loadgen::sampler::Peaks;

mod common;

fn closed(target: &str, clients: u64, requests: u64) -> DriverConfig {
    let profile = Profile::parse(&format!("closed-{clients}-{requests}"), 1.0).unwrap();
    DriverConfig::new(target, profile, "closed".into(), Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_held_by_a_slow_answer_leaves_its_share_to_the_others() {
    const N: u64 = 40;
    // The first request is answered only once the other 39 have arrived (or after 10 s): with
    // a fixed share per client, its client's next nine would never come and the wait would end
    // by the clock.
    let (arrived, watch) = tokio::sync::watch::channel(0u64);
    let released_by_count = Arc::new(AtomicBool::new(false));
    let released = released_by_count.clone();
    let target = common::serve(move |_| {
        let mut watch = watch.clone();
        let released = released.clone();
        let mut index = 0;
        arrived.send_modify(|n| {
            index = *n;
            *n += 1;
        });
        async move {
            if index == 0 {
                let all = watch.wait_for(|n| *n >= N);
                let by_count = tokio::time::timeout(Duration::from_secs(10), all).await;
                released.store(matches!(by_count, Ok(Ok(_))), Ordering::SeqCst);
            }
            (201, "{}".to_owned())
        }
    })
    .await;
    let control = Arc::new(LoopControl::default());
    let clock = Arc::new(std::sync::OnceLock::new());
    let out = drive_with(closed(&target, 4, N), clock, control.clone())
        .await
        .unwrap();
    let total = &out.recorder.total;
    assert_eq!((total.sent, total.ok()), (N, N), "{:?}", total.outcomes);
    assert_eq!(control.requests_started(), N);
    assert_eq!(control.requests_answered(), N);
    assert!(
        released_by_count.load(Ordering::SeqCst),
        "the other clients did not send the held client's share"
    );
    let (last, elapsed) = (out.last_answer_s.unwrap(), out.elapsed_s.unwrap());
    assert!(0.0 < last && last <= elapsed, "{last} s, {elapsed} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_client_pauses_before_its_next_request() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // closed again: connections to it are refused
    let mut cfg = closed(&format!("http://127.0.0.1:{port}"), 2, 10);
    cfg.transport_pause = Some(Duration::from_millis(100));
    let control = Arc::new(LoopControl::default());
    let clock = Arc::new(std::sync::OnceLock::new());
    let out = drive_with(cfg, clock, control.clone()).await.unwrap();
    let total = &out.recorder.total;
    assert_eq!(
        total.outcomes.get("connect_error"),
        Some(&10),
        "{:?}",
        total.outcomes
    );
    assert_eq!(control.requests_answered(), 10);
    // Each client's five requests have four pauses between them.
    let last = out.last_answer_s.unwrap();
    assert!(
        last >= 0.4,
        "the last refusal came {last} s after the start"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peaks_keep_the_highest_value_of_each_watched_gauge() {
    // Scrape k reads g = 3, 7, 2, 2, … (two label sets summed); the third scrape fails.
    let scrapes = Arc::new(AtomicU64::new(0));
    let served = scrapes.clone();
    let target = common::serve(move |_| {
        let k = served.fetch_add(1, Ordering::SeqCst);
        async move {
            let g = [3, 7].get(k as usize).copied().unwrap_or(2);
            let text = format!(
                "# TYPE g gauge\ng{{x=\"a\"}} {}\ng{{x=\"b\"}} 1\nother 100\n",
                g - 1
            );
            if k == 2 {
                (500, "{}".to_owned())
            } else {
                (200, text)
            }
        }
    })
    .await;
    let url = format!("{target}/metrics");
    let peaks = Peaks::watch(
        url,
        &["g", "absent"],
        Duration::from_millis(5),
        Duration::from_secs(5),
    )
    .unwrap();
    while scrapes.load(Ordering::SeqCst) < 6 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let peaks = peaks.stop().await;
    assert_eq!(peaks.get("g"), Some(&7.0), "{peaks:?}");
    assert_eq!(
        peaks.len(),
        1,
        "only watched gauges that were there: {peaks:?}"
    );
}
