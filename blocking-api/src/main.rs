//! `blocking-api` binary: start tracing, parse settings, build and run. See the library for the rest.

use blocking_api::{Application, Settings};
use clap::Parser;

/// glibc's malloc, not mimalloc, unless built with `--features mimalloc`: a thread-per-request
/// service keeps one allocator cache per thread, and mimalloc's per-thread pages cost ≈ 1.5 MiB
/// of RSS for every thread in flight (the kernel killed the API for its 1 GiB at ≈ 700 threads),
/// where glibc's shared arenas cost a few tens of KiB. mimalloc saves instructions per order;
/// memory decides how many threads fit, and threads decide this model's capacity. The figures of
/// both, one run each: docs/benchmarks.md, "The allocator of a thread per request".
#[cfg(feature = "mimalloc")]
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
