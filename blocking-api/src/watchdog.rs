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
//! the socket of a call still in progress. One thread serves the whole process: it holds a few
//! entries (one per call in progress) and wakes at the earliest deadline.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::socket::{Shutdown, shutdown};

/// The calls in progress, by their ticket.
#[derive(Default)]
struct Calls {
    next: u64,
    armed: BTreeMap<u64, Armed>,
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
    calls.armed.insert(
        id,
        Armed {
            fd,
            deadline,
            fired: false,
        },
    );
    dog.wake.notify_one();
    Ticket(id)
}

/// Disarms a call that returned: `true` if its deadline passed and its socket was shut down.
pub fn disarm(ticket: Ticket) -> bool {
    let mut calls = lock(watchdog());
    calls.armed.remove(&ticket.0).is_some_and(|a| a.fired)
}

/// The watchdog's loop: shuts down the socket of every call past its deadline, then sleeps until
/// the next deadline or a new call.
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
        calls = match next {
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                dog.wake
                    .wait_timeout(calls, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            None => dog.wake.wait(calls).unwrap_or_else(|p| p.into_inner()),
        };
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
}
