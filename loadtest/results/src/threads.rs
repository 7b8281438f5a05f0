//! Where an API's CPU went over a window, by what its threads do ([`CpuByRole`]): one CPU figure
//! split so that a reader sees where each execution model spends it — blocking-api's request
//! threads, its HTTP client's runtime thread, its pools' workers; reactive-api's event loop.
//!
//! Measured by labkit's `threads` module from each thread's `/proc/PID/task/TID/{stat,schedstat,
//! status}`, read once a second over the window; a thread is given its role by its name
//! ([`ApiKind::thread_role`], one explicit table per API). The CPU of threads that exited since
//! they were last read is the [`ThreadRole::Unseen`] row: the process's own CPU over the window
//! less the threads'.

use serde::{Deserialize, Serialize};

use crate::ApiKind;

/// What a thread of an API does, as its name tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadRole {
    /// An actix worker's event loop (an actix-rt arbiter): the HTTP connections, and in
    /// reactive-api every order's work.
    EventLoop,
    /// Threads that run one request at a time: blocking-api's blocking pool (`web::block`) and
    /// its reads' pool.
    RequestThreads,
    /// A thread an HTTP client keeps for itself (reqwest's blocking client runs a runtime on it).
    HttpClient,
    /// The connection pool's workers and the API's own background threads (the database
    /// watchdog, the outbox relay, recovery, the batch writer, the broker's connection).
    Pools,
    /// Any other thread: the main thread (actix's system, which only starts and stops the
    /// server), the acceptor, a name the table does not know.
    Other,
    /// CPU of threads that exited since they were last read: the process's CPU over the window
    /// less the threads'; no thread count, no switches.
    Unseen,
}

impl ThreadRole {
    /// In the order tables list them.
    pub const ALL: [ThreadRole; 6] = [
        ThreadRole::EventLoop,
        ThreadRole::RequestThreads,
        ThreadRole::HttpClient,
        ThreadRole::Pools,
        ThreadRole::Other,
        ThreadRole::Unseen,
    ];

    /// How a table or a legend names it.
    pub fn name(self) -> &'static str {
        match self {
            ThreadRole::EventLoop => "event loop",
            ThreadRole::RequestThreads => "request threads",
            ThreadRole::HttpClient => "HTTP client",
            ThreadRole::Pools => "pools and maintenance",
            ThreadRole::Other => "other",
            ThreadRole::Unseen => "exited/unseen",
        }
    }
}

impl ApiKind {
    /// The role of this API's thread named `comm` (`/proc/…/comm`: the name cut to 15 bytes).
    /// Names as read from the running APIs' `/proc/PID/task/*/comm` in a lab run: blocking-api
    /// `actix-rt|system`, `actix-server ac` (the acceptor), `blocking-api` (main), `tokio-rt-worker`
    /// (× BLOCKING_THREADS), `reqwest-interna`, `r2d2-worker-N`, `read-N`, `db-watchdog`,
    /// `recovery`; reactive-api `actix-rt|system`, `actix-server ac`, `reactive-api`; both
    /// `deps-resolve` (a lookup of a dependency's host name, once per name and 30 s at most).
    pub fn thread_role(self, comm: &str) -> ThreadRole {
        match comm {
            // actix-rt's arbiters (`actix-rt|system:0|arbiter:N`), one per HTTP worker.
            c if c.starts_with("actix-rt|system") => return ThreadRole::EventLoop,
            c if c.starts_with("r2d2-worker-") => return ThreadRole::Pools,
            // `order_core::plumbing::dns`: the one lookup in flight of a dependency's name.
            "deps-resolve" => return ThreadRole::HttpClient,
            _ => {}
        }
        match self {
            ApiKind::Blocking => match comm {
                // The blocking pool of the worker's runtime: tokio's default thread name.
                "tokio-rt-worker" => ThreadRole::RequestThreads,
                c if c.starts_with("read-") => ThreadRole::RequestThreads,
                "reqwest-interna" => ThreadRole::HttpClient,
                "db-watchdog" | "outbox-relay" | "recovery" | "persist-batch" | "nats" => {
                    ThreadRole::Pools
                }
                _ => ThreadRole::Other,
            },
            ApiKind::Reactive => ThreadRole::Other,
        }
    }
}

