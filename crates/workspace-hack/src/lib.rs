//! No code: this crate's `Cargo.toml` depends on every third-party crate that the workspace's
//! members would otherwise compile with different features depending on which of them a command
//! builds, with the union of those features, and every member depends on this crate.
//!
//! Cargo resolves features per invocation, over the packages it was asked for. Without this
//! crate, `cargo run --release -p loadtest` and the lab's next `cargo build --release -p
//! blocking-api -p reactive-api -p mock-deps` give reqwest, futures-util, clap, rustls, nix and
//! others different features, and so compile them, and everything above them, a second time
//! (docs/benchmarks.md, "One build", has the counts). With it every such set resolves as the
//! whole workspace does, and the services the lab builds are the binaries CI's cost gate
//! measures (which builds the four packages in one command).
//!
//! Managed by cargo-hakari (`.config/hakari.toml`): after a dependency change,
//! `cargo hakari generate` rewrites the section between the markers, and
//! `crates/testkit/tests/one_build.rs` fails until it has been run; a new member gets its
//! dependency on this crate from `cargo hakari manage-deps`.
