//! `reactive-api` binary: start tracing, parse settings, build and run. See the library for the rest.

use clap::Parser;
use reactive_api::{Application, Settings};

/// mimalloc rather than libc's malloc, measured both ways under this API's own model
/// (docs/benchmarks.md): glibc's malloc took 432,795 instructions per order against mimalloc's
/// 377,277 (−13 %), and cost 68 KiB of RSS per order in flight against mimalloc's 79–86 KiB.
/// Its orders share three threads, so per-thread pages cost little and its core is what is scarce.
/// blocking-api, with a thread per order in flight, links glibc's malloc instead (its `main.rs`).
/// `--features system-allocator` builds this API on glibc's malloc, to measure the two against
/// each other under this model (docs/benchmarks.md, "The allocator of a thread per request").
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    order_core::plumbing::telemetry::init();
    let settings = Settings::parse();
    Application::build(settings)
        .await?
        .run_until_stopped()
        .await
}
