//! The lab's name for testbed's proxy (`testbed::proxy`, one implementation for the product's
//! tests and the lab): a TCP proxy that adds a round-trip time between an API and PostgreSQL
//! (experiment D) or NATS (a slowed broker), and freezes with its sockets open (the database
//! freeze fault). This crate adds the proxy's binary (`src/main.rs`), for runs by hand.

pub use testbed::proxy::{LatencyProxy, MAX_LEAD, proxied_url, upstream_of};
