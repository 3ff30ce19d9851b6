//! The CDP endpoint: a pinned port on 127.0.0.1 (reached only through
//! `kubectl port-forward`) relayed to the browser's own DevTools server, so
//! Playwright's `connectOverCDP`, Puppeteer and browser-use drive the same
//! browser the agent's `playwright-cli` drives. Each connection's first
//! request is checked ([`request`]) before it is passed on unchanged;
//! Chromium builds the WebSocket URLs it returns from that request's Host
//! header, so clients get the tunnel's own address back.

pub(crate) mod discover;
pub(crate) mod launch;
pub(crate) mod request;

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::run::expose::relay::{answer, pump, OpenConnection};
use crate::run::process::reaper::Managed;
use crate::run::process::supervisor::{run_to_end, ChildSpec};

/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a connection looks for a browser that is (re)starting.
const POLL: Duration = Duration::from_millis(200);

/// The browser behind the endpoint.
pub trait Browser: Send + Sync + 'static {
    /// Where its DevTools server listens now (it moves when the browser restarts).
    fn endpoint(&self) -> Option<SocketAddr>;
    /// Asks for a browser. With a profile (always, when CDP is on) the CLI's
    /// daemon opens Chromium as it starts (measured); should none be up when
    /// a client arrives, a page command opens one rather than refusing.
    fn launch(&self) -> impl std::future::Future<Output = ()> + Send;
}

/// The session's browser: found under this runtime, launched through the CLI
/// when a client arrives before the agent's first command.
#[derive(Debug)]
pub struct SessionBrowser {
    /// This runtime's PID (the browser descends from it).
    pub runtime_pid: u32,
    /// `playwright-cli tab-list`: the cheapest command that opens the browser.
    pub open: ChildSpec,
    /// Children the reaper tracks.
    pub managed: Managed,
    /// One launch at a time, however many clients connect at once.
    pub launching: tokio::sync::Mutex<()>,
}

impl Browser for SessionBrowser {
    fn endpoint(&self) -> Option<SocketAddr> {
        discover::browser_endpoint(std::path::Path::new("/proc"), self.runtime_pid)
    }

    async fn launch(&self) {
        let _one = self.launching.lock().await;
        if self.endpoint().is_none() {
            tracing::info!("a CDP client arrived before the browser: opening it");
            run_to_end(&self.open, Duration::from_secs(60), &self.managed).await;
        }
    }
}

