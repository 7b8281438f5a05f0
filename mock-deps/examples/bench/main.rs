//! Does mock-deps stay far lighter than the APIs it serves? Two measurements of the release
//! binary, run as a child process pinned to CPU 0 while this generator runs on CPU 1:
//!
//! 1. throughput at zero latency: 64 keep-alive connections on `POST /risk-analysis/validate`;
//! 2. memory with ~20,000 delayed `POST /gateway/pay` requests in flight (one socket each).
//!
//! Run: `cargo run --release -p mock-deps --example bench` (figures: `docs/mock-deps-bench.md`).
//! It rebuilds the binary if needed, re-launches itself under `taskset -c 1` with the open-files
//! limit raised to the hard limit, and takes about 30 s. Loopback only.

mod phases;
mod proc_readings;
mod raw_http;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

const INNER: &str = "MOCK_DEPS_BENCH_INNER";

fn main() -> anyhow::Result<()> {
    if std::env::var_os(INNER).is_none() {
        return relaunch();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

/// Builds the mock binary, then runs this program again pinned to CPU 1 with more file handles.
fn relaunch() -> anyhow::Result<()> {
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    let exe = std::env::current_exe()?;
    let mock_bin = build_mock(&exe)?;
    let pinned = nproc >= 2 && taskset_works();
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        r#"ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@""#,
        "sh",
    ]);
    if pinned {
        cmd.args(["taskset", "-c", "1"]);
    }
    let status = cmd
        .arg(&exe)
        .env(INNER, "1")
        .env("BENCH_NPROC", nproc.to_string())
        .env("BENCH_PINNED", if pinned { "1" } else { "0" })
        .env("BENCH_MOCK_BIN", &mock_bin)
        .status()
        .context("cannot re-launch the bench")?;
    std::process::exit(status.code().unwrap_or(1));
}

fn build_mock(exe: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "mock-deps", "--bin", "mock-deps"]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    if !cmd.status().context("cannot run cargo")?.success() {
        bail!("building the mock-deps binary failed");
    }
    // target/<profile>/examples/bench -> target/<profile>/mock-deps
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("unexpected exe path")?;
    Ok(dir.join("mock-deps"))
}

fn taskset_works() -> bool {
    Command::new("taskset")
        .args(["-c", "0", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The mock-deps child process; killed on drop.
pub struct Mock {
    child: Child,
    pub pid: u32,
    pub addr: SocketAddr,
    pub admin: reqwest::Client,
}

impl Mock {
    async fn start(bin: &Path, pinned: bool) -> anyhow::Result<Mock> {
        let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let mut cmd = if pinned {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(bin);
            c
        } else {
            Command::new(bin)
        };
        let vars = [
            ("SELLER_LATENCY_MS", "0"),
            ("RISK_LATENCY_MS", "0"),
            ("PAY_LATENCY_MS", "0"),
            ("JITTER_MS", "0"),
            ("ERROR_RATE", "0"),
            ("HANG_RATE", "0"),
            ("HTTP_WORKERS", "1"),
            ("RUST_LOG", "warn"),
        ];
        cmd.envs(vars).env("BIND_ADDR", addr.to_string());
        let child = cmd
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        // taskset execs the program, so the child's pid is the mock's.
        let pid = child.id();
        let admin = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        let mock = Mock {
            child,
            pid,
            addr,
            admin,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while mock.admin.get(mock.url("/health")).send().await.is_err() {
            if Instant::now() > deadline {
                bail!("mock-deps did not come up on {addr}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(mock)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn put_config(&self, patch: serde_json::Value) -> anyhow::Result<()> {
        let resp = self.admin.put(self.url("/admin/config")).json(&patch);
        resp.send().await?.error_for_status()?;
        Ok(())
    }

    pub async fn reset(&self) -> anyhow::Result<()> {
        let resp = self.admin.post(self.url("/admin/reset")).send().await?;
        resp.error_for_status()?;
        Ok(())
    }

    pub async fn stats(&self) -> anyhow::Result<mock_deps::Stats> {
        let resp = self.admin.get(self.url("/admin/stats")).send().await?;
        Ok(resp.error_for_status()?.json().await?)
    }

    pub async fn ledger(&self) -> anyhow::Result<mock_deps::Ledger> {
        let resp = self.admin.get(self.url("/admin/ledger")).send().await?;
        Ok(resp.error_for_status()?.json().await?)
    }

    pub fn cpu_seconds(&self) -> f64 {
        proc_readings::cpu_seconds(Some(self.pid))
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn bench() -> anyhow::Result<()> {
    let pinned = std::env::var("BENCH_PINNED").as_deref() == Ok("1");
    let nproc = std::env::var("BENCH_NPROC").unwrap_or_else(|_| "?".to_owned());
    let bin = PathBuf::from(std::env::var("BENCH_MOCK_BIN").context("run via cargo run")?);
    let profile = if cfg!(debug_assertions) {
        "DEBUG (use --release)"
    } else {
        "release"
    };
    println!("mock-deps bench ({profile} build)");
    println!("machine: nproc {nproc}, CPU {}", proc_readings::cpu_model());
    println!(
        "load average at start (1/5/15 min): {}",
        proc_readings::load_average()
    );
    if pinned {
        println!("pinning: mock on CPU 0 (taskset -c 0), generator on CPU 1 (taskset -c 1)");
    } else {
        println!(
            "pinning: NONE (taskset unavailable or a single CPU): mock and generator share CPUs"
        );
    }
    let mock = Mock::start(&bin, pinned).await?;
    println!("mock: pid {}, {}, 1 HTTP worker", mock.pid, mock.addr);
    println!(
        "mock RSS at start: {} KiB",
        proc_readings::rss_kib(mock.pid)
    );

    let tp = phases::throughput(&mock, 64, Duration::from_secs(1), Duration::from_secs(10)).await?;
    tp.print();

    let limit = proc_readings::own_nofile_limit().unwrap_or(1024);
    let wanted: usize = match std::env::var("BENCH_IN_FLIGHT") {
        Ok(v) => v.parse().context("BENCH_IN_FLIGHT")?,
        Err(_) => 20_000,
    };
    // Both processes need one descriptor per request, plus a few of their own.
    let target = wanted.min(limit.saturating_sub(256) as usize);
    if target < wanted {
        println!(
            "note: open-files limit is {limit} (hard limit, cannot be raised here), so {target} \
             requests in flight instead of {wanted}"
        );
    }
    let held = phases::in_flight(&mock, target, Duration::from_secs(10)).await?;
    held.print();
    if !held.all_ok() {
        bail!("not every delayed request was answered 200 exactly once");
    }
    println!("\nmock CPU total: {:.2} s", mock.cpu_seconds());
    println!(
        "load average at end (1/5/15 min): {}",
        proc_readings::load_average()
    );
    Ok(())
}