/// An API's CPU over a window by thread role (`RunResults::cpu_by_role`, a bench cell's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuByRole {
    /// The window, seconds of the measured part (the plateau's whole seconds in a lab run; in a
    /// bench cell from the window's start, `to_s` its length).
    pub from_s: f64,
    pub to_s: f64,
    /// Readings of every thread over the window, both ends included.
    pub snapshots: u32,
    /// One entry per role that had a thread or CPU, in [`ThreadRole::ALL`]'s order.
    pub roles: Vec<RoleCpu>,
}

/// The threads of one role over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleCpu {
    pub role: ThreadRole,
    /// Threads of the role seen over the window (0 for `unseen`).
    pub threads: u32,
    /// Of them, gone before the window's end.
    #[serde(default)]
    pub exited: u32,
    /// CPU seconds in user and in system mode (`utime`, `stime`: clock ticks).
    pub user_s: f64,
    pub system_s: f64,
    /// Seconds on a CPU from schedstat (ns); `None` without schedstats, and for `unseen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_s: Option<f64>,
    /// Context switches: it blocked (voluntary), it was preempted (involuntary).
    pub voluntary: u64,
    pub involuntary: u64,
}

impl RoleCpu {
    /// User + system CPU seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

impl CpuByRole {
    /// Every role's CPU: the process's over the window.
    pub fn cpu_s(&self) -> f64 {
        self.roles.iter().map(RoleCpu::cpu_s).sum()
    }

    /// The entry of `role`, if it had a thread or CPU.
    pub fn role(&self, role: ThreadRole) -> Option<&RoleCpu> {
        self.roles.iter().find(|r| r.role == role)
    }

    /// Each role's share of the CPU, in [`ThreadRole::ALL`]'s order (0 – 1; empty without CPU).
    pub fn shares(&self) -> Vec<(ThreadRole, f64)> {
        let total = self.cpu_s();
        if total <= 0.0 {
            return Vec::new();
        }
        self.roles
            .iter()
            .map(|r| (r.role, r.cpu_s() / total))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_api_names_its_own_threads() {
        use ThreadRole::*;
        let b = |c| ApiKind::Blocking.thread_role(c);
        let r = |c| ApiKind::Reactive.thread_role(c);
        assert_eq!(b("actix-rt|system"), EventLoop);
        assert_eq!(r("actix-rt|system"), EventLoop);
        assert_eq!(b("tokio-rt-worker"), RequestThreads);
        assert_eq!(b("actix-server ac"), Other);
        assert_eq!(b("read-3"), RequestThreads);
        assert_eq!(b("reqwest-interna"), HttpClient);
        assert_eq!(b("r2d2-worker-2"), Pools);
        assert_eq!(b("db-watchdog"), Pools);
        assert_eq!(b("blocking-api"), Other);
        assert_eq!(r("reactive-api"), Other);
        assert_eq!(b("deps-resolve"), HttpClient);
        assert_eq!(r("deps-resolve"), HttpClient);
        assert_eq!(r("tokio-rt-worker"), Other);
    }

    #[test]
    fn an_older_file_without_the_optional_counts_reads() {
        let role: RoleCpu = serde_json::from_str(
            r#"{"role":"request_threads","threads":200,"user_s":1.5,"system_s":0.5,"voluntary":10,"involuntary":2}"#,
        )
        .unwrap();
        assert_eq!(
            (role.role, role.exited, role.run_s),
            (ThreadRole::RequestThreads, 0, None)
        );
        assert_eq!(role.cpu_s(), 2.0);
    }
}
