//! `reactive-api` binary: start tracing, parse settings, build and run. See the library for the rest.

use clap::Parser;
use reactive_api::{Application, Settings};

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    order_core::telemetry::init();
    let settings = Settings::parse();
    Application::build(settings)
        .await?
        .run_until_stopped()
        .await
}
