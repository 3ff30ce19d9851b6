//! The idle timeout, kept by the runtime itself, against the real
//! playwright-cli 0.1.22 and Debian's chromium (`tests/session/setup.sh`, see
//! `support::SETUP`). The daemon always runs with `--idle-timeout=0`; the
//! runtime sees each client open the session file, closes an unused session
//! through `playwright-cli close` and restarts every daemon exit it did not
//! ask for.

mod support;

use std::time::{Duration, Instant};

use support::*;

fn with_idle_timeout(name: &str, seconds: u64) -> Session {
    let session = Session::new(name, None);
    session.set_runtime_field("idleTimeoutSeconds", seconds.into());
    session
}

fn still_running(session: &mut Session) -> bool {
    session.child.as_mut().expect("started").try_wait().expect("try_wait").is_none()
}

fn restart_record(session: &Session) -> Option<String> {
    std::fs::read_to_string(session.namespace_dir().join(playpen_session::restarts::RECORD_FILE)).ok()
}

fn daemon_cmdline(session: &Session) -> String {
    let pid = session.daemon_pid().expect("a daemon");
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .expect("the daemon's cmdline")
}

/// The session ended by the runtime's idle clock: exit 0, closed through the
/// CLI, nothing left, no restart recorded.
fn assert_ended_idle(session: &mut Session, status: std::process::ExitStatus) {
    let log = session.log();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("idle timeout") && log.contains("the session ended"), "{log}");
    assert!(log.contains(&format!("Browser '{}' closed", session.name)), "closed through the CLI:\n{log}");
    assert_eq!(restart_record(session), None, "the close the runtime asked for is no crash:\n{log}");
    assert!(session.processes().is_empty(), "{:#?}", session.processes());
}

