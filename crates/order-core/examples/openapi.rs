//! Prints the OpenAPI document both APIs serve at `GET /openapi.json`:
//! `cargo run -p order-core --example openapi > docs/openapi.json`.

fn main() {
    print!("{}", order_core::plumbing::openapi::json());
}
