//! Host-name egress (issue 36) with the real playwright-cli and Debian's
//! chromium: with `egressHosts` in runtime.json the browser goes through the
//! runtime's proxy, which lets an allowed host load and refuses the rest (a
//! page's `fetch()`, a redirect from an allowed host), logs each attempt in
//! `recordings/egress.jsonl`, and applies a rule change to the running
//! browser. Without host rules nothing changes: no proxy, no proxy switch.
//! Traffic goes to loopback only: the fixtures are `localhost` on two ports,
//! and the test's floor leaves loopback open (the floor is an input;
//! the operator's always holds 127.0.0.0/8). Needs `tests/session/setup.sh`.

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

/// A loopback server: `/` a page, `/redirect` a 302 to `redirect_to`, the
/// rest 404; records every requested path.
struct Host {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Host {
    fn start(redirect_to: Option<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (log, redirect_to) = (log.clone(), redirect_to.clone());
                std::thread::spawn(move || {
                    let Some(path) = request_path(&conn) else { return };
                    log.lock().unwrap().push(path.clone());
                    let body = format!("<html><head><title>port {port}</title></head><body>hello</body></html>");
                    let (status, extra) = match (path.as_str(), &redirect_to) {
                        ("/", _) => ("200 OK", String::new()),
                        ("/redirect", Some(to)) => ("302 Found", format!("Location: {to}\r\n")),
                        _ => ("404 Not Found", String::new()),
                    };
                    let mut conn = conn;
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {status}\r\n{extra}Content-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        Self { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.port)
    }

    fn saw(&self, path: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|p| p == path)
    }
}

fn egress_log(session: &Session) -> Vec<Value> {
    let text = std::fs::read_to_string(session.path("snapshots/recordings/egress.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The log's entries for `port`, as (verdict, rule).
fn decided(session: &Session, port: u16) -> Vec<(String, String)> {
    egress_log(session)
        .iter()
        .filter(|r| r["port"] == port)
        .map(|r| (r["verdict"].as_str().unwrap().to_owned(), r["rule"].as_str().unwrap().to_owned()))
        .collect()
}

fn rules(allow: &[String], deny: &[String]) -> Value {
    json!({"mode": "AllowListOnly", "allowHosts": allow, "denyHosts": deny, "deniedCIDRs": ["10.0.0.0/8", "169.254.0.0/16"]})
}

/// The `--proxy-server` switch the browser `pid` was launched with.
fn proxy_switch(session: &Session, pid: u32) -> String {
    let cmdline = session.processes().into_iter().find(|p| p.pid == pid).unwrap().cmdline;
    cmdline.split(['\0', ' ']).find(|arg| arg.starts_with("--proxy-server=")).unwrap_or_default().to_owned()
}

/// What `fetch(url)` from the page gives: `status <n>` or `failed`.
fn page_fetch(session: &Session, url: &str) -> String {
    let code = format!(
        "async page => await page.evaluate(async () => {{ try {{ const r = await fetch('{url}'); return 'status ' + r.status; }} catch (e) {{ return 'failed'; }} }})"
    );
    let out = session.cli(&["run-code", &code]);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_page_reaches_allowed_hosts_only_and_a_rule_change_applies_without_a_restart() {
    let other = Host::start(None);
    let allowed = Host::start(Some(other.url("/landing")));
    let (a, b) = (allowed.port, other.port);
    let mut session = Session::new("egress", None);
    session.set_runtime_field("egressHosts", rules(&[format!("localhost:{a}")], &[]));
    session.start();
    session.wait_ready(Duration::from_secs(90));

    // An allowed host loads, through the proxy (localhost is not bypassed).
    session.cli_ok(&["goto", &allowed.url("/")]);
    assert!(allowed.saw("/"), "{}", session.log());
    assert!(decided(&session, a).contains(&("allowed".into(), "allowHosts[0]".into())), "{:?}", egress_log(&session));
    let browsers = session.browser_pids();
    assert_eq!(browsers.len(), 1, "{}", session.log());
    let proxy = proxy_switch(&session, browsers[0]);
    assert!(proxy.starts_with("--proxy-server=http://127.0.0.1:"), "{proxy}");
    let cmdline = session.processes().into_iter().find(|p| p.pid == browsers[0]).unwrap().cmdline;
    assert!(cmdline.contains("--proxy-bypass-list=<-loopback>"), "{cmdline}");

    // A page's fetch() of a refused host never reaches it.
    let fetched = page_fetch(&session, &other.url("/fetched"));
    assert!(fetched.contains("\"failed\"") && !fetched.contains("status 200"), "{fetched}");
    eprintln!("fetch() of the refused host gave: {}", fetched.replace('\n', " "));
    assert!(!other.saw("/fetched"), "the refused host was reached");
    assert!(
        decided(&session, b).contains(&("refused".into(), "mode AllowListOnly".into())),
        "{:?}",
        egress_log(&session)
    );

    // Nor does an <img>; `--raw eval` prints the result alone (the node e2e reads it so).
    let image = session.cli(&[
        "--raw",
        "eval",
        &format!(
            "() => new Promise((done) => {{ const i = new Image(); i.onload = () => done('loaded'); \
             i.onerror = () => done('refused'); i.src = '{}'; }})",
            other.url("/img")
        ),
    ]);
    let said = String::from_utf8_lossy(&image.stdout).into_owned();
    assert!(said.contains("refused") && !said.contains("loaded"), "{said}");
    assert!(!other.saw("/img"), "the refused host was reached by an <img>");

    // A navigation to it shows the proxy's refusal (plain HTTP: a 403 page).
    let _ = session.cli(&["goto", &other.url("/navigated")]);
    let shown = session.cli(&["--raw", "eval", "() => document.body ? document.body.innerText : ''"]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.contains("refused (mode AllowListOnly)"), "{shown}");
    assert!(!other.saw("/navigated"));

    // A redirect from an allowed host to a refused one is refused at its hop.
    let _ = session.cli(&["goto", &allowed.url("/redirect")]);
    assert!(allowed.saw("/redirect"));
    assert!(!other.saw("/landing"), "the redirect reached the refused host");
    let refused_b = decided(&session, b).iter().filter(|(verdict, _)| verdict == "refused").count();
    assert!(refused_b >= 4, "the fetch, <img>, navigation and redirect are all logged: {:?}", egress_log(&session));

    // A WebRTC offer with a STUN server sends it no UDP (the proxy cannot
    // see UDP). Without the switch Chromium 156 reads, it sent four datagrams.
    let stun = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    stun.set_nonblocking(true).expect("nonblocking");
    let stun_port = stun.local_addr().expect("addr").port();
    let offer = session.cli(&[
        "--raw",
        "eval",
        &format!(
            "async () => {{ const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{stun_port}'}}]}}); \
             const seen = []; pc.onicecandidate = (e) => {{ if (e.candidate) seen.push(e.candidate.candidate); }}; \
             pc.createDataChannel('probe'); await pc.setLocalDescription(await pc.createOffer()); \
             await new Promise((done) => {{ const t = setTimeout(done, 3000); \
               pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') {{ clearTimeout(t); done(); }} }}; }}); \
             pc.close(); return 'candidates ' + JSON.stringify(seen); }}"
        ),
    ]);
    let offered = String::from_utf8_lossy(&offer.stdout).into_owned();
    assert!(offered.contains("candidates"), "the offer did not run: {offered}");
    std::thread::sleep(Duration::from_millis(500));
    let mut datagram = [0u8; 512];
    let sent = stun.recv_from(&mut datagram);
    assert!(sent.is_err(), "the browser sent UDP to the STUN server: {sent:?} ({offered})");

    // The rules change in runtime.json: the same browser now reaches the other
    // host and is refused the first one, by a deny that wins over its allow.
    let daemon = session.daemon_pid();
    session.set_runtime_field(
        "egressHosts",
        rules(&[format!("localhost:{a}"), format!("localhost:{b}")], &[format!("localhost:{a}")]),
    );
    wait_until("the new rules", Duration::from_secs(20), || {
        let _ = session.cli(&["goto", &other.url("/")]);
        other.saw("/")
    });
    assert!(decided(&session, b).contains(&("allowed".into(), "allowHosts[1]".into())));
    let _ = session.cli(&["goto", &format!("http://localhost:{a}/again")]);
    assert!(!allowed.saw("/again"), "the denied host was reached");
    assert!(decided(&session, a).contains(&("refused".into(), "denyHosts[0]".into())), "{:?}", egress_log(&session));
    assert_eq!(session.browser_pids(), browsers, "the browser was not restarted");
    assert_eq!(session.daemon_pid(), daemon);

    // A browser restarted in place is launched through the same listener:
    // the port was picked once, at start.
    sigkill(browsers[0]);
    wait_until("a new daemon", Duration::from_secs(30), || session.daemon_pid().is_some_and(|p| Some(p) != daemon));
    session.wait_ready(Duration::from_secs(60));
    session.cli_ok(&["goto", &other.url("/after-restart")]);
    assert!(other.saw("/after-restart"), "{}", session.log());
    let restarted = session.browser_pids();
    assert_eq!(restarted.len(), 1, "{:#?}", session.processes());
    assert_ne!(restarted, browsers);
    assert_eq!(proxy_switch(&session, restarted[0]), proxy, "the restarted browser has another proxy");

    for record in egress_log(&session) {
        for field in ["at", "host", "port", "verdict", "rule", "sent", "received", "ms"] {
            assert!(!record[field].is_null(), "{field} missing in {record}");
        }
        // Chromium's own background requests (its updater) meet the rules
        // too: refused, and not even resolved.
        if record["host"] != "localhost" {
            assert_eq!((&record["verdict"], &record["address"]), (&json!("refused"), &Value::Null), "{record}");
        }
    }
    let status = session.terminate(Duration::from_secs(40));
    assert!(status.success(), "{status:?}\n{}", session.log());
}

#[test]
fn without_host_rules_the_browser_is_launched_as_before() {
    let host = Host::start(None);
    let mut session = Session::new("direct", None);
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session.cli_ok(&["goto", &host.url("/")]);
    assert!(host.saw("/"));
    let browsers = session.browser_pids();
    assert_eq!(browsers.len(), 1);
    let cmdline = session.processes().into_iter().find(|p| p.pid == browsers[0]).unwrap().cmdline;
    assert!(!cmdline.contains("--proxy-server"), "{cmdline}");
    assert!(!session.log().contains("host rules apply"), "no proxy runs:\n{}", session.log());
    assert!(!session.path("snapshots/recordings/egress.jsonl").exists());
    let status = session.terminate(Duration::from_secs(40));
    assert!(status.success(), "{status:?}\n{}", session.log());
}

#[test]
fn host_rules_added_to_a_browser_launched_without_them_restart_the_container() {
    let mut session = Session::new("added", None);
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session.set_runtime_field("egressHosts", rules(&[], &["ads.test".to_owned()]));
    let status = session.wait_exit(Duration::from_secs(40));
    assert_eq!(status.code(), Some(1), "{}", session.log());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(session.path("termination-log")).unwrap()).unwrap();
    assert_eq!(report["reason"], "HostRulesAdded", "{report}");
}
