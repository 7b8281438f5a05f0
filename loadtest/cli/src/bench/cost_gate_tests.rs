use lab_results::cost::{CostBaseline, InstructionCell, PgPerOrder};

use super::*;

fn cell(api: &str, ir: f64, wal: Option<f64>) -> InstructionCell {
    InstructionCell {
        api: api.to_owned(),
        orders: 1000,
        window_s: 30.0,
        instructions: (ir * 1000.0) as u64,
        instructions_per_order: ir,
        groups: Vec::new(),
        frames: Vec::new(),
        postgres: None,
        postgres_per_order: wal.map(|w| PgPerOrder {
            wal_bytes: w,
            ..PgPerOrder::default()
        }),
    }
}

fn baseline() -> CostBaseline {
    CostBaseline::of(
        &[
            cell("blocking-api", 1_000_000.0, Some(2000.0)),
            cell("reactive-api", 500_000.0, Some(2000.0)),
        ],
        "first baseline",
        "loadtest bench --instructions",
        "abc1234",
        "2026-12-03",
    )
}

#[test]
fn instructions_may_rise_five_per_cent_and_wal_ten() {
    let lines = gate(
        &baseline(),
        &[
            cell("blocking-api", 1_049_000.0, Some(2190.0)),
            cell("reactive-api", 400_000.0, Some(1000.0)),
        ],
    );
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(GateLine::passes), "{lines:?}");

    let lines = gate(
        &baseline(),
        &[
            cell("blocking-api", 1_051_000.0, Some(2000.0)),
            cell("reactive-api", 500_000.0, Some(2201.0)),
        ],
    );
    let failed: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| !l.passes())
        .map(|l| (l.api.as_str(), l.figure.as_str()))
        .collect();
    assert_eq!(
        failed,
        [
            ("blocking-api", "instructions per order"),
            ("reactive-api", "WAL bytes per order")
        ]
    );
    let l = &lines[0];
    assert!((l.change().unwrap() - 0.051).abs() < 1e-9);
}

#[test]
fn a_figure_not_measured_fails() {
    let lines = gate(&baseline(), &[cell("reactive-api", 500_000.0, None)]);
    let passed: Vec<bool> = lines.iter().map(GateLine::passes).collect();
    assert_eq!(passed, [false, false, true, false]);
}

#[test]
fn functions_are_grouped_by_crate_and_library() {
    let bin = "/work/target/release/reactive-api";
    let g = |name: &str, object: &str| group_of(name, object);
    assert_eq!(
        g("reactive_api::service::create_order::{{closure}}", bin),
        "the order's own code (API, order-core)"
    );
    assert_eq!(
        g(
            "<hyper::proto::h1::conn::Conn<I,B,T> as tokio::io::AsyncRead>::poll_read",
            bin
        ),
        "hyper, http (HTTP/1.1 client and types)"
    );
    assert_eq!(
        g(
            "<&mut serde_json::de::Deserializer<R> as serde_core::de::Deserializer>::deserialize_struct",
            bin
        ),
        "serde, serde_json"
    );
    assert_eq!(
        g("actix_http::h1::dispatcher::poll", bin),
        "actix-web (server)"
    );
    assert_eq!(g("sha2::sha256::compress256", bin), "sha2");
    assert_eq!(
        g("malloc", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        "libc (malloc/free, memcpy, system-call stubs)"
    );
    assert_eq!(
        g("PQexecParams", "/usr/lib/libpq.so.5.15"),
        "libpq (diesel's driver)"
    );
    assert_eq!(g("0x0000000000123456", bin), "unnamed");
}
