// A build script, so that cargo also applies the `[build-dependencies]` above (the features of
// crates built for build scripts and proc macros).
fn main() {}
