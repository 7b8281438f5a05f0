//! A fresh, migrated PostgreSQL database per test, dropped afterwards.

use order_core::plumbing::settings::CommonSettings;
use sqlx::{Connection, Executor, PgConnection};
use testbed::proxy::{LatencyProxy, proxied_url, upstream_of};

pub struct TestDatabase {
    pub url: String,
    admin_url: String,
    name: String,
}

/// The server the tests use; `scripts/test.sh` sets it.
pub fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "TEST_DATABASE_URL is not set: run the tests with scripts/test.sh, which starts a \
             throw-away PostgreSQL, or point TEST_DATABASE_URL at a server where this role may \
             CREATE DATABASE"
        )
    })
}

impl TestDatabase {
    /// Creates `test_<uuid>` and applies the migrations with the APIs' own migrator.
    pub async fn new() -> Self {
        let admin_url = admin_url();
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(&admin_url)
            .await
            .expect("connecting to TEST_DATABASE_URL");
        admin
            .execute(sqlx::AssertSqlSafe(format!(r#"CREATE DATABASE "{name}""#)))
            .await
            .expect("creating the test database");
        admin.close().await.ok();
        let url = with_database(&admin_url, &name);
        order_core::plumbing::migrate::run(&url, Default::default())
            .await
            .expect("migrating");
        TestDatabase {
            url,
            admin_url,
            name,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop runs inside the test's runtime: do the async work on a thread of its own.
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let mut admin = PgConnection::connect(&admin_url).await.ok()?;
                let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
                admin.execute(sqlx::AssertSqlSafe(sql)).await.ok()
            })
        })
        .join();
    }
}

/// The same server URL with another database name.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let prefix = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{prefix}/{name}?{q}"),
        None => format!("{prefix}/{name}"),
    }
}

/// Puts a proxy between the API and its database, for [`crate::TestApp::spawn_with`]'s settings
/// closure: `DATABASE_URL` is rewritten to go through it. It adds nothing until the test freezes
/// it ([`LatencyProxy::set_frozen`]): then the API's connections stay open and nothing moves,
/// as when the database's host stops answering.
pub fn freezable_database(s: &mut CommonSettings) -> LatencyProxy {
    let upstream = upstream_of(&s.database_url).expect("the test database's address");
    let proxy = LatencyProxy::freezable(upstream).expect("starting the proxy");
    s.database_url = proxied_url(&s.database_url, proxy.local_addr()).expect("the proxied URL");
    proxy
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_only_the_database() {
        let f = super::with_database;
        assert_eq!(f("postgres://u@h:1/postgres", "t"), "postgres://u@h:1/t");
        assert_eq!(f("postgres://u@h:1", "t"), "postgres://u@h:1/t");
        assert_eq!(
            f("postgres://u@h/x?sslmode=disable", "t"),
            "postgres://u@h/t?sslmode=disable"
        );
    }
}
