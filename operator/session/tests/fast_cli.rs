//! The wrapper's native fast path against the real playwright-cli
//! 0.1.22: a real session (the runtime's daemon, Debian's chromium, a
//! loopback fixture site) driven by the Node client and by the fast client
//! from the same state, with identical stdout, stderr and exit codes. The
//! version-mismatch and protocol cases use a stub daemon socket (a peer that
//! answers like a daemon of another version would); the client side there is
//! the real one. Needs `tests/session/setup.sh` (see `support::SETUP`).

// Test helpers: a failed set-up step should panic with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use playpen_session::cli::fastpath::compat::BUILT_FOR_CORE;
use support::*;

const MAIN_PAGE: &str = r#"<!doctype html><html><head><title>Fixture</title><link rel="icon" href="data:,"></head><body>
<a href="/next.html">Next</a>
<button id="go" onclick="window.n=(window.n||0)+1;document.getElementById('out').textContent='clicked '+window.n">Go</button>
<input id="name" aria-label="Name">
<select id="pick" aria-label="Pick"><option>red</option><option>blue</option></select>
<label><input type="checkbox" id="agree">Agree</label>
<p id="out">idle</p>
</body></html>"#;
const NEXT_PAGE: &str = r#"<!doctype html><html><head><title>Next page</title><link rel="icon" href="data:,"></head><body><p>arrived</p></body></html>"#;

