//! `reactive-api` binary: start tracing, parse settings, build and run. See the library for the rest.

use clap::Parser;
use reactive_api::{Application, Settings};

/// mimalloc rather than libc's malloc: under the instruction profile (docs/benchmarks.md) malloc
/// and free were ≈ 20 % of an order's instructions; mimalloc's thread-local free lists take most
/// of that away. Its per-thread pages cost this API little: its orders share a few threads.
/// blocking-api, with a thread per order in flight, links glibc's malloc instead (its `main.rs`).
/// `--features system-allocator` builds this API on glibc's malloc, to measure the two against
/// each other under this model (docs/benchmarks.md, "The allocator of a thread per request").
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    order_core::telemetry::init();
    let settings = Settings::parse();
    Application::build(settings)
        .await?
        .run_until_stopped()
        .await
}
