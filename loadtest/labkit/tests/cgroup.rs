//! Against the real cgroup filesystem: a busy loop limited to 0.2 CPU must get far less CPU than an
//! unlimited one running at the same time, and a process over the memory limit must be OOM-killed.
//! Skipped, with the probe's reason, where cgroups are not writable (a failure under CI).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use labkit::cgroup::{self, LimitedGroup, ResourceLimits};
use labkit::procstat::{self, Target};

/// The tests measure CPU time: they must not compete with each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn writable() -> bool {
    let probe = cgroup::probe();
    if !probe.writable {
        labkit::skip::unless_ci(format!("cgroups are not writable here: {}", probe.reason));
    }
    probe.writable
}

/// A shell busy loop at nice -10 (both loops alike), so that on a machine busy with builds the
/// unlimited one still gets well over the 0.2 quota and the comparison means something.
fn busy_loop() -> Child {
    Command::new("nice")
        .args(["-n", "-10", "sh", "-c", "while :; do :; done"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn cpu_seconds(pid: u32) -> f64 {
    procstat::read(Target::Process(pid)).unwrap().cpu_seconds
}

#[test]
fn cpu_quota_is_enforced_and_read_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !writable() {
        return;
    }
    let limits = ResourceLimits {
        cpus: 0.2,
        memory_bytes: 256 << 20,
        ..ResourceLimits::default()
    };
    let group = LimitedGroup::create("cpu-test", limits).unwrap();
    let enforced = group.enforced();
    assert_eq!(enforced.cpu_quota, Some(0.2), "{enforced:?}");
    assert_eq!(enforced.cpu_period_us, Some(10_000), "{enforced:?}");
    assert_eq!(enforced.memory_bytes, Some(256 << 20), "{enforced:?}");
    let paths = group.paths();
    assert!(paths.iter().all(|p| p.is_dir()));

    let mut limited = busy_loop();
    group.add_pid(limited.id()).unwrap();
    let mut free = busy_loop();
    assert_eq!(group.pids().unwrap(), vec![limited.id()]);
    // On a saturated machine even the unlimited loop gets little CPU and the comparison says
    // nothing: measure up to three 2 s windows, and compare in the first where the unlimited loop
    // got at least 35 % of a core. The absolute bound and the kernel's throttling counters are
    // checked in every window.
    let mut compared = false;
    for window in 1..=3 {
        let m = measure(&group, limited.id(), free.id());
        eprintln!(
            "window {window}, {:.2} s: limited (0.2 CPU) loop {:.3} s CPU ({:.0} %), group counter \
             {:.3} s, throttled in {} of {} periods; unlimited loop {:.3} s ({:.0} %); ratio {:.2}",
            m.elapsed,
            m.limited,
            100.0 * m.limited / m.elapsed,
            m.group,
            m.throttled,
            m.periods,
            m.free,
            100.0 * m.free / m.elapsed,
            m.limited / m.free
        );
        assert!(
            m.limited / m.elapsed < 0.35,
            "limited loop over its quota: {m:?}"
        );
        assert!(
            (m.group - m.limited).abs() < 0.1,
            "group counter disagrees with /proc: {m:?}"
        );
        if m.free / m.elapsed >= 0.35 {
            assert!(
                m.limited < 0.75 * m.free,
                "limited loop not held back: {m:?}"
            );
            compared = true;
            break;
        }
    }
    if !compared {
        eprintln!("NOTE: machine saturated, ratio not compared; absolute bound held in 3 windows");
    }
    let stats = group.stats();
    assert!(
        stats.cpu_throttled_periods.unwrap_or(0) > 0,
        "quota never bit: {stats:?}"
    );
    for child in [&mut limited, &mut free] {
        child.kill().unwrap();
        child.wait().unwrap();
    }

    drop(group);
    assert!(
        paths.iter().all(|p| !p.exists()),
        "cgroup directories left behind"
    );
}

/// A pod of any size: the kernel holds the fractional quota, the period the rule chose and the
/// memory limit, each read back from the group's files.
#[test]
fn pod_sizes_are_read_back_from_the_cgroup() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !writable() {
        return;
    }
    for (cpus, mib, period_us) in [
        (0.125, 128u64, 10_000),
        (0.5, 512, 10_000),
        (0.05, 64, 20_000),
    ] {
        let limits = ResourceLimits {
            cpus,
            memory_bytes: mib << 20,
            ..ResourceLimits::default()
        };
        let group = LimitedGroup::create("pod-test", limits).unwrap();
        let held = group.enforced();
        assert_eq!(held.cpu_quota, Some(cpus), "{held:?}");
        assert_eq!(held.cpu_period_us, Some(period_us), "{held:?}");
        assert_eq!(held.memory_bytes, Some(mib << 20), "{held:?}");
    }
}

#[test]
fn a_kubernetes_period_and_a_burst_are_held_by_the_kernel_and_read_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !writable() {
        return;
    }
    let pod = |burst_us| ResourceLimits {
        cpus: 0.125,
        memory_bytes: 128 << 20,
        cfs_period_us: Some(100_000),
        cfs_burst_us: burst_us,
    };
    let group = LimitedGroup::create("k8s-pod-test", pod(0)).unwrap();
    let held = group.enforced();
    assert_eq!(held.cpu_quota, Some(0.125), "{held:?}");
    assert_eq!(held.cpu_period_us, Some(100_000), "{held:?}");
    // Some(0) where the kernel has the burst file (5.14+), None where it has none.
    assert!(matches!(held.cpu_burst_us, Some(0) | None), "{held:?}");
    let no_burst_here = held.cpu_burst_us.is_none();
    drop(group);
    match LimitedGroup::create("k8s-burst-test", pod(12_500)) {
        Ok(g) => assert_eq!(
            g.enforced().cpu_burst_us,
            Some(12_500),
            "{:?}",
            g.enforced()
        ),
        Err(e) => assert!(
            no_burst_here,
            "a kernel with the burst file refused it: {e}"
        ),
    }
    // One µs over the quota: refused before the kernel is asked.
    assert!(matches!(
        LimitedGroup::create("k8s-over-test", pod(12_501)),
        Err(cgroup::LimitError::InvalidLimits(_))
    ));
}