/// Replaces each run of ASCII digits that follows `prefix` (and is followed
/// by `suffix`) with `<n>`.
fn squash_digits(s: &str, prefix: &str, suffix: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..at + prefix.len()]);
        if digits > 0 && after[digits..].starts_with(suffix) {
            out.push_str("<n>");
            rest = &after[digits..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `YYYY-MM-DDTHH-MM-SS-mmmZ` → `<ts>`.
fn squash_timestamps(s: &str) -> String {
    let shape = b"9999-99-99T99-99-99-999Z";
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.len() - i >= shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(p, b)| if *p == b'9' { b.is_ascii_digit() } else { p == b });
        if fits {
            out.extend_from_slice(b"<ts>");
            i += shape.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Only what is unique per invocation by construction: files the daemon
/// names by time (`page-<ts>.yml`, `console-<ts>.log`, `trace-<ms>`), the
/// wrapper's unique bare-snapshot name (`snapshot-<ms>-<pid>.yml`), and the
/// frame number in element refs (`f<N>e3`), which grows with every
/// navigation and so differs between the two runs' set-up `goto`s, and the
/// measured `duration:` of a network request.
fn normalise(s: &str) -> String {
    let s: Vec<String> = s
        .split('\n')
        .map(|line| match line.find("duration:") {
            Some(at) if line[..at].trim().is_empty() => format!("{}duration: <t>", &line[..at]),
            _ => line.to_owned(),
        })
        .collect();
    let s = squash_timestamps(&s.join("\n"));
    let s = squash_digits(&s, "snapshot-", "-");
    let s = squash_digits(&s, "snapshot-<n>-", ".yml");
    let s = squash_digits(&s, "trace-", ".");
    squash_digits(&s, "[ref=f", "e")
}

#[derive(Debug)]
struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    took: Duration,
    /// The fast path's report line: `fast\t<code>`, `node\t<why>` or `fallback\t<why>`.
    route: String,
}

impl Run {
    /// What a caller sees: stdout, stderr and exit code.
    fn seen(&self) -> (&str, &str, Option<i32>) {
        (&self.stdout, &self.stderr, self.code)
    }
}

fn report_line(report: &Path) -> String {
    let text = std::fs::read_to_string(report).unwrap_or_default();
    text.lines().last().unwrap_or_default().to_owned()
}

fn finish(out: Output, took: Duration, report: &Path) -> Run {
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
        took,
        route: report_line(report),
    }
}

fn wrapper(session: &Session, args: &[&str], node_only: bool) -> Run {
    let report = session.path("fast-report");
    let report_s = report.display().to_string();
    let mut env = vec![("PLAYPEN_CLI_FAST_REPORT", report_s.as_str())];
    if node_only {
        env.push(("PLAYPEN_CLI_NODE_ONLY", "1"));
    }
    let t = Instant::now();
    let out = session.wrapper_with(args, &env);
    finish(out, t.elapsed(), &report)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Answered by the fast client.
    Fast,
    /// Handed to the Node client by design (no notice).
    Node,
}

struct Case {
    group: &'static str,
    setup: &'static [&'static [&'static str]],
    args: &'static [&'static str],
    after: &'static [&'static [&'static str]],
    way: Way,
    /// Text (`{u}` expanded) the compared command prints only in the state
    /// the set-up made, e.g. the cookie it set.
    shows: &'static str,
}

impl Case {
    const fn shows(self, shows: &'static str) -> Self {
        Self { shows, ..self }
    }
}

const fn case(group: &'static str, args: &'static [&'static str]) -> Case {
    Case { group, setup: &[], args, after: &[], way: Way::Fast, shows: "" }
}

const fn with(
    group: &'static str,
    setup: &'static [&'static [&'static str]],
    args: &'static [&'static str],
    after: &'static [&'static [&'static str]],
) -> Case {
    Case { group, setup, args, after, way: Way::Fast, shows: "" }
}

const fn node(group: &'static str, args: &'static [&'static str]) -> Case {
    Case { group, setup: &[], args, after: &[], way: Way::Node, shows: "" }
}

/// Every verb group of `playwright-cli --help` that the daemon serves, plus
/// `--json`/`--raw`, errors, and cases that are the Node client's by design.
const CASES: &[Case] = &[
    // Navigation.
    case("navigation", &["goto", "{u}/next.html"]),
    with("navigation", &[&["goto", "{u}/next.html"]], &["go-back"], &[]).shows("- Page URL: {u}/\n"),
    with("navigation", &[&["goto", "{u}/next.html"], &["go-back"]], &["go-forward"], &[])
        .shows("- Page URL: {u}/next.html\n"),
    case("navigation", &["reload"]),
    // Pointer, keyboard and form (Core, Keyboard, Mouse).
    case("pointer", &["click", "#go"]),
    case("pointer", &["click", "#go", "right"]),
    case("pointer", &["click", "#go", "--modifiers=Shift"]),
    case("pointer", &["dblclick", "#go"]),
    case("pointer", &["hover", "#go"]),
    case("pointer", &["drag", "#go", "#name"]),
    case("pointer", &["mousemove", "10", "20"]),
    case("pointer", &["mousedown"]),
    case("pointer", &["mouseup", "left"]),
    case("pointer", &["mousewheel", "0", "100"]),
    case("form", &["fill", "#name", "hello"]),
    case("form", &["fill", "#name", "hello", "--submit"]),
    with("form", &[&["click", "#name"]], &["type", "typed"], &[]),
    case("form", &["select", "#pick", "blue"]),
    case("form", &["check", "#agree"]),
    with("form", &[&["check", "#agree"]], &["uncheck", "#agree"], &[]),
    case("keyboard", &["press", "Tab"]),
    case("keyboard", &["keydown", "Shift"]),
    case("keyboard", &["keyup", "Shift"]),
    // Read.
    case("read", &["snapshot"]),
    case("read", &["snapshot", "#out"]),
    case("read", &["snapshot", "--filename=named.yml"]),
    case("read", &["eval", "document.title"]),
    case("read", &["eval", "el => el.id", "#go"]),
    case("read", &["find", "Next"]),
    case("read", &["screenshot"]),
    case("read", &["screenshot", "#go", "--filename=button.png"]),
    // Tabs.
    case("tabs", &["tab-list"]),
    with("tabs", &[], &["tab-new", "{u}/next.html"], &[&["tab-close", "1"]]),
    with("tabs", &[&["tab-new", "{u}/next.html"]], &["tab-select", "0"], &[&["tab-close", "1"]])
        .shows("- 1: [Next page]({u}/next.html)"),
    with("tabs", &[&["tab-new", "{u}/next.html"]], &["tab-close", "1"], &[]),
    // Storage.
    with("storage", &[&["cookie-clear"]], &["cookie-set", "k", "v"], &[&["cookie-clear"]]),
    with("storage", &[&["cookie-clear"], &["cookie-set", "k", "v"]], &["cookie-list"], &[&["cookie-clear"]])
        .shows("k=v"),
    with("storage", &[&["cookie-clear"], &["cookie-set", "k", "v"]], &["cookie-get", "k"], &[&["cookie-clear"]])
        .shows("k=v"),
    with("storage", &[&["cookie-set", "k", "v"]], &["cookie-delete", "k"], &[]),
    with("storage", &[&["cookie-set", "k", "v"]], &["cookie-clear"], &[]),
    with("storage", &[&["localstorage-clear"]], &["localstorage-set", "k", "v"], &[&["localstorage-clear"]]),
    with("storage", &[&["localstorage-set", "k", "v"]], &["localstorage-get", "k"], &[&["localstorage-clear"]])
        .shows("k=v"),
    with("storage", &[&["localstorage-set", "k", "v"]], &["localstorage-list"], &[&["localstorage-clear"]])
        .shows("k=v"),
    with("storage", &[&["localstorage-set", "k", "v"]], &["localstorage-delete", "k"], &[]),
    with("storage", &[&["sessionstorage-set", "k", "v"]], &["sessionstorage-get", "k"], &[]).shows("k=v"),
    case("storage", &["sessionstorage-list"]),
    case("storage", &["state-save", "state.json"]),
    // Network.
    case("network", &["requests"]),
    case("network", &["request", "1"]),
    with("network", &[], &["route", "**/blocked", "--status=404"], &[&["unroute"]]),
    with("network", &[&["route", "**/blocked"]], &["route-list"], &[&["unroute"]]).shows("**/blocked"),
    with("network", &[&["route", "**/blocked"]], &["unroute", "**/blocked"], &[]).shows("Removed 1 route(s)"),
    with("network", &[], &["network-state-set", "offline"], &[&["network-state-set", "online"]]),
    // DevTools.
    case("devtools", &["console"]),
    case("devtools", &["console", "warning"]),
    case("devtools", &["run-code", "async page => await page.title()"]),
    case("devtools", &["generate-locator", "#go"]),
    with("devtools", &[], &["highlight", "#go"], &[&["highlight", "--hide"]]),
    with("devtools", &[], &["tracing-start"], &[&["tracing-stop"]]),
    with("devtools", &[&["tracing-start"]], &["tracing-stop"], &[]),
    // Emulation.
    with("emulation", &[], &["set-color-scheme", "dark"], &[&["clear-color-scheme"]]),
    with("emulation", &[&["set-color-scheme", "dark"]], &["clear-color-scheme"], &[]),
    with("emulation", &[], &["set-reduced-motion", "reduce"], &[&["clear-reduced-motion"]]),
    with("emulation", &[], &["set-media", "print"], &[&["clear-media"]]),
    case("emulation", &["resize", "800", "600"]),
    // Output modes.
    case("json", &["--json", "tab-list"]),
    case("json", &["--json", "click", "#go"]),
    case("json", &["--raw", "eval", "document.title"]),
    case("json", &["cookie-list", "--domain=127.0.0.1"]),
    // Errors the fast client prints itself.
    case("errors", &["click", "--foo", "x"]),
    case("errors", &["click", "#go", "--foo", "--bar=1"]),
    case("errors", &["click", "a", "b", "c"]),
    case("errors", &["--json", "click", "a", "b", "c"]),
    case("errors", &["--json", "tab-list", "--nope"]),
    case("errors", &["click", "e999"]),
    case("errors", &["run-code"]),
    case("errors", &["-s=nope", "tab-list"]),
    case("errors", &["--json", "--session", "nope", "tab-list"]),
    // The Node client's by design: a daemon `error` reply, help, unknown commands, client-side commands.
    node("errors", &["fill"]),
    node("errors", &["click", "--modifiers"]),
    node("errors", &["nosuch"]),
    node("node", &["click", "--help"]),
    node("node", &["--version"]),
    node("node", &["list"]),
];

fn expand(args: &[&str], base: &str) -> Vec<String> {
    args.iter().map(|a| a.replace("{u}", base)).collect()
}

/// Runs a case's set-up or clean-up `steps` (`what` names which); each must
/// succeed, or the case fails with the step's whole output.
fn steps(session: &Session, base: &str, what: &str, steps: &[&[&str]]) -> Result<(), String> {
    for step in steps {
        let args = expand(step, base);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = wrapper(session, &args, false);
        if run.code != Some(0) || run.stdout.contains("### Error") {
            return Err(format!(
                "{what} step {args:?} failed (exit {:?}):\n--- stdout\n{}\n--- stderr\n{}",
                run.code, run.stdout, run.stderr
            ));
        }
    }
    Ok(())
}

#[test]
fn fast_and_node_clients_agree_on_a_real_session() {
    // A form page and a second page (no favicon request, so no console noise that depends on timing).
    let base = Fixture::with_pages(MAIN_PAGE, NEXT_PAGE).url("");
    let mut session = Session::new("fast", None);
    session.start();
    session.wait_ready(Duration::from_secs(60));

    let mut failures = vec![];
    let mut groups = std::collections::BTreeSet::new();
    let mut fast_times = vec![];
    for case in CASES {
        let args = expand(case.args, &base);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut runs = vec![];
        let mut problems = vec![];
        for (node_only, client) in [(true, "node"), (false, "fast")] {
            let before = format!("set-up (before the {client} run)");
            let prepared = steps(&session, &base, &before, &[&["goto", "{u}/"]])
                .and_then(|()| steps(&session, &base, &before, case.setup));
            problems.extend(prepared.err());
            runs.push(wrapper(&session, &args, node_only));
            problems.extend(steps(&session, &base, &format!("clean-up (after the {client} run)"), case.after).err());
        }
        let (node, fast) = (&runs[0], &runs[1]);
        // The command did what its case names: an error case fails, every other one succeeds.
        let wants_error = case.group == "errors";
        for (client, run) in [("node", node), ("fast", fast)] {
            if (run.code != Some(0) || run.stdout.contains("### Error")) != wants_error {
                let expected = if wants_error { "an error" } else { "success" };
                problems.push(format!(
                    "the {client} run: expected {expected}, got exit {:?}:\n{}{}",
                    run.code, run.stdout, run.stderr
                ));
            }
            let shows = case.shows.replace("{u}", &base);
            if !run.stdout.contains(&shows) {
                problems
                    .push(format!("the {client} run does not show the set-up's state ({shows:?}):\n{}", run.stdout));
            }
        }
        groups.insert(case.group);
        let expected_route = match case.way {
            Way::Fast => "fast\t",
            Way::Node => "node\t",
        };
        if !fast.route.starts_with(expected_route) {
            problems.push(format!("route: expected {expected_route:?}, got {:?}", fast.route));
        }
        if normalise(&node.stdout) != normalise(&fast.stdout) {
            problems.push(format!("stdout differs:\n--- node\n{}\n--- fast\n{}", node.stdout, fast.stdout));
        }
        if node.stderr != fast.stderr {
            problems.push(format!("stderr differs:\n--- node\n{}\n--- fast\n{}", node.stderr, fast.stderr));
        }
        if node.code != fast.code {
            problems.push(format!("exit code: node {:?}, fast {:?}", node.code, fast.code));
        }
        if case.way == Way::Fast {
            fast_times.push(fast.took);
        }
        eprintln!(
            "{:<10} {:<45} exit {:?}  node {:>4} ms  fast {:>4} ms{}",
            case.group,
            format!("{:?}", case.args),
            fast.code,
            node.took.as_millis(),
            fast.took.as_millis(),
            if problems.is_empty() { "" } else { "  MISMATCH" }
        );
        if !problems.is_empty() {
            failures.push(format!("{} {:?}:\n{}", case.group, case.args, problems.join("\n")));
        }
    }
    for group in ["navigation", "pointer", "form", "keyboard", "read", "tabs", "storage", "network", "devtools"] {
        assert!(groups.contains(group), "no case for {group}");
    }
    assert!(groups.contains("emulation"));
    assert!(failures.is_empty(), "{} of {} cases differ:\n\n{}", failures.len(), CASES.len(), failures.join("\n\n"));

    // A bare snapshot through the fast client still lands in the snapshot directory.
    let run = wrapper(&session, &["snapshot"], false);
    let start = run.stdout.find("[Snapshot](").expect("a snapshot link") + "[Snapshot](".len();
    let rel = &run.stdout[start..start + run.stdout[start..].find(')').unwrap()];
    let file = session.dir.path().join(rel);
    assert!(rel.contains("/snapshot-") && file.exists(), "{rel}");
    assert!(file.canonicalize().unwrap().starts_with(session.path("snapshots").canonicalize().unwrap()));

    // The plain Node CLI (no wrapper) prints the same.
    let plain = session.cli(&["tab-list"]);
    let fast = wrapper(&session, &["tab-list"], false);
    assert_eq!(String::from_utf8_lossy(&plain.stdout), fast.stdout);
    assert_eq!(String::from_utf8_lossy(&plain.stderr), fast.stderr);

    fast_times.sort();
    eprintln!(
        "fast client (debug build, whole process incl. the daemon's work): median {:?}, max {:?} over {} commands",
        fast_times[fast_times.len() / 2],
        fast_times.last().unwrap(),
        fast_times.len()
    );
}

/// A daemon socket served by the test: answers every `run` with the next of
/// `replies` (the last one repeats) and records the request lines.
struct Stub {
    dir: tempfile::TempDir,
    requests: Arc<Mutex<Vec<String>>>,
}

fn core_hash(prefix: &Path) -> String {
    // Computed by sha1sum, independently of the fast client's own SHA-1.
    let core = prefix.join("node_modules/playwright-core").canonicalize().unwrap();
    let out = Command::new("sh").arg("-c").arg("printf %s \"$1\" | sha1sum").arg("sh").arg(&core).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..16].to_owned()
}

impl Stub {
    fn start(version: &str, replies: &[&str]) -> Self {
        let prefix = cli_prefix();
        let dir = tempfile::Builder::new().prefix("ppf").tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let session_file = dir.path().join("d").join(core_hash(&prefix)).join("stub.session");
        std::fs::create_dir_all(session_file.parent().unwrap()).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let config = serde_json::json!({"name": "stub", "version": version, "timestamp": 1,
            "socketPath": socket, "cli": {}, "browser": {"browserName": "chromium"}});
        std::fs::write(&session_file, config.to_string()).unwrap();
        let listener = UnixListener::bind(&socket).unwrap();
        let requests = Arc::new(Mutex::new(vec![]));
        let seen = requests.clone();
        let replies: Vec<String> = replies.iter().map(|r| (*r).to_owned()).collect();
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                let Ok(mut conn) = conn else { break };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                seen.lock().unwrap().push(line);
                let reply = &replies[n.min(replies.len() - 1)];
                let _ = conn.write_all(format!("{reply}\n").as_bytes());
                // Like the daemon, leave closing to the client.
                let mut rest = vec![];
                let _ = conn.read_to_end(&mut rest);
            }
        });
        Self { dir, requests }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("s.sock")
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    fn cli(&self, args: &[&str], node_only: bool) -> Run {
        self.cli_with_package(args, node_only, &cli_prefix().join("node_modules/@playwright/cli"))
    }

    fn cli_with_package(&self, args: &[&str], node_only: bool, package: &Path) -> Run {
        let report = self.dir.path().join("report");
        let mut cmd = Command::new(runtime_bin());
        cmd.arg("cli")
            .args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.dir.path().join("home"))
            .env("NO_UPDATE_NOTIFIER", "1")
            .env("PLAYWRIGHT_CLI_SESSION", "stub")
            .env("PWTEST_DAEMON_SESSION_DIR", self.dir.path().join("d"))
            .env("PWTEST_SOCKETS_DIR", self.dir.path().join("s"))
            .env("PLAYPEN_CLI_PACKAGE", package)
            .env("PLAYPEN_NODE", "/usr/bin/node")
            .env("PLAYPEN_CLI_FAST_REPORT", &report)
            .current_dir(self.dir.path());
        if node_only {
            cmd.env("PLAYPEN_CLI_NODE_ONLY", "1");
        }
        let t = Instant::now();
        let out = cmd.output().unwrap();
        finish(out, t.elapsed(), &report)
    }
}

const STUB_REPLY: &str = r#"{"id":1,"result":{"isError":false,"text":"stub reply"}}"#;

#[test]
fn a_daemon_of_another_version_falls_back_to_the_node_client_with_one_notice() {
    // An older daemon: the Node client (client >= daemon) drives it.
    let stub = Stub::start("1.63.0", &[STUB_REPLY]);
    let fast = stub.cli(&["tab-list"], false);
    assert!(fast.route.starts_with("fallback\t"), "{fast:?}");
    assert_eq!(fast.stdout, "stub reply\n", "{fast:?}");
    assert_eq!(fast.code, Some(0));
    assert_eq!(fast.stderr.lines().count(), 1, "exactly one notice line: {:?}", fast.stderr);
    assert!(
        fast.stderr.contains("daemon v1.63.0")
            && fast.stderr.contains("will drive")
            && fast.stderr.ends_with("Node client\n"),
        "{:?}",
        fast.stderr
    );
    assert_eq!(stub.requests().len(), 1, "only the Node client talked to the daemon");
    let node = stub.cli(&["tab-list"], true);
    assert_eq!((node.stdout.as_str(), node.code), (fast.stdout.as_str(), fast.code));
    assert_eq!(stub.requests()[0], stub.requests()[1]);

    // A newer daemon: the Node client refuses it with its own message; the fast
    // client's output is that, after its notice.
    let stub = Stub::start("1.65.0", &[STUB_REPLY]);
    let fast = stub.cli(&["tab-list"], false);
    let node = stub.cli(&["tab-list"], true);
    assert!(fast.route.starts_with("fallback\t"), "{fast:?}");
    assert_eq!((fast.stdout.as_str(), fast.code), (node.stdout.as_str(), node.code));
    assert_eq!(node.code, Some(1));
    let (notice, rest) = fast.stderr.split_once('\n').unwrap();
    assert!(notice.contains("daemon v1.65.0") && notice.contains("will refuse"), "{notice}");
    assert_eq!(rest, node.stderr);
    assert!(node.stderr.contains("Client is v1.64.0"), "{}", node.stderr);
    assert!(stub.requests().is_empty(), "nobody sent a command to an incompatible daemon");
}

#[test]
fn another_installed_cli_version_falls_back_with_one_notice() {
    // A package directory claiming another @playwright/cli version; its entry
    // script links to the real one (Node resolves it, and playwright-core, there).
    let stub = Stub::start(BUILT_FOR_CORE, &[STUB_REPLY]);
    let real = cli_prefix().join("node_modules/@playwright/cli");
    let other = stub.dir.path().join("nm/@playwright/cli");
    std::fs::create_dir_all(&other).unwrap();
    let manifest = std::fs::read_to_string(real.join("package.json")).unwrap();
    std::fs::write(other.join("package.json"), manifest.replace("\"version\": \"0.1.22\"", "\"version\": \"0.1.99\""))
        .unwrap();
    std::os::unix::fs::symlink(real.join("playwright-cli.js"), other.join("playwright-cli.js")).unwrap();
    let run = stub.cli_with_package(&["tab-list"], false, &other);
    assert!(run.route.starts_with("fallback\t"), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{:?}", run.stderr);
    assert!(run.stderr.contains("@playwright/cli is 0.1.99"), "{:?}", run.stderr);
    assert_eq!((run.stdout.as_str(), run.code), ("stub reply\n", Some(0)), "the Node client answered");
}

#[test]
fn the_request_line_is_the_node_clients_byte_for_byte() {
    let stub = Stub::start(BUILT_FOR_CORE, &[r####"{"id":1,"result":{"isError":true,"text":"### Error\nstub"}}"####]);
    for args in [
        &["click", "e1", "--modifiers=Shift", "--modifiers", "Alt"][..],
        &["--json", "--raw", "eval", "() => \"q\\\"\"\n+1"],
        &["-s=stub", "upload", "a.txt", "b.txt", "--", "--c.txt"],
        &["snapshot", "--filename", "x.yml", "--depth=2", "--boxes"],
        &["cookie-list"],
        &["--session", "stub", "fill", "#n", "ünïcödé ✓"],
    ] {
        let node = stub.cli(args, true);
        let fast = stub.cli(args, false);
        assert!(node.route.starts_with("node\t"), "{node:?}");
        assert!(fast.route.starts_with("fast\t"), "{fast:?}");
        let requests = stub.requests();
        let (a, b) = (&requests[requests.len() - 2], &requests[requests.len() - 1]);
        assert_eq!(a, b, "{args:?}");
        assert_eq!(node.seen(), fast.seen());
        assert_eq!(fast.code, Some(1), "isError exits 1");
    }
}

#[test]
fn a_reply_it_does_not_understand_is_replayed_only_for_read_only_commands() {
    let stub = Stub::start(BUILT_FOR_CORE, &["not json", STUB_REPLY]);
    let run = stub.cli(&["tab-list"], false);
    assert!(run.route.starts_with("fallback\t"), "{run:?}");
    assert_eq!(run.stdout, "stub reply\n");
    assert_eq!(run.stderr.lines().count(), 1, "{:?}", run.stderr);
    assert!(run.stderr.contains("unexpected reply"), "{:?}", run.stderr);
    assert_eq!(stub.requests().len(), 2, "asked once by each client");

    let stub = Stub::start(BUILT_FOR_CORE, &[r#"{"id":7,"result":{}}"#, STUB_REPLY]);
    let run = stub.cli(&["click", "e1"], false);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{:?}", run.stderr);
    assert!(run.stderr.contains("not repeated"), "{:?}", run.stderr);
    assert_eq!(stub.requests().len(), 1, "a click is never sent twice");
}

#[test]
fn a_session_that_is_not_open_gets_the_node_clients_message_and_exit_code() {
    let stub = Stub::start(BUILT_FOR_CORE, &[STUB_REPLY]);
    // No session file for this name.
    for args in [&["-s=absent", "tab-list"][..], &["--json", "-s=absent", "click", "e1"], &["-s=default", "snapshot"]] {
        let node = stub.cli(args, true);
        let fast = stub.cli(args, false);
        assert!(fast.route.starts_with("fast\t"), "{fast:?}");
        assert_eq!(fast.seen(), node.seen());
        assert_eq!(fast.code, Some(1));
        assert!(fast.stdout.contains("is not open, please run open first"), "{}", fast.stdout);
    }
    // A session file whose daemon is gone: the Node client reports it (and removes the socket).
    std::fs::remove_file(stub.socket()).unwrap();
    let node = stub.cli(&["tab-list"], true);
    let fast = stub.cli(&["tab-list"], false);
    assert!(fast.route.starts_with("node\t"), "{fast:?}");
    assert_eq!(fast.seen(), node.seen());
    assert_eq!(fast.code, Some(1));
    assert!(fast.stderr.contains("Browser 'stub' is not open"), "{}", fast.stderr);
}

#[test]
fn the_node_only_variable_forces_the_node_client() {
    let stub = Stub::start(BUILT_FOR_CORE, &[STUB_REPLY]);
    let run = stub.cli(&["tab-list"], true);
    assert_eq!(run.route, "node\tPLAYPEN_CLI_NODE_ONLY is set");
    assert_eq!(run.stdout, "stub reply\n");
    assert!(run.took > Duration::from_millis(100), "Node started: {:?}", run.took);
}

#[test]
fn normalising_touches_only_unique_names() {
    assert_eq!(
        normalise("- [Snapshot](snap/page-2026-11-29T17-01-47-655Z.yml) [ref=f41e2] snapshot-1795972047916-11663.yml"),
        "- [Snapshot](snap/page-<ts>.yml) [ref=f<n>e2] snapshot-<n>-<n>.yml"
    );
    assert_eq!(normalise("trace-1795972097285.trace ref=e5 f41"), "trace-<n>.trace ref=e5 f41");
    assert_eq!(normalise("a\n    duration:  5ms\nb duration: 1"), "a\n    duration: <t>\nb duration: 1");
}
