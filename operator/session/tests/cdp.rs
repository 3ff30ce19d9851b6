//! The CDP endpoint against the real playwright-cli and Debian's chromium:
//! a real Playwright client (`connectOverCDP`, from the playwright-core the
//! CLI itself ships) drives the same browser the agent's `playwright-cli`
//! drives, and requests a web page could forge never reach the browser.
//! Needs `tests/session/setup.sh` (see `support::SETUP`).

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use support::*;

/// One HTTP/1.1 request with the given Host (and extra header lines); the whole answer.
fn request(port: u16, path: &str, host: &str, extra: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n").unwrap();
    // Chromium keeps the connection open despite `Connection: close`: read
    // until the head and its Content-Length are in, or the peer closes.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    while !complete(&raw) {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&raw).into_owned()
}

fn complete(raw: &[u8]) -> bool {
    let text = String::from_utf8_lossy(raw);
    let Some(head_end) = text.find("\r\n\r\n") else { return false };
    let length = text[..head_end]
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    length.is_some_and(|len| raw.len() >= head_end + 4 + len)
}

/// Runs a Node script with the CLI's own playwright-core; returns its stdout.
fn playwright_client(session: &Session, script: &str) -> String {
    let core = session.prefix.join("node_modules/playwright-core");
    let out = Command::new("node")
        .arg("-e")
        .arg(format!("const {{ chromium }} = require({core:?});\n(async () => {{ {script} }})().catch(e => {{ console.error(e); process.exit(1); }});"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the Playwright client failed:\n{stdout}\n{}\nruntime log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        session.log()
    );
    stdout
}

fn started(name: &str) -> (Session, u16) {
    let mut session = Session::new(name, None);
    let port = free_port();
    session.set_runtime_field("cdpPort", port.into());
    session.start();
    // Ready includes the CDP endpoint answering through the relay.
    session.wait_ready(Duration::from_secs(90));
    (session, port)
}

#[test]
fn a_playwright_client_over_cdp_and_the_agent_drive_the_same_browser() {
    let fixture = Fixture::start();
    let (session, port) = started("cdp-shared");

    let version = request(port, "/json/version", &format!("127.0.0.1:{port}"), "");
    assert!(version.starts_with("HTTP/1.1 200"), "{version}");
    assert!(
        version.contains(&format!("ws://127.0.0.1:{port}/devtools/browser/")),
        "the WebSocket URL names the client's own address, not Chromium's: {version}"
    );

    // The agent opens a page; the CDP client sees it, and opens one of its own.
    session.cli_ok(&["goto", &fixture.url("/")]);
    let seen = playwright_client(
        &session,
        &format!(
            "const browser = await chromium.connectOverCDP('http://127.0.0.1:{port}');
             const context = browser.contexts()[0];
             console.log('agent-page ' + context.pages().map(p => p.url()).join(' '));
             const page = await context.newPage();
             await page.goto({next:?});
             console.log('cdp-page ' + await page.title());
             process.exit(0);",
            next = fixture.url("/next.html")
        ),
    );
    assert!(seen.contains(&format!("agent-page {}", fixture.url("/"))), "the CDP client saw: {seen}");
    assert!(seen.contains("cdp-page Next page"), "{seen}");
    // The CLI learns of the page from the browser's own event: give it a moment.
    let mut tabs = String::new();
    for _ in 0..20 {
        tabs = session.cli_ok(&["tab-list"]);
        if tabs.contains(&fixture.url("/next.html")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(tabs.contains(&fixture.url("/next.html")), "the agent's tab-list misses the CDP client's page:\n{tabs}");
}

#[test]
fn forged_requests_never_reach_the_browser() {
    let (session, port) = started("cdp-forged");
    let rebinding = request(port, "/json/version", &format!("attacker.example:{port}"), "");
    assert!(rebinding.starts_with("HTTP/1.1 403"), "{rebinding}");
    assert!(!rebinding.contains("webSocketDebuggerUrl"), "{rebinding}");
    let page_socket = request(
        port,
        "/devtools/browser",
        &format!("127.0.0.1:{port}"),
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: https://attacker.example\r\n",
    );
    assert!(page_socket.starts_with("HTTP/1.1 403"), "a web page's WebSocket: {page_socket}");
    let version = request(port, "/json/version", &format!("localhost:{port}"), "");
    assert!(version.starts_with("HTTP/1.1 200"), "{version}");
    // Chromium itself listens on loopback only (127.0.0.1 is 0100007F in /proc/net/tcp).
    let chromium_listens: Vec<_> = listening_sockets()
        .into_iter()
        .filter(|(_, inode)| session.browser_pids().iter().any(|&pid| socket_inodes(pid).contains(inode)))
        .map(|(local, _)| local)
        .collect();
    assert!(!chromium_listens.is_empty(), "the browser has a DevTools listener");
    for local in &chromium_listens {
        assert!(local.starts_with("0100007F:"), "Chromium listens on {local}");
    }
}
