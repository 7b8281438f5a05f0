//! The API as a child process — its binary, as deployed — for what only a separate process
//! shows: a crash (`kill -9`), a real SIGTERM or SIGINT, an exit status. PostgreSQL and mock-deps
//! stay the test's own; `scripts/test.sh` builds the binaries first.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::app::Api;

/// A port free a moment ago, for a binary that binds its own (`BIND_ADDR`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// The API's binary.
pub fn binary(api: Api) -> PathBuf {
    testbed::process::find_binary(api.binary_name())
        .expect("scripts/test.sh builds the API binaries")
}

/// The API binary on `127.0.0.1:port` with a short lease and a fast recovery loop (a crash is
/// recovered within the test), its log on stderr (piped) at `warn`.
pub fn api_command(api: Api, database_url: &str, deps_url: &str, port: u16) -> Command {
    let mut cmd = Command::new(binary(api));
    cmd.env_clear()
        .env("DATABASE_URL", database_url)
        .env("DEPS_URL", deps_url)
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("REQUEST_HASH_KEY", "a-test-request-hash-key")
        .env("DEPS_TIMEOUT_MS", "1000")
        .env("DB_POOL_TIMEOUT_MS", "500")
        .env("LEASE_MS", "2500")
        .env("RECONCILE_INTERVAL_MS", "200")
        .env("RUST_LOG", "warn")
        // As in every contract test (see `TestApp::spawn_with`): no refusal on loop lag.
        .env("MAX_LOOP_LAG_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(client) = api.deps_client() {
        cmd.env("DEPS_CLIENT", client.as_str());
    }
    cmd
}

/// The API's process, killed when the test ends, however it ends (a failed assertion too).
pub struct ApiChild(Child);

impl Deref for ApiChild {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for ApiChild {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ApiChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` (the API's binary on `port`, e.g. an [`api_command`]) and waits, at most 30 s,
/// until `/ready` is 200.
pub async fn start_api(mut cmd: Command, port: u16) -> ApiChild {
    let mut child = ApiChild(cmd.spawn().expect("starting the API"));
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/ready"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200);
        if ready {
            return child;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the API exited at start-up"
        );
        assert!(Instant::now() < deadline, "the API never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `signal` (`"TERM"`, `"INT"`) to the child, as an orchestrator or a terminal does.
pub fn send_signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} failed");
}

/// The child's exit status, waiting at most `bound` for it (then killed, and the test fails).
pub async fn exit_within(child: &mut Child, bound: Duration) -> ExitStatus {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the API did not exit within {bound:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
