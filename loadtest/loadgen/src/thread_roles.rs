//! The API's CPU by thread role over the plateau, in the results' terms: labkit's per-thread
//! account (`labkit::threads`) with each thread given its role by its API's table
//! ([`ApiKind::thread_role`]), and the CPU of the threads that exited unseen as a row of its own.

use lab_results::{ApiKind, CpuByRole, RoleCpu, ThreadRole};
use labkit::threads::{Account, Ledger, snapshot};

/// `account` by `kind`'s roles, over the window `[from_s, to_s)`.
pub fn cpu_by_role(account: &Account, kind: ApiKind, from_s: f64, to_s: f64) -> CpuByRole {
    let mut roles: Vec<RoleCpu> = account
        .by_role(|comm| kind.thread_role(comm))
        .into_iter()
        .map(|(role, u)| RoleCpu {
            role,
            threads: u.threads,
            exited: u.gone,
            user_s: u.user_s,
            system_s: u.system_s,
            run_s: u.run_s,
            voluntary: u.voluntary,
            involuntary: u.involuntary,
        })
        .collect();
    let (user_s, system_s) = account.unseen();
    if user_s + system_s > 0.0 {
        roles.push(RoleCpu {
            role: ThreadRole::Unseen,
            threads: 0,
            exited: 0,
            user_s,
            system_s,
            run_s: None,
            voluntary: 0,
            involuntary: 0,
        });
    }
    CpuByRole {
        from_s,
        to_s,
        snapshots: account.snapshots,
        roles,
    }
}

/// The sampler's reading of one process's threads over whole seconds `[from, to)` of its ticks:
/// opened at tick `from`, fed every tick until `to`.
#[derive(Debug)]
pub struct ThreadWindow {
    pid: u32,
    from: u64,
    to: u64,
    ledger: Option<Ledger>,
    last_tick: u64,
}

impl ThreadWindow {
    pub fn new(pid: u32, (from, to): (u64, u64)) -> ThreadWindow {
        ThreadWindow {
            pid,
            from,
            to,
            ledger: None,
            last_tick: from,
        }
    }

    /// At tick `k` (the end of second `k − 1`): reads the threads when `k` is in the window. A
    /// reading that fails (the process gone) leaves the ledger as it was.
    pub fn tick(&mut self, k: u64) {
        if k < self.from || k > self.to {
            return;
        }
        let Ok(s) = snapshot(self.pid) else { return };
        match &mut self.ledger {
            None if k == self.from => self.ledger = Some(Ledger::begin(s)),
            None => {}
            Some(ledger) => {
                ledger.observe(s);
                self.last_tick = k;
            }
        }
    }

    /// The account from the window's start to its last reading (short of `to` when the run
    /// ended first), as `(from_s, to_s, account)`; `None` when it never started.
    pub fn finish(self) -> Option<(f64, f64, Account)> {
        let account = self.ledger?.account();
        Some((self.from as f64, self.last_tick as f64, account))
    }
}
