//! The viewer's dashboard on demand, against the real playwright-cli 0.1.22
//! and Debian's chromium: not running while nobody views (the session Ready
//! all the same), started by a viewer's first request, kept while a viewer's
//! WebSocket is open, stopped after the idle period, started again by the
//! next request. Needs `tests/session/setup.sh` (see `support::SETUP`).

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::*;

/// The idle period the test sets (the default is 300 s).
const IDLE_SECONDS: u64 = 3;

/// `dashboardApp.js` processes among the runtime's descendants.
fn dashboards(session: &Session) -> Vec<u32> {
    session.processes().into_iter().filter(|p| p.cmdline.contains("dashboardApp.js")).map(|p| p.pid).collect()
}

/// One timed GET of the dashboard's page.
fn view(port: u16) -> Duration {
    let t = Instant::now();
    let (status, page) = http_get(port, "/index.html");
    let took = t.elapsed();
    assert!(status.contains(" 200 ") && page.contains("<html"), "{status}\n{page:.300}");
    took
}

/// The dashboard's WebSocket, held open until dropped (what an open viewer tab keeps).
fn open_websocket(port: u16) -> TcpStream {
    let (_, root) = http_get(port, "/");
    let guid = root.split("?ws=").nth(1).and_then(|r| r.lines().next()).expect("a ws guid").trim().to_owned();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /{guid} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 101", "the upgrade passes the relay");
    s
}

#[test]
fn the_dashboard_runs_only_while_someone_views() {
    let port = free_port();
    let mut session = Session::new("lazy", Some(port));
    session.start_with_env = Some(("PLAYPEN_VIEWER_DASHBOARD_IDLE_SECONDS".into(), IDLE_SECONDS.to_string()));
    session.start();
    session.wait_ready(Duration::from_secs(60));

    // Ready, and probed again and again, without a dashboard.
    for _ in 0..5 {
        assert!(session.probe_ok(), "{}", session.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(dashboards(&session), Vec::<u32>::new(), "no dashboard before a viewer:\n{}", session.log());

    let first_view = view(port);
    let started = dashboards(&session);
    assert_eq!(started.len(), 1, "one dashboard after the first view");
    let warm_view = view(port);
    eprintln!("first view (dashboard started on demand): {first_view:?}; the next, warm: {warm_view:?}");

    // An open viewer keeps it past the idle period.
    let socket = open_websocket(port);
    std::thread::sleep(Duration::from_secs(IDLE_SECONDS * 2));
    assert_eq!(dashboards(&session), started, "kept while a viewer's WebSocket is open");
    drop(socket);

    let closed = Instant::now();
    wait_until("the dashboard stopped for idleness", Duration::from_secs(IDLE_SECONDS + 10), || {
        dashboards(&session).is_empty()
    });
    eprintln!("stopped {:?} after the last viewer left", closed.elapsed());
    assert!(closed.elapsed() >= Duration::from_secs(IDLE_SECONDS - 1), "stopped before the idle period");
    assert!(session.log().contains("no viewer for the idle period: stopping the dashboard"), "{}", session.log());
    assert!(session.probe_ok(), "still Ready without it");

    let again = view(port);
    let restarted = dashboards(&session);
    assert_eq!(restarted.len(), 1);
    assert_ne!(restarted, started, "a new dashboard");
    eprintln!("view after the idle stop (started again): {again:?}");
    session.cleanup();
    assert!(session.processes().is_empty(), "nothing left");
}
