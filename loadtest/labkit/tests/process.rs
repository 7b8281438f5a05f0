//! Child services (testbed's, through labkit), readiness polling, binary lookup and /proc
//! sampling, with real processes.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use labkit::process::{self, ServiceProcess};
use labkit::procstat::{self, Sampler, Target};

/// Polls `check` every 10 ms until it holds, failing after `secs` seconds with `what`.
fn until(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The name the kernel gives process `pid` (`/proc/PID/comm`), empty once it is gone.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn sh(name: &str, script: &str, log: &Path) -> ServiceProcess {
    ServiceProcess::spawn(
        name,
        Path::new("sh"),
        ["-c", script],
        vec![("GREETING".into(), "hello".into())],
        log,
    )
    .unwrap()
}

#[test]
fn output_goes_to_the_log_and_drop_stops_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/svc.log");
    let svc = sh("svc", "echo $GREETING; echo oops >&2; exec sleep 30", &log);
    let pid = svc.pid();
    until(10, "both lines in the log", || {
        svc.log_tail(5) == "hello\noops"
    });
    assert!(procstat::running(pid));
    assert!(svc.try_wait().unwrap().is_none());
    drop(svc);
    assert!(!procstat::running(pid));
}

#[test]
fn kill_is_immediate_and_reaches_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    // A shell that ignores SIGTERM and has a child of its own: kill -9 takes both, at once.
    let pid_file = dir.path().join("child.pid");
    let svc = sh(
        "crashy",
        &format!(
            "trap '' TERM; sleep 30 & echo $! > '{}'; wait",
            pid_file.display()
        ),
        &dir.path().join("log"),
    );
    // The shell writes its child's pid once the child runs (and its trap is set before that).
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    };
    until(10, "the child's pid in its file", || read_pid().is_some());
    let child = read_pid().unwrap();
    let start = Instant::now();
    let status = svc.kill().unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
    assert!(start.elapsed() < Duration::from_millis(200));
    assert!(!procstat::running(svc.pid()));
    // SIGKILL to the group is delivered at once; the orphan is reaped by init a moment later.
    until(5, "the group's other process to end", || {
        !procstat::running(child)
    });
    // Killing an exited process again is harmless and reports the same status.
    assert_eq!(svc.kill().unwrap().signal(), Some(9));
}

#[test]
fn stop_escalates_to_sigkill_when_sigterm_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let svc = sh(
        "stubborn",
        "trap '' TERM; exec sleep 30",
        &dir.path().join("log"),
    );
    // Once the shell has become `sleep`, its trap was set: SIGTERM stays ignored across exec.
    until(10, "the shell to exec sleep", || comm(svc.pid()) == "sleep");
    let start = Instant::now();
    let status = svc.stop(Duration::from_millis(300)).unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
    assert!(start.elapsed() >= Duration::from_millis(300));
}

#[test]
fn wait_ready_fails_fast_with_the_log_when_the_service_dies() {
    let dir = tempfile::tempdir().unwrap();
    let svc = sh("dies", "echo cannot bind; exit 3", &dir.path().join("log"));
    let start = Instant::now();
    let err = svc
        .wait_ready("http://127.0.0.1:9/ready", Duration::from_secs(30))
        .unwrap_err()
        .to_string();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("exited") && err.contains("cannot bind"),
        "{err}"
    );
}

/// A server answering 503 twice, then 200.
fn flaky_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ready", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let mut stream = stream.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.ends_with(b"\r\n\r\n") {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "request cut short");
                request.extend_from_slice(&buf[..n]);
            }
            assert!(request.starts_with(b"GET /ready HTTP/1.1\r\n"));
            let status = if i < 2 {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            let _ = write!(stream, "HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
        }
    });
    url
}

#[test]
fn wait_ready_polls_until_200() {
    let url = flaky_server();
    let waited = process::wait_ready(&url, Duration::from_secs(10)).unwrap();
    assert!(
        waited >= Duration::from_millis(100),
        "two 50 ms pauses: {waited:?}"
    );
    assert_eq!(
        process::http_status(&url, Duration::from_secs(1)).unwrap(),
        200
    );
}

#[tokio::test]
async fn wait_ready_async_times_out_on_a_closed_port() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/ready");
    let err = process::wait_ready_async(url, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did not answer 200"), "{err}");
}

