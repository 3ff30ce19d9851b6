//! The viewer relay. The runtime claims the pinned port on 127.0.0.1 itself,
//! with a listener it holds for its whole life (an atomic proof of
//! ownership, so a taken port fails fast), and relays bytes both ways to the
//! dashboard child's own ephemeral loopback port: HTTP and WebSocket pass
//! unchanged. The dashboard runs only while viewers need it ([`upstream`]):
//! a viewer's first connection starts it and waits a bounded time for it;
//! a start that fails or takes too long is answered with a 503 that says
//! why, never left hanging. The readiness probe is answered by the relay
//! itself ([`opening`]), so it never starts the dashboard.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::Fatal;
use opening::Opening;
use upstream::{Dashboard, Unavailable, Upstream};

pub(crate) mod answer;
pub(crate) mod opening;
pub(crate) mod pump;
pub mod upstream;

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

/// How soon a refused connect to the dashboard is tried again.
const CONNECT_RETRY: Duration = Duration::from_millis(100);

/// How long the relay waits for a connection's first bytes, and for a dashboard.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    /// For the first bytes: a connection that sends nothing is closed after
    /// this (as the dashboard's own HTTP server would).
    pub opening: Duration,
    /// For a dashboard to start or restart, after which the viewer gets a 503.
    pub upstream: Duration,
}

