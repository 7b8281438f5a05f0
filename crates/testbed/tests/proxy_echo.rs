//! The proxy against a TCP echo server: delay, ordering, pipelining, end of stream.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testbed::proxy::{LatencyProxy, MAX_LEAD};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Echoes every connection until the client half-closes, then half-closes back.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                socket.set_nodelay(true).unwrap();
                let (mut read, mut write) = socket.split();
                tokio::io::copy(&mut read, &mut write).await.unwrap();
                write.shutdown().await.unwrap();
            });
        }
    });
    addr
}

async fn connect(proxy: &LatencyProxy) -> TcpStream {
    let stream = TcpStream::connect(proxy.local_addr()).await.unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

async fn round_trip(stream: &mut TcpStream) -> Duration {
    let mut reply = [0; 4];
    let start = Instant::now();
    stream.write_all(b"ping").await.unwrap();
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!(&reply, b"ping");
    start.elapsed()
}

/// Reads until end of stream, failing if it does not come.
async fn read_to_eof(stream: &mut (impl AsyncReadExt + Unpin)) -> Vec<u8> {
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut received))
        .await
        .expect("end of stream was not propagated")
        .unwrap();
    received
}

#[tokio::test]
async fn a_round_trip_pays_the_rtt() {
    let rtt = Duration::from_millis(20);
    let proxy = LatencyProxy::start(echo_server().await, rtt).await.unwrap();
    assert_eq!(proxy.rtt(), rtt);
    let mut stream = connect(&proxy).await;
    let mut times = Vec::new();
    for _ in 0..10 {
        times.push(round_trip(&mut stream).await);
    }
    eprintln!("echo round trips through a {rtt:?} proxy: {times:?}");
    // Each direction may anticipate its deadline by up to MAX_LEAD, on median not at all.
    let floor = rtt - 2 * MAX_LEAD;
    assert!(
        times.iter().all(|t| *t >= floor),
        "faster than {floor:?}: {times:?}"
    );
    times.sort();
    // Generous above: a shared 2-core box running other builds.
    assert!(
        times[5] >= rtt && times[5] < rtt + Duration::from_millis(10),
        "median {:?}",
        times[5]
    );
    assert_eq!(proxy.connections(), 1);
    proxy.stop().await;
}