/// Accepts on the pinned listener forever; a connection waits up to `wait`
/// for the browser.
pub async fn serve<B: Browser>(listener: TcpListener, browser: Arc<B>, wait: Duration, open: Arc<AtomicUsize>) {
    loop {
        match listener.accept().await {
            Ok((conn, peer)) => {
                let browser = browser.clone();
                // A CDP client attached is use of the session (the idle timeout waits for it).
                let counted = OpenConnection::new(open.clone());
                tokio::spawn(async move {
                    if let Err(why) = relay_one(conn, &*browser, wait).await {
                        tracing::info!(%peer, %why, "CDP connection refused or closed");
                    }
                    drop(counted);
                });
            }
            Err(err) => {
                tracing::warn!(%err, "CDP accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn relay_one<B: Browser>(mut conn: TcpStream, browser: &B, wait: Duration) -> Result<(), String> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut conn)).await {
        Ok(Ok(head)) => head,
        Ok(Err(refusal)) => return refuse(&mut conn, 400, &refusal.to_string()).await,
        Err(_) => return Err(format!("no request head within {HEAD_TIMEOUT:?}")),
    };
    if let Err(refusal) = request::check(&head) {
        return refuse(&mut conn, 403, &refusal.to_string()).await;
    }
    let deadline = Instant::now() + wait;
    if browser.endpoint().is_none() {
        // Bounded like the wait: a launch that hangs must not hold the client.
        let _ = tokio::time::timeout(wait, browser.launch()).await;
    }
    // A restarting browser leaves its old port in DevToolsActivePort until
    // the new one writes it: a refused connect is retried within the wait.
    let mut back = loop {
        if let Some(addr) = browser.endpoint() {
            if let Ok(stream) = TcpStream::connect(addr).await {
                break stream;
            }
        }
        if Instant::now() >= deadline {
            let why = "the browser's DevTools endpoint is not up (starting or restarting); retry";
            return refuse(&mut conn, 503, why).await;
        }
        tokio::time::sleep(POLL).await;
    };
    pump::tune(&conn);
    pump::tune(&back);
    back.write_all(&head).await.map_err(|e| e.to_string())?;
    pump::relay(&mut conn, &mut back).await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Reads until the end of the first request head; returns everything read
/// (the head and any bytes after it, passed on as they came).
async fn read_head(conn: &mut TcpStream) -> Result<Vec<u8>, request::Refusal> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while request::head_len(&buffer).is_none() {
        if buffer.len() > request::MAX_HEAD {
            return Err(request::Refusal::NotHttp);
        }
        let read = conn.read(&mut chunk).await.map_err(|_| request::Refusal::NotHttp)?;
        if read == 0 {
            return Err(request::Refusal::NotHttp);
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Ok(buffer)
}

async fn refuse(conn: &mut TcpStream, status: u16, why: &str) -> Result<(), String> {
    answer::send(conn, status, why).await;
    Err(format!("{status}: {why}"))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::run::expose::relay::bind_loopback;

    /// A stand-in DevTools server: answers every request with the Host it saw.
    async fn devtools() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let head = read_head(&mut s).await.unwrap();
                    let text = String::from_utf8(head).unwrap();
                    let host = text.lines().find_map(|l| l.strip_prefix("Host: ")).unwrap_or("").to_owned();
                    let body = format!("{{\"webSocketDebuggerUrl\":\"ws://{host}/devtools/browser/x\"}}");
                    let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                    s.write_all(reply.as_bytes()).await.unwrap();
                });
            }
        });
        addr
    }

    async fn ask(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut reply = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut reply)).await;
        reply
    }

    /// A browser that is there (or not), and counts launch requests.
    struct Fixed(Option<SocketAddr>, AtomicUsize);

    impl Browser for Fixed {
        fn endpoint(&self) -> Option<SocketAddr> {
            self.0
        }
        async fn launch(&self) {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn endpoint(upstream: Option<SocketAddr>, wait: Duration) -> (SocketAddr, Arc<AtomicUsize>, Arc<Fixed>) {
        let listener = bind_loopback(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicUsize::new(0));
        let browser = Arc::new(Fixed(upstream, AtomicUsize::new(0)));
        tokio::spawn(serve(listener, browser.clone(), wait, open.clone()));
        (addr, open, browser)
    }

    #[tokio::test]
    async fn a_loopback_request_reaches_the_browser_unchanged() {
        let (addr, _, browser) = endpoint(Some(devtools().await), Duration::from_secs(1)).await;
        let reply = ask(addr, "GET /json/version HTTP/1.1\r\nHost: 127.0.0.1:41234\r\n\r\n").await;
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert_eq!(browser.1.load(Ordering::Relaxed), 0, "a running browser is not launched again");
        assert!(reply.contains("ws://127.0.0.1:41234/devtools/browser/x"), "the client's own Host comes back: {reply}");
    }

    #[tokio::test]
    async fn a_rebinding_host_or_a_web_origin_never_reaches_the_browser() {
        let (addr, _, browser) = endpoint(None, Duration::from_secs(1)).await;
        let reply = ask(addr, "GET /json/version HTTP/1.1\r\nHost: attacker.example:9222\r\n\r\n").await;
        assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");
        assert!(reply.contains("attacker.example"), "{reply}");
        let ws = "GET /devtools/browser/x HTTP/1.1\r\nHost: 127.0.0.1:9222\r\nUpgrade: websocket\r\nOrigin: https://attacker.example\r\n\r\n";
        assert!(ask(addr, ws).await.starts_with("HTTP/1.1 403"));
        assert!(ask(addr, "\x16\x03\x01garbage\r\n\r\n").await.starts_with("HTTP/1.1 403"));
        assert_eq!(browser.1.load(Ordering::Relaxed), 0, "a refused request never launches the browser");
    }

    #[tokio::test]
    async fn without_a_browser_the_client_hears_why_after_the_bounded_wait() {
        let (addr, open, browser) = endpoint(None, Duration::from_millis(300)).await;
        let reply = ask(addr, "GET /json/version HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
        assert_eq!(browser.1.load(Ordering::Relaxed), 1, "the browser was asked for once");
        assert!(reply.contains("not up"), "{reply}");
        for _ in 0..50 {
            if open.load(Ordering::Relaxed) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(open.load(Ordering::Relaxed), 0, "a closed connection is no longer use");
    }

    #[tokio::test]
    async fn a_stale_port_is_retried_then_answered_with_503() {
        // A port nothing listens on: what DevToolsActivePort says while a new browser starts.
        let stale = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let (addr, _, browser) = endpoint(Some(stale), Duration::from_millis(500)).await;
        let reply = ask(addr, "GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
        assert_eq!(browser.1.load(Ordering::Relaxed), 0, "a browser is up (only its port is stale): no launch");
    }

    #[tokio::test]
    async fn an_endless_head_is_cut_off() {
        let (addr, _, _) = endpoint(Some(devtools().await), Duration::from_secs(1)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let line = format!("X-Filler: {}\r\n", "a".repeat(1000));
        let mut request = "GET / HTTP/1.1\r\n".to_owned();
        for _ in 0..32 {
            request.push_str(&line);
        }
        let _ = s.write_all(request.as_bytes()).await;
        let mut reply = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut reply)).await;
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    }
}
