//! The throw-away PostgreSQL ([`testbed::pg`], with its default settings) for shell scripts:
//!
//! ```text
//! pg-ephemeral start      # starts a cluster, leaves it running; prints its directory, then its URL
//! pg-ephemeral stop DIR   # stops that cluster and removes DIR
//! ```

use std::path::Path;

use testbed::pg::{EphemeralPostgres, stop_detached};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["start"] => {
            let pg = EphemeralPostgres::start()?;
            let url = pg.url();
            println!("{}\n{url}", pg.detach().display());
            Ok(())
        }
        ["stop", dir] => stop_detached(Path::new(dir)),
        _ => {
            eprintln!("usage: pg-ephemeral start | pg-ephemeral stop DIR");
            std::process::exit(2)
        }
    }
}
