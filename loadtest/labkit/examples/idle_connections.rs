//! What idle keep-alive connections cost each API: its resident memory and open file descriptors
//! before and after `N` client connections (default 10,000) that have each completed one request
//! (`GET /health`) and now wait for their next, as a browser or a pooling client leaves them.
//! The figures behind `MAX_CONNECTIONS`' default (order-core's `connection_cap`), in
//! docs/benchmarks.md.
//!
//! ```text
//! DATABASE_URL=postgres://… cargo run -p labkit --example idle_connections -- \
//!     [--connections 10000] [--bin-dir target/release] [blocking-api] [reactive-api]
//! ```
//!
//! Each API is started from its release build with `KEEP_ALIVE_S=600` (so that no connection is
//! closed while it is counted) and a `MAX_CONNECTIONS` above `N`; the database is only used for
//! the start-up (migrations). The measured process is the API alone: this program's own sockets
//! are in its own process. Memory is the API's RSS (`/proc/PID/status`), which leaves out what the
//! kernel holds for each socket (its buffers, a few KiB while idle).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use labkit::process::{ServiceProcess, find_binary_in, find_release_binary, raise_nofile_limit};
use labkit::procstat::{ProcSample, Target, read};

const REQUEST: &[u8] = b"GET /health HTTP/1.1\r\nHost: lab\r\n\r\n";

struct Args {
    connections: usize,
    bin_dir: Option<PathBuf>,
    apis: Vec<String>,
}

fn args() -> anyhow::Result<Args> {
    let mut parsed = Args {
        connections: 10_000,
        bin_dir: None,
        apis: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--connections" => {
                let n = args.next().context("--connections needs a number")?;
                parsed.connections = n.parse().context("--connections")?;
            }
            "--bin-dir" => {
                parsed.bin_dir = Some(args.next().context("--bin-dir needs a path")?.into())
            }
            "blocking-api" | "reactive-api" => parsed.apis.push(arg),
            other => bail!("unknown argument {other:?}"),
        }
    }
    if parsed.apis.is_empty() {
        parsed.apis = vec!["blocking-api".into(), "reactive-api".into()];
    }
    Ok(parsed)
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    let database_url =
        std::env::var("DATABASE_URL").context("DATABASE_URL (a throw-away database)")?;
    // This process and the API (which inherits it) each hold one descriptor per connection.
    let nofile = raise_nofile_limit()?;
    println!(
        "RLIMIT_NOFILE {nofile}, {} connections per API",
        args.connections
    );
    println!(
        "| API | RSS before | RSS after | per connection | fds before | fds after | per connection |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for api in &args.apis {
        let row = measure(api, &args, &database_url)?;
        println!("{row}");
    }
    Ok(())
}

fn measure(api: &str, args: &Args, database_url: &str) -> anyhow::Result<String> {
    let binary = match &args.bin_dir {
        Some(dir) => find_binary_in(api, std::slice::from_ref(dir))?,
        None => find_release_binary(api)?,
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let env = [
        ("DATABASE_URL", database_url.to_owned()),
        ("BIND_ADDR", format!("127.0.0.1:{port}")),
        ("APP_ENV", "development".to_owned()),
        ("KEEP_ALIVE_S", "600".to_owned()),
        ("MAX_CONNECTIONS", (args.connections + 100).to_string()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let env = env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let log = std::env::temp_dir().join(format!("idle-connections-{api}.log"));
    let service = ServiceProcess::spawn(api, &binary, [] as [&str; 0], env, &log)?;
    let address = format!("127.0.0.1:{port}");
    service
        .wait_ready(&format!("http://{address}/health"), Duration::from_secs(30))
        .with_context(|| service.log_tail(20))?;
    // The first request of a connection warms the API's buffers and pools once.
    drop(one_request(&address)?);
    let before = sample(service.pid())?;
    let started = Instant::now();
    let mut idle = Vec::with_capacity(args.connections);
    for i in 0..args.connections {
        let connection = one_request(&address).with_context(|| format!("connection {i}"))?;
        idle.push(connection);
    }
    let opened = started.elapsed();
    let after = sample(service.pid())?;
    // Each connection still answers: none was closed while it was counted.
    for connection in idle
        .iter_mut()
        .step_by(args.connections.div_ceil(100).max(1))
    {
        exchange(connection).context("a request on an idle connection")?;
    }
    drop(idle);
    service.interrupt(Duration::from_secs(10))?; // SIGINT: no SHUTDOWN_DELAY_MS
    let n = args.connections as f64;
    let rss = |s: &ProcSample| s.rss_bytes as f64 / (1 << 20) as f64;
    let fds = |s: &ProcSample| s.fds.unwrap_or_default();
    eprintln!(
        "{api}: {} connections opened in {opened:?}",
        args.connections
    );
    Ok(format!(
        "| {api} | {:.1} MiB | {:.1} MiB | {:.1} KiB | {} | {} | {:.2} |",
        rss(&before),
        rss(&after),
        (after.rss_bytes as f64 - before.rss_bytes as f64) / 1024.0 / n,
        fds(&before),
        fds(&after),
        (fds(&after) as f64 - fds(&before) as f64) / n,
    ))
}

fn sample(pid: u32) -> anyhow::Result<ProcSample> {
    let sample = read(Target::Process(pid))?;
    if sample.fds.is_none() {
        bail!("/proc/{pid}/fd is not readable");
    }
    Ok(sample)
}

/// A new connection that has completed one request and is kept alive.
fn one_request(address: &str) -> anyhow::Result<TcpStream> {
    let mut connection = TcpStream::connect(address)?;
    connection.set_read_timeout(Some(Duration::from_secs(10)))?;
    exchange(&mut connection)?;
    Ok(connection)
}

/// Sends `GET /health` and reads its whole answer (head and `Content-Length` bytes of body).
fn exchange(connection: &mut TcpStream) -> anyhow::Result<()> {
    connection.write_all(REQUEST)?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = connection.read(&mut chunk)?;
        if n == 0 {
            bail!(
                "closed before its answer: {:?}",
                String::from_utf8_lossy(&answer)
            );
        }
        answer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&answer);
        let Some(head_end) = text.find("\r\n\r\n") else {
            continue;
        };
        if !text.starts_with("HTTP/1.1 200") {
            bail!("answered {:?}", text.lines().next());
        }
        let length = text[..head_end]
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .context("an answer without Content-Length")?;
        if answer.len() >= head_end + 4 + length {
            return Ok(());
        }
    }
}
