//! Cleanup that still happens when a lab run or a test is interrupted.
//!
//! Destructors do not run when a process is killed by a signal, and a leaked PostgreSQL cluster or
//! cgroup outlives the run. Every resource of testbed, and of the lab's labkit, therefore
//! registers its teardown here: one registry and one signal handler per process. The teardown runs
//! exactly once: when the resource is dropped, or — on Ctrl-C, SIGTERM or SIGHUP — from the
//! handler that [`install_signal_handler`] installs (once per process, on the first [`register`]),
//! which runs every pending action, newest first, and exits with status 130.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

type Action = Box<dyn FnOnce() + Send>;

struct Entry {
    id: u64,
    name: String,
    action: Action,
}

static PENDING: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static INSTALL: Once = Once::new();

/// Exit status used after an interrupt (the shell's convention for SIGINT).
pub const INTERRUPTED_EXIT_CODE: i32 = 130;

/// Runs its action when dropped (or earlier, via [`CleanupGuard::run`]), unless the signal handler
/// already did.
#[must_use = "dropping the guard runs the cleanup immediately"]
#[derive(Debug)]
pub struct CleanupGuard {
    id: u64,
}

impl CleanupGuard {
    /// Runs the action now, if it has not run yet.
    pub fn run(self) {
        // Drop does the work.
    }

    /// Forgets the action: it runs neither now nor on a signal, for a resource meant to outlive
    /// this process (someone else tears it down).
    pub fn disarm(self) {
        let id = self.id;
        std::mem::forget(self);
        lock().retain(|e| e.id != id);
    }
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        let entry = {
            let mut pending = lock();
            let index = pending.iter().position(|e| e.id == self.id);
            index.map(|i| pending.remove(i))
        };
        if let Some(entry) = entry {
            run_entry(entry);
        }
    }
}

/// Registers `action` (described by `name` in logs) and installs the signal handler if needed.
pub fn register(name: impl Into<String>, action: impl FnOnce() + Send + 'static) -> CleanupGuard {
    install_signal_handler();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lock().push(Entry {
        id,
        name: name.into(),
        action: Box::new(action),
    });
    CleanupGuard { id }
}

/// Number of actions still pending (diagnostics and tests).
pub fn pending() -> usize {
    lock().len()
}

/// Runs every pending action, newest first (processes are stopped before the cgroups that hold
/// them are removed). Safe to call from a caller's own shutdown path.
pub fn run_all() {
    let entries = std::mem::take(&mut *lock());
    for entry in entries.into_iter().rev() {
        run_entry(entry);
    }
}

/// Installs the Ctrl-C/SIGTERM/SIGHUP handler (idempotent). If another handler was installed with
/// the `ctrlc` crate first, a warning is logged and the caller must call [`run_all`] itself.
pub fn install_signal_handler() {
    INSTALL.call_once(|| {
        let result = ctrlc::set_handler(|| {
            eprintln!("testbed: interrupted; stopping child processes and removing temporary state");
            run_all();
            std::process::exit(INTERRUPTED_EXIT_CODE);
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "testbed could not install its signal handler; call testbed::cleanup::run_all() on shutdown");
        }
    });
}

fn run_entry(entry: Entry) {
    tracing::debug!(name = %entry.name, "testbed cleanup");
    // One failing teardown must not prevent the others.
    if catch_unwind(AssertUnwindSafe(entry.action)).is_err() {
        eprintln!("testbed: cleanup of {} panicked", entry.name);
    }
}

fn lock() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock cannot leave the list inconsistent (push/remove only).
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    // One test: `run_all` would otherwise race with another test's guard.
    #[test]
    fn actions_run_once_newest_first_from_guard_or_run_all() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let guard = register("count", move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 0);
        guard.run();
        guard_free_checks(&count);

        let order = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = (order.clone(), order.clone());
        let first = register("first", move || a.lock().unwrap().push("first"));
        let second = register("second", move || b.lock().unwrap().push("second"));
        run_all();
        drop(first);
        drop(second);
        assert_eq!(*order.lock().unwrap(), vec!["second", "first"]);
        assert_eq!(pending(), 0);
    }

    fn guard_free_checks(count: &AtomicUsize) {
        assert_eq!(count.load(Ordering::SeqCst), 1);
        run_all();
        assert_eq!(count.load(Ordering::SeqCst), 1, "ran twice");
    }
}
