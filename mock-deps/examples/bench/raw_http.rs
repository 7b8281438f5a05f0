//! A minimal HTTP/1.1 client over a plain `TcpStream`: one connection per `Conn`, no pool, no
//! limits of its own, so the bench decides exactly how many sockets exist. It understands only
//! what mock-deps sends: a status line, headers and a `Content-Length` body.

use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Source ports handed out by the bench itself.
///
/// Linux's `connect()` searches the ephemeral range for a free port with a stride of two, and once
/// about half the range is taken each search costs milliseconds of kernel time (measured here:
/// ~14k connections in 2.5 s, the next 4k in 31 s). Binding an explicit port is a hash lookup, so
/// for tens of thousands of sockets the bench binds ports below the ephemeral range itself.
pub struct SourcePorts {
    next: AtomicU32,
    end: u32,
}

impl SourcePorts {
    pub fn new(range: Range<u16>) -> Self {
        Self {
            next: AtomicU32::new(u32::from(range.start)),
            end: u32::from(range.end),
        }
    }

    fn take(&self) -> Option<u16> {
        let port = self.next.fetch_add(1, Relaxed);
        (port < self.end).then_some(port as u16)
    }
}

pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        Self::from_stream(TcpStream::connect(addr).await?)
    }

    fn from_stream(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(512),
        })
    }

    /// Connects from the next free port of `ports`; once they run out, lets the kernel choose.
    pub async fn connect_from(addr: SocketAddr, ports: &SourcePorts) -> io::Result<Self> {
        while let Some(port) = ports.take() {
            let socket = TcpSocket::new_v4()?;
            match socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) {
                Ok(()) => {}
                // Someone else's port: skip it.
                Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
                Err(e) => return Err(e),
            }
            match socket.connect(addr).await {
                Ok(stream) => return Self::from_stream(stream),
                Err(e) if e.kind() == ErrorKind::AddrNotAvailable => continue,
                Err(e) => return Err(e),
            }
        }
        Self::connect(addr).await
    }

    pub async fn write(&mut self, request: &[u8]) -> io::Result<()> {
        self.stream.write_all(request).await
    }

    /// Reads one whole response and returns its status.
    pub async fn read_response(&mut self) -> io::Result<u16> {
        loop {
            if let Some((status, len)) = parse_response(&self.buf)? {
                self.buf.drain(..len);
                return Ok(status);
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "connection closed",
                ));
            }
        }
    }

    pub async fn send(&mut self, request: &[u8]) -> io::Result<u16> {
        self.write(request).await?;
        self.read_response().await
    }
}

/// Serialises a JSON POST. `close` asks the server to close the connection after answering.
pub fn post_json(path: &str, headers: &[(&str, &str)], body: &str, close: bool) -> Vec<u8> {
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    req.push_str("Content-Type: application/json\r\n");
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        req.push_str("Connection: close\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req.into_bytes()
}

/// `Some((status, bytes))` once `buf` starts with a complete response of `bytes` bytes.
pub fn parse_response(buf: &[u8]) -> io::Result<Option<(u16, usize)>> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let invalid = |what: &str| io::Error::new(ErrorKind::InvalidData, what.to_owned());
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| invalid("non-UTF-8 head"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.strip_prefix("HTTP/1.1 "))
        .and_then(|l| l.get(..3))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("bad status line"))?;
    let mut body_len = 0;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(invalid("chunked responses are not supported"));
        }
        if name.eq_ignore_ascii_case("content-length") {
            body_len = value.trim().parse().map_err(|_| invalid("bad length"))?;
        }
    }
    let total = head_end + 4 + body_len;
    Ok((buf.len() >= total).then_some((status, total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 28\r\ncontent-type: application/json\r\n\r\n{\"recommendation\":\"APPROVE\"}";

    #[test]
    fn parses_complete_responses_only() {
        assert_eq!(
            parse_response(RESPONSE).unwrap(),
            Some((200, RESPONSE.len()))
        );
        for cut in [10, RESPONSE.len() - 1] {
            assert_eq!(parse_response(&RESPONSE[..cut]).unwrap(), None);
        }
        let mut two = RESPONSE.to_vec();
        two.extend_from_slice(b"HTTP/1.1 503 Service Unavailable\r\n");
        assert_eq!(parse_response(&two).unwrap(), Some((200, RESPONSE.len())));
    }

    #[test]
    fn rejects_what_it_cannot_frame() {
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_err());
        assert!(parse_response(b"garbage\r\n\r\n").is_err());
        let empty = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse_response(empty).unwrap(), Some((204, empty.len())));
    }

    #[test]
    fn source_ports_run_out() {
        let ports = SourcePorts::new(40_000..40_002);
        assert_eq!(
            (ports.take(), ports.take(), ports.take()),
            (Some(40_000), Some(40_001), None)
        );
    }

    #[test]
    fn builds_requests_with_length_and_close() {
        let req = post_json("/x", &[("Idempotency-Key", "k")], "{}", true);
        let text = String::from_utf8(req).unwrap();
        assert!(text.starts_with("POST /x HTTP/1.1\r\n"));
        assert!(text.contains("Idempotency-Key: k\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"));
    }
}
