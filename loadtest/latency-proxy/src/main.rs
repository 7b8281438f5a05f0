//! `latency-proxy`: the proxy by hand, e.g.
//! `latency-proxy --listen 127.0.0.1:6543 --upstream 127.0.0.1:5432 --rtt-ms 6.5`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use latency_proxy::LatencyProxy;

/// TCP proxy adding a fixed round-trip time (half each way), e.g. between an API and PostgreSQL.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:6543")]
    listen: SocketAddr,
    /// Where to forward connections (host:port).
    #[arg(long, env = "UPSTREAM_ADDR", default_value = "127.0.0.1:5432")]
    upstream: String,
    /// Added round-trip time in milliseconds (fractions allowed); 0 is a plain pass-through.
    #[arg(long = "rtt-ms", env = "RTT_MS", value_name = "MS", default_value = "0", value_parser = parse_rtt_ms)]
    rtt: Duration,
}

fn parse_rtt_ms(ms: &str) -> Result<Duration, String> {
    let ms: f64 = ms.parse().map_err(|e| format!("{e}"))?;
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|e| format!("{e}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(&args.upstream)
        .await
        .with_context(|| format!("cannot resolve {}", args.upstream))?
        .collect();
    let upstream = *addrs
        .iter()
        .find(|addr| addr.is_ipv4())
        .or(addrs.first())
        .with_context(|| format!("{} resolves to no address", args.upstream))?;
    let proxy = LatencyProxy::bind(args.listen, upstream, args.rtt).await?;
    tracing::info!(listen = %proxy.local_addr(), %upstream, rtt = ?args.rtt, "latency proxy running; Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    tracing::info!(connections = proxy.connections(), "stopping");
    proxy.stop().await;
    Ok(())
}
