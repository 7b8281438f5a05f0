use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{DnsCache, ResolveError};

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], port))
}

/// A name server whose answers for `slow` wait until the test releases them (each lookup takes
/// one message from the channel); every other name answers at once. Counts its lookups.
struct FakeNameServer {
    calls: Arc<AtomicUsize>,
    release: mpsc::Sender<Option<SocketAddr>>,
}

fn cache_with(
    slow: &'static str,
    fresh_for: Duration,
    retry_after: Duration,
) -> (DnsCache, FakeNameServer) {
    let (release, answers) = mpsc::channel::<Option<SocketAddr>>();
    let answers = Mutex::new(answers);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let cache = DnsCache::new(
        Box::new(move |host, port| {
            counted.fetch_add(1, Ordering::SeqCst);
            if host != slow {
                return Ok(vec![addr(1, port)]);
            }
            let answer = answers.lock().unwrap().recv().ok().flatten();
            answer
                .map(|a| vec![SocketAddr::new(a.ip(), port)])
                .ok_or_else(|| std::io::Error::other("SERVFAIL"))
        }),
        fresh_for,
        retry_after,
    );
    (cache, FakeNameServer { calls, release })
}

const LONG: Duration = Duration::from_secs(3600);

/// Waits until `done` holds, at most 5 s (a lookup runs on a thread of its own).
fn wait_for(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_address_is_used_as_it_is_without_a_lookup() {
    let (cache, ns) = cache_with("slow", LONG, LONG);
    let v4 = cache.resolve("127.0.0.1", 9090, Duration::ZERO).unwrap();
    let v6 = cache.resolve("[::1]", 9090, Duration::ZERO).unwrap();
    assert_eq!(&v4[..], &["127.0.0.1:9090".parse::<SocketAddr>().unwrap()]);
    assert_eq!(&v6[..], &["[::1]:9090".parse::<SocketAddr>().unwrap()]);
    assert_eq!(ns.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_name_is_looked_up_once_for_many_calls() {
    let (cache, ns) = cache_with("slow", LONG, LONG);
    for _ in 0..1000 {
        let addrs = cache
            .resolve("mock-deps", 9090, Duration::from_secs(5))
            .unwrap();
        assert_eq!(&addrs[..], &[addr(1, 9090)]);
    }
    assert_eq!(ns.calls.load(Ordering::SeqCst), 1);
    assert_eq!(cache.lookups("mock-deps", "ok"), 1);
}

#[test]
fn a_name_that_does_not_answer_costs_each_call_its_own_timeout_and_stalls_no_other_name() {
    let (cache, ns) = cache_with("slow", LONG, LONG);
    cache.resolve("fast", 80, Duration::from_secs(5)).unwrap();
    let timeout = Duration::from_millis(200);
    let start = Instant::now();
    let stalled = std::thread::scope(|s| {
        let callers: Vec<_> = (0..20)
            .map(|_| s.spawn(|| cache.resolve("slow", 80, timeout)))
            .collect();
        // While those wait, the name already resolved answers at once.
        let fast = Instant::now();
        cache.resolve("fast", 80, Duration::ZERO).unwrap();
        assert!(fast.elapsed() < Duration::from_millis(50));
        callers
            .into_iter()
            .map(|c| c.join().unwrap())
            .collect::<Vec<_>>()
    });
    let waited = start.elapsed();
    assert!(stalled.iter().all(|r| *r == Err(ResolveError::TimedOut)));
    assert!(waited >= timeout, "returned before its timeout: {waited:?}");
    // Each call waited its own 200 ms, not one after another (a loaded machine gets slack).
    assert!(waited < Duration::from_secs(2), "took {waited:?}");
    // Twenty waiting calls made one query, not twenty.
    wait_for(|| ns.calls.load(Ordering::SeqCst) >= 2);
    assert_eq!(ns.calls.load(Ordering::SeqCst), 2);
    // The lookup answers late: the next call gets its address.
    ns.release.send(Some(addr(7, 0))).unwrap();
    let addrs = cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    assert_eq!(&addrs[..], &[addr(7, 80)]);
}

#[test]
fn kept_addresses_are_served_while_a_stale_name_is_looked_up_again() {
    let (cache, ns) = cache_with("slow", Duration::ZERO, LONG);
    ns.release.send(Some(addr(7, 0))).unwrap();
    cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    // Stale at once (fresh for 0 s): this call starts a lookup that does not answer, and is
    // served the kept address without waiting.
    let start = Instant::now();
    let addrs = cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    assert!(start.elapsed() < Duration::from_millis(100));
    assert_eq!(&addrs[..], &[addr(7, 80)]);
    // One refresh in flight, not one per call.
    for _ in 0..100 {
        cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    }
    wait_for(|| ns.calls.load(Ordering::SeqCst) >= 2);
    assert_eq!(ns.calls.load(Ordering::SeqCst), 2);
    // The refresh fails: the kept address is still served, and the failure is counted.
    ns.release.send(None).unwrap();
    wait_for(|| cache.lookups("slow", "failed") > 0);
    assert_eq!(cache.lookups("slow", "failed"), 1);
    let addrs = cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    assert_eq!(&addrs[..], &[addr(7, 80)]);
}

#[test]
fn a_failed_name_fails_calls_at_once_until_it_is_retried() {
    let (cache, ns) = cache_with("slow", LONG, Duration::from_millis(300));
    ns.release.send(None).unwrap();
    let first = cache.resolve("slow", 80, Duration::from_secs(5));
    assert_eq!(first, Err(ResolveError::Failed("SERVFAIL".to_owned())));
    // Within RETRY_AFTER: no new query, the same error at once.
    for _ in 0..100 {
        let start = Instant::now();
        let again = cache.resolve("slow", 80, Duration::from_secs(5));
        assert!(matches!(again, Err(ResolveError::Failed(_))));
        assert!(start.elapsed() < Duration::from_millis(100));
    }
    assert_eq!(ns.calls.load(Ordering::SeqCst), 1);
    // After it, one new lookup, which now answers.
    std::thread::sleep(Duration::from_millis(350));
    ns.release.send(Some(addr(9, 0))).unwrap();
    let addrs = cache.resolve("slow", 80, Duration::from_secs(5)).unwrap();
    assert_eq!(&addrs[..], &[addr(9, 80)]);
    assert_eq!(ns.calls.load(Ordering::SeqCst), 2);
    assert_eq!(cache.lookups("slow", "failed"), 1);
    assert_eq!(cache.lookups("slow", "ok"), 1);
}
