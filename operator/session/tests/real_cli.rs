//! `playpen-session` against the real playwright-cli 0.1.22 and Debian's
//! chromium. Needs `tests/session/setup.sh` (see `support::SETUP`); without
//! it every test fails with the command to run.

mod support;

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use support::*;

/// The `[Snapshot](path)` of a CLI answer, resolved against the CLI's cwd.
fn snapshot_path(session: &Session, stdout: &str) -> std::path::PathBuf {
    let start =
        stdout.find("[Snapshot](").unwrap_or_else(|| panic!("no snapshot link in:\n{stdout}")) + "[Snapshot](".len();
    let rel = &stdout[start..start + stdout[start..].find(')').expect("closing parenthesis")];
    let path = std::path::Path::new(rel);
    if path.is_absolute() {
        path.to_owned()
    } else {
        session.dir.path().join(path)
    }
}

fn dashboard_pid(session: &Session) -> Option<u32> {
    let me = session.runtime_pid();
    all_processes()
        .into_iter()
        .find(|p| p.ppid == me && p.cmdline.contains("dashboardApp.js") && p.state != 'Z')
        .map(|p| p.pid)
}

/// Nothing the runtime or its children listen on is a wildcard address.
fn assert_loopback_only(session: &Session) {
    let listening = listening_sockets();
    let mut checked = 0;
    for p in session.processes() {
        for inode in socket_inodes(p.pid) {
            if let Some((local, _)) = listening.iter().find(|(_, i)| *i == inode) {
                let ip = local.split(':').next().unwrap_or_default();
                assert!(
                    ip == "0100007F" || ip == "00000000000000000000000001000000",
                    "pid {} ({}) listens on {local}, not loopback",
                    p.pid,
                    p.cmdline
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 2, "expected the pinned port and the dashboard among the listeners, found {checked}");
}

#[test]
fn a_session_serves_agents_and_viewers_survives_crashes_and_closes_on_sigterm() {
    let started = Instant::now();
    let fixture = Fixture::start();
    let port = free_port();
    let mut session = Session::new("demo", Some(port));
    session.start();
    session.wait_ready(Duration::from_secs(60));
    eprintln!("ready after {:?}", started.elapsed());

    // An agent's separate `playwright-cli` process reaches the session.
    let out = session.cli_ok(&["goto", &fixture.url("/")]);
    assert!(out.contains(&format!("Page URL: {}", fixture.url("/"))), "{out}");
    assert!(out.contains("Page Title: Fixture"), "{out}");
    // Navigation prints the path of the snapshot it wrote (a bare `snapshot` prints the tree inline).
    let snapshot = snapshot_path(&session, &out);
    let snapshots = session.path("snapshots").canonicalize().unwrap();
    assert!(
        snapshot.canonicalize().unwrap().starts_with(&snapshots),
        "{} outside {}",
        snapshot.display(),
        snapshots.display()
    );
    let tree = std::fs::read_to_string(&snapshot).unwrap();
    let at = tree.find("link \"Next\" [ref=").unwrap_or_else(|| panic!("no link in the snapshot:\n{tree}"));
    let reference = tree[at..].split("[ref=").nth(1).unwrap().split(']').next().unwrap().to_owned();
    let out = session.cli_ok(&["click", &reference]);
    assert!(out.contains("Page Title: Next page"), "{out}");
    assert!(fixture.saw("/next.html"), "the fixture server saw the click's navigation");

    // Retention: thousands of old files go, by age and by the count re-read
    // from runtime.json while running; the snapshot printed last stays.
    let last_printed = snapshot_path(&session, &out);
    let old = std::time::SystemTime::now() - Duration::from_secs(7200);
    for i in 0..2000 {
        let p = session.path(&format!("snapshots/page-old-{i:04}.yml"));
        std::fs::write(&p, "- old").unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(old).unwrap();
    }
    let config = std::fs::read_to_string(session.path("runtime.json")).unwrap();
    std::fs::write(session.path("runtime.json"), config.replace("\"snapshotMaxCount\":500", "\"snapshotMaxCount\":2"))
        .unwrap();
    let count = || std::fs::read_dir(session.path("snapshots")).unwrap().count();
    wait_until("retention to prune", Duration::from_secs(20), || count() <= 2);
    assert!(last_printed.exists(), "the last printed snapshot {} was pruned", last_printed.display());

    // The wrapper gives a bare `snapshot` a file in the snapshot dir: a path on stdout, not the tree.
    let out = session.wrapper(&["snapshot"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("arrived"), "the tree is not inline:\n{stdout}");
    let file = snapshot_path(&session, &stdout);
    assert!(file.canonicalize().unwrap().starts_with(&snapshots), "{}", file.display());
    assert!(std::fs::read_to_string(&file).unwrap().contains("arrived"), "the Next page's tree is in the file");
    eprintln!("wrapped bare snapshot: {} bytes of stdout", stdout.len());

    // The pinned port relays to the dashboard: its root answers 302.
    let (status, response) = http_get(port, "/");
    assert!(status.contains(" 302 "), "{status}");
    let guid = response.split("?ws=").nth(1).and_then(|r| r.lines().next()).expect("a ws guid").trim().to_owned();
    let (status, page) = http_get(port, "/index.html");
    assert!(status.contains(" 200 ") && page.contains("<html"), "{status}");
    // The dashboard's WebSocket passes through the relay too.
    let (status, first_frame) = websocket_upgrade(port, &format!("/{guid}"));
    assert!(status.contains(" 101 "), "{status}");
    assert_eq!(first_frame, Some(0x81), "the dashboard's first message, a final text frame, arrives");
    assert_loopback_only(&session);

    // Kill the daemon: restarted in the same namespace, commands work, one browser.
    let first = session.daemon_pid().expect("a daemon child");
    sigkill(first);
    wait_until("a new daemon", Duration::from_secs(30), || session.daemon_pid().is_some_and(|p| p != first));
    session.wait_ready(Duration::from_secs(60));
    let out = session.cli_ok(&["goto", &fixture.url("/next.html")]);
    assert!(out.contains("Page Title: Next page"), "{out}");
    wait_until("exactly one browser", Duration::from_secs(10), || session.browser_pids().len() == 1);
    let runtime = session.runtime_pid();
    wait_until("no zombie left under the runtime", Duration::from_secs(5), || {
        !all_processes().iter().any(|p| p.ppid == runtime && p.state == 'Z')
    });

    // Kill the dashboard: the pinned port answers again once it is back.
    let dashboard = dashboard_pid(&session).expect("a dashboard child");
    sigkill(dashboard);
    wait_until("the dashboard back behind the pinned port", Duration::from_secs(30), || {
        dashboard_pid(&session).is_some_and(|p| p != dashboard)
            && http_status(port, "/").is_some_and(|s| s.contains(" 302 "))
    });

    // SIGTERM: the browser is closed through the CLI, nothing is left.
    let runtime = session.runtime_pid();
    let t = Instant::now();
    kill(Pid::from_raw(runtime as i32), Signal::SIGTERM).unwrap();
    let status = session.child.as_mut().unwrap().wait().unwrap();
    let took = t.elapsed();
    session.child = None;
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(took < Duration::from_secs(25), "shutdown took {took:?}");
    assert!(session.log().contains("Browser 'demo' closed"), "closed through the CLI:\n{}", session.log());
    let left = session.processes();
    assert!(left.is_empty(), "processes left: {left:#?}");
    assert!(http_status(port, "/").is_none(), "the pinned port is released");
    eprintln!("whole session test took {:?} (shutdown {took:?})", started.elapsed());
}

#[test]
fn a_socket_namespace_over_the_budget_is_refused() {
    let mut session = Session::new(&"s".repeat(40), None);
    session.sockets_dir = session.path("a-rather-long-data-home/pw/1a2b3c4d/s");
    session.write_runtime_config();
    let (code, report) = session.run_to_exit(Duration::from_secs(20));
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "SocketBudgetExceeded");
    assert!(report["message"].as_str().unwrap().contains("103-byte AF_UNIX budget"), "{report}");
    assert!(!session.sockets_dir.exists(), "nothing was created");
    assert!(session.processes().is_empty());
}

#[test]
fn a_taken_viewer_port_is_refused_before_anything_starts() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let mut session = Session::new("taken", Some(port));
    let (code, report) = session.run_to_exit(Duration::from_secs(20));
    assert_eq!(code, 1, "{}", session.log());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "ViewerPortTaken");
    assert!(report["message"].as_str().unwrap().contains(&format!("127.0.0.1:{port}")), "{report}");
    assert!(session.processes().is_empty(), "no daemon was started");
}

#[test]
fn a_playwright_core_without_the_hooks_is_refused() {
    let mut session = Session::new("hooks", None);
    // A copy of the real @playwright/cli package whose nested playwright-core lost a hook.
    let real = session.prefix.join("node_modules");
    let pkg = session.path("nm/@playwright/cli");
    let core = pkg.join("node_modules/playwright-core");
    std::fs::create_dir_all(core.join("lib/tools/cli-client")).unwrap();
    std::fs::create_dir_all(core.join("lib/entry")).unwrap();
    std::fs::copy(real.join("@playwright/cli/package.json"), pkg.join("package.json")).unwrap();
    for file in [
        "package.json",
        "browsers.json",
        "lib/tools/cli-client/registry.js",
        "lib/entry/cliDaemon.js",
        "lib/entry/dashboardApp.js",
    ] {
        std::fs::copy(real.join("playwright-core").join(file), core.join(file)).unwrap();
    }
    let bundle = std::fs::read_to_string(real.join("playwright-core/lib/coreBundle.js")).unwrap();
    assert!(bundle.contains("process.env.PWTEST_SOCKETS_DIR ||"), "the pinned CLI has the hook");
    std::fs::write(core.join("lib/coreBundle.js"), bundle.replace("process.env.PWTEST_SOCKETS_DIR ||", "undefined ||"))
        .unwrap();
    session.start_with_env = Some(("PLAYPEN_CLI_PACKAGE".into(), pkg.display().to_string()));
    let (code, report) = session.run_to_exit(Duration::from_secs(20));
    assert_eq!(code, 1, "{}", session.log());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "SocketHooksMissing");
    assert!(report["message"].as_str().unwrap().contains("PWTEST_SOCKETS_DIR"), "{report}");
    assert!(session.processes().is_empty());
}