/// Accepts on the pinned listener forever. The probe's request is answered
/// here; a viewer's connection is counted (`open`: use of the session, and
/// the demand that starts the dashboard) and relayed to it.
pub async fn serve(listener: TcpListener, dashboard: Dashboard, waits: Waits, open: Arc<AtomicUsize>) {
    loop {
        match listener.accept().await {
            Ok((conn, peer)) => {
                let dashboard = dashboard.clone();
                let open = open.clone();
                tokio::spawn(async move {
                    if let Err(why) = relay_one(conn, &dashboard, waits, open).await {
                        tracing::debug!(%peer, %why, "viewer connection closed");
                    }
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
    dashboard: &Dashboard,
    waits: Waits,
    open: Arc<AtomicUsize>,
) -> Result<(), String> {
    let (opening, head) = tokio::time::timeout(waits.opening, opening::read_opening(&mut conn))
        .await
        .map_err(|_| format!("nothing sent within {:?}", waits.opening))?
        .map_err(|e| e.to_string())?;
    match opening {
        Opening::Probe => {
            answer_probe(&mut conn, dashboard).await;
            return Ok(());
        }
        Opening::Incomplete => return Err("closed before a request".into()),
        Opening::Viewer => {}
    }
    let _use = OpenConnection::new(open);
    let _viewer = dashboard.viewer();
    let mut back = match connect_upstream(dashboard, waits.upstream).await {
        Ok(back) => back,
        Err(unavailable) => {
            tracing::warn!(%unavailable, "a viewer got no dashboard (answered 503)");
            answer::send(&mut conn, 503, &unavailable.to_string()).await;
            return Err(unavailable.to_string());
        }
    };
    pump::tune(&conn);
    pump::tune(&back);
    back.write_all(&head).await.map_err(|e| e.to_string())?;
    pump::relay(&mut conn, &mut back).await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Connects to the dashboard, starting it if need be. A refused connect is
/// retried within the wait: a dashboard that crashed or was stopped for
/// idleness just after its address was read is still published for a moment,
/// then withdrawn, and the retry waits for the next start.
async fn connect_upstream(dashboard: &Dashboard, wait: Duration) -> Result<TcpStream, Unavailable> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let addr = dashboard.upstream(left).await.map_err(|unavailable| match unavailable {
            Unavailable::TimedOut(_) => Unavailable::TimedOut(wait),
            other => other,
        })?;
        match TcpStream::connect(addr).await {
            Ok(back) => return Ok(back),
            Err(err) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%addr, %err, "the dashboard went away before the connect: waiting for it again");
                tokio::time::sleep(CONNECT_RETRY).await;
            }
            Err(_) => return Err(Unavailable::TimedOut(wait)),
        }
    }
}

/// The viewer is ready when the relay answers and a supervisor is there to
/// start the dashboard; whether the dashboard runs right now does not matter.
async fn answer_probe(conn: &mut TcpStream, dashboard: &Dashboard) {
    if !dashboard.supervised() {
        return answer::send(conn, 503, &Unavailable::Closing.to_string()).await;
    }
    let state = match dashboard.now() {
        Upstream::Stopped => "stopped (starts with the first viewer)".to_owned(),
        Upstream::Starting => "starting".to_owned(),
        Upstream::Serving(_) => "serving".to_owned(),
        Upstream::Failed(why) => format!("its last start failed ({why}); the next viewer starts it again"),
    };
    answer::send(conn, 200, &format!("viewer ready; dashboard {state}")).await;
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

    const WAITS: Waits = Waits { opening: Duration::from_secs(5), upstream: Duration::from_secs(5) };

    fn serving(waits: Waits) -> (SocketAddr, upstream::Publisher, Arc<AtomicUsize>) {
        let listener = bind_pinned(0).unwrap();
        let pinned = listener.local_addr().unwrap();
        assert_eq!(pinned.ip(), Ipv4Addr::LOCALHOST);
        let (publisher, dashboard) = upstream::channel();
        let open = Arc::new(AtomicUsize::new(0));
        tokio::spawn(serve(listener, dashboard, waits, open.clone()));
        (pinned, publisher, open)
    }

    async fn response(addr: SocketAddr, request: &[u8]) -> String {
        let mut client = TcpStream::connect(addr).await.unwrap();
        client.write_all(request).await.unwrap();
        let mut text = String::new();
        tokio::time::timeout(Duration::from_secs(10), client.read_to_string(&mut text)).await.unwrap().unwrap();
        text
    }

    #[tokio::test]
    async fn bytes_flow_both_ways_and_a_late_upstream_is_waited_for() {
        let (pinned, publisher, open) = serving(WAITS);
        let mut client = TcpStream::connect(pinned).await.unwrap();
        client.write_all(b"hello").await.unwrap();
        // The dashboard comes up after the viewer connected (started for it).
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(publisher.viewers.borrow().open, 1, "the viewer is counted: the demand for a dashboard");
        publisher.publish(Upstream::Serving(echo_server().await));
        let mut buf = [0u8; 5];
        tokio::time::timeout(Duration::from_secs(5), client.read_exact(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf, b"hello", "the bytes read to tell the probe from a viewer are passed on");
        assert_eq!(open.load(Ordering::Relaxed), 1, "an open viewer connection is counted (idle timeout)");
        drop(client);
        for _ in 0..50 {
            if open.load(Ordering::Relaxed) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(open.load(Ordering::Relaxed), 0, "and uncounted once closed");
        assert_eq!(publisher.viewers.borrow().open, 0);
    }

    #[tokio::test]
    async fn a_dashboard_gone_before_the_connect_is_waited_for_again() {
        let (pinned, publisher, _) = serving(WAITS);
        let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        publisher.publish(Upstream::Serving(gone));
        let mut client = TcpStream::connect(pinned).await.unwrap();
        client.write_all(b"hello").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        publisher.publish(Upstream::Stopped);
        publisher.publish(Upstream::Serving(echo_server().await));
        let mut buf = [0u8; 5];
        tokio::time::timeout(Duration::from_secs(5), client.read_exact(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf, b"hello");
    }

    #[tokio::test]
    async fn without_a_dashboard_a_viewer_gets_a_503_that_says_why() {
        let waits = Waits { upstream: Duration::from_millis(300), ..WAITS };
        let (pinned, publisher, _) = serving(waits);
        let text = response(pinned, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        assert!(text.contains("not up after 300ms"), "{text}");
        // A start that fails reaches the viewers waiting for it.
        let waiting = tokio::spawn(response(pinned, b"GET /index.html HTTP/1.1\r\n\r\n"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        publisher.publish(Upstream::Failed("no `Listening on` line within 60s".into()));
        let text = waiting.await.unwrap();
        assert!(text.contains("could not start (no `Listening on` line within 60s)"), "{text}");
    }

    #[tokio::test]
    async fn the_probe_is_answered_by_the_relay_without_starting_the_dashboard() {
        let (pinned, publisher, open) = serving(WAITS);
        let viewers = publisher.viewers.clone();
        opening::viewer_ready(pinned, Duration::from_secs(5)).await.unwrap();
        let text = response(pinned, opening::PROBE_REQUEST).await;
        assert!(text.ends_with("viewer ready; dashboard stopped (starts with the first viewer)\n"), "{text}");
        assert!(!viewers.has_changed().unwrap(), "no viewer was counted");
        assert_eq!(open.load(Ordering::Relaxed), 0, "a probe is no use of the session");
        drop(publisher);
        let refused = opening::viewer_ready(pinned, Duration::from_secs(5)).await.unwrap_err();
        assert!(refused.contains("the session is closing"), "{refused}");
    }

    #[tokio::test]
    async fn a_connection_that_sends_nothing_is_closed_after_the_opening_wait() {
        let waits = Waits { opening: Duration::from_millis(300), ..WAITS };
        let (pinned, publisher, _) = serving(waits);
        let mut client = TcpStream::connect(pinned).await.unwrap();
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "closed, not hanging: {read:?}");
        assert_eq!(publisher.viewers.borrow().open, 0, "and never counted as a viewer");
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
