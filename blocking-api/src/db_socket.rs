//! Which socket is a new database connection's: the watchdog (`watchdog.rs`) bounds each call by
//! shutting its connection's socket down, and diesel 2.3 hides libpq's `PQsocket`.
//!
//! The socket is found by what it is, not only by where it goes. Under one lock for all of this
//! process's connects, the process's sockets are listed by descriptor and inode before and after
//! libpq opens the connection ([`open_sockets`], one `fstat` each: it runs with every client's
//! socket open), and the connected ones that appeared are asked their peer ([`appeared`]);
//! libpq's own socket is always among those (open, with an inode that did not exist before).
//! When it is the only one, it is the connection's,
//! whatever the URL named: a host name that resolves differently now than at start-up, `PGHOST`,
//! `PGHOSTADDR`, a Unix socket, a service file. When other threads opened sockets meanwhile
//! (clients accepted, dependency calls), the ones that go where libpq was told to go ([`Target`],
//! the URL and libpq's environment variables, resolved again at that connect) tell it; when that
//! still leaves no single socket, [`choose`] finds none and the connection is refused
//! (`connections.rs`), so that no call ever runs without its deadline.

use std::collections::HashSet;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::RawFd;
use std::path::PathBuf;

/// Where a socket is connected to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// One of this process's connected sockets: its descriptor, its inode (a descriptor number
/// closed and reused for a new socket still counts as new) and its peer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Socket {
    pub fd: RawFd,
    pub inode: u64,
    pub peer: Peer,
}

/// Where libpq connects for a URL, as libpq reads it: the `hostaddr`, `host` and `port`
/// parameters over the URL's authority, over `PGHOSTADDR`, `PGHOST` and `PGPORT`, over its
/// defaults (a Unix socket, port 5432). Several hosts are refused at start-up
/// (`order_core::plumbing::database_url`), so this is one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// A name or address, or a Unix socket's directory; `None`: libpq's default directories.
    host: Option<String>,
    port: u16,
}

/// libpq's compiled-in socket directories, of which its default is one (Debian's, upstream's).
const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

impl Target {
    /// `env` looks up libpq's environment variables (`std::env::var` in the API).
    pub fn of(database_url: &str, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        use anyhow::Context;
        let url = url::Url::parse(database_url).context("parsing DATABASE_URL")?;
        let param = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        let authority = url.host().map(|h| match h {
            url::Host::Ipv6(ip) => ip.to_string(),
            other => other.to_string(),
        });
        let host = [param("hostaddr"), param("host"), authority]
            .into_iter()
            .flatten()
            .chain(["PGHOSTADDR", "PGHOST"].into_iter().filter_map(&env))
            .find(|h| !h.is_empty());
        let port = match param("port")
            .or(url.port().map(|p| p.to_string()))
            .or(env("PGPORT"))
        {
            Some(port) => port
                .parse()
                .context("the port of DATABASE_URL (or PGPORT)")?,
            None => 5432,
        };
        Ok(Target { host, port })
    }

    /// Where the target is now (a name resolved at this call).
    pub fn peers(&self) -> HashSet<Peer> {
        let unix = |dir: &str| Peer::Unix(PathBuf::from(format!("{dir}/.s.PGSQL.{}", self.port)));
        match &self.host {
            None => DEFAULT_SOCKET_DIRS.into_iter().map(unix).collect(),
            Some(dir) if dir.starts_with('/') => HashSet::from([unix(dir)]),
            Some(host) => (host.as_str(), self.port)
                .to_socket_addrs()
                .map(|addrs| addrs.map(Peer::Tcp).collect())
                .unwrap_or_default(),
        }
    }
}

/// The new connection's socket among those that `appeared` during its connect: the only one, or
/// the only one connected to one of `peers` (computed only when needed); `None` when neither
/// tells.
pub fn choose(appeared: &[Socket], peers: impl FnOnce() -> HashSet<Peer>) -> Option<RawFd> {
    match appeared {
        [] => None,
        [only] => Some(only.fd),
        several => {
            let peers = peers();
            let mut going = several.iter().filter(|s| peers.contains(&s.peer));
            match (going.next(), going.next()) {
                (Some(one), None) => Some(one.fd),
                _ => None,
            }
        }
    }
}

/// This process's open sockets, by descriptor and inode: the descriptors listed once, each
/// then `stat`ed by its name in that directory (one lookup there, no path from the root, no
/// link read, no peer asked), as this runs twice at every connect with every client's socket
/// open: hundreds of descriptors under load, in a pod of a fraction of a core.
pub fn open_sockets() -> HashSet<(RawFd, u64)> {
    use nix::fcntl::AtFlags;
    use nix::sys::stat::{SFlag, fstatat};
    let (Ok(dir), Ok(entries)) = (
        std::fs::File::open("/proc/self/fd"),
        std::fs::read_dir("/proc/self/fd"),
    ) else {
        return HashSet::new();
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            let fd: RawFd = name.to_str()?.parse().ok()?;
            // Followed to what the descriptor holds; one closed since the listing fails.
            let stat = fstatat(&dir, name.as_os_str(), AtFlags::empty()).ok()?;
            let socket = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFSOCK;
            socket.then_some((fd, stat.st_ino))
        })
        .collect()
}

