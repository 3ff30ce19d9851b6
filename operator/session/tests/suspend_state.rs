//! `playpen-session suspend-state` / `resume-state` (the State path of
//! suspend and resume) against the real playwright-cli 0.1.22 and Debian's
//! chromium: two browsers, a capture in the first, a reopen in a fresh
//! second. Fixture pages are served on loopback only. Needs
//! `tests/session/setup.sh` (see `support::SETUP`).

// Test set-up: a failed step should panic with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use playpen_api::suspend::{check, FieldKey, FieldValue, SuspendedState, MAX_DOCUMENT_BYTES};
use serde_json::Value;
use support::*;

const FORM: &str = r#"<html><head><title>Form</title></head><body>
<script>window.inputEvents = 0; document.addEventListener('input', () => window.inputEvents++, true);</script>
<input id="email" type="email"><textarea name="notes"></textarea>
<select id="color"><option value="red">Red</option><option value="green">Green</option><option value="blue">Blue</option></select>
<input id="pw" type="password"><input type="checkbox" name="agree">
<input type="radio" name="size" value="s"><input type="radio" name="size" value="l">
</body></html>"#;
const LONG: &str =
    r#"<html><head><title>Long</title></head><body><div style="height:6000px;width:10px">tall</div></body></html>"#;
const OTHER: &str = r#"<html><head><title>Other</title></head><body><input name="q"></body></html>"#;
/// Thousands of fields, megabyte values and a long textarea.
const HOSTILE: &str = r#"<html><head><title>Hostile</title></head><body><script>
const big = 'M'.repeat(1 << 20);
const box = document.createElement('div'); box.style.display = 'none'; document.body.appendChild(box);
for (let i = 0; i < 3000; i++) {
  const e = document.createElement('input');
  e.id = 'f' + i;
  e.value = i % 50 === 0 ? big : 'x'.repeat(4000);
  box.appendChild(e);
}
const t = document.createElement('textarea'); t.id = 'huge'; t.value = big + big; document.body.prepend(t);
</script></body></html>"#;

/// A loopback server for the pages above; `/form.html` sets a cookie.
fn serve_pages() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer(conn));
        }
    });
    port
}

fn answer(mut conn: TcpStream) {
    let Some(path) = request_path(&conn) else { return };
    let (body, cookie) = match path.as_str() {
        "/form.html" => (FORM, "Set-Cookie: sid=s3ssion-cookie; Path=/\r\n"),
        "/long.html" => (LONG, ""),
        "/other.html" => (OTHER, ""),
        "/hostile.html" => (HOSTILE, ""),
        _ => ("not found", ""),
    };
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{cookie}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn started(name: &str) -> Session {
    let mut session = Session::new(name, None);
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session
}

fn runtime(session: &Session, verb: &str, flag: &str, file: &Path) -> Output {
    session.runtime_command(verb).arg(flag).arg(file).output().unwrap()
}

fn ok(out: &Output, what: &str) -> (String, String) {
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    (stdout, stderr)
}

/// `run-code` through the CLI; the JSON it returned.
fn run_code(session: &Session, code: &str) -> Value {
    let out = session.cli_ok(&["--raw", "run-code", code]);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

const READ_BACK: &str = r#"async (page) => Promise.all(page.context().pages().map((p) => p.evaluate(() => {
  const v = (sel) => { const e = document.querySelector(sel); return e ? e.value : null; };
  const c = (sel) => { const e = document.querySelector(sel); return e ? e.checked : null; };
  return { url: location.href, scrollY: window.scrollY, email: v('#email'), notes: v('[name=notes]'),
    color: v('#color'), pw: v('#pw'), agree: c('[name=agree]'), large: c('[name=size][value=l]'), q: v('[name=q]'),
    inputEvents: window.inputEvents || 0, theme: localStorage.getItem('theme') };
})))"#;