#[test]
fn nofile_limit_is_raised_at_least_to_the_hard_limit() {
    use nix::sys::resource::{Resource, getrlimit};
    let (_, hard_before) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let raised = process::raise_nofile_limit().unwrap();
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert_eq!(soft, raised);
    assert!(raised <= hard, "{raised} / {hard}");
    assert!(
        raised >= hard_before.min(process::NOFILE_WANTED),
        "{raised}: below the hard limit {hard_before} it could have reached"
    );
    // One number, and not a file procfs reads.
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    // CAP_SYS_RESOURCE (bit 24 of the effective set) may raise the hard limit, up to fs.nr_open;
    // containers often drop it, even for root.
    let sys_resource = procfs::process::Process::myself()
        .and_then(|me| me.status())
        .is_ok_and(|s| s.capeff & (1 << 24) != 0);
    if sys_resource && nr_open >= process::NOFILE_WANTED {
        assert!(raised >= process::NOFILE_WANTED, "{raised}");
    }
}

#[test]
fn binaries_are_found_or_the_error_says_how_to_build_them() {
    let err = process::find_binary("no-such-binary")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cargo build --release -p no-such-binary"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mock-deps"), "").unwrap();
    let dirs = [PathBuf::from("/nonexistent"), dir.path().to_owned()];
    assert_eq!(
        process::find_binary_in("mock-deps", &dirs).unwrap(),
        dir.path().join("mock-deps")
    );
}

#[test]
fn sampler_reads_cpu_memory_threads_and_files() {
    let dir = tempfile::tempdir().unwrap();
    // A tree: sh with two children, one of them burning CPU.
    let tree = sh(
        "tree",
        "sleep 30 & (while :; do :; done) & wait",
        &dir.path().join("log"),
    );
    let mut sampler = Sampler::new();
    sampler
        .add("self", Target::Myself)
        .add("tree", Target::Tree(tree.pid()));
    sampler.add("gone", Target::Process(u32::MAX / 2));
    until(10, "the tree's three processes", || {
        procstat::tree_pids(tree.pid()).is_ok_and(|p| p.len() == 3)
    });
    let first = sampler.sample();
    // The window the tree's CPU is measured over.
    std::thread::sleep(Duration::from_millis(800));
    let second = sampler.sample();
    let names: Vec<&str> = second.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["self", "tree", "gone"]);
    assert!(second[2].1.is_none(), "a missing process has no sample");

    let me = second[0].1.as_ref().unwrap();
    assert!(
        me.rss_bytes > 1 << 20 && me.threads >= 1 && me.fds.unwrap() >= 3,
        "{me:?}"
    );
    let (t0, t1) = (first[1].1.as_ref().unwrap(), second[1].1.as_ref().unwrap());
    assert_eq!(t1.processes, 3, "sh, sleep and the loop subshell: {t1:?}");
    let cpu = procstat::cpu_percent(t0, t1).unwrap();
    eprintln!("busy tree: {cpu:.0} % of a core over {:.2} s", t1.t - t0.t);
    // One busy loop: some CPU (how much depends on what else runs here), never over one core.
    assert!(cpu > 5.0 && cpu < 110.0, "{cpu}");
    assert_eq!(procstat::tree_pids(tree.pid()).unwrap().len(), 3);
    let json = serde_json::to_string(&second).unwrap();
    assert!(json.contains("\"cpu_seconds\""));
}

/// The lab samples PostgreSQL as a tree: the postmaster, its helper processes and one backend
/// per session.
#[test]
fn a_postgres_server_is_sampled_with_its_helpers() {
    if let Err(e) = labkit::pg::find_bin_dir() {
        return labkit::skip::unless_ci(format!("{e:#}"));
    }
    let pg = labkit::pg::EphemeralPostgres::start().unwrap();
    let pids = procstat::tree_pids(pg.pid()).unwrap();
    assert_eq!(pids[0], pg.pid());
    assert!(
        pids.len() >= 4,
        "postmaster + checkpointer, writer, …: {pids:?}"
    );
    let sample = procstat::read(Target::Tree(pg.pid())).unwrap();
    assert!(sample.processes >= 4, "{sample:?}"); // backends come and go between the two reads
    assert!(sample.rss_bytes > 1 << 20);
}

