//! `mock-deps` binary: parse settings, start tracing, serve. See the library for everything else.

use clap::Parser;
use tracing_subscriber::EnvFilter;

// One thread is enough here: it only drives the server future; actix runs its own accept thread
// and `HTTP_WORKERS` worker threads.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let settings = mock_deps::Settings::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&settings.rust_log)?)
        .init();
    mock_deps::run(settings).await
}