#[test]
fn tabs_values_scroll_and_storage_come_back_in_a_fresh_browser() {
    let port = serve_pages();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    let source = started("src");
    let target = started("dst");

    source.cli_ok(&["goto", &url("/form.html")]);
    source.cli_ok(&["localstorage-set", "theme", "dark"]);
    run_code(
        &source,
        "async (page) => { await page.fill('#email', 'a@b.example'); await page.fill('[name=notes]', 'line 1\\nline 2'); \
         await page.selectOption('#color', 'blue'); await page.fill('#pw', 'hunter2-secret'); \
         await page.check('[name=agree]'); await page.check('[name=size][value=l]'); return 1; }",
    );
    source.cli_ok(&["tab-new", &url("/long.html")]);
    run_code(&source, "async (page) => { await page.evaluate(() => window.scrollTo(0, 1234)); return 1; }");
    source.cli_ok(&["tab-new", &url("/other.html")]);
    run_code(&source, "async (page) => { await page.fill('[name=q]', 'needle'); return 1; }");
    source.cli_ok(&["tab-select", "1"]);

    let file = source.path("suspended.json");
    let (stdout, stderr) = ok(&runtime(&source, "suspend-state", "--out", &file), "suspend-state");
    eprintln!("{stdout}{stderr}");
    assert!(stdout.starts_with("suspended 3 tabs, 1 cookies, 1 localStorage origins"), "{stdout}");
    assert!(!stderr.contains("hunter2") && !stderr.contains("s3ssion"), "nothing secret is printed: {stderr}");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let leftovers: Vec<_> = std::fs::read_dir(source.namespace_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("suspend-"))
        .collect();
    assert!(leftovers.is_empty(), "the private directory is removed: {leftovers:?}");
    let bytes = std::fs::read(&file).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("hunter2"), "passwords are never captured");
    let doc: SuspendedState = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(check(&doc), Ok(()));
    assert_eq!(doc.active, 1);
    assert_eq!(
        doc.tabs.iter().map(|t| t.url.as_str()).collect::<Vec<_>>(),
        [url("/form.html"), url("/long.html"), url("/other.html")]
    );
    assert_eq!(doc.tabs[1].scroll_y, 1234.0);
    let email = doc.tabs[0].fields.iter().find(|f| f.key == FieldKey::Id { id: "email".into() }).unwrap();
    assert_eq!(email.value, FieldValue::Input { value: "a@b.example".into() });

    let (stdout, stderr) = ok(&runtime(&target, "resume-state", "--from", &file), "resume-state");
    eprintln!("{stdout}{stderr}");
    assert!(stdout.contains("tab 0: loaded, 6 fields restored, 0 not found"), "{stdout}");
    assert!(stdout.contains("resumed 3 tabs (3 loaded)"), "{stdout}");

    let tabs = target.cli_ok(&["tab-list"]);
    let lines: Vec<&str> = tabs.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), 3, "{tabs}");
    assert!(lines[1].contains("(current)") && lines[1].contains("/long.html"), "the active tab is current: {tabs}");
    let pages = run_code(&target, READ_BACK);
    let page = |i: usize| &pages[i];
    assert_eq!(page(0)["url"], url("/form.html"));
    assert_eq!(page(0)["email"], "a@b.example");
    assert_eq!(page(0)["notes"], "line 1\nline 2");
    assert_eq!(page(0)["color"], "blue");
    assert_eq!(page(0)["pw"], "", "the password is not restored");
    assert_eq!((page(0)["agree"].clone(), page(0)["large"].clone()), (Value::Bool(true), Value::Bool(true)));
    assert!(page(0)["inputEvents"].as_u64().unwrap() >= 5, "input events reached the page: {}", page(0));
    assert_eq!(page(0)["theme"], "dark", "localStorage came back");
    assert_eq!(page(1)["scrollY"], 1234);
    assert_eq!(page(2)["q"], "needle");
    let cookies = target.cli_ok(&["cookie-list"]);
    assert!(cookies.contains("sid") && cookies.contains("s3ssion-cookie"), "{cookies}");
}

