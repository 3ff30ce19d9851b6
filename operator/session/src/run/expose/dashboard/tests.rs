//! The dashboard's lifecycle with a stand-in: a shell script that, like
//! `dashboardApp.js`, prints a `Listening on` line for an HTTP server (the
//! test's) and exits when its stdin closes, and notes each start in a file.

use std::net::SocketAddr;
use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::run::expose::relay::upstream::{channel, Dashboard, Unavailable};

/// An HTTP server that answers every request with a 302, like the dashboard's root.
async fn stand_in_server() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 256];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(b"HTTP/1.1 302 Found\r\n\r\n").await;
        }
    });
    addr
}

/// The stand-in `dashboardApp.js`: notes its start (and PID) in `starts`, then serves `addr`.
fn stand_in(addr: SocketAddr, starts: &Path) -> ChildSpec {
    let script = format!("echo $$ >> {}; echo 'Listening on http://{addr}'; cat >/dev/null", starts.display());
    ChildSpec {
        name: "fake-dashboard",
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: "/".into(),
    }
}

fn starts(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().map(|l| l.parse().unwrap()).collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

struct Running {
    dashboard: Dashboard,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn supervised(spec: ChildSpec, mode: Mode) -> Running {
    let (publisher, dashboard) = channel();
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(supervise(spec, Duration::from_secs(5), mode, Managed::default(), publisher, stop_rx));
    Running { dashboard, stop, task }
}

const WAIT: Duration = Duration::from_secs(10);

/// Asks for the upstream from `n` tasks at once.
async fn ask_from(dashboard: &Dashboard, n: usize) -> Vec<Result<SocketAddr, Unavailable>> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let d = dashboard.clone();
            tokio::spawn(async move { d.upstream(WAIT).await })
        })
        .collect();
    let mut out = vec![];
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn on_demand_it_starts_once_for_the_first_viewers_and_stops_when_they_are_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("starts");
    let addr = stand_in_server().await;
    let idle = Duration::from_millis(500);
    let r = supervised(stand_in(addr, &file), Mode::OnDemand { idle });

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(starts(&file).is_empty(), "nothing runs before a viewer comes");
    assert_eq!(r.dashboard.now(), Upstream::Stopped);

    let (kept, others) = (r.dashboard.viewer(), [r.dashboard.viewer(), r.dashboard.viewer()]);
    let answers = ask_from(&r.dashboard, 3).await;
    assert!(answers.iter().all(|a| *a == Ok(addr)), "{answers:?}");
    assert_eq!(starts(&file).len(), 1, "viewers arriving together share one start");
    let first = starts(&file)[0];

    drop(others);
    tokio::time::sleep(idle * 2).await;
    assert_eq!(r.dashboard.now(), Upstream::Serving(addr), "kept while one viewer is open, however long");
    assert!(alive(first));

    let closed = Instant::now();
    drop(kept);
    wait_for("the idle stop", || r.dashboard.now() == Upstream::Stopped).await;
    assert!(closed.elapsed() >= idle, "stopped after {:?}, before the idle period", closed.elapsed());
    wait_for("the process to be gone", || !alive(first)).await;

    let again = r.dashboard.viewer();
    assert_eq!(r.dashboard.upstream(WAIT).await, Ok(addr));
    let second = starts(&file);
    assert_eq!(second.len(), 2, "the next viewer starts it again");
    assert!(alive(second[1]) && second[1] != first);

    r.stop.send(true).unwrap();
    tokio::time::timeout(WAIT, r.task).await.unwrap().unwrap();
    assert!(!alive(second[1]), "stopped with the runtime");
    assert_eq!(r.dashboard.now(), Upstream::Stopped);
    drop(again);
}

