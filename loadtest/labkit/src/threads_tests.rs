//! The ledger's arithmetic on made-up snapshots; `tests/threads.rs` reads real threads.

use super::*;

fn thread(
    tid: u32,
    start: u64,
    comm: &str,
    user: u64,
    system: u64,
    switches: u64,
) -> ThreadReading {
    ThreadReading {
        tid,
        start,
        comm: comm.to_owned(),
        counters: Counters {
            user_ticks: user,
            system_ticks: system,
            run_ns: Some((user + system) * 10_000_000),
            voluntary: switches,
            involuntary: switches / 10,
        },
    }
}

fn snap(threads: Vec<ThreadReading>, user: u64, system: u64) -> Snapshot {
    Snapshot {
        threads,
        process_user_ticks: user,
        process_system_ticks: system,
    }
}

/// Seconds back in clock ticks, as the snapshots gave them.
fn ticks(s: f64) -> f64 {
    s * crate::counters::ticks_per_second()
}

#[test]
fn each_thread_counts_from_the_first_snapshot_or_its_birth_to_when_it_was_last_seen() {
    let mut ledger = Ledger::begin(snap(
        vec![
            thread(1, 10, "main", 100, 50, 1000),
            thread(2, 10, "loop", 40, 10, 500),
        ],
        1000,
        400,
    ));
    // Thread 3 is born; thread 2 runs on.
    ledger.observe(snap(
        vec![
            thread(1, 10, "main", 110, 50, 1010),
            thread(2, 10, "loop", 60, 20, 700),
            thread(3, 20, "worker", 5, 5, 30),
        ],
        1040,
        420,
    ));
    // Thread 3 exits after its last reading (it had used 5 more user ticks by then); thread 2's
    // id is reused by a new thread (another start time).
    ledger.observe(snap(
        vec![
            thread(1, 10, "main", 120, 50, 1020),
            thread(2, 30, "worker", 2, 0, 4),
        ],
        1080,
        430,
    ));
    let a = ledger.account();
    assert_eq!(a.snapshots, 3);
    assert_eq!(a.threads.len(), 4);
    let t = |tid: u32, comm: &str| {
        a.threads
            .iter()
            .find(|t| t.tid == tid && t.comm == comm)
            .unwrap_or_else(|| panic!("{tid} {comm}"))
    };
    let main = t(1, "main");
    assert!(!main.gone);
    assert_eq!(
        (ticks(main.user_s).round(), ticks(main.system_s).round()),
        (20.0, 0.0)
    );
    assert_eq!(main.voluntary, 20);
    let old = t(2, "loop");
    assert!(old.gone, "the first thread 2 is gone, its id reused");
    assert_eq!(ticks(old.user_s + old.system_s).round(), 30.0);
    assert_eq!(old.voluntary, 200);
    let born = t(3, "worker");
    assert!(born.gone);
    assert_eq!(ticks(born.user_s + born.system_s).round(), 10.0);
    assert_eq!(born.voluntary, 30);
    let reused = t(2, "worker");
    assert!(!reused.gone);
    assert_eq!(ticks(reused.user_s).round(), 2.0);
    // The process used 80 + 30 ticks, the threads seen 20 + 30 + 10 + 2 = 62: 48 unseen, split
    // as the process's 80 : 30.
    let (user, system) = a.unseen();
    assert!(
        (ticks(user + system) - 48.0).abs() < 1e-6,
        "{user} {system}"
    );
    assert!((user / (user + system) - 80.0 / 110.0).abs() < 1e-9);
    let roles = a.by_role(|comm| comm.to_owned());
    assert_eq!(roles["worker"].threads, 2);
    assert_eq!(roles["worker"].gone, 1);
    assert_eq!(roles["worker"].voluntary, 34);
    assert_eq!(roles["loop"].involuntary, 20);
    let run = roles["worker"].run_s.unwrap();
    assert!((run - 0.12).abs() < 1e-9, "{run}");
    // A role's CPU is its run time, split as its ticks are: 7 user and 5 system ticks.
    let w = &roles["worker"];
    assert!((w.user_s - 0.12 * 7.0 / 12.0).abs() < 1e-9, "{w:?}");
    assert!((w.user_s + w.system_s - 0.12).abs() < 1e-9, "{w:?}");
}

#[test]
fn the_unseen_remainder_is_never_negative() {
    // Rounded per thread, the threads can add up to a tick more than the process.
    let mut ledger = Ledger::begin(snap(vec![thread(1, 1, "a", 0, 0, 0)], 0, 0));
    ledger.observe(snap(vec![thread(1, 1, "a", 3, 1, 0)], 2, 1));
    assert_eq!(ledger.account().unseen(), (0.0, 0.0));
}

#[test]
fn without_schedstat_a_role_counts_its_ticks() {
    let untimed = |user, system| {
        let mut t = thread(2, 1, "b", user, system, 0);
        t.counters.run_ns = None;
        t
    };
    let mut ledger = Ledger::begin(snap(vec![thread(1, 1, "a", 0, 0, 0), untimed(0, 0)], 0, 0));
    ledger.observe(snap(vec![thread(1, 1, "a", 0, 0, 0), untimed(1, 1)], 1, 1));
    let roles = ledger.account().by_role(|_| "all");
    assert_eq!(roles["all"].run_s, None);
    assert_eq!(roles["all"].threads, 2);
    // Thread a ran 0 ns, thread b 2 ticks that schedstat did not time.
    let all = &roles["all"];
    assert!(
        (ticks(all.user_s + all.system_s) - 2.0).abs() < 1e-9,
        "{all:?}"
    );
}