/// A real server's processes, each named for its job: the WAL writer and checkpointer apart from
/// the backends, and the postmaster as the tree's root.
#[test]
fn a_postgres_servers_cpu_is_told_apart_by_job() {
    if let Err(e) = labkit::pg::find_bin_dir() {
        return labkit::skip::unless_ci(format!("{e:#}"));
    }
    let pg = labkit::pg::EphemeralPostgres::start().unwrap();
    let parts = procstat::tree_parts(pg.pid()).unwrap();
    let roles: Vec<&str> = parts
        .processes
        .iter()
        .map(|(pid, title, _)| procstat::postgres_role(title, *pid == pg.pid()))
        .collect();
    assert_eq!(roles[0], "postmaster", "{:?}", parts.processes);
    for job in ["walwriter", "checkpointer", "background writer"] {
        assert!(roles.contains(&job), "{job} missing: {:?}", parts.processes);
    }
    assert!(parts.processes.iter().all(|(_, _, cpu)| *cpu >= 0.0));
    assert!(parts.reaped_children_seconds >= 0.0);
}

#[test]
fn postgres_titles_name_their_jobs() {
    let role = |t| procstat::postgres_role(t, false);
    assert_eq!(role("postgres: walwriter "), "walwriter");
    assert_eq!(role("postgres: checkpointer "), "checkpointer");
    assert_eq!(role("postgres: autovacuum worker lab"), "autovacuum worker");
    assert_eq!(
        role("postgres: autovacuum launcher "),
        "autovacuum launcher"
    );
    assert_eq!(
        role("postgres: postgres lab 127.0.0.1(50412) idle"),
        "backends"
    );
    assert_eq!(
        role("postgres: postgres lab 127.0.0.1(50412) COMMIT waiting"),
        "backends"
    );
    assert_eq!(
        procstat::postgres_role("/usr/lib/postgresql/15/bin/postgres -D /tmp/x", true),
        "postmaster"
    );
}

#[test]
fn a_trees_cpu_by_job_counts_new_and_exited_processes_once() {
    let parts = |procs: &[(u32, &str, f64)], reaped| procstat::TreeParts {
        processes: procs
            .iter()
            .map(|(p, t, c)| (*p, t.to_string(), *c))
            .collect(),
        reaped_children_seconds: reaped,
    };
    let role = procstat::postgres_role;
    let prev = parts(
        &[
            (1, "postgres -D x", 1.0),
            (2, "postgres: walwriter ", 0.5),
            (3, "postgres: u db 127.0.0.1(1) idle", 2.0),
            (4, "postgres: autovacuum worker db", 0.3),
        ],
        10.0,
    );
    // Worker 4 used 0.1 s more before it exited (reaped: 0.4 s in all); backend 5 is new.
    let cur = parts(
        &[
            (1, "postgres -D x", 1.1),
            (2, "postgres: walwriter ", 0.7),
            (3, "postgres: u db 127.0.0.1(1) idle", 2.5),
            (5, "postgres: u db 127.0.0.1(2) idle", 0.25),
        ],
        10.4,
    );
    let jobs = cur.cpu_since(&prev, 1, role);
    let close = |job: &str, want: f64| {
        let got = jobs.get(job).copied().unwrap_or(f64::NAN);
        assert!(
            (got - want).abs() < 1e-9,
            "{job}: {got} != {want} in {jobs:?}"
        );
    };
    close("postmaster", 0.1);
    close("walwriter", 0.2);
    close("backends", 0.75);
    close("exited", 0.1);
    assert!(!jobs.contains_key("autovacuum worker"), "{jobs:?}");
}

#[test]
fn a_threads_cpu_is_its_own() {
    let busy = std::thread::spawn(|| {
        let start = procstat::this_thread_cpu_seconds().unwrap();
        let until = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < until {
            std::hint::black_box(0u64);
        }
        procstat::this_thread_cpu_seconds().unwrap() - start
    });
    let idle_start = procstat::this_thread_cpu_seconds().unwrap();
    let busy = busy.join().unwrap();
    let idle = procstat::this_thread_cpu_seconds().unwrap() - idle_start;
    // Ticks are 10 ms: the spinning thread counts ≈ 300 ms (less on a crowded machine), this one,
    // which only waited, next to none.
    assert!(busy >= 0.05, "busy thread: {busy}");
    assert!(idle < busy / 2.0, "idle {idle} against busy {busy}");
}
