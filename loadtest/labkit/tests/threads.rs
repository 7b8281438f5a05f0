//! `labkit::threads` on a real process whose threads burn known amounts of CPU
//! (`src/bin/burn_threads.rs`): the split between threads, an exited thread's share, switches.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use labkit::threads::{RoleUse, Watch};

/// CPU budget of `burn-b`, ms (`burn-a` burns twice as much, `burn-exit` as much in two halves).
const BUDGET_MS: u64 = 200;

fn cpu(r: &RoleUse) -> f64 {
    r.user_s + r.system_s
}

#[test]
fn threads_split_the_cpu_they_burned_and_an_exited_thread_still_counts() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burn_threads"))
        .args(["--budget-ms", &BUDGET_MS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting burn_threads");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut expect = |want: &str| {
        let line = lines.next().expect("a line from burn_threads").unwrap();
        assert_eq!(line, want);
    };
    expect("ready");
    // Every 50 ms: `burn-exit` is seen between its two halves (it sleeps 300 ms between them).
    let watch = Watch::start(child.id(), Duration::from_millis(50)).unwrap();
    writeln!(stdin, "go").unwrap();
    expect("done");
    let account = watch.finish().unwrap();
    writeln!(stdin, "quit").unwrap();
    assert!(child.wait().unwrap().success());

    let roles = account.by_role(|comm| comm.to_owned());
    let role = |name: &str| {
        roles
            .get(name)
            .unwrap_or_else(|| panic!("no thread {name} in {roles:?}"))
    };
    let budget = BUDGET_MS as f64 / 1000.0;
    let (a, b) = (role("burn-a"), role("burn-b"));
    // Each burns until its own run time reaches its budget: the ratio holds however loaded the
    // machine; clock ticks (10 ms) and the last spin's overshoot leave a few percent.
    let ratio = cpu(a) / cpu(b);
    assert!((1.8..=2.25).contains(&ratio), "burn-a / burn-b = {ratio}");
    assert!(cpu(b) >= 0.8 * budget, "burn-b {}", cpu(b));
    // The role's CPU is schedstat's run time (ns); stat's ticks of the thread say the same.
    let thread_a = account.threads.iter().find(|t| t.comm == "burn-a").unwrap();
    let ticks_a = thread_a.user_s + thread_a.system_s;
    assert!(
        (ticks_a - cpu(a)).abs() <= 0.1 * cpu(a) + 0.02,
        "{ticks_a} vs {}",
        cpu(a)
    );
    assert_eq!(a.run_s, thread_a.run_s);

    // burn-exit exited before the end: its first half was seen, the rest is the unseen remainder.
    let exit = role("burn-exit");
    assert_eq!((exit.threads, exit.gone), (1, 1));
    assert!(cpu(exit) >= 0.4 * budget, "burn-exit seen {}", cpu(exit));
    let (user, system) = account.unseen();
    let counted = cpu(exit) + user + system;
    assert!(
        (0.85 * budget..=1.4 * budget).contains(&counted),
        "burn-exit {} + unseen {} = {counted}, burned {budget}",
        cpu(exit),
        user + system
    );
    // Every thread, with the remainder, is the process's CPU.
    let threads: f64 = roles.values().map(cpu).sum();
    let process = account.process_user_s + account.process_system_s;
    assert!(threads + user + system >= process - 1e-9);
    assert!(process >= 3.5 * budget, "process {process}");

    // nap blocked a hundred times; the two burners shared one CPU, so each preempted the other.
    assert!(role("nap").voluntary >= 100, "{:?}", role("nap"));
    assert!(a.involuntary + b.involuntary >= 2, "{a:?} {b:?}");
    assert!(account.snapshots >= 3, "{}", account.snapshots);
}