#[tokio::test]
async fn a_failed_start_answers_the_waiting_viewers_and_the_next_viewer_tries_again() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("starts");
    let spec = ChildSpec {
        args: vec!["-c".into(), format!("echo $$ >> {}; echo 'cannot load the bundle' >&2; exit 1", file.display())],
        ..stand_in(stand_in_server().await, &file)
    };
    let r = supervised(spec, Mode::OnDemand { idle: Duration::from_secs(60) });
    let viewer = r.dashboard.viewer();
    let answers = ask_from(&r.dashboard, 2).await;
    let failed = Err(Unavailable::StartFailed("it exited before printing its address".into()));
    assert_eq!(answers, [failed.clone(), failed.clone()]);
    assert!(matches!(r.dashboard.now(), Upstream::Failed(_)));
    drop(viewer);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(starts(&file).len(), 1, "no retry without a viewer");

    let _next = r.dashboard.viewer();
    assert_eq!(r.dashboard.upstream(WAIT).await, failed);
    assert_eq!(starts(&file).len(), 2);
}

#[tokio::test]
async fn a_dashboard_that_crashes_while_viewed_is_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("starts");
    let addr = stand_in_server().await;
    let r = supervised(stand_in(addr, &file), Mode::OnDemand { idle: Duration::from_secs(60) });
    let _viewer = r.dashboard.viewer();
    assert_eq!(r.dashboard.upstream(WAIT).await, Ok(addr));
    let first = starts(&file)[0];
    crate::run::process::supervisor::signal_group(first, nix::sys::signal::Signal::SIGKILL);
    wait_for("a restart", || starts(&file).len() == 2).await;
    assert_eq!(r.dashboard.upstream(WAIT).await, Ok(addr));
}

#[tokio::test]
async fn eager_it_runs_without_viewers_with_its_stdin_held_open() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("starts");
    let addr = stand_in_server().await;
    let r = supervised(stand_in(addr, &file), Mode::Eager);
    assert_eq!(r.dashboard.upstream(WAIT).await, Ok(addr));
    // Still up a while later: stdin is held open (the stand-in exits when it closes).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = starts(&file)[0];
    assert!(alive(pid));
    assert_eq!(r.dashboard.now(), Upstream::Serving(addr));
    r.stop.send(true).unwrap();
    tokio::time::timeout(WAIT, r.task).await.unwrap().unwrap();
    assert_eq!(r.dashboard.now(), Upstream::Stopped);
    assert!(!alive(pid));
}

fn viewers(open: usize, none_since: Instant) -> Viewers {
    Viewers { open, none_since }
}

#[test]
fn the_idle_deadline_runs_from_the_last_viewer_and_only_on_demand() {
    let t0 = Instant::now();
    let idle = Duration::from_secs(300);
    let on_demand = Mode::OnDemand { idle };
    assert_eq!(idle_deadline(on_demand, viewers(0, t0)), Some(t0 + idle));
    assert_eq!(idle_deadline(on_demand, viewers(1, t0)), None, "an open viewer holds it");
    assert_eq!(idle_deadline(Mode::Eager, viewers(0, t0)), None);
}

#[test]
fn after_a_run_only_a_crash_in_use_or_eager_mode_starts_again_unasked() {
    let t0 = Instant::now();
    let idle = Duration::from_secs(300);
    let on_demand = Mode::OnDemand { idle };
    let watched = viewers(1, t0);
    let just_left = viewers(0, t0);
    let later = t0 + Duration::from_secs(10);
    let long_after = t0 + idle;
    assert_eq!(next_after(on_demand, Ended::Crashed, watched, long_after), Next::Start);
    assert_eq!(next_after(on_demand, Ended::Crashed, just_left, later), Next::Start, "the WebSocket the crash cut");
    assert_eq!(next_after(on_demand, Ended::Crashed, just_left, long_after), Next::Viewer);
    assert_eq!(next_after(on_demand, Ended::StartFailed, watched, later), Next::Viewer);
    assert_eq!(next_after(on_demand, Ended::Idle, just_left, long_after), Next::Viewer);
    for ended in [Ended::Crashed, Ended::StartFailed, Ended::Idle] {
        assert_eq!(next_after(Mode::Eager, ended, just_left, long_after), Next::Start);
    }
}
