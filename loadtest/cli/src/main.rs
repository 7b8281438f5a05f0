//! `loadtest`: parses the command line and runs it (see `loadtest --help` and `loadtest/README.md`).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = loadtest::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(loadtest::commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
