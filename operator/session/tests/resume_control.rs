//! `POST /resume` against the real playwright-cli and Debian's chromium: a
//! running session captures its state through `POST /suspend`, loses its
//! tabs, its form value and its cookie, and gets them back from the same
//! document sent as the body, the answer saying how many tabs came back and
//! which did not (by a fixed reason). The refusals come before any reopen
//! and quote nothing of the request; a reopen and a second request never
//! run at once. Loopback only. Needs `tests/session/setup.sh` (see
//! `support::SETUP`).

// Test set-up: a failed step should panic with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use playpen_api::suspend::{SuspendedState, Tab, MAX_DOCUMENT_BYTES};
use support::*;

const FORM: &str = r#"<html><head><title>Form</title></head><body><input id="q"></body></html>"#;
const OTHER: &str = r#"<html><head><title>Other</title></head><body><p>other</p></body></html>"#;
const TOKEN: &str = "t0ken-for-the-operator-only";
const VALUE: &str = "typed before the suspend";
const COOKIE: &str = "c00kie-value-of-the-login";
const IN_URL: &str = "t0ken-in-a-query";

/// The status code, the head and the body of the answer on `s`.
fn answer_of(mut s: TcpStream) -> (u16, String, Vec<u8>) {
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut answer = vec![];
    s.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head") + 4;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
    (code, head, answer[split..].to_vec())
}

/// A connection that sent the head of a `POST {path}` (with `length` as its
/// Content-Length, if any) and nothing of its body yet.
fn send_head(port: u16, path: &str, bearer: Option<&str>, length: Option<usize>) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = bearer.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let length = length.map(|n| format!("Content-Length: {n}\r\n")).unwrap_or_default();
    write!(s, "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}{length}\r\n").unwrap();
    s
}

/// One whole `POST {path}` with `body`.
fn post(port: u16, path: &str, bearer: Option<&str>, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = send_head(port, path, bearer, Some(body.len()));
    s.write_all(body).unwrap();
    answer_of(s)
}

/// The session's cookies as the browser holds them (name=value lines).
fn cookies(session: &Session) -> String {
    session.cli_ok(&[
        "--raw",
        "run-code",
        "async (page) => JSON.stringify((await page.context().cookies()).map(c => c.name + '=' + c.value))",
    ])
}

