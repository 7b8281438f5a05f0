//! A TCP relay a test can freeze: put between an API and PostgreSQL, [`FreezableRelay::freeze`]
//! stops it forwarding bytes in either direction while every socket stays open, as the lab's
//! fault does by stopping (SIGSTOP) its proxy. The kernel still accepts and acknowledges what the
//! API sends, so neither TCP keepalives nor `tcp_user_timeout` ever fire: only a deadline of the
//! API's own ends its wait. [`FreezableRelay::thaw`] resumes forwarding, bytes held included.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::watch;

pub struct FreezableRelay {
    local: SocketAddr,
    frozen: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl FreezableRelay {
    /// Relays `127.0.0.1:<port 0>` to `upstream`, on the current tokio runtime. Synchronous, so
    /// that it can start inside a settings closure (`TestApp::spawn_with`).
    pub fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let (frozen, _) = watch::channel(false);
        let task = tokio::spawn({
            let frozen = frozen.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(relay(client, upstream, frozen.subscribe()));
                }
            }
        });
        Ok(FreezableRelay {
            local,
            frozen,
            task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops forwarding; sockets stay open, and a new connection is accepted but not relayed.
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Resumes forwarding.
    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }
}

impl Drop for FreezableRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection: connects upstream once not frozen, then forwards both ways.
async fn relay(client: TcpStream, upstream: SocketAddr, mut frozen: watch::Receiver<bool>) {
    if !until(&mut frozen, false).await {
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::join!(
        pipe(client_read, server_write, frozen.clone()),
        pipe(server_read, client_write, frozen),
    );
}

/// Copies `from` to `to`, neither reading nor writing while frozen. An end of stream is passed on
/// (a half-close); an error, or the relay gone, ends the direction.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut frozen: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if !until(&mut frozen, false).await {
            return;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            },
            // Frozen while waiting to read: stop reading (a stopped proxy reads nothing).
            _ = until(&mut frozen, true) => continue,
        };
        // A chunk read just before a freeze is held until the thaw.
        if !until(&mut frozen, false).await {
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Waits until the relay is frozen (`true`) or not (`false`); `false` once the relay is gone.
async fn until(frozen: &mut watch::Receiver<bool>, state: bool) -> bool {
    frozen.wait_for(|f| *f == state).await.is_ok()
}