#[test]
fn commands_keep_the_session_open_past_its_idle_timeout() {
    let fixture = Fixture::start();
    let mut session = with_idle_timeout("busy", 4);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    let daemon = session.daemon_pid();
    session.cli_ok(&["goto", &fixture.url("/")]);
    // Twelve seconds of commands, alternating the Node client and the native
    // fast path, never four seconds apart.
    let until = Instant::now() + Duration::from_secs(12);
    let mut node = true;
    while Instant::now() < until {
        if node {
            session.cli_ok(&["tab-list"]);
        } else {
            let out = session.wrapper(&["tab-list"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        node = !node;
        assert!(still_running(&mut session), "closed while in use:\n{}", session.log());
        std::thread::sleep(Duration::from_millis(300));
    }
    // One command that runs longer than the idle timeout is not cut off.
    let out = session.cli_ok(&["run-code", "async page => { await page.waitForTimeout(6000); return 'waited'; }"]);
    assert!(out.contains("waited"), "{out}");
    let last_command_ended = Instant::now();
    assert!(still_running(&mut session), "closed during a command:\n{}", session.log());
    assert!(session.log().contains("the idle timeout passed during a command"), "{}", session.log());
    assert_eq!(session.daemon_pid(), daemon, "the same daemon throughout");
    // Then unused: it ends about four seconds after the last command.
    let status = session.wait_exit(Duration::from_secs(30));
    let idle_for = last_command_ended.elapsed();
    assert!(idle_for >= Duration::from_secs(2), "ended {idle_for:?} after the last command");
    assert_ended_idle(&mut session, status);
}

#[test]
fn an_unused_session_is_closed_through_the_cli_and_ends_with_exit_0() {
    let mut session = with_idle_timeout("unused", 3);
    let started = Instant::now();
    session.start();
    session.wait_ready(Duration::from_secs(60));
    assert!(
        daemon_cmdline(&session).contains("--idle-timeout=0"),
        "the daemon's own idle close is off: {}",
        daemon_cmdline(&session)
    );
    // The readiness probe only connects to the socket: it is no use of the session.
    let status = session.wait_exit(Duration::from_secs(30));
    assert!(started.elapsed() >= Duration::from_secs(3), "ended after only {:?}", started.elapsed());
    assert_ended_idle(&mut session, status);
}

#[test]
fn with_an_idle_timeout_a_killed_browser_is_restarted_and_reported_once() {
    let fixture = Fixture::start();
    let mut session = with_idle_timeout("crashy", 60);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    session.cli_ok(&["goto", &fixture.url("/")]);
    let daemon = session.daemon_pid().expect("a daemon");
    let browsers = session.browser_pids();
    assert_eq!(browsers.len(), 1, "{:#?}", session.processes());
    // The daemon whose browser is killed exits 0: still a crash.
    sigkill(browsers[0]);
    wait_until("a new daemon", Duration::from_secs(30), || session.daemon_pid().is_some_and(|p| p != daemon));
    assert!(still_running(&mut session), "the session ended instead of restarting:\n{}", session.log());
    assert!(session.log().contains("status=Ok(ExitStatus(unix_wait_status(0)))"), "{}", session.log());
    // The probe fails exactly once for the restart, then passes.
    let out = session.runtime_command("probe").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && said.contains("exited unexpectedly (exit status: 0)"), "{said}");
    session.wait_ready(Duration::from_secs(60));
    for _ in 0..3 {
        assert!(session.probe_ok(), "reported more than once");
    }
    let record: serde_json::Value = serde_json::from_str(&restart_record(&session).unwrap()).unwrap();
    assert_eq!(record["count"], 1, "{record}");
    // Commands reach the new browser; only one browser is left.
    let out = session.cli_ok(&["goto", &fixture.url("/next.html")]);
    assert!(out.contains("Page Title: Next page"), "{out}");
    wait_until("exactly one browser", Duration::from_secs(10), || session.browser_pids().len() == 1);
    let status = session.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(session.processes().is_empty(), "{:#?}", session.processes());
}

#[test]
fn an_idle_timeout_set_while_running_applies_without_a_restart() {
    let mut session = Session::new("changed", None);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    let daemon = session.daemon_pid();
    // Without a timeout an unused session stays.
    std::thread::sleep(Duration::from_secs(4));
    assert!(still_running(&mut session), "{}", session.log());
    // A long timeout first: it has not passed, so the session stays.
    session.set_runtime_field("idleTimeoutSeconds", 600.into());
    wait_until("the new timeout read", Duration::from_secs(10), || session.log().contains("the idle timeout changed"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(still_running(&mut session), "{}", session.log());
    assert_eq!(session.daemon_pid(), daemon, "the daemon was not restarted to apply it");
    // Lowered below the time already idle: it counts from when it is read
    // (every second here), so the session closes three seconds after that,
    // not at once.
    let lowered = Instant::now();
    session.set_runtime_field("idleTimeoutSeconds", 3.into());
    let status = session.wait_exit(Duration::from_secs(20));
    let took = lowered.elapsed();
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(session.log().matches("daemon running").count(), 1, "one daemon start:\n{}", session.log());
    assert_ended_idle(&mut session, status);
}

#[test]
fn an_agents_own_close_through_the_wrapper_reopens_a_fresh_browser_without_a_reported_restart() {
    let fixture = Fixture::start();
    let mut session = Session::new("closer", None);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    session.cli_ok(&["goto", &fixture.url("/")]);
    let daemon = session.daemon_pid().expect("a daemon");
    let out = session.wrapper(&["close"]);
    let (said, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("Browser 'closer' closed"), "{said}{err}");
    // The probe never fails for it: not while the fresh browser starts, not after.
    let deadline = Instant::now() + Duration::from_secs(60);
    while session.daemon_pid().is_none_or(|pid| pid == daemon) {
        assert!(session.probe_ok(), "the probe failed for the agent's own close:\n{}", session.log());
        assert!(Instant::now() < deadline, "no fresh daemon:\n{}", session.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // The note goes once the fresh daemon runs; then the probe passes on the daemon alone.
    let note = session.namespace_dir().join(playpen_session::agent_close::NOTE_FILE);
    wait_until("the agent's note cleared", Duration::from_secs(60), || !note.exists());
    for _ in 0..3 {
        assert!(session.probe_ok(), "{}", session.log());
    }
    let log = session.log();
    assert!(log.contains("an agent closed the browser"), "{log}");
    assert_eq!(restart_record(&session), None, "an agent's close is no crash:\n{log}");
    // The fresh browser serves commands; only one browser is left.
    let out = session.cli_ok(&["goto", &fixture.url("/next.html")]);
    assert!(out.contains("Page Title: Next page"), "{out}");
    wait_until("exactly one browser", Duration::from_secs(10), || session.browser_pids().len() == 1);
    // A close from a client that bypasses the wrapper still counts as a crash.
    let daemon = session.daemon_pid().expect("a daemon");
    session.cli_ok(&["close"]);
    wait_until("a new daemon", Duration::from_secs(30), || session.daemon_pid().is_some_and(|p| p != daemon));
    wait_until("the restart recorded", Duration::from_secs(10), || restart_record(&session).is_some());
    let status = session.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(session.processes().is_empty(), "{:#?}", session.processes());
}

#[test]
fn a_close_note_left_by_a_previous_container_does_not_make_the_next_one_ready_early() {
    // The namespace is an emptyDir: it outlives a container restart, notes included.
    let mut session = Session::new("again", None);
    let namespace = session.namespace_dir();
    std::fs::create_dir_all(&namespace).unwrap();
    playpen_session::agent_close::announce(&namespace, "again", std::time::SystemTime::now()).unwrap();
    let note = namespace.join(playpen_session::agent_close::NOTE_FILE);
    session.start();
    // Cleared at start: from then on the probe passes only on a daemon that answers.
    wait_until("the stale note cleared at start", Duration::from_secs(10), || !note.exists());
    session.wait_ready(Duration::from_secs(60));
    let status = session.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", session.log());
}
