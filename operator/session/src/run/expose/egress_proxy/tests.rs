//! The proxy end to end in one process: a fixture server on loopback, the
//! proxy with a floor that leaves loopback open, raw HTTP as a browser sends it.

use std::sync::Arc;
use std::time::Duration;

use playpen_api::egress_hosts::{Floor, HostRules};
use playpen_api::v1alpha1::EgressMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::*;

/// A server answering every request with `hello from <port>` and closing.
async fn fixture() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                let body = format!("hello from {port}");
                let reply =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// A keep-alive server that writes each answer's head, then 2 ms later its
/// body, as a server streaming its body does (or a TLS server its records).
async fn streaming_fixture() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            s.set_nodelay(true).expect("nodelay");
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").await;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    let _ = s.write_all(b"hello").await;
                }
            });
        }
    });
    port
}

/// A server answering one request with `size` bytes of `a` to `z` and
/// closing (after the proxy's end closed, so no unread byte resets it).
async fn large_fixture(size: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n");
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&body).await;
                let _ = s.shutdown().await;
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    port
}

struct Proxy {
    port: u16,
    tell: watch::Sender<Arc<Live>>,
    log: std::path::PathBuf,
    tally: Arc<Tally>,
    _dir: tempfile::TempDir,
}

fn live(allow: &[String], deny: &[String]) -> Live {
    Live {
        policy: Policy {
            rules: HostRules::parse(EgressMode::AllowListOnly, allow, deny).expect("rules"),
            floor: Floor { denied: vec!["10.0.0.0/8".parse().expect("cidr")], allowed: vec![] },
        },
        logged: true,
    }
}

async fn proxy(allow: &[String], deny: &[String], limits: Limits) -> Proxy {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = bind_loopback().expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tell, rx) = watch::channel(Arc::new(live(allow, deny)));
    let tally = Arc::new(Tally::default());
    let log = Arc::new(log_for(dir.path(), tally.clone()));
    tokio::spawn(serve(listener, rx, log, limits));
    Proxy { port, tell, log: dir.path().join("recordings/egress.jsonl"), tally, _dir: dir }
}

async fn exchange(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("json")).collect()
}

#[tokio::test]
async fn an_allowed_host_is_forwarded_and_a_refused_one_gets_403_and_both_are_logged() {
    let (a, b) = (fixture().await, fixture().await);
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let ok = exchange(p.port, &format!("GET http://localhost:{a}/x HTTP/1.1\r\nHost: localhost:{a}\r\n\r\n")).await;
    assert!(ok.starts_with("HTTP/1.1 200 OK") && ok.ends_with(&format!("hello from {a}")), "{ok}");
    let no = exchange(p.port, &format!("GET http://localhost:{b}/ HTTP/1.1\r\nHost: localhost:{b}\r\n\r\n")).await;
    assert!(no.starts_with("HTTP/1.1 403 Forbidden"), "{no}");
    assert!(no.contains(&format!("localhost:{b} refused (mode AllowListOnly)")), "{no}");
    assert!(!no.contains("hello"));
    let log = records(&p.log);
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!((log[0]["verdict"].as_str(), log[0]["rule"].as_str()), (Some("allowed"), Some("allowHosts[0]")));
    assert!(log[0]["received"].as_u64() > Some(10) && log[0]["address"] == "127.0.0.1");
    assert_eq!((log[1]["verdict"].as_str(), log[1]["port"].as_u64()), (Some("refused"), Some(u64::from(b))));
    // The report the operator reads counts the same attempts.
    let report = p.tally.report();
    assert_eq!((report.total("allowed"), report.total("refused")), (1, 1), "{report:?}");
    assert_eq!(report.refused_hosts.len(), 1);
    assert_eq!((report.refused_hosts[0].host.as_str(), report.refused_hosts[0].port), ("localhost", b));
}

#[tokio::test]
async fn a_connect_tunnel_relays_bytes_both_ways() {
    let a = fixture().await;
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let got = exchange(
        p.port,
        &format!("CONNECT localhost:{a} HTTP/1.1\r\nHost: localhost:{a}\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK"), "{got}");
    assert!(got.ends_with(&format!("hello from {a}")));
}