#[tokio::test]
async fn many_small_chunks_arrive_in_order_and_are_pipelined() {
    let rtt = Duration::from_millis(10);
    let proxy = LatencyProxy::start(echo_server().await, rtt).await.unwrap();
    let (mut read, mut write) = connect(&proxy).await.into_split();
    let start = Instant::now();
    let sender = tokio::spawn(async move {
        let mut sent = Vec::new();
        for i in 0..1_000 {
            let chunk = format!("<{i}>");
            write.write_all(chunk.as_bytes()).await.unwrap();
            sent.extend_from_slice(chunk.as_bytes());
            if i % 10 == 0 {
                // Let the proxy read separate chunks rather than one big one.
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
        write.shutdown().await.unwrap();
        sent
    });
    let received = read_to_eof(&mut read).await;
    let elapsed = start.elapsed();
    let sent = sender.await.unwrap();
    eprintln!(
        "1,000 chunks ({} bytes) through a {rtt:?} proxy: {elapsed:?}",
        sent.len()
    );
    assert!(received == sent, "bytes reordered or lost");
    // Serialised, even 100 separate chunks would take a second.
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    proxy.stop().await;
}

#[tokio::test]
async fn a_bulk_transfer_is_pipelined_and_ends_with_eof() {
    const SIZE: usize = 10 * 1024 * 1024;
    let rtt = Duration::from_millis(10);
    let proxy = LatencyProxy::start(echo_server().await, rtt).await.unwrap();
    let (mut read, mut write) = connect(&proxy).await.into_split();
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    let start = Instant::now();
    let sender = tokio::spawn({
        let data = data.clone();
        async move {
            write.write_all(&data).await.unwrap();
            write.shutdown().await.unwrap();
        }
    });
    let received = read_to_eof(&mut read).await;
    let elapsed = start.elapsed();
    sender.await.unwrap();
    // The proxy reads at most 16 KiB at a time: serialised, each would wait a full RTT.
    let serialised = rtt * (SIZE / (16 * 1024)) as u32;
    eprintln!("10 MiB echoed through a {rtt:?} proxy: {elapsed:?} (serialised: >= {serialised:?})");
    assert!(
        received.len() == SIZE && received == data,
        "corrupted transfer"
    );
    assert!(elapsed < serialised / 4, "{elapsed:?} is not pipelined");
    proxy.stop().await;
}

#[tokio::test]
async fn zero_rtt_is_a_pass_through() {
    let proxy = LatencyProxy::start(echo_server().await, Duration::ZERO)
        .await
        .unwrap();
    let mut stream = connect(&proxy).await;
    let mut times = Vec::new();
    for _ in 0..20 {
        times.push(round_trip(&mut stream).await);
    }
    times.sort();
    eprintln!(
        "echo round trip through a zero-RTT proxy: median {:?}",
        times[10]
    );
    assert!(times[10] < Duration::from_millis(2), "{times:?}");
    stream.write_all(b"bye").await.unwrap();
    stream.shutdown().await.unwrap();
    assert_eq!(read_to_eof(&mut stream).await, b"bye");
    proxy.stop().await;
}

#[tokio::test]
async fn stop_closes_open_connections_and_the_listener() {
    let proxy = LatencyProxy::start(echo_server().await, Duration::from_millis(2))
        .await
        .unwrap();
    let addr = proxy.local_addr();
    let mut streams = Vec::new();
    for _ in 0..3 {
        let mut stream = connect(&proxy).await;
        round_trip(&mut stream).await;
        streams.push(stream);
    }
    assert_eq!(proxy.connections(), 3);
    proxy.stop().await;
    for mut stream in streams {
        let mut buf = [0; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "connection still open: {read:?}"
        );
    }
    assert!(TcpStream::connect(addr).await.is_err(), "still listening");
}

#[tokio::test]
async fn an_unreachable_upstream_closes_the_client() {
    // Bind then drop, so nothing listens on the port.
    let dead = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = LatencyProxy::start(dead, Duration::from_millis(2))
        .await
        .unwrap();
    let mut stream = connect(&proxy).await;
    let mut buf = [0; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    proxy.stop().await;
}

#[tokio::test]
async fn a_frozen_proxy_moves_nothing_until_it_thaws() {
    let proxy = LatencyProxy::start_adjustable(echo_server().await, Duration::ZERO)
        .await
        .unwrap();
    let mut open = connect(&proxy).await;
    round_trip(&mut open).await;
    proxy.set_frozen(true);
    // An open connection: the request is sent, no answer comes while frozen.
    open.write_all(b"ping").await.unwrap();
    let mut reply = [0; 4];
    let held = tokio::time::timeout(Duration::from_millis(300), open.read_exact(&mut reply)).await;
    assert!(held.is_err(), "an answer came through a frozen proxy");
    // A new connection: not forwarded (the kernel's backlog may complete the handshake).
    let mut late = TcpStream::connect(proxy.local_addr()).await.unwrap();
    late.write_all(b"pong").await.unwrap();
    let mut late_reply = [0; 4];
    let held =
        tokio::time::timeout(Duration::from_millis(300), late.read_exact(&mut late_reply)).await;
    assert!(held.is_err(), "a new connection was served while frozen");
    let thawed_at = Instant::now();
    proxy.set_frozen(false);
    // What was held goes through, in order, on both connections.
    tokio::time::timeout(Duration::from_secs(5), open.read_exact(&mut reply))
        .await
        .expect("no answer after the thaw")
        .unwrap();
    assert_eq!(&reply, b"ping");
    tokio::time::timeout(Duration::from_secs(5), late.read_exact(&mut late_reply))
        .await
        .expect("the held connection was not served after the thaw")
        .unwrap();
    assert_eq!(&late_reply, b"pong");
    assert!(thawed_at.elapsed() < Duration::from_secs(1));
    round_trip(&mut open).await;
    proxy.stop().await;
}

/// [`LatencyProxy::freezable`] needs no runtime of the caller's (a test's settings closure has
/// no `.await`): started from a plain thread, it passes bytes through, and holds them while
/// frozen.
#[test]
fn a_freezable_proxy_starts_outside_any_runtime() {
    use std::io::{Read, Write};
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut socket, _) = echo.accept().unwrap();
        let mut buf = [0; 4];
        while socket.read_exact(&mut buf).is_ok() {
            socket.write_all(&buf).unwrap();
        }
    });
    let proxy = LatencyProxy::freezable(upstream).unwrap();
    let mut stream = std::net::TcpStream::connect(proxy.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut reply = [0; 4];
    stream.write_all(b"ping").unwrap();
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"ping");
    proxy.set_frozen(true);
    stream.write_all(b"pong").unwrap();
    assert!(
        stream.read_exact(&mut reply).is_err(),
        "an answer came through a frozen proxy"
    );
    proxy.set_frozen(false);
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"pong");
}