#[test]
fn a_hostile_page_stays_within_bounds_and_a_hostile_document_is_refused_tab_by_tab() {
    let port = serve_pages();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    let source = started("hsrc");
    source.cli_ok(&["goto", &url("/hostile.html")]);
    source.cli_ok(&["tab-new", &url("/other.html")]);
    run_code(&source, "async (page) => { await page.fill('[name=q]', 'kept'); return 1; }");

    let file = source.path("hostile.json");
    let (stdout, stderr) = ok(&runtime(&source, "suspend-state", "--out", &file), "suspend-state of a hostile page");
    eprintln!("{stdout}{stderr}");
    assert!(stdout.starts_with("suspended 2 tabs"), "{stdout}");
    assert!(stderr.contains("form fields left out: longer than 16384 bytes"), "{stderr}");
    assert!(stderr.contains("form fields left out: beyond the first 200"), "{stderr}");
    assert!(!stderr.contains("MMMM") && !stderr.contains("xxxx"), "no value is printed");
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.len() <= MAX_DOCUMENT_BYTES, "{} bytes", bytes.len());
    let doc: SuspendedState = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(check(&doc), Ok(()));
    assert_eq!(doc.tabs[1].fields.len(), 1, "the other tab's field survived the hostile one");

    // A hand-edited document: unsafe URLs are refused with their reason, a
    // tab that cannot load is reported, and the rest reopens.
    let mut value: Value = serde_json::from_slice(&bytes).unwrap();
    let closed = free_port();
    let tabs = value["tabs"].as_array_mut().unwrap();
    tabs.truncate(1);
    tabs[0]["fields"] = serde_json::json!([]);
    for bad in ["javascript:alert(document.cookie)", "file:///etc/passwd", "chrome://settings"] {
        tabs.push(serde_json::json!({"url": bad, "scrollX": 0, "scrollY": 0, "fields": []}));
    }
    tabs.push(
        serde_json::json!({"url": format!("http://127.0.0.1:{closed}/"), "scrollX": 0, "scrollY": 0, "fields": []}),
    );
    tabs.push(serde_json::json!({"url": url("/other.html"), "scrollX": 0, "scrollY": 0,
        "fields": [{"key": {"by": "name", "name": "q", "index": 0}, "value": {"kind": "input", "value": "again"}}]}));
    value["active"] = 5.into();
    drop(source);

    let target = started("hdst");
    let edited = target.path("edited.json");
    std::fs::write(&edited, value.to_string()).unwrap();
    let (stdout, stderr) =
        ok(&runtime(&target, "resume-state", "--from", &edited), "resume-state of an edited document");
    eprintln!("{stdout}{stderr}");
    assert!(stderr.contains("tab 1 left out: javascript: URLs are not reopened"), "{stderr}");
    assert!(stderr.contains("tab 2 left out: file: URLs are not reopened"), "{stderr}");
    assert!(stderr.contains("tab 3 left out: chrome: URLs are not reopened"), "{stderr}");
    assert!(stdout.contains("tab 1: did not load"), "{stdout}");
    assert!(stdout.contains("tab 2: loaded, 1 fields restored"), "{stdout}");
    assert!(stdout.contains("resumed 3 tabs (2 loaded)"), "{stdout}");
    let tabs = target.cli_ok(&["tab-list"]);
    assert!(tabs.lines().any(|l| l.starts_with("- 2: (current)") && l.contains("/other.html")), "{tabs}");

    let oversized = target.path("oversized.json");
    std::fs::write(&oversized, vec![b' '; MAX_DOCUMENT_BYTES + 1]).unwrap();
    let out = runtime(&target, "resume-state", "--from", &oversized);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("over the 524288 a document may take"));
}

#[test]
fn without_an_open_browser_suspend_says_so() {
    let session = Session::new("none", None);
    let out = runtime(&session, "suspend-state", "--out", &session.path("x.json"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no daemon of session 'none' is registered"), "{stderr}");
    assert!(!session.path("x.json").exists());
}
