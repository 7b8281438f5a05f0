//! One proxied connection: two directions, each a reader stamping chunks with their departure
//! time and a writer releasing them at that time, joined by a bounded channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, watch};

use super::clock::Clock;

/// Largest chunk read at once.
const CHUNK: usize = 16 * 1024;
/// Chunks in flight per direction. With `CHUNK` this bounds buffered data to 2 MiB per
/// direction; when full, the reader stops reading and TCP flow control pushes back on the
/// sender. At 10 ms RTT that still allows ~400 MiB/s per direction, so the pipe stays long.
const IN_FLIGHT: usize = 128;

/// A chunk and the instant it may be written. An empty chunk stands for end of stream.
type Stamped = (Instant, Vec<u8>);

/// Proxies `client` to `upstream`, delaying each direction by half the round-trip time `rtt`
/// holds (in ns, read per chunk); `clock` is `None` exactly when the proxy passes through (and
/// then `thawed` is not watched). Returns when both directions have ended; on the first error
/// everything is dropped, which closes both sockets.
pub(crate) async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    rtt: Arc<AtomicU64>,
    clock: Option<Clock>,
    mut thawed: watch::Receiver<bool>,
) -> std::io::Result<()> {
    // Accepted just as the proxy froze: not forwarded until it thaws.
    wait_for_thaw(&mut thawed).await;
    let mut server = TcpStream::connect(upstream).await?;
    // Small request/response messages must not wait for Nagle on the extra hops.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let Some(clock) = clock else {
        tokio::io::copy_bidirectional(&mut client, &mut server).await?;
        return Ok(());
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::try_join!(
        delayed(client_read, server_write, &rtt, &clock, thawed.clone()),
        delayed(server_read, client_write, &rtt, &clock, thawed),
    )?;
    Ok(())
}

/// One direction. Reader and writer run concurrently, so while one chunk waits out its delay
/// the next ones are already being read: a stream is delayed, not serialised.
async fn delayed(
    from: OwnedReadHalf,
    to: OwnedWriteHalf,
    rtt: &AtomicU64,
    clock: &Clock,
    thawed: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    tokio::try_join!(
        read_side(from, tx, rtt, thawed.clone()),
        write_side(rx, to, clock, thawed)
    )?;
    Ok(())
}

async fn read_side(
    mut from: OwnedReadHalf,
    tx: mpsc::Sender<Stamped>,
    rtt: &AtomicU64,
    mut thawed: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut buf = vec![0; CHUNK];
    loop {
        wait_for_thaw(&mut thawed).await;
        let n = tokio::select! {
            read = from.read(&mut buf) => read?,
            // Frozen while waiting to read: read nothing more (a stopped proxy reads nothing).
            () = wait_for_freeze(&mut thawed) => continue,
        };
        // Stamped on arrival, before any wait for channel space, so backpressure does not
        // add to the configured delay. One way is half the round trip.
        let delay = Duration::from_nanos(rtt.load(Ordering::Relaxed) / 2);
        let due = Instant::now() + delay;
        // Copy only what was read: a 20-byte query does not hold a 16 KiB buffer.
        if tx.send((due, buf[..n].to_vec())).await.is_err() {
            // The writer failed; its error is the one `try_join!` reports.
            return Ok(());
        }
        if n == 0 {
            return Ok(());
        }
    }
}

async fn write_side(
    mut rx: mpsc::Receiver<Stamped>,
    mut to: OwnedWriteHalf,
    clock: &Clock,
    mut thawed: watch::Receiver<bool>,
) -> std::io::Result<()> {
    // Chunks leave in arrival order: each at its stamp (on median, see clock.rs), and never
    // before its predecessor.
    while let Some((due, chunk)) = rx.recv().await {
        clock.sleep_until(due).await;
        // A chunk read just before a freeze waits for the thaw like the rest.
        wait_for_thaw(&mut thawed).await;
        if chunk.is_empty() {
            // The end of stream travels the pipe too, after the data before it.
            return to.shutdown().await;
        }
        to.write_all(&chunk).await?;
    }
    // The reader failed before end of stream; its error is the one `try_join!` reports.
    Ok(())
}

/// Returns at once unless the proxy is frozen; then when it thaws (or the proxy is dropped).
async fn wait_for_thaw(thawed: &mut watch::Receiver<bool>) {
    // An error means the proxy is gone: its runtime is ending this task anyway.
    let _ = thawed.wait_for(|frozen| !frozen).await;
}

/// Returns once the proxy is frozen; never once it is gone (its runtime is ending this task, and
/// returning would only spin the reader that waits on it).
async fn wait_for_freeze(thawed: &mut watch::Receiver<bool>) {
    if thawed.wait_for(|frozen| *frozen).await.is_err() {
        std::future::pending::<()>().await;
    }
}
