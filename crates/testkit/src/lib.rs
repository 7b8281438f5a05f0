//! testkit — the contract suite's harness, what a test calls ([`TestApp`], [`contract_tests!`]);
//! the processes it runs the services against (PostgreSQL, NATS, the proxy, children) are
//! `testbed`'s.
//!
//! Every test gets a fresh PostgreSQL database, its own mock-deps and the API under test, all real
//! and on port 0, talking real HTTP. Part of the product (`crates/`): it tests the APIs'
//! behaviour; measuring them is the lab's, under `loadtest/`.
//!
//! The contract suite (`tests/contract*.rs`) is written once against [`TestApp`] and instantiated
//! for both APIs by the [`contract_tests!`] macro, so a behaviour cannot be tested on one API and
//! silently skipped on the other.
//!
//! PostgreSQL comes from `TEST_DATABASE_URL` (a URL of a role allowed to create databases);
//! `scripts/test.sh` starts a throw-away cluster and sets it.

mod app;
pub mod child;
mod database;
mod money;
mod orders;
mod redirect;
mod stub_gateway;

pub use app::{Api, TestApp, build, start_nats};
pub use database::{TestDatabase, admin_url, freezable_database};
pub use money::{assert_money_balances, fast_recovery, quiet_background};
pub use orders::{OTHER_TOKEN, TOKEN, valid_order};
pub use redirect::{RedirectingDeps, Trap};
pub use stub_gateway::StubGateway;

/// Polls `check` every 50 ms until it holds, failing the test after `secs` seconds with `what`.
pub async fn eventually<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Instantiates each listed case, an `async fn(Api)` in scope, once per API.
#[macro_export]
macro_rules! contract_tests {
    ($($case:ident),* $(,)?) => {
        $crate::api_tests!(blocking, Blocking, $($case),*);
        $crate::api_tests!(reactive, Reactive, $($case),*);
    };
}

/// Instantiates each listed case once more, against blocking-api with
/// `DEPS_CLIENT=reqwest-blocking`: for the cases the dependencies' client decides (redirects,
/// timeouts, deadlines, TLS, HTTP/2), so that the variant the lab measures keeps the contract.
#[macro_export]
macro_rules! reqwest_blocking_tests {
    ($($case:ident),* $(,)?) => {
        $crate::api_tests!(blocking_reqwest, BlockingReqwest, $($case),*);
    };
}

/// Instantiates each listed case against one [`Api`] variant, in a module of the given name: the
/// two macros above, or a case only some of the APIs can run.
#[macro_export]
macro_rules! api_tests {
    ($module:ident, $api:ident, $($case:ident),* $(,)?) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::Api::$api).await
                }
            )*
        }
    };
}