#[test]
fn with_the_sandbox_enforced_renderers_run_in_their_own_user_namespace() {
    let fixture = Fixture::start();
    let mut session = Session::new("sandboxed", None);
    session.write_launch_config(true);
    let config = std::fs::read_to_string(session.path("runtime.json")).unwrap().replace("\"Disabled\"", "\"Enforced\"");
    std::fs::write(session.path("runtime.json"), config).unwrap();
    // Chromium refuses its sandbox as root: run the runtime (and the agent's CLI) unprivileged.
    session.chown_to("playpen-test");
    session.start();
    session.wait_ready(Duration::from_secs(60));
    let runtime = session.runtime_pid();
    let owner = std::fs::metadata(format!("/proc/{runtime}")).map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap();
    assert_ne!(owner, 0, "the runtime runs unprivileged");
    let out = session.cli_ok(&["goto", &fixture.url("/")]);
    assert!(out.contains("Page Title: Fixture"), "{out}");

    let user_ns = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/user")).ok();
    let runtime_ns = user_ns(runtime).expect("the runtime's user namespace");
    let renderers: Vec<_> = session.processes().into_iter().filter(|p| p.cmdline.contains("--type=renderer")).collect();
    assert!(!renderers.is_empty(), "a renderer runs: {:#?}", session.processes());
    for renderer in &renderers {
        assert!(!renderer.cmdline.contains("--no-sandbox"), "{}", renderer.cmdline);
        let ns = user_ns(renderer.pid).expect("the renderer's user namespace");
        assert_ne!(ns, runtime_ns, "renderer {} shares the runtime's user namespace", renderer.pid);
    }
    let status = session.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(session.processes().is_empty(), "{:#?}", session.processes());
}

