//! Each API brings its own TLS backend: an `https` `DEPS_URL` is called over TLS, and the backend
//! is in the API's own dependency tree, not one that arrives only when another workspace member
//! (the load generator) turns reqwest's TLS on for a workspace-wide build.

use std::time::Duration;

use mock_deps::MockConfig;
use testkit::{Api, TOKEN, TestApp, contract_tests, reqwest_blocking_tests, valid_order};
use tokio::io::AsyncReadExt;

contract_tests!(an_https_deps_url_is_called_over_tls);
reqwest_blocking_tests!(an_https_deps_url_is_called_over_tls);

async fn an_https_deps_url_is_called_over_tls(api: Api) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.deps_url = format!("https://127.0.0.1:{port}");
        s.deps_timeout_ms = 2000;
    })
    .await;
    let first_bytes = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 3];
        socket.read_exact(&mut head).await.map(|_| head)
    });
    // The listener speaks no TLS: the call fails, after its ClientHello was sent.
    let response = app.post_order(TOKEN, &valid_order("tls-1")).await;
    assert_eq!(response.status(), 503);
    let head = tokio::time::timeout(Duration::from_secs(10), first_bytes)
        .await
        .expect("the API connected to the https DEPS_URL")
        .unwrap()
        .expect("the API sent bytes");
    // A TLS record: content type 22 (handshake), protocol version 3.x.
    assert_eq!(head[0], 0x16, "not a TLS handshake: {head:?}");
    assert_eq!(head[1], 0x03, "not a TLS handshake: {head:?}");
}

/// What `cargo build -p <api>` alone compiles: reqwest with a TLS backend, asked for by the API.
#[test]
fn each_api_asks_for_its_own_tls_backend() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for package in ["blocking-api", "reactive-api"] {
        let output = std::process::Command::new(&cargo)
            .args([
                "tree",
                "--offline",
                "-e",
                "features",
                "-i",
                "reqwest",
                "-p",
                package,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("running cargo tree");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let tree = String::from_utf8_lossy(&output.stdout);
        assert!(
            tree.contains("reqwest feature \"rustls\""),
            "{package} alone builds reqwest without TLS:\n{tree}"
        );
    }
}