/// The connected TCP and Unix sockets open now that were not open `before` (a descriptor
/// closed and reused for a new socket has a new inode, so it counts as new), with their peers.
pub fn appeared(before: &HashSet<(RawFd, u64)>) -> Vec<Socket> {
    use nix::sys::socket::{AddressFamily, SockaddrLike, SockaddrStorage, getpeername};
    open_sockets()
        .difference(before)
        .filter_map(|&(fd, inode)| {
            let peer = getpeername::<SockaddrStorage>(fd).ok()?;
            let peer = match peer.family()? {
                AddressFamily::Inet => Peer::Tcp((*peer.as_sockaddr_in()?).into()),
                AddressFamily::Inet6 => Peer::Tcp((*peer.as_sockaddr_in6()?).into()),
                AddressFamily::Unix => Peer::Unix(peer.as_unix_addr()?.path()?.to_owned()),
                _ => return None,
            };
            Some(Socket { fd, inode, peer })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(fd: RawFd, peer: &str) -> Socket {
        Socket {
            fd,
            inode: fd as u64 + 1000,
            peer: Peer::Tcp(peer.parse().unwrap()),
        }
    }

    #[test]
    fn the_only_new_socket_is_the_connection_s_wherever_the_url_pointed() {
        // The name resolved elsewhere by now (or never resolved here): one new socket tells.
        let stale = || HashSet::from([Peer::Tcp("10.9.9.9:5432".parse().unwrap())]);
        assert_eq!(choose(&[tcp(7, "127.0.0.1:6432")], stale), Some(7));
    }

    #[test]
    fn among_several_new_sockets_the_one_to_the_database_is_chosen_or_none() {
        let db = || HashSet::from([Peer::Tcp("127.0.0.1:6432".parse().unwrap())]);
        let client = tcp(8, "127.0.0.1:40000");
        assert_eq!(
            choose(&[client.clone(), tcp(9, "127.0.0.1:6432")], db),
            Some(9)
        );
        let twice = [tcp(9, "127.0.0.1:6432"), tcp(10, "127.0.0.1:6432")];
        assert_eq!(choose(&twice, db), None);
        assert_eq!(choose(&[client, tcp(11, "127.0.0.1:9090")], db), None);
        assert_eq!(choose(&[], db), None);
    }

    #[test]
    fn the_target_is_read_as_libpq_reads_it() {
        let no_env = |_: &str| None;
        let of = |u: &str| Target::of(u, no_env).unwrap();
        let target = |host: Option<&str>, port| Target {
            host: host.map(str::to_owned),
            port,
        };
        assert_eq!(
            of("postgres://u@db.example:6432/x"),
            target(Some("db.example"), 6432)
        );
        assert_eq!(of("postgres://u@[::1]/x"), target(Some("::1"), 5432));
        assert_eq!(
            of("postgres://u@h/x?host=/run/postgresql&port=5433"),
            target(Some("/run/postgresql"), 5433)
        );
        assert_eq!(
            of("postgres://u@h/x?hostaddr=10.0.0.1"),
            target(Some("10.0.0.1"), 5432)
        );
        assert_eq!(of("postgres:///x"), target(None, 5432));
        let env = |name: &str| match name {
            "PGHOST" => Some("127.0.0.1".to_owned()),
            "PGPORT" => Some("7000".to_owned()),
            _ => None,
        };
        assert_eq!(
            Target::of("postgres:///x", env).unwrap(),
            target(Some("127.0.0.1"), 7000)
        );
        assert_eq!(
            Target::of("postgres://u@h:1/x", env).unwrap(),
            target(Some("h"), 1),
            "the URL's own host and port come first"
        );
        assert_eq!(
            target(Some("/sock"), 5).peers(),
            HashSet::from([Peer::Unix("/sock/.s.PGSQL.5".into())])
        );
    }

    #[test]
    fn a_socket_opened_between_the_listings_appears_with_its_peer_even_on_a_reused_number() {
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let kept = TcpStream::connect(addr).unwrap();
        let closed = TcpStream::connect(addr).unwrap();
        let before = open_sockets();
        assert!(before.iter().any(|&(fd, _)| fd == kept.as_raw_fd()));
        assert!(before.iter().any(|&(fd, _)| fd == listener.as_raw_fd()));
        let number = closed.as_raw_fd();
        drop(closed);
        // The lowest free number: the one just closed, with a new inode.
        let new = TcpStream::connect(addr).unwrap();
        let appeared = appeared(&before);
        let fds: Vec<RawFd> = appeared.iter().map(|s| s.fd).collect();
        assert!(fds.contains(&new.as_raw_fd()), "{appeared:?}");
        assert_eq!(
            new.as_raw_fd(),
            number,
            "the kernel gave the lowest free number"
        );
        assert!(!fds.contains(&kept.as_raw_fd()) && !fds.contains(&listener.as_raw_fd()));
        let found = appeared.iter().find(|s| s.fd == new.as_raw_fd()).unwrap();
        assert_eq!(found.peer, Peer::Tcp(addr));
    }
}
