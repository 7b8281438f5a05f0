//! Postgres URL helpers, so the lab can point an API's `DATABASE_URL` at the proxy.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use anyhow::{Context, anyhow, bail};
use url::{Host, Url};

/// Query parameters (libpq / sqlx style) that override the URL's host or port.
const ADDRESS_PARAMS: [&str; 3] = ["host", "hostaddr", "port"];

fn parse(database_url: &str) -> anyhow::Result<Url> {
    // The URL itself stays out of error messages: it may hold a password.
    let url = Url::parse(database_url).context("invalid database URL")?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        bail!("not a postgres URL (scheme `{}`)", url.scheme());
    }
    Ok(url)
}

/// Resolves host:port from a postgres URL.
///
/// Honours `host`/`hostaddr`/`port` query parameters like sqlx does, defaults to
/// `localhost:5432`, and prefers an IPv4 address when a name resolves to several (PostgreSQL
/// on a dev box often listens on 127.0.0.1 only). Unix-socket URLs are rejected.
pub fn upstream_of(database_url: &str) -> anyhow::Result<SocketAddr> {
    let url = parse(database_url)?;
    let param = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    let host = match param("hostaddr").or_else(|| param("host")) {
        Some(host) => host,
        None => match url.host() {
            Some(Host::Ipv6(ip)) => ip.to_string(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Domain(name)) if !name.is_empty() => name.to_owned(),
            _ => "localhost".to_owned(),
        },
    };
    if host.starts_with('/') {
        bail!("database URL points at a Unix socket ({host}); only TCP can be proxied");
    }
    let port = match param("port") {
        Some(port) => port
            .parse()
            .context("invalid port parameter in database URL")?,
        None => url.port().unwrap_or(5432),
    };
    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve database host {host}:{port}"))?
        .collect();
    addrs
        .iter()
        .find(|addr| addr.is_ipv4())
        .or(addrs.first())
        .copied()
        .with_context(|| format!("database host {host} resolves to no address"))
}

/// Rewrites a postgres URL's host:port to go through the proxy (keeps user, password,
/// database and query; drops `host`/`hostaddr`/`port` parameters, which would bypass it).
pub fn proxied_url(database_url: &str, proxy: SocketAddr) -> anyhow::Result<String> {
    let mut url = parse(database_url)?;
    if url
        .query_pairs()
        .any(|(key, _)| ADDRESS_PARAMS.contains(&key.as_ref()))
    {
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(key, _)| !ADDRESS_PARAMS.contains(&key.as_ref()))
            .map(|(key, value)| (key.into_owned(), value.into_owned()))
            .collect();
        url.set_query(None);
        if !kept.is_empty() {
            url.query_pairs_mut().extend_pairs(kept);
        }
    }
    let host = match proxy.ip() {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    };
    url.set_host(Some(&host))
        .context("cannot set the proxy's host in the database URL")?;
    url.set_port(Some(proxy.port()))
        .map_err(|()| anyhow!("cannot set the proxy's port in the database URL"))?;
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy() -> SocketAddr {
        "127.0.0.1:6543".parse().unwrap()
    }

    #[test]
    fn proxied_url_keeps_credentials_database_and_query() {
        let url =
            "postgres://app:p%40ss@db.example.com:5432/orders?sslmode=disable&application_name=lab";
        assert_eq!(
            proxied_url(url, proxy()).unwrap(),
            "postgres://app:p%40ss@127.0.0.1:6543/orders?sslmode=disable&application_name=lab"
        );
        assert_eq!(
            proxied_url("postgresql://postgres@localhost/postgres", proxy()).unwrap(),
            "postgresql://postgres@127.0.0.1:6543/postgres"
        );
    }

    #[test]
    fn proxied_url_drops_address_overrides_and_handles_ipv6() {
        let url = "postgres://u@h/db?host=other&sslmode=prefer&port=7000";
        assert_eq!(
            proxied_url(url, proxy()).unwrap(),
            "postgres://u@127.0.0.1:6543/db?sslmode=prefer"
        );
        assert_eq!(
            proxied_url("postgres://u@h/db?port=1", "[::1]:9".parse().unwrap()).unwrap(),
            "postgres://u@[::1]:9/db"
        );
        assert_eq!(
            proxied_url("postgres:///db", proxy()).unwrap(),
            "postgres://127.0.0.1:6543/db"
        );
    }

    #[test]
    fn upstream_of_resolves_host_and_port() {
        let addr = |url| upstream_of(url).unwrap().to_string();
        assert_eq!(
            addr("postgres://postgres@127.0.0.1:55432/postgres"),
            "127.0.0.1:55432"
        );
        assert_eq!(addr("postgres://u@127.0.0.1/db"), "127.0.0.1:5432");
        assert_eq!(addr("postgres://u@[::1]:6000/db"), "[::1]:6000");
        assert_eq!(addr("postgres://u@localhost:7/db"), "127.0.0.1:7");
        assert_eq!(
            addr("postgres://u@ignored/db?host=127.0.0.2&port=8"),
            "127.0.0.2:8"
        );
    }

    #[test]
    fn rejects_what_cannot_be_proxied() {
        assert!(upstream_of("mysql://u@127.0.0.1/db").is_err());
        assert!(upstream_of("postgres://u@x/db?host=/var/run/postgresql").is_err());
        assert!(upstream_of("not a url").is_err());
        assert!(proxied_url("http://example.com", proxy()).is_err());
    }
}