#[test]
fn memory_limit_oom_kills_inside_the_group() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !writable() {
        return;
    }
    let limits = ResourceLimits {
        cpus: 1.0,
        memory_bytes: 32 << 20,
        ..ResourceLimits::default()
    };
    let group = LimitedGroup::create("memory-test", limits).unwrap();
    // dd's 128 MiB buffer is filled from /dev/zero once it is inside the group.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "sleep 0.5; exec dd if=/dev/zero of=/dev/null bs=128M count=1",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    group.add_pid(child.id()).unwrap();
    let status = child.wait().unwrap();
    let stats = group.stats();
    eprintln!(
        "dd in a 32 MiB group: {status}; {stats:?}; {:?}",
        group.enforced()
    );
    assert_eq!(
        status.signal(),
        Some(9),
        "expected an OOM kill, got {status}"
    );
    assert!(group.oom_kills().unwrap() >= 1, "{stats:?}");
    let peak = stats.memory_peak.expect("peak readable");
    assert!(peak > 24 << 20 && peak <= 32 << 20, "peak {peak}");
    // failcnt is not asserted: kernel 6.18 (v1) never increments it although the limit was hit.
}

#[test]
fn invalid_limits_are_refused() {
    let zero = ResourceLimits {
        cpus: 0.0,
        ..ResourceLimits::default()
    };
    assert!(matches!(
        LimitedGroup::create("bad", zero),
        Err(cgroup::LimitError::InvalidLimits(_))
    ));
}

#[derive(Debug)]
struct Measurement {
    elapsed: f64,
    limited: f64,
    free: f64,
    group: f64,
    periods: u64,
    throttled: u64,
}

/// CPU seconds of both loops (from /proc) and of the group (from the cgroup) over 2 s.
fn measure(group: &LimitedGroup, limited: u32, free: u32) -> Measurement {
    let before = (cpu_seconds(limited), cpu_seconds(free), group.stats());
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let after = (cpu_seconds(limited), cpu_seconds(free), group.stats());
    let delta = |f: fn(&cgroup::GroupStats) -> Option<u64>| {
        f(&after.2).unwrap_or(0) - f(&before.2).unwrap_or(0)
    };
    Measurement {
        elapsed: start.elapsed().as_secs_f64(),
        limited: after.0 - before.0,
        free: after.1 - before.1,
        group: after.2.cpu_usage_seconds.unwrap_or(0.0) - before.2.cpu_usage_seconds.unwrap_or(0.0),
        periods: delta(|s| s.cpu_periods),
        throttled: delta(|s| s.cpu_throttled_periods),
    }
}
