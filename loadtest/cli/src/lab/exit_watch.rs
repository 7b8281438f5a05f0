//! Whether the API under test stayed up through its run. A process the kernel killed for its
//! memory limit answers nothing, and its fast connection refusals must not read as low latency:
//! the lab watches the process through the run, says how it ended, and starts it again (no load)
//! before the money is counted, so that its recovery settles the keys it left `CHARGING`, as a
//! restarted pod would. A kill the fault plan makes (`--faults kill-api`) is not watched here.

use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Result;
use lab_results::ApiExit;
use loadgen::clock::Clock;

use crate::services::ApiProcess;

/// How often the process is looked at: the death's time is known to this much.
const POLL: Duration = Duration::from_millis(200);

/// Polls one process until it is gone or the watch is stopped.
pub(super) struct ExitWatch {
    /// Seconds into the measured part when the process was first seen gone.
    seen: Arc<OnceLock<f64>>,
    task: tokio::task::JoinHandle<()>,
    /// The cgroup's OOM kills before the run.
    oom_before: Option<u64>,
}

impl ExitWatch {
    pub(super) fn start(process: &ApiProcess, clock: Clock) -> ExitWatch {
        let (pid, seen) = (process.pid, Arc::new(OnceLock::new()));
        let found = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL).await;
                if !labkit::procstat::running(pid) {
                    let t = clock
                        .get()
                        .map_or(0.0, |start| start.elapsed().as_secs_f64());
                    let _ = found.set(t);
                    return;
                }
            }
        });
        ExitWatch {
            seen,
            task,
            oom_before: process.oom_kills(),
        }
    }

    /// Ends the watch. `Some(t)`: the process died `t` seconds into the measured part.
    pub(super) fn stop(self) -> Option<(f64, Option<u64>)> {
        self.task.abort();
        self.seen.get().map(|t| (*t, self.oom_before))
    }
}

/// The process died at `t_s`: how (its exit status, the cgroup's OOM counter), then a restart
/// with the same binary, settings and cgroup, for its recovery only.
pub(super) async fn settle(
    mut process: ApiProcess,
    t_s: f64,
    oom_before: Option<u64>,
) -> Result<(ApiProcess, ApiExit)> {
    let status = process.exit_status()?;
    let oom_kills = process.oom_kills();
    let signal = status.and_then(|s| s.signal());
    let exit = ApiExit {
        t_s,
        oom_killed: signal == Some(SIGKILL) && rose(oom_before, oom_kills),
        signal,
        exit_code: status.and_then(|s| s.code()),
        oom_kills,
        restarted_for_recovery: true,
    };
    let process = tokio::task::spawn_blocking(move || {
        process.restart()?;
        anyhow::Ok(process)
    })
    .await??;
    Ok((process, exit))
}

/// The OOM killer's signal.
const SIGKILL: i32 = 9;

/// The counter rose over the run (a counter that cannot be read after proves nothing).
fn rose(before: Option<u64>, after: Option<u64>) -> bool {
    match (before, after) {
        (_, None) => false,
        (Some(b), Some(a)) => a > b,
        (None, Some(a)) => a > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::rose;

    #[test]
    fn an_oom_kill_counts_only_when_the_counter_rose() {
        assert!(rose(Some(0), Some(1)));
        assert!(
            !rose(Some(2), Some(2)),
            "an earlier kill of the same cgroup"
        );
        assert!(rose(None, Some(1)), "unread before, one kill after");
        assert!(!rose(Some(0), None), "unreadable after");
        assert!(!rose(None, None));
    }
}
