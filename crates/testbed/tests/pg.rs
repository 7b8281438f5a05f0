//! Starts a real cluster from this machine's PostgreSQL binaries.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;

use testbed::pg::{self, EphemeralPostgres};

/// Whether the server binaries are here; if not, the test is skipped (a failure under CI).
fn have_postgres() -> bool {
    match pg::find_bin_dir() {
        Ok(_) => true,
        Err(e) => {
            testbed::skip::unless_ci(format!("{e:#}"));
            false
        }
    }
}

/// `true` while `pid` runs: it exists and is not a zombie waiting to be reaped (the state, the
/// field after the parenthesised name in `/proc/PID/stat`).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// `sql`'s answer from psql (libpq), over TCP on 127.0.0.1.
fn psql(pg: &EphemeralPostgres, sql: &str) -> String {
    let port = pg.port().to_string();
    let tcp = [
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-U",
        "postgres",
        "-d",
        "postgres",
    ];
    psql_at(pg, &tcp, sql)
}

/// `sql`'s answer from psql (libpq), connected as `target` says (options or a URL).
fn psql_at(pg: &EphemeralPostgres, target: &[&str], sql: &str) -> String {
    let out = Command::new(pg.bin_dir().join("psql"))
        .args(["-X", "-A", "-t"])
        .args(target)
        .args(["-c", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql {target:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn cluster_answers_reports_its_settings_and_disappears_on_drop() {
    if !have_postgres() {
        return;
    }
    let pg = EphemeralPostgres::start().unwrap();
    let dir = pg.dir().to_owned();
    let url = pg.url();
    assert_eq!(
        url,
        format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port())
    );
    assert!(TcpStream::connect(("127.0.0.1", pg.port())).is_ok());
    assert_eq!(psql(&pg, "SELECT 1"), "1");

    // What the report prints is what the server runs with.
    assert_eq!(pg.max_connections(), 300);
    for (name, value) in pg.settings() {
        assert_eq!(&psql(&pg, &format!("SHOW {name}")), value, "{name}");
    }

    let pid = pg.pid();
    assert!(running(pid), "postmaster {pid}");
    drop(pg);
    assert!(!dir.exists(), "{} left behind", dir.display());
    // Gone, or a zombie waiting for init (which here reaps lazily).
    assert!(!running(pid), "postmaster {pid} still running");
    assert!(
        TcpStream::connect(
            url.trim_start_matches("postgres://postgres@")
                .trim_end_matches("/postgres")
        )
        .is_err()
    );
}

#[test]
fn settings_can_be_overridden_for_a_durable_run() {
    if !have_postgres() {
        return;
    }
    let pg = EphemeralPostgres::start_with_settings(&[("fsync", "on"), ("max_connections", "50")])
        .unwrap();
    assert_eq!(psql(&pg, "SHOW fsync"), "on");
    assert_eq!(pg.max_connections(), 50);
    assert_eq!(psql(&pg, "SHOW max_connections"), "50");
}

#[test]
fn an_immediate_restart_keeps_what_was_committed_with_synchronous_commit() {
    if !have_postgres() {
        return;
    }
    let pg = EphemeralPostgres::start_with_settings(&[("synchronous_commit", "on")]).unwrap();
    psql(&pg, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)");
    let before = pg.pid();
    let after = pg.restart_immediate().unwrap();
    assert_ne!(before, after, "a new postmaster");
    assert_eq!(pg.pid(), after);
    assert_eq!(psql(&pg, "SELECT x FROM t"), "42");
    let log = std::fs::read_to_string(pg.log_path()).unwrap();
    assert!(
        log.contains("not properly shut down") || log.contains("automatic recovery"),
        "the server recovered as after a crash:\n{log}"
    );
}

#[test]
fn missing_binaries_say_what_to_install() {
    let err = pg::find_bin_dir_in(&[PathBuf::from("/nonexistent")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("apt-get install postgresql"), "{err}");
    assert!(err.contains("brew install postgresql@15"), "{err}");
    assert!(err.contains("--database-url"), "{err}");
}

/// Not a test of its own: the child half of `interrupt_stops_everything_and_exits_130`, which
/// runs it in a copy of this test binary (`--ignored --exact interrupted_child`) and asserts.
#[test]
#[ignore = "the child of interrupt_stops_everything_and_exits_130, run by it"]
fn interrupted_child() {
    if std::env::var_os("TESTBED_INTERRUPT_CHILD").is_none() {
        return;
    }
    let pg = EphemeralPostgres::start().unwrap();
    let sleeper = testbed::process::ServiceProcess::spawn(
        "sleeper",
        std::path::Path::new("sleep"),
        ["60"],
        vec![],
        &pg.dir().join("sleeper.log"),
    )
    .unwrap();
    println!(
        "READY {} {} {}",
        pg.dir().display(),
        pg.pid(),
        sleeper.pid()
    );
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[test]
fn interrupt_stops_everything_and_exits_130() {
    use std::io::{BufRead, BufReader};
    if !have_postgres() {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "interrupted_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("TESTBED_INTERRUPT_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        // libtest may print "test interrupted_child ... " on the same line.
        .find_map(|l| l.find("READY ").map(|i| l[i..].to_owned()))
        .expect("child reported its cluster");
    let fields: Vec<&str> = line.split(' ').collect();
    let (dir, postmaster, sleeper) = (PathBuf::from(fields[1]), fields[2], fields[3]);
    assert!(dir.exists());
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(!dir.exists(), "{} left behind", dir.display());
    for pid in [postmaster, sleeper] {
        assert!(!running(pid.parse().unwrap()), "{pid} survived");
    }
}

/// The scripts' way in: `pg-ephemeral start` leaves the cluster running after it exits, with the
/// default settings; `pg-ephemeral stop DIR` ends it and removes the directory.
#[test]
fn the_pg_ephemeral_binary_starts_a_cluster_that_outlives_it_and_stops_it() {
    if !have_postgres() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_pg-ephemeral");
    let out = Command::new(bin).arg("start").output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8(out.stdout).expect("utf-8");
    let (dir, url) = out.trim_end().split_once('\n').expect("dir, then URL");
    let port = url
        .trim_start_matches("postgres://postgres@127.0.0.1:")
        .trim_end_matches("/postgres");
    assert!(TcpStream::connect(format!("127.0.0.1:{port}")).is_ok());
    let show = Command::new(pg::find_bin_dir().unwrap().join("psql"))
        .args([
            "-X",
            "-A",
            "-t",
            url,
            "-c",
            "SHOW max_prepared_transactions",
        ])
        .output()
        .expect("psql runs");
    assert_eq!(String::from_utf8_lossy(&show.stdout).trim(), "64");

    let stop = Command::new(bin)
        .args(["stop", dir])
        .status()
        .expect("runs");
    assert!(stop.success());
    assert!(!std::path::Path::new(dir).exists(), "{dir} left behind");
    assert!(TcpStream::connect(format!("127.0.0.1:{port}")).is_err());
    assert_eq!(Command::new(bin).status().expect("runs").code(), Some(2));
}

/// `socket_url` is the cluster's Unix-domain socket for both drivers the APIs use: libpq (psql
/// here, as diesel) and sqlx. A socket connection has no client address.
#[test]
fn the_socket_url_reaches_the_server_over_its_unix_socket_for_libpq_and_sqlx() {
    if !have_postgres() {
        return;
    }
    let pg = EphemeralPostgres::start().unwrap();
    let url = pg.socket_url();
    let over_socket = "select inet_client_addr() is null";
    assert_eq!(psql_at(&pg, &[&url], over_socket), "t", "libpq");
    // The TCP URL, for contrast: the same query says false.
    assert_eq!(psql(&pg, over_socket), "f");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let by_sqlx: bool = runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(over_socket)
            .fetch_one(&mut conn)
            .await
            .unwrap()
    });
    assert!(by_sqlx, "sqlx connected over TCP, not the socket");
}
