//! The viewer relay. The runtime claims the pinned port on 127.0.0.1 itself,
//! with a listener it holds for its whole life (an atomic proof of
//! ownership, so a taken port fails fast), and relays bytes both ways to the
//! dashboard child's own ephemeral loopback port: HTTP and WebSocket pass
//! unchanged. While the child restarts, a new connection waits a bounded time
//! for it and is then closed cleanly, never left hanging.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::error::Fatal;

pub(crate) mod answer;
pub(crate) mod pump;

/// Binds the viewer's `127.0.0.1:<port>`; never any other address.
pub fn bind_pinned(port: u16) -> Result<TcpListener, Fatal> {
    bind_loopback(port).map_err(|source| Fatal::ViewerPortTaken { port, source })
}

/// Binds `127.0.0.1:<port>` for a pinned endpoint; never any other address.
pub(crate) fn bind_loopback(port: u16) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// The dashboard's address from its `Listening on http://127.0.0.1:<port>[/…]`
/// line; anything not on loopback is refused.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let url = url::Url::parse(line.split("Listening on ").nth(1)?.trim()).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let ip = match url.host()? {
        url::Host::Ipv4(ip) => IpAddr::V4(ip),
        url::Host::Ipv6(ip) => IpAddr::V6(ip),
        url::Host::Domain(_) => return None,
    };
    let addr = SocketAddr::new(ip, url.port_or_known_default()?);
    addr.ip().is_loopback().then_some(addr)
}

/// Does anything answer HTTP at `addr`? Any status counts (the dashboard's
/// root answers 302).
pub async fn answers_http(addr: SocketAddr, timeout: Duration) -> bool {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").await.ok()?;
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).await.ok()?;
        Some(&head == b"HTTP/")
    };
    matches!(tokio::time::timeout(timeout, attempt).await, Ok(Some(true)))
}

/// Counts a viewer connection while it is open: a human watching or driving
/// through the viewer is use of the session (the idle timeout waits for it).
pub(crate) struct OpenConnection(Arc<AtomicUsize>);

impl OpenConnection {
    pub(crate) fn new(open: Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Self(open)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts on the pinned listener forever, relaying each connection to the
/// current upstream (waiting at most `wait` for one to exist).
pub async fn serve(
    listener: TcpListener,
    upstream: watch::Receiver<Option<SocketAddr>>,
    wait: Duration,
    open: Arc<AtomicUsize>,
) {
    loop {
        match listener.accept().await {
            Ok((conn, peer)) => {
                let upstream = upstream.clone();
                let counted = OpenConnection::new(open.clone());
                tokio::spawn(async move {
                    if let Err(why) = relay_one(conn, upstream, wait).await {
                        tracing::debug!(%peer, %why, "viewer connection closed");
                    }
                    drop(counted);
                });
            }
            Err(err) => {
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn relay_one(
    mut conn: TcpStream,
    mut upstream: watch::Receiver<Option<SocketAddr>>,
    wait: Duration,
) -> Result<(), String> {
    let addr = match tokio::time::timeout(wait, upstream.wait_for(Option::is_some)).await {
        Ok(Ok(addr)) => addr.ok_or("no upstream")?,
        Ok(Err(_)) => return Err("the dashboard supervisor is gone".into()),
        Err(_) => return Err(format!("no dashboard within {wait:?}")),
    };
    let mut back = TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
    pump::tune(&conn);
    pump::tune(&back);
    pump::relay(&mut conn, &mut back).await.map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_are_parsed_and_only_loopback_is_accepted() {
        assert_eq!(parse_listening("Listening on http://127.0.0.1:40123"), Some("127.0.0.1:40123".parse().unwrap()));
        assert_eq!(
            parse_listening("Listening on http://127.0.0.1:40123/index.html?ws=x"),
            Some("127.0.0.1:40123".parse().unwrap())
        );
        assert_eq!(parse_listening("  Listening on http://[::1]:8080\n"), Some("[::1]:8080".parse().unwrap()));
        assert_eq!(parse_listening("Listening on http://0.0.0.0:8080"), None);
        assert_eq!(parse_listening("Listening on http://localhost:8080"), None);
        assert_eq!(parse_listening("Listening on https://127.0.0.1:8080"), None);
        assert_eq!(parse_listening("starting"), None);
        // The URL's own port rule: 80 is http's default, written or not.
        assert_eq!(parse_listening("Listening on http://127.0.0.1:80/"), Some("127.0.0.1:80".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_taken_port_fails_fast_with_its_reason() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let err = bind_pinned(port).unwrap_err();
        assert_eq!(err.reason(), "ViewerPortTaken");
        assert!(err.to_string().contains(&format!("127.0.0.1:{port}")));
    }

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn bytes_flow_both_ways_and_a_late_upstream_is_waited_for() {
        let listener = bind_pinned(0).unwrap();
        let pinned = listener.local_addr().unwrap();
        assert_eq!(pinned.ip(), Ipv4Addr::LOCALHOST);
        let (tx, rx) = watch::channel(None);
        let open = Arc::new(AtomicUsize::new(0));
        tokio::spawn(serve(listener, rx, Duration::from_secs(5), open.clone()));
        let mut client = TcpStream::connect(pinned).await.unwrap();
        client.write_all(b"hello").await.unwrap();
        // The upstream appears after the client connected (a restart in progress).
        tokio::time::sleep(Duration::from_millis(200)).await;
        tx.send(Some(echo_server().await)).unwrap();
        let mut buf = [0u8; 5];
        tokio::time::timeout(Duration::from_secs(5), client.read_exact(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf, b"hello");
        assert_eq!(open.load(Ordering::Relaxed), 1, "an open viewer connection is counted (idle timeout)");
        drop(client);
        for _ in 0..50 {
            if open.load(Ordering::Relaxed) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(open.load(Ordering::Relaxed), 0, "and uncounted once closed");
    }

    #[tokio::test]
    async fn without_an_upstream_a_connection_is_closed_after_the_bounded_wait() {
        let listener = bind_pinned(0).unwrap();
        let pinned = listener.local_addr().unwrap();
        let (_tx, rx) = watch::channel(None);
        tokio::spawn(serve(listener, rx, Duration::from_millis(300), Arc::default()));
        let mut client = TcpStream::connect(pinned).await.unwrap();
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "closed, not hanging: {read:?}");
    }

    #[tokio::test]
    async fn any_http_status_is_healthy() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = [0u8; 256];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(b"HTTP/1.1 302 Found\r\nLocation: /index.html\r\n\r\n").await;
            }
        });
        assert!(answers_http(addr, Duration::from_secs(2)).await);
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert!(!answers_http(closed, Duration::from_secs(2)).await);
    }
}
