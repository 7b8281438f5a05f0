//! The lab's rolling restart of an API, without a load run: reactive-api started the way the lab
//! starts it (`ApiProcess`) with a 1 s `SHUTDOWN_DELAY_MS`, an order sent on a new connection
//! every 20 ms throughout, and `faults::rolling_restart::carry_out`. The old process listens
//! through its delay, every order sent well before its listener closed or after the new process
//! was ready is answered 201, the new process (another pid) serves on the same port, and the old one
//! exited 0 once drained; an order lost can only fall around the close and before the new
//! process is ready.
//!
//! Needs the service binaries like `lab_smoke.rs` (`scripts/test.sh` builds them) and
//! `TEST_DATABASE_URL`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use loadtest::faults::rolling_restart;
use loadtest::services::{ApiProcess, MockDepsProcess};

mod common;
use common::{binaries_present, drop_database, own_database};

const DELAY: Duration = Duration::from_millis(1000);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_process_serves_through_its_delay_and_the_new_one_takes_its_port() {
    if let Err(e) = binaries_present() {
        return labkit::skip::unless_ci(format!("the rolling restart test needs {e}"));
    }
    let Ok(server) = std::env::var("TEST_DATABASE_URL") else {
        return labkit::skip::unless_ci("TEST_DATABASE_URL is not set (scripts/test.sh sets it)");
    };
    let (url, admin, name) = own_database(&server, "loadtest_rolling_restart").await;
    let logs =
        std::env::temp_dir().join(format!("loadtest-rolling-restart-{}", std::process::id()));
    let deps = MockDepsProcess::start(&logs).unwrap();
    let settings: BTreeMap<String, String> = [
        ("DATABASE_URL", url.as_str()),
        ("DEPS_URL", deps.url.as_str()),
        ("REQUEST_HASH_KEY", loadtest::api_env::LAB_REQUEST_HASH_KEY),
        ("SHUTDOWN_DELAY_MS", "1000"),
        ("SHUTDOWN_GRACE_MS", "5000"),
        ("MAX_LOOP_LAG_MS", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let mut api = ApiProcess::start("reactive-api", &settings, None, &logs).unwrap();
    let (base, old_pid) = (api.url.clone(), api.pid);

    let stop = Arc::new(AtomicBool::new(false));
    let sender = tokio::spawn(send_every_20_ms(base.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await; // orders in flight at the SIGTERM
    let (api, restarted) = tokio::task::spawn_blocking(move || {
        let r = rolling_restart::carry_out(&mut api);
        (api, r)
    })
    .await
    .unwrap();
    let r = restarted.expect("the rolling restart");
    tokio::time::sleep(Duration::from_millis(300)).await; // orders to the new process too
    stop.store(true, Ordering::Release);
    let answers = sender.await.unwrap();

    let listened = r.stopped_listening - r.signalled;
    assert!(
        listened >= DELAY && listened < DELAY + Duration::from_secs(2),
        "listened {listened:?} after SIGTERM"
    );
    assert!(r.signalled < r.stopped_listening && r.stopped_listening < r.ready);
    assert!(
        r.ready <= r.old_exited,
        "the old process drains beside the new one"
    );
    assert_ne!(api.pid, old_pid);
    // Sent while a listener was certain to be there: to the old process well before its close, or
    // to the new one once ready. Not in the last moments of the delay: a connection the kernel
    // queued for the old listener but the server had not yet taken is reset when the listener
    // closes, and on this shared machine a send recorded here may reach the socket some 100 ms
    // later.
    let margin = Duration::from_millis(250);
    let certain = |sent: Instant| sent + margin < r.stopped_listening || sent > r.ready;
    let during_delay = answers
        .iter()
        .filter(|(sent, _)| *sent > r.signalled && *sent + margin < r.stopped_listening)
        .count();
    assert!(
        during_delay >= 10,
        "{during_delay} orders sent during the delay"
    );
    for (sent, answer) in answers.iter().filter(|(sent, _)| certain(*sent)) {
        let when = sent.saturating_duration_since(r.signalled);
        assert_eq!(answer, &Ok(201), "sent {when:?} after SIGTERM");
    }
    let refused = answers.iter().filter(|(_, a)| a.is_err()).count();
    eprintln!(
        "listened {listened:?} after SIGTERM, {:?} without a listener, {refused} of {} orders \
         without an answer",
        r.ready - r.stopped_listening,
        answers.len()
    );
    let ready = reqwest::get(format!("{base}/ready")).await.unwrap();
    assert_eq!(ready.status(), 200, "the new process serves the port");

    api.stop().unwrap();
    drop(deps);
    drop_database(&admin, &name).await;
}

/// Sends an order on a new connection every 20 ms until `stop`; then each one's answer (its
/// status, or why there was none) with when it was sent, once all are in (each within 10 s).
async fn send_every_20_ms(
    base: String,
    stop: Arc<AtomicBool>,
) -> Vec<(Instant, Result<u16, String>)> {
    let body: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/sample-order.json")).unwrap();
    let mut sent = Vec::new();
    let mut i = 0u32;
    while !stop.load(Ordering::Acquire) {
        let mut body = body.clone();
        body["reference_id"] = format!("rolling-{i}").into();
        let url = format!("{base}/orders");
        let answer = tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(url)
                .header("Authorization", "sk_acme")
                .json(&body)
                .timeout(Duration::from_secs(10))
                .send()
                .await;
            r.map(|r| r.status().as_u16()).map_err(|e| format!("{e:?}"))
        });
        sent.push((Instant::now(), answer));
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut answers = Vec::new();
    for (at, answer) in sent {
        answers.push((at, answer.await.unwrap()));
    }
    answers
}
