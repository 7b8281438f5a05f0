//! The API restarted under load the way a platform does it: SIGTERM to the running process, the
//! load still sent to it (the old process keeps accepting for its `SHUTDOWN_DELAY_MS`, answering
//! `Connection: close`), and the new process started on the same port as soon as the old one's
//! listener has closed; the old one drains its orders in flight meanwhile and must exit 0.
//!
//! What a platform does differently: Kubernetes starts the new pod first (`maxSurge`), waits for
//! its readiness, then sends SIGTERM to the old one while removing it from the Service, so both
//! serve for a while and no moment is without a listener. The lab routes to one port of one
//! machine, and the API does not set `SO_REUSEPORT` (two processes cannot listen on one port), so
//! between the old listener's close and the new process's readiness (its start-up: migrations
//! checked, pools built) a new connection is refused; and one the kernel had queued for the old
//! listener, not yet taken by the server, is reset when that listener closes — on a platform the
//! delay is there so that none arrives by then. The fault's row counts every such request as
//! lost: the lab's figure is an upper bound on what a platform's clients would see. And
//! the two processes share the API's cgroup while the old one drains, where two pods would each
//! have their own limits.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::services::ApiProcess;
use lab_results::faults::{API_READY_LABEL, OLD_API_CLOSED_LABEL, ROLLING_RESTART_LABEL};
use order_core::plumbing::settings::{DEFAULT_SHUTDOWN_DELAY_MS, DEFAULT_SHUTDOWN_GRACE_MS};

/// Beyond the API's delay and grace: actix rounds the grace up to a whole second, then the exit.
const STOP_MARGIN: Duration = Duration::from_secs(2);

/// When each step happened.
pub struct Restarted {
    pub signalled: Instant,
    /// The old process's listener closed (its delay over).
    pub stopped_listening: Instant,
    /// The new process answered `/ready` 200.
    pub ready: Instant,
    /// The old process exited 0, its orders in flight drained.
    pub old_exited: Instant,
    pub old_pid: u32,
}

impl Restarted {
    /// Its timeline marks: the SIGTERM, the old listener's close, the new process ready, the old one's
    /// exit.
    pub fn marks(&self, new_pid: u32) -> [(Instant, String); 4] {
        let after = |i: Instant| i.saturating_duration_since(self.signalled).as_secs_f64();
        [
            (
                self.signalled,
                format!("{ROLLING_RESTART_LABEL}: SIGTERM to pid {}", self.old_pid),
            ),
            (
                self.stopped_listening,
                format!(
                    "{OLD_API_CLOSED_LABEL}, {:.2} s after SIGTERM",
                    after(self.stopped_listening)
                ),
            ),
            (
                self.ready,
                format!(
                    "{API_READY_LABEL} (pid {new_pid}), {:.2} s without a listener",
                    self.ready
                        .saturating_duration_since(self.stopped_listening)
                        .as_secs_f64()
                ),
            ),
            (
                self.old_exited,
                format!(
                    "the old API exited 0, drained, {:.2} s after SIGTERM",
                    after(self.old_exited)
                ),
            ),
        ]
    }
}

/// SIGTERM to `api`, then its replacement on the same port once its listener closed; returns
/// when the old process has exited 0. Every wait is bounded by the API's own settings.
pub fn carry_out(api: &mut ApiProcess) -> Result<Restarted> {
    let port = api.port()?;
    let delay =
        Duration::from_millis(api.setting_ms("SHUTDOWN_DELAY_MS", DEFAULT_SHUTDOWN_DELAY_MS)?);
    let grace =
        Duration::from_millis(api.setting_ms("SHUTDOWN_GRACE_MS", DEFAULT_SHUTDOWN_GRACE_MS)?);
    let old_pid = api.pid;
    let signalled = Instant::now();
    api.sigterm()?;
    while listening(port)? {
        if signalled.elapsed() > delay + STOP_MARGIN {
            bail!(
                "the API still listened {:?} after SIGTERM (its delay: {delay:?})",
                signalled.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let stopped_listening = Instant::now();
    let old = api.replace()?;
    let ready = Instant::now();
    let drained_by = stopped_listening + grace + STOP_MARGIN;
    let status = loop {
        if let Some(status) = old.try_wait()? {
            break status;
        }
        if Instant::now() > drained_by {
            old.kill()?;
            bail!("the old API (pid {old_pid}) had not exited {grace:?} after its listener closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        bail!("the old API (pid {old_pid}) exited {status} after SIGTERM");
    }
    Ok(Restarted {
        signalled,
        stopped_listening,
        ready,
        old_exited: Instant::now(),
        old_pid,
    })
}

/// Whether a socket listens on `port` (any address), from the kernel's own tables: no connection
/// is opened to the API being measured to find out.
fn listening(port: u16) -> Result<bool> {
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = match std::fs::read_to_string(table) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        if listens_in(&text, port) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `/proc/net/tcp`'s rows: `sl local_address rem_address st …`, the address `HEXIP:HEXPORT`,
/// state `0A` LISTEN.
fn listens_in(table: &str, port: u16) -> bool {
    table.lines().skip(1).any(|row| {
        let mut fields = row.split_whitespace().skip(1);
        let local = fields.next().unwrap_or_default();
        let state = fields.nth(1).unwrap_or_default();
        let local_port = local
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok());
        state == "0A" && local_port == Some(port)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_listening_row_is_told_from_a_connection_on_the_same_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue\n\
                     \x20  0: 0100007F:1F91 00000000:0000 0A 00000000:00000000\n\
                     \x20  1: 0100007F:1F92 0100007F:D431 01 00000000:00000000\n";
        assert!(super::listens_in(table, 8081));
        assert!(
            !super::listens_in(table, 8082),
            "established, not listening"
        );
        assert!(!super::listens_in(table, 80));
    }
}