#[test]
fn resume_reopens_a_posted_document_in_the_running_browser_and_refuses_before_reading() {
    let pages = Fixture::with_pages(FORM, OTHER);
    let mut session = Session::new("rs-ctl", None);
    let token_file = session.path("control-token").display().to_string();
    session.start_with_env = Some(("PLAYPEN_CONTROL_TOKEN".into(), token_file));
    session.start();
    session.wait_ready(Duration::from_secs(90));
    let port = session.readiness_port;
    session.cli_ok(&["goto", &pages.url("/")]);
    let fill = format!(
        "async (page) => {{ await page.fill('#q', '{VALUE}'); await page.context().addCookies([{{ name: 'sid', value: \
         '{COOKIE}', url: '{}', httpOnly: true }}]); return 1; }}",
        pages.url("/")
    );
    session.cli_ok(&["run-code", &fill]);
    session.cli_ok(&["tab-new", &pages.url("/next.html")]);

    // No token file: resume is not offered.
    let (code, _, _) = post(port, "/resume", Some(TOKEN), b"{}");
    assert_eq!(code, 404);
    std::fs::write(session.path("control-token"), format!("{TOKEN}\n")).unwrap();
    let (code, _, doc_bytes) = post(port, "/suspend", Some(TOKEN), b"");
    assert_eq!(code, 200, "{}", session.log());
    let mut doc: SuspendedState = serde_json::from_slice(&doc_bytes).unwrap();
    assert_eq!(doc.tabs.len(), 2);

    // The browser loses its second tab, its value and its cookie.
    session.cli_ok(&["tab-close", "1"]);
    session.cli_ok(&["goto", "about:blank"]);
    session.cli_ok(&["run-code", "async (page) => { await page.context().clearCookies(); return 1; }"]);
    assert_eq!(session.cli_ok(&["tab-list"]).lines().filter(|l| l.starts_with("- ")).count(), 1);
    assert!(!cookies(&session).contains(COOKIE));

    // Refusals, each before the body is read and before any reopen.
    assert_eq!(post(port, "/resume", None, &doc_bytes).0, 401, "no token");
    let (code, _, body) = post(port, "/resume", Some("not-the-token"), &doc_bytes);
    assert_eq!((code, body.len()), (401, 0), "a wrong token learns nothing");
    let (code, _, body) = answer_of(send_head(port, "/resume", Some(TOKEN), Some(MAX_DOCUMENT_BYTES + 1)));
    assert_eq!(code, 413, "refused unread: {}", String::from_utf8_lossy(&body));
    assert_eq!(answer_of(send_head(port, "/resume", Some(TOKEN), None)).0, 411, "no Content-Length");
    let garbage = format!(r#"{{"format":1,"capturedAtMs":"{COOKIE}","tabs":[{{"url":"#);
    let (code, head, body) = post(port, "/resume", Some(TOKEN), garbage.as_bytes());
    let said = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(code, 400, "{head}{said}");
    assert!(said.contains("not a suspended-state document") && !said.contains(COOKIE), "{said}");
    let (code, _, body) = post(port, "/resume", Some(TOKEN), b"[1,2,3]");
    assert!(code == 400 && !String::from_utf8_lossy(&body).contains("1,2,3"));

    // A third tab that cannot load: reported by index and a fixed reason.
    let closed = free_port();
    doc.tabs.push(Tab {
        url: format!("http://127.0.0.1:{closed}/?sid={IN_URL}"),
        scroll_x: 0.0,
        scroll_y: 0.0,
        fields: vec![],
    });
    let body = doc.to_bytes();

    // The reopen holds the lock from its head on: a second request is
    // refused while its body has not even arrived.
    let mut first = send_head(port, "/resume", Some(TOKEN), Some(body.len()));
    // Its head reaches the runtime first (a second request that held the
    // lock just then would have the first refused).
    std::thread::sleep(Duration::from_millis(200));
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let (code, _, _) = post(port, "/resume", Some(TOKEN), b"not json");
        if code == 409 {
            break;
        }
        assert_eq!(code, 400, "before the first head is seen, garbage is only garbage");
        assert!(Instant::now() < deadline, "the first request never held the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(post(port, "/suspend", Some(TOKEN), b"").0, 409, "nor a capture meanwhile");
    let sent = Instant::now();
    first.write_all(&body).unwrap();
    let (code, head, answer) = answer_of(first);
    let wall = sent.elapsed();
    assert_eq!(code, 200, "{head}{}\n{}", String::from_utf8_lossy(&answer), session.log());
    assert!(head.contains("Content-Type: application/json\r\n") && head.contains("Cache-Control: no-store\r\n"));
    let outcome: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(outcome["tabs"], 2, "{outcome}");
    assert_eq!(outcome["failed"], serde_json::json!([{ "index": 2, "reason": "net::ERR_CONNECTION_REFUSED" }]));
    let took = outcome["tookMs"].as_u64().unwrap();
    eprintln!("resume of 2 tabs (+1 refused): tookMs {took}, wall {} ms", wall.as_millis());
    let said = String::from_utf8_lossy(&answer);
    assert!(!said.contains(IN_URL) && !said.contains("127.0.0.1"), "no URL: {said}");

    // The tabs, the value and the cookie are back.
    let tabs = session.cli_ok(&["tab-list"]);
    let lines: Vec<&str> = tabs.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), 3, "{tabs}");
    assert!(lines[0].contains(&pages.url("/")) && lines[1].contains("/next.html"), "{tabs}");
    let value = session.cli_ok(&[
        "--raw",
        "run-code",
        "async (page) => JSON.stringify(await page.context().pages()[0].evaluate(() => document.querySelector('#q').value))",
    ]);
    assert!(value.contains(VALUE), "the field came back: {value}");
    assert!(cookies(&session).contains(&format!("sid={COOKIE}")), "the cookie came back");

    // The lock is free again, and nothing secret reached the log.
    assert_eq!(post(port, "/resume", Some(TOKEN), b"not json").0, 400);
    let log = session.log();
    assert!(log.contains("resume: the operator's document is reopened"), "{log}");
    for secret in [TOKEN, VALUE, COOKIE] {
        assert!(!log.contains(secret), "{secret} is not logged:\n{log}");
    }
    session.cleanup();
}