#[test]
fn auth_state_is_loaded_from_an_owner_only_copy_that_is_then_removed_and_stale_profile_locks_are_cleared() {
    let mut session = Session::new("authed", None);
    // A persistent profile left by a previous Pod: its lock names a host that is gone.
    let profile = session.path("profile");
    std::fs::create_dir_all(&profile).unwrap();
    std::os::unix::fs::symlink("old-pod-0-4242", profile.join("SingletonLock")).unwrap();
    let mut launch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session.path("launch.json")).unwrap()).unwrap();
    launch["browser"]["userDataDir"] = profile.display().to_string().into();
    std::fs::write(session.path("launch.json"), launch.to_string()).unwrap();
    let state = serde_json::json!({"cookies": [{"name": "token", "value": "s3cret", "domain": "127.0.0.1", "path": "/",
        "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}], "origins": []});
    std::fs::write(session.path("state.json"), state.to_string()).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session.path("runtime.json")).unwrap()).unwrap();
    config["authStateFile"] = session.path("state.json").display().to_string().into();
    std::fs::write(session.path("runtime.json"), config.to_string()).unwrap();

    session.start();
    session.wait_ready(Duration::from_secs(60));
    let copy = session.path("pw/1a2b3c4d/auth-state.json");
    wait_until("the cookie in the session", Duration::from_secs(20), || {
        String::from_utf8_lossy(&session.cli(&["cookie-list"]).stdout).contains("s3cret")
    });
    // Loaded, then gone: the data home is shared with an agent sidecar.
    wait_until("the copy's removal", Duration::from_secs(10), || {
        session.log().contains("removed the auth state copy after state-load")
    });
    assert!(!copy.exists(), "the auth state copy outlived its state-load");
    assert!(session.log().contains("removed stale Chromium profile locks"), "{}", session.log());
}

#[test]
fn children_die_with_a_killed_runtime() {
    let port = free_port();
    let mut session = Session::new("orphaned", Some(port));
    session.start();
    session.wait_ready(Duration::from_secs(60));
    assert!(session.browser_pids().len() == 1, "{:#?}", session.processes());
    // The dashboard runs while someone views: one view, so that it must die too.
    assert!(http_status(port, "/").is_some_and(|s| s.contains(" 302 ")));
    assert!(dashboard_pid(&session).is_some(), "{:#?}", session.processes());
    let mut runtime = session.child.take().unwrap();
    runtime.kill().unwrap();
    runtime.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !session.processes().is_empty() {
        let left: Vec<_> = session.processes().into_iter().map(|p| (p.pid, p.ppid, p.cmdline)).collect();
        assert!(Instant::now() < deadline, "left after the runtime was SIGKILLed: {left:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_enforced_sandbox_as_root_is_refused_at_once_with_the_remedy() {
    let mut session = Session::new("rooted", None);
    session.write_launch_config(true);
    let started = Instant::now();
    let (code, report) = session.run_to_exit(Duration::from_secs(60));
    assert_eq!(code, 1, "{}", session.log());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "SandboxRequiresNonRoot", "{report}");
    let message = report["message"].as_str().unwrap();
    assert!(message.contains("Running as root without --no-sandbox") && message.contains("runAsNonRoot"), "{message}");
    assert!(session.log().matches("daemon start failed").count() == 1, "no retries:\n{}", session.log());
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(session.processes().is_empty());
}

#[test]
fn where_the_sandbox_cannot_start_the_termination_message_says_no_usable_sandbox() {
    let mut session = Session::new("nosandbox", None);
    session.write_launch_config(true);
    session.chown_to("playpen-test");
    // 32 nested user namespaces exhaust the kernel's nesting limit: Chromium
    // cannot create the namespaces its sandbox needs, as under a container
    // runtime's default seccomp profile.
    session.nested_user_namespaces = 32;
    let (code, report) = session.run_to_exit(Duration::from_secs(60));
    assert_eq!(code, 1, "{}", session.log());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "NoUsableSandbox", "{report}\n{}", session.log());
    let message = report["message"].as_str().unwrap();
    assert!(message.starts_with("No usable sandbox!") && message.contains("seccomp"), "{message}");
    assert!(session.processes().is_empty());
}

#[test]
fn a_maximum_lifetime_lowered_while_running_ends_the_session_with_exit_0() {
    let mut session = Session::new("lifetime", None);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    session.set_runtime_field("maxLifetimeSeconds", 1.into());
    let status = session.wait_exit(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(session.log().contains("maximum lifetime reached"), "{}", session.log());
    assert!(session.log().contains("Browser 'lifetime' closed"), "closed through the CLI:\n{}", session.log());
    assert!(session.processes().is_empty());
}

/// An RFC 3339 UTC time `secs_ago` seconds before now, as the operator writes `sessionStartedAt`.
fn rfc3339_ago(secs_ago: u64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("{secs_ago} seconds ago"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date runs");
    String::from_utf8(out.stdout).expect("date prints UTF-8").trim().to_owned()
}

#[test]
fn a_session_whose_lifetime_ended_before_this_start_completes_at_once_without_a_browser() {
    // What a replacement Pod (or a restarted container) of a session created two hours ago sees.
    let mut session = Session::new("expired", None);
    session.set_runtime_field("sessionStartedAt", rfc3339_ago(7200).into());
    session.set_runtime_field("maxLifetimeSeconds", 3600.into());
    let (code, report) = session.run_to_exit(Duration::from_secs(30));
    assert_eq!(code, 0, "{}", session.log());
    assert!(report.is_empty(), "an ended session writes no failure report: {report}");
    assert!(session.log().contains("maximum lifetime reached before this start"), "{}", session.log());
    assert!(!session.log().contains("daemon running"), "no browser was started:\n{}", session.log());
    assert!(session.processes().is_empty());
}

#[test]
fn a_restart_late_in_a_session_gets_only_what_is_left_of_its_lifetime() {
    let mut session = Session::new("late", None);
    // Created 55 s ago with a one-minute lifetime: about 5 s are left, not a minute.
    session.set_runtime_field("sessionStartedAt", rfc3339_ago(55).into());
    session.set_runtime_field("maxLifetimeSeconds", 60.into());
    let started = Instant::now();
    session.start();
    let status = session.wait_exit(Duration::from_secs(40));
    assert_eq!(status.code(), Some(0), "{}", session.log());
    assert!(session.log().contains("maximum lifetime reached"), "{}", session.log());
    assert!(started.elapsed() < Duration::from_secs(35), "ended after {:?}: the lifetime restarted", started.elapsed());
    assert!(session.processes().is_empty());
}

fn volume_bytes(session: &Session) -> u64 {
    fn walk(dir: &std::path::Path) -> u64 {
        std::fs::read_dir(dir)
            .expect("the snapshot directory is readable")
            .flatten()
            .map(|e| {
                let meta = e.path().symlink_metadata().expect("stat");
                let own = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
                if meta.is_dir() {
                    own + walk(&e.path())
                } else {
                    own
                }
            })
            .sum()
    }
    walk(&session.path("snapshots"))
}

#[test]
fn the_snapshot_volume_stays_under_its_size_budget_and_a_file_that_would_fill_it_goes_at_once() {
    const MIB: u64 = 1 << 20;
    let fixture = Fixture::start();
    let mut session = Session::new("budget", None);
    // An 8 MiB emptyDir: the budget is 80% (6.4 MiB), full is 95% (7.6 MiB).
    session.set_runtime_field("snapshotVolumeBytes", (8 * MIB).into());
    session.start();
    session.wait_ready(Duration::from_secs(60));
    let out = session.cli_ok(&["goto", &fixture.url("/")]);
    let last_printed = snapshot_path(&session, &out);

    // Old screenshots (well inside age and count) past the budget: the oldest go, the newest stay.
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    for i in 0..12u64 {
        let p = session.path(&format!("snapshots/shot-{i:02}.png"));
        std::fs::write(&p, vec![b'x'; MIB as usize]).unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(old + Duration::from_secs(i)).unwrap();
    }
    wait_until("the size budget to be met", Duration::from_secs(10), || volume_bytes(&session) <= 8 * MIB * 8 / 10);
    assert!(session.path("snapshots/shot-11.png").exists(), "the newest screenshot stays");
    assert!(!session.path("snapshots/shot-00.png").exists(), "the oldest went");
    assert!(last_printed.exists(), "the last-printed snapshot stays");

    // A new file makes room for itself: older files go, the newest stay.
    let recent = session.path("snapshots/recent.pdf");
    std::fs::write(&recent, vec![b'r'; 2 * MIB as usize]).unwrap();
    wait_until("older files to make room", Duration::from_secs(5), || {
        !session.path("snapshots/shot-07.png").exists() && volume_bytes(&session) <= 8 * MIB * 8 / 10
    });
    assert!(recent.exists() && session.path("snapshots/shot-11.png").exists(), "the newest stay");

    // A young file that alone would fill the volume is deleted within a second
    // or two of being written, long before the kubelet's next measurement.
    let big = session.path("snapshots/download.bin");
    std::fs::write(&big, vec![b'y'; 8 * MIB as usize]).unwrap();
    let written = Instant::now();
    wait_until("the filling file to go", Duration::from_secs(5), || !big.exists());
    eprintln!("a filling file went {:?} after it was written", written.elapsed());
    assert!(recent.exists(), "a smaller young file is not deleted with it");
    // Usually the young-file rule deletes it (and logs that it did); on a
    // loaded machine the pass may come after the 1 s grace and the budget
    // deletes it as an old file instead. Either way it is gone at once.
    assert!(session.probe_ok(), "the session stays ready");
    assert!(last_printed.exists());
    assert!(volume_bytes(&session) <= 8 * MIB * 95 / 100);
    let status = session.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", session.log());
}

#[test]
fn a_volume_filled_by_what_retention_may_not_delete_stops_with_snapshot_volume_full() {
    const MIB: u64 = 1 << 20;
    let mut session = Session::new("full", None);
    session.set_runtime_field("snapshotVolumeBytes", (4 * MIB).into());
    // An agent's own subdirectory: counted, never pruned.
    std::fs::create_dir_all(session.path("snapshots/exports")).unwrap();
    std::fs::write(session.path("snapshots/exports/dump.bin"), vec![b'z'; 4 * MIB as usize]).unwrap();
    let (code, report) = session.run_to_exit(Duration::from_secs(60));
    assert_eq!(code, 1, "{}", session.log());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["reason"], "SnapshotVolumeFull", "{report}");
    let message = report["message"].as_str().unwrap();
    assert!(message.contains("sizeLimit") && message.contains("subdirectories"), "{message}");
    assert!(
        session.path("snapshots/exports/dump.bin").exists(),
        "nothing the agent wrote in a subdirectory is deleted"
    );
    assert!(session.processes().is_empty());
}

#[test]
fn an_agent_without_the_launch_config_drives_the_session() {
    // The agent sidecar does not mount the launch config (it may carry proxy
    // credentials): its playwright-cli still drives the browser the runtime opened.
    let fixture = Fixture::start();
    let mut session = Session::new("noconfig", None);
    session.start();
    session.wait_ready(Duration::from_secs(60));
    let out = session.cli_without(&["goto", &fixture.url("/")], &["PLAYWRIGHT_MCP_CONFIG"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("Page Title: Fixture"), "{out:?}\n{}", session.log());
    let out = session.cli_without(&["tab-list"], &["PLAYWRIGHT_MCP_CONFIG"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&fixture.url("/")), "{out:?}");
    assert!(session.log().matches("daemon running").count() == 1, "the daemon was not restarted:\n{}", session.log());
    assert_eq!(session.terminate(Duration::from_secs(30)).code(), Some(0));
}