#[tokio::test]
async fn a_host_header_naming_another_host_is_a_bad_request_and_nothing_is_logged() {
    let a = fixture().await;
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let got = exchange(p.port, &format!("GET http://localhost:{a}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")).await;
    assert!(got.starts_with("HTTP/1.1 400 Bad Request"), "{got}");
    let huge = format!("GET http://localhost:{a}/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    assert!(exchange(p.port, &huge).await.starts_with("HTTP/1.1 400"), "an oversized head is refused");
    assert!(records(&p.log).is_empty());
}

#[tokio::test]
async fn a_rule_change_applies_to_the_next_connection() {
    let a = fixture().await;
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let request = format!("GET http://localhost:{a}/ HTTP/1.1\r\nHost: localhost:{a}\r\n\r\n");
    assert!(exchange(p.port, &request).await.starts_with("HTTP/1.1 200"));
    p.tell.send_replace(Arc::new(live(&[format!("localhost:{a}")], &["localhost".into()])));
    // "localhost" without a port denies 80 and 443 only: still allowed.
    assert!(exchange(p.port, &request).await.starts_with("HTTP/1.1 200"));
    p.tell.send_replace(Arc::new(live(&[format!("localhost:{a}")], &[format!("localhost:{a}")])));
    let denied = exchange(p.port, &request).await;
    assert!(denied.starts_with("HTTP/1.1 403") && denied.contains("(denyHosts[0])"), "{denied}");
}

#[tokio::test]
async fn a_slow_sender_is_dropped_and_connections_beyond_the_bound_wait() {
    let a = fixture().await;
    let limits = Limits { head_timeout: Duration::from_millis(300), max_connections: 1, ..LIMITS };
    let p = proxy(&[format!("localhost:{a}")], &[], limits).await;
    let mut slow = TcpStream::connect(("127.0.0.1", p.port)).await.expect("connect");
    slow.write_all(b"GET http://localhost").await.expect("write");
    // The only slot is held by the slow sender until its head times out; then this one is served.
    let request = format!("GET http://localhost:{a}/ HTTP/1.1\r\nHost: localhost:{a}\r\n\r\n");
    let started = std::time::Instant::now();
    assert!(exchange(p.port, &request).await.starts_with("HTTP/1.1 200"));
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    let mut rest = Vec::new();
    assert_eq!(slow.read_to_end(&mut rest).await.expect("closed"), 0, "the slow sender got no answer");
}

#[tokio::test]
async fn a_body_written_after_its_head_is_not_held_back_in_a_tunnel() {
    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let a = streaming_fixture().await;
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    s.write_all(format!("CONNECT localhost:{a} HTTP/1.1\r\nHost: localhost:{a}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut opened = [0u8; 39];
    s.read_exact(&mut opened).await.expect("200");
    assert_eq!(&opened, b"HTTP/1.1 200 Connection Established\r\n\r\n");
    let started = std::time::Instant::now();
    for _ in 0..20 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
        let mut answer = [0u8; ANSWER.len()];
        s.read_exact(&mut answer).await.expect("answer");
        assert_eq!(&answer, ANSWER);
    }
    // 20 answers of 2 ms each. With Nagle's algorithm on the proxy's socket
    // the body waited for the head's ACK, which the client, waiting for the
    // rest of the answer, delays by 40 ms: most of the 20 waited (0.8 s).
    let took = started.elapsed();
    assert!(took < Duration::from_millis(400), "20 answers took {took:?}");
}

#[tokio::test]
async fn a_large_answer_arrives_whole_through_a_tunnel_and_a_forward_and_is_counted() {
    const SIZE: usize = 8 << 20;
    let a = large_fixture(SIZE).await;
    let p = proxy(&[format!("localhost:{a}")], &[], LIMITS).await;
    let answer_head = format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n");
    let body: String = (0..SIZE).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let tunnel =
        format!("CONNECT localhost:{a} HTTP/1.1\r\nHost: localhost:{a}\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let got = exchange(p.port, &tunnel).await;
    assert!(got == format!("HTTP/1.1 200 Connection Established\r\n\r\n{answer_head}{body}"), "{}", got.len());
    let forward = format!("GET http://localhost:{a}/ HTTP/1.1\r\nHost: localhost:{a}\r\n\r\n");
    let got = exchange(p.port, &forward).await;
    assert!(got == format!("{answer_head}{body}"), "{}", got.len());
    // Each record is written once both ends closed.
    let mut log = records(&p.log);
    for _ in 0..50 {
        if log.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = records(&p.log);
    }
    let received: Vec<Option<u64>> = log.iter().map(|r| r["received"].as_u64()).collect();
    assert_eq!(received, [Some((answer_head.len() + SIZE) as u64); 2], "{log:?}");
}
