//! The client deadline of a libpq call: a watchdog thread that shuts a connection's socket down
//! when a call on it outlives `DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`.
//!
//! Why a watchdog: a libpq call blocks its thread in `poll()` and nothing on that thread can end
//! it. PostgreSQL's `statement_timeout` ends a slow statement, but not one whose packets never
//! reach the server; with the path frozen (a stopped proxy, a partition where the kernel still
//! acknowledges what we send) libpq's keepalives and `tcp_user_timeout` never fire either, so the
//! call — and its worker thread — would wait for ever. `shutdown(fd, SHUT_RDWR)` from another
//! thread wakes the `poll()` at once: libpq reports the connection lost, diesel returns an error,
//! and the connection is discarded (`connections.rs`). diesel 2.3 does not expose libpq's
//! `PQsocket` (its raw connection is private), so `connections.rs` finds each connection's socket
//! when it is opened; libpq's own cancel (`PQcancel`) would need the same hidden handle, and
//! would itself wait on the frozen path.
//!
//! Why it is safe against a reused fd: a call is armed and disarmed under the one mutex the
//! watchdog shuts sockets down under, and its fd stays open (owned by the connection, which the
//! call borrows) from before [`arm`] until after [`disarm`]; so the watchdog only ever shuts down
//! the socket of a call still in progress.
//!
//! The guarantee: every call's socket is shut down within a scheduling delay of its deadline, if
//! the call is still in progress then. One thread serves the whole process and keeps that promise
//! by never sleeping past the earliest deadline armed. What it costs per call: one lock to arm, one
//! to disarm, and no wake-up of the watchdog thread. A call is armed for the same limit as every
//! other one (the client deadline), so its deadline is later than those already armed, and later
//! than the time the watchdog sleeps until; [`arm`] wakes the watchdog only when a deadline is
//! earlier than that (the first call, or a shorter limit). With nothing armed, the watchdog sleeps
//! for the shortest limit seen, after which no new call can have a deadline it would oversleep.
//! So the thread wakes about once per limit (seconds) whatever the load, where it woke for every
//! database call (≈ 5 an order: 23,178 voluntary switches over ≈ 4,500 orders); each wake reads
//! the entries of the calls then in progress (at most one per pooled connection).

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::socket::{Shutdown, shutdown};

/// The calls in progress, by their ticket.
#[derive(Default)]
struct Calls {
    next: u64,
    armed: BTreeMap<u64, Armed>,
    /// What the watchdog is doing: an arm while it is awake (it holds the lock then, and reads
    /// every entry before it sleeps again) or asleep past the new deadline needs no wake-up.
    sleep: Sleep,
    /// The shortest limit armed yet: how long the watchdog may sleep with nothing armed.
    shortest: Option<Duration>,
}

/// The watchdog thread's state.
#[derive(Default, Clone, Copy)]
enum Sleep {
    /// Awake, or starting: it reads the entries before it sleeps.
    #[default]
    Awake,
    /// Asleep until then, unless woken.
    Until(Instant),
    /// Asleep until woken: nothing was ever armed.
    Forever,
}

struct Armed {
    fd: RawFd,
    deadline: Instant,
    fired: bool,
}

struct Watchdog {
    calls: Mutex<Calls>,
    wake: Condvar,
}

/// A call in progress, armed by [`arm`]; [`disarm`] it when the call returns.
#[must_use = "a call that is never disarmed keeps its entry"]
pub struct Ticket(u64);

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<&'static Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            calls: Mutex::new(Calls::default()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("db-watchdog".into())
            .spawn(move || watch(dog))
            .expect("starting the database watchdog thread");
        dog
    })
}

