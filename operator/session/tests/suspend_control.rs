//! The runtime's two ends of the suspend contract, against the real
//! playwright-cli and Debian's chromium: `POST /suspend` on the readiness
//! port (token, refusals, one capture at a time, the document) and a second
//! runtime started with `resumeStateFile`, Ready only once the tabs are
//! back; a garbled file still lets a session start. Loopback only. Needs
//! `tests/session/setup.sh` (see `support::SETUP`).

// Test set-up: a failed step should panic with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use playpen_api::suspend::{check, SuspendedState};
use support::*;

const FORM: &str = r#"<html><head><title>Form</title></head><body><input id="q"></body></html>"#;
const OTHER: &str = r#"<html><head><title>Other</title></head><body><p>other</p></body></html>"#;
const TOKEN: &str = "t0ken-for-the-operator-only";

/// One `POST /suspend`; the status code, the head and the body.
fn post_suspend(port: u16, authorization: Option<&str>) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let auth = authorization.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
    write!(s, "POST /suspend HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Length: 2\r\n\r\n{{}}").unwrap();
    let mut answer = vec![];
    s.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head") + 4;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
    (code, head, answer[split..].to_vec())
}

/// A session whose control token is read from `<tmp>/control-token`.
fn session(name: &str) -> Session {
    let mut session = Session::new(name, None);
    let token = session.path("control-token").display().to_string();
    session.start_with_env = Some(("PLAYPEN_CONTROL_TOKEN".into(), token));
    session
}

/// Polls the readiness endpoint as the kubelet does; returns once it passes.
fn first_pass(session: &Session, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !session.probe_ok() {
        assert!(Instant::now() < deadline, "not ready after {timeout:?}; runtime log:\n{}", session.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn suspend_answers_only_the_token_one_at_a_time_and_a_resumed_runtime_is_ready_with_its_tabs() {
    let pages = Fixture::with_pages(FORM, OTHER);
    let mut source = session("ctl-src");
    source.start();
    source.wait_ready(Duration::from_secs(90));
    source.cli_ok(&["goto", &pages.url("/")]);
    source.cli_ok(&["run-code", "async (page) => { await page.fill('#q', 'kept across the suspend'); return 1; }"]);
    source.cli_ok(&["tab-new", &pages.url("/next.html")]);
    let port = source.readiness_port;

    // No token file: suspend is not offered at all.
    assert_eq!(post_suspend(port, Some(&format!("Bearer {TOKEN}"))).0, 404);
    std::fs::write(source.path("control-token"), format!("{TOKEN}\n")).unwrap();
    assert_eq!(post_suspend(port, None).0, 401, "no Authorization header");
    let (code, _, body) = post_suspend(port, Some("Bearer not-the-token"));
    assert_eq!((code, body.len()), (401, 0), "a wrong token learns nothing");

    let (code, head, body) = post_suspend(port, Some(&format!("Bearer {TOKEN}")));
    assert_eq!(code, 200, "{head}\n{}", source.log());
    assert!(head.contains("Content-Type: application/json\r\n") && head.contains("Cache-Control: no-store\r\n"));
    let doc: SuspendedState = serde_json::from_slice(&body).unwrap();
    assert_eq!(check(&doc), Ok(()));
    let urls: Vec<&str> = doc.tabs.iter().map(|t| t.url.as_str()).collect();
    assert_eq!(urls, [pages.url("/"), pages.url("/next.html")]);
    let log = source.log();
    assert!(!log.contains(TOKEN) && !log.contains("kept across"), "neither the token nor a value is logged");

    // Two at once: the second arrives while the first captures and is refused.
    let bearer = format!("Bearer {TOKEN}");
    let first = {
        let bearer = bearer.clone();
        std::thread::spawn(move || post_suspend(port, Some(&bearer)).0)
    };
    std::thread::sleep(Duration::from_millis(15));
    let second = post_suspend(port, Some(&bearer)).0;
    let mut codes = [first.join().unwrap(), second];
    codes.sort_unstable();
    assert_eq!(codes, [200, 409], "one capture at a time:\n{}", source.log());

    // A second runtime resumes the document: Ready means the tabs are back.
    let resume_file = source.path("resumed.json");
    std::fs::write(&resume_file, &body).unwrap();
    let mut target = session("ctl-dst");
    target.set_runtime_field("resumeStateFile", resume_file.display().to_string().into());
    target.start();
    first_pass(&target, Duration::from_secs(120));
    let tabs = target.cli_ok(&["tab-list"]);
    let lines: Vec<&str> = tabs.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), 2, "both tabs are back when the probe first passes:\n{tabs}\n{}", target.log());
    assert!(lines[0].contains(&pages.url("/")) && lines[1].contains("/next.html"), "{tabs}");
    let values = target.cli_ok(&[
        "--raw",
        "run-code",
        "async (page) => JSON.stringify(await page.context().pages()[0].evaluate(() => document.querySelector('#q').value))",
    ]);
    assert!(values.contains("kept across the suspend"), "the field came back: {values}");
    let log = target.log();
    assert!(log.contains("resume: the suspended state is reopened"), "{log}");
    assert!(!log.contains("kept across"), "no value is logged");
    target.cleanup();
    source.cleanup();
}

#[test]
fn a_garbled_resume_file_is_skipped_and_the_session_starts() {
    let mut session = session("ctl-bad");
    let file = session.path("garbled.json");
    std::fs::write(&file, b"{\"format\": \"s3ssion-cookie\", \"tabs\": [").unwrap();
    session.set_runtime_field("resumeStateFile", file.display().to_string().into());
    session.start();
    first_pass(&session, Duration::from_secs(90));
    let log = session.log();
    assert!(log.contains("the suspended state is not reopened"), "{log}");
    assert!(log.contains("not a suspended-state document"), "the reason is named: {log}");
    assert!(!log.contains("s3ssion-cookie"), "the file's content is not quoted");
    // Nothing held the probe back: a second pass answers at once.
    assert!(session.probe_ok());
}
