//! A process whose threads use known amounts of CPU, for the tests of `labkit::threads`: each
//! thread spins until its own run time (`/proc/thread-self/schedstat`) reaches its budget, so the
//! amounts hold on a loaded machine, where only the wall time they take grows.
//!
//! Threads, named as the tests look for them (`--budget-ms B`, default 200):
//! - `burn-a` burns 2 B and `burn-b` B, both pinned to one CPU so that they preempt each other
//!   (involuntary switches);
//! - `burn-exit` burns B / 2, sleeps 300 ms, burns B / 2 more and exits;
//! - `nap` sleeps 1 ms a hundred times (voluntary switches), burning nothing to speak of.
//!
//! Protocol on stdin/stdout: prints `ready` once every thread is named and waiting, starts them
//! on a line `go`, prints `done` when all have finished their work (`burn-exit` gone, the others
//! waiting, alive), and exits on the next line or at the end of stdin.

use std::io::{BufRead, Write};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let budget = budget_ms()?;
    let cpu = first_cpu()?;
    // Every thread running (and so named), then every thread starting its work.
    let (named, start) = (Arc::new(Barrier::new(5)), Arc::new(Barrier::new(5)));
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mut exiting = Vec::new();
    for (name, work) in [
        ("burn-a", Work::Pinned(2 * budget)),
        ("burn-b", Work::Pinned(budget)),
        ("burn-exit", Work::Twice(budget / 2)),
        ("nap", Work::Naps(100)),
    ] {
        let (named, start, done) = (named.clone(), start.clone(), done_tx.clone());
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                if let Work::Pinned(_) = work {
                    pin(cpu);
                }
                named.wait();
                start.wait();
                work.run();
                let _ = done.send(());
                // Only burn-exit exits: the others' counts must be there at the end.
                if work.stays() {
                    loop {
                        std::thread::park();
                    }
                }
            })
            .context("starting a thread")?;
        if !work.stays() {
            exiting.push(handle);
        }
    }
    named.wait();
    let mut stdin = std::io::stdin().lock().lines();
    say("ready")?;
    match stdin.next() {
        Some(Ok(line)) if line.trim() == "go" => {}
        other => bail!("expected `go` on stdin, read {other:?}"),
    }
    start.wait();
    for _ in 0..4 {
        done_rx
            .recv()
            .context("a thread ended without its work done")?;
    }
    // Gone, not only done, before `done` is said.
    for handle in exiting {
        handle
            .join()
            .map_err(|_| anyhow::anyhow!("a thread panicked"))?;
    }
    say("done")?;
    let _ = stdin.next();
    Ok(())
}

#[derive(Clone, Copy)]
enum Work {
    /// Burn this many ms, pinned to the shared CPU.
    Pinned(u64),
    /// Burn this many ms, sleep 300 ms, burn as much again.
    Twice(u64),
    /// Sleep 1 ms this many times.
    Naps(u32),
}

impl Work {
    /// Whether the thread stays alive, parked, once its work is done.
    fn stays(self) -> bool {
        !matches!(self, Work::Twice(_))
    }

    fn run(self) {
        match self {
            Work::Pinned(ms) => burn(ms),
            Work::Twice(ms) => {
                burn(ms);
                std::thread::sleep(Duration::from_millis(300));
                burn(ms);
            }
            Work::Naps(n) => (0..n).for_each(|_| std::thread::sleep(Duration::from_millis(1))),
        }
    }
}

/// Spins until this thread has run `ms` more milliseconds on a CPU.
fn burn(ms: u64) {
    let until = run_ns() + ms * 1_000_000;
    let mut x = 0u64;
    while run_ns() < until {
        for i in 0..20_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

/// This thread's time on a CPU so far, ns (the first field of its schedstat).
fn run_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}

/// The first CPU this process may run on.
fn first_cpu() -> anyhow::Result<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    (0..nix::sched::CpuSet::count())
        .find(|&c| set.is_set(c).unwrap_or(false))
        .context("no CPU in this process's affinity")
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).expect("a CPU of the affinity set");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("pinning a thread");
}

fn budget_ms() -> anyhow::Result<u64> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(200),
        [flag, ms] if flag == "--budget-ms" => ms.parse().context("--budget-ms MS"),
        _ => bail!("usage: burn_threads [--budget-ms MS]"),
    }
}

fn say(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    Ok(out.flush()?)
}