fn lock(dog: &Watchdog) -> MutexGuard<'_, Calls> {
    // Nothing panics while holding it; a poisoned lock still holds consistent entries.
    dog.calls
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Arms the watchdog for a call on the socket `fd`, which must stay open until [`disarm`].
pub fn arm(fd: RawFd, limit: Duration) -> Ticket {
    let dog = watchdog();
    let mut calls = lock(dog);
    calls.next += 1;
    let id = calls.next;
    let deadline = Instant::now() + limit;
    calls.shortest = Some(calls.shortest.map_or(limit, |s| s.min(limit)));
    calls.armed.insert(
        id,
        Armed {
            fd,
            deadline,
            fired: false,
        },
    );
    // The watchdog sleeps past this deadline only if it is earlier than the end of its sleep.
    let asleep_past_it = match calls.sleep {
        Sleep::Awake => false,
        Sleep::Until(until) => deadline < until,
        Sleep::Forever => true,
    };
    if asleep_past_it {
        WAKES.fetch_add(1, Ordering::Relaxed);
        dog.wake.notify_one();
        // It waits on the condvar (it set its state under this lock, then waited): woken, it
        // reads every entry before it sleeps again, so the calls armed until then need no more.
        calls.sleep = Sleep::Awake;
    }
    Ticket(id)
}

/// Disarms a call that returned: `true` if its deadline passed and its socket was shut down.
pub fn disarm(ticket: Ticket) -> bool {
    let mut calls = lock(watchdog());
    calls.armed.remove(&ticket.0).is_some_and(|a| a.fired)
}

/// How many times [`arm`] woke the watchdog (its tests count them).
static WAKES: AtomicU64 = AtomicU64::new(0);

/// The watchdog's loop: shuts down the socket of every call past its deadline, then sleeps until
/// the next deadline; with nothing armed, for the shortest limit (no call armed meanwhile can
/// have a deadline before that), or until the first call.
fn watch(dog: &Watchdog) {
    let mut calls = lock(dog);
    loop {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for call in calls.armed.values_mut().filter(|c| !c.fired) {
            if call.deadline <= now {
                // ENOTCONN (already closed by the peer) leaves nothing to wake; ignored.
                let _ = shutdown(call.fd, Shutdown::Both);
                call.fired = true;
            } else {
                next = Some(next.map_or(call.deadline, |n| n.min(call.deadline)));
            }
        }
        let until = next.or_else(|| calls.shortest.map(|s| now + s));
        calls.sleep = until.map_or(Sleep::Forever, Sleep::Until);
        calls = match until {
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                dog.wake
                    .wait_timeout(calls, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            None => dog.wake.wait(calls).unwrap_or_else(|p| p.into_inner()),
        };
        calls.sleep = Sleep::Awake;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn a_call_past_its_deadline_is_woken_and_one_in_time_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        // A read that the peer never answers, like a call on a frozen path.
        let started = Instant::now();
        let ticket = arm(client.as_raw_fd(), Duration::from_millis(200));
        let read = client.read(&mut [0u8; 16]);
        assert!(disarm(ticket), "the watchdog fired");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );

        let ticket = arm(client.as_raw_fd(), Duration::from_secs(60));
        assert!(!disarm(ticket), "a call disarmed in time is left alone");
    }

    #[test]
    fn calls_in_time_do_not_wake_the_watchdog_each() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let woken = WAKES.load(Ordering::Relaxed);
        for _ in 0..1000 {
            let ticket = arm(client.as_raw_fd(), Duration::from_secs(60));
            assert!(!disarm(ticket));
        }
        // A call that comes while the watchdog sleeps past its deadline wakes it: the first, or
        // the other test's, side by side.
        let wakes = WAKES.load(Ordering::Relaxed) - woken;
        assert!(wakes <= 5, "{wakes} wake-ups for 1000 calls");
        // A call with a shorter limit than the watchdog sleeps for is still cut at its deadline.
        let mut client = client;
        let started = Instant::now();
        let ticket = arm(client.as_raw_fd(), Duration::from_millis(100));
        let read = client.read(&mut [0u8; 16]);
        assert!(disarm(ticket), "the watchdog fired");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
