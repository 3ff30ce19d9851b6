//! The bench's browser: each way Chromium fetches through its HTTP proxy,
//! and the direct fetch to compare with, timed from `connect` to the last
//! byte of the body.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Headers of a Chromium GET (their size is what the proxy parses).
const HEADERS: &str = "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                       Chrome/131.0.0.0 Safari/537.36\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate, br\r\n\
                       Accept-Language: en-US,en;q=0.9\r\n";

/// How a request reaches the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// To the origin itself.
    Direct,
    /// `GET http://host:port/…` to the proxy (plain HTTP).
    Absolute,
    /// `CONNECT host:port`, then the GET through the tunnel (what HTTPS does).
    Connect,
    /// `CONNECT` to a port no rule allows: answered 403.
    Refused,
}

/// Where the origin and the proxy listen.
#[derive(Debug, Clone)]
pub struct Target {
    /// The origin, 127.0.0.1.
    pub origin: SocketAddr,
    /// The egress proxy, 127.0.0.1.
    pub proxy: SocketAddr,
}

impl Target {
    /// The origin as requests name it: `localhost:<port>`, which the proxy
    /// resolves through `/etc/hosts` as it would a real name through DNS.
    fn authority(&self) -> String {
        format!("localhost:{}", self.origin.port())
    }

    /// Opens a connection by `path` up to where a GET can be sent.
    async fn open(&self, path: Path) -> TcpStream {
        let mut s = TcpStream::connect(if path == Path::Direct { self.origin } else { self.proxy }).await.unwrap();
        // Chromium's sockets are TCP_NODELAY.
        s.set_nodelay(true).unwrap();
        if matches!(path, Path::Connect | Path::Refused) {
            let to = if path == Path::Refused { "localhost:1".to_owned() } else { self.authority() };
            let connect =
                format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\nProxy-Connection: keep-alive\r\n{HEADERS}\r\n");
            s.write_all(connect.as_bytes()).await.unwrap();
        }
        s
    }

    /// One GET of `resource` (`/small`, `/large`) on a new connection by
    /// `path`: the time to its last byte, its status and body length.
    pub async fn fetch(&self, path: Path, resource: &str, buf: &mut [u8]) -> (Duration, u16, usize) {
        let t = Instant::now();
        let mut s = self.open(path).await;
        if matches!(path, Path::Connect | Path::Refused) {
            let (status, len) = response(&mut s, buf).await;
            if status != 200 {
                return (t.elapsed(), status, len);
            }
        }
        let (status, len) = self.get(&mut s, path, resource, buf).await;
        (t.elapsed(), status, len)
    }

    /// A connection kept alive for [`Self::get`]s: to the origin, or in one
    /// CONNECT tunnel.
    pub async fn keep_alive(&self, path: Path, buf: &mut [u8]) -> TcpStream {
        let mut s = self.open(path).await;
        if path == Path::Connect {
            assert_eq!(response(&mut s, buf).await.0, 200, "the tunnel opened");
        }
        s
    }

    /// One GET on `s`, opened by `path`.
    pub async fn get(&self, s: &mut TcpStream, path: Path, resource: &str, buf: &mut [u8]) -> (u16, usize) {
        let host = self.authority();
        let target = if path == Path::Absolute { format!("http://{host}{resource}") } else { resource.to_owned() };
        let extra =
            if path == Path::Absolute { "Proxy-Connection: keep-alive\r\n" } else { "Connection: keep-alive\r\n" };
        let request = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}{HEADERS}\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        response(s, buf).await
    }
}

/// Reads one response: its status and body length (`Content-Length`, none: 0).
async fn response(s: &mut TcpStream, buf: &mut [u8]) -> (u16, usize) {
    let mut head = Vec::with_capacity(512);
    let end = loop {
        let n = s.read(buf).await.unwrap();
        assert!(n > 0, "the connection closed before a response head: {}", String::from_utf8_lossy(&head));
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let len: usize =
        text.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    let mut got = head.len() - end;
    while got < len {
        let n = s.read(buf).await.unwrap();
        assert!(n > 0, "the body ended after {got} of {len} bytes");
        got += n;
    }
    assert_eq!(got, len, "no bytes past the body");
    (status, len)
}
