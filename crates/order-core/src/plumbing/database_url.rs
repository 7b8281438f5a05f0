//! The forms of `DATABASE_URL` both APIs accept: one server. libpq (blocking-api) would try
//! several hosts in turn (`postgres://h1,h2/db`, `host=h1,h2`, `PGHOST=h1,h2`), but sqlx — the
//! migrator both APIs run at start-up, and reactive-api's driver — reads one host, and would only
//! fail later on a name such as `h1,h2`. So such a URL refuses to start, saying why; several
//! servers are reached through one address in front of them (a proxy, a DNS name).

/// Refuses a `DATABASE_URL` (or, for a URL without a host, a `PGHOST`/`PGHOSTADDR` from `env`)
/// that names several hosts or ports.
pub fn check_one_server(
    database_url: &str,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<()> {
    let rest = database_url
        .split_once("://")
        .map_or(database_url, |(_, rest)| rest);
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = before_query.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let params = query.split('&').filter_map(|pair| pair.split_once('='));
    let mut named = vec![("the URL's host", host_port.to_owned())];
    for (key, value) in params {
        if matches!(key, "host" | "hostaddr" | "port") {
            named.push((key, value.to_owned()));
        }
    }
    if host_port.is_empty() {
        for var in ["PGHOST", "PGHOSTADDR", "PGPORT"] {
            if let Some(value) = env(var) {
                named.push((var, value));
            }
        }
    }
    // A comma, raw or percent-encoded, separates libpq's hosts.
    if let Some((what, value)) = named
        .into_iter()
        .find(|(_, v)| v.contains(',') || v.to_ascii_lowercase().contains("%2c"))
    {
        anyhow::bail!(
            "DATABASE_URL names several database servers ({what}: {value:?}): not supported; \
             sqlx (the migrator of both APIs, and reactive-api's driver) connects to one. Name one \
             server, or one address in front of them (a proxy, a DNS name)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_one_server;

    #[test]
    fn several_hosts_are_refused_in_every_form_libpq_reads() {
        let none = |_: &str| None;
        for url in [
            "postgres://u@h1,h2/db",
            "postgres://u@h1:5432,h2:5433/db",
            "postgres://u@/db?host=h1,h2",
            "postgres://u@h/db?hostaddr=10.0.0.1%2C10.0.0.2",
            "postgres://u@h/db?port=5432,5433",
        ] {
            let refused = check_one_server(url, none).unwrap_err().to_string();
            assert!(
                refused.contains("several database servers"),
                "{url}: {refused}"
            );
        }
        let pghost = |name: &str| (name == "PGHOST").then(|| "h1,h2".to_owned());
        assert!(check_one_server("postgres:///db", pghost).is_err());
        assert!(
            check_one_server("postgres://u@h/db", pghost).is_ok(),
            "the URL's host wins"
        );
        assert!(check_one_server("postgres://u:p,w@h:5432/db?sslmode=disable", none).is_ok());
    }
}
