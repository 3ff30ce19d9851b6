//! The playwright-cli daemon as a supervised child. It is started the way
//! `playwright-cli open` starts it (`node <playwright-core>/lib/entry/cliDaemon.js
//! <session>`, see `Session.startDaemon` in 0.1.22) but as the runtime's own
//! child, so its exit is seen and it is restarted, and with
//! [`DAEMON_NODE_FLAGS`] for Node. A start counts only once
//! the daemon prints `Daemon listening on`; a start that fails or times out
//! is torn down (its whole process group), never recorded as running.
//!
//! The daemon's own idle close is always off (`--idle-timeout=0`): a daemon
//! that closed itself for idleness exits 0, and so does one whose browser was
//! killed (measured on 0.1.22), so its exit status cannot say which happened.
//! The runtime keeps the idle clock itself ([`crate::run::policy::idle`]) and ends the
//! session through the CLI's `close`; every daemon exit it did not ask for is
//! a crash, restarted and recorded for the probe.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::process::Child;
use tokio::sync::{mpsc, watch};

use crate::error::Fatal;
use crate::run::browser::profile::{clear_stale_locks, copy_owner_only};
use crate::run::browser::recording::Recorder;
use crate::run::browser::segments;
use crate::run::process::output::{pump, Tail};
use crate::run::process::reaper::{live_orphans, Managed};
use crate::run::process::supervisor::{run_to_end, signal_group, Backoff, ChildSpec};

/// What the daemon prints once its socket listens.
pub const READY_MARKER: &str = "Daemon listening on";
/// Consecutive starts that ended in the daemon's own exit before the runtime
/// gives up: a daemon that exits before it listens, again and again, is
/// broken (its image, its config), not slow. Starts that ran out of time do
/// not count: a slow node is waited for while the Pod lives.
const MAX_FAILED_STARTS: u32 = 5;
/// The longest a start may take once earlier ones ran out of time.
const MAX_START_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the attempt after `slow_starts` starts that ran out of time may
/// take: the first deadline, doubled for each, up to [`MAX_START_TIMEOUT`]
/// (a start killed at its deadline loses all it did; on a starved node the
/// next one needs longer, not the same).
pub fn start_deadline(first: Duration, slow_starts: u32) -> Duration {
    let doubled = first.saturating_mul(2u32.saturating_pow(slow_starts.min(16)));
    doubled.min(MAX_START_TIMEOUT.max(first))
}

/// Whether a daemon that exited before it listened said it ran out of time
/// (Playwright's `Timeout 30000ms exceeded`, as when Chromium launches slower
/// than Playwright waits): that is a slow node, not a broken session.
pub fn exited_for_time(output: &str) -> bool {
    output.lines().any(|line| {
        line.split("Timeout ").skip(1).any(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with("ms exceeded")
        })
    })
}

/// The daemon's state, published for the probe, the shutdown and the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaemonState {
    /// Not running yet, or between restarts.
    Starting,
    /// Listening; `pid` leads the daemon's process group.
    Running {
        /// The daemon's PID.
        pid: u32,
    },
    /// Stopped for good.
    Stopped,
}

/// V8 flags for the daemon's Node. A young generation of at most 1 MiB per
/// semi-space (V8's starting size; the default lets it grow to 16 MiB and
/// keep that while idle) keeps an idle session under 200 MB (the
/// measurements: docs/operations.md, Memory of an idle session). The cost
/// is more frequent scavenges while a command runs.
pub const DAEMON_NODE_FLAGS: &[&str] = &["--max-semi-space-size=1"];

/// The daemon's argv after the interpreter: [`DAEMON_NODE_FLAGS`], entry
/// script, session and `--idle-timeout=0`, which turns the CLI's own idle
/// close off (by default it closes after an hour, which would silently reset
/// the session; the runtime keeps the session's idle timeout itself).
pub fn daemon_args(entry: &str, session: &str) -> Vec<String> {
    let mut args: Vec<String> = DAEMON_NODE_FLAGS.iter().map(|f| (*f).to_owned()).collect();
    args.extend([entry.to_owned(), session.to_owned(), "--idle-timeout=0".to_owned()]);
    args
}

/// Classifies a failed start from the daemon's output. Playwright reports
/// both cases as "Chromium sandboxing failed!"; Chromium's own line says which.
pub fn classify_failure(output: &str) -> Option<Fatal> {
    let line = |needle: &str| output.lines().find(|l| l.contains(needle)).map(|l| l.trim().to_owned());
    if let Some(detail) = line("crbug.com/638180") {
        return Some(Fatal::SandboxAsRoot { detail });
    }
    line("No usable sandbox")
        .or_else(|| line("crbug.com/357670"))
        .or_else(|| line("sandboxing failed"))
        .map(|detail| Fatal::NoUsableSandbox { detail })
}

/// How to run the daemon.
#[derive(Debug, Clone)]
pub struct DaemonPlan {
    /// The daemon process.
    pub spec: ChildSpec,
    /// How long a start may take.
    pub start_timeout: Duration,
    /// A persistent profile whose stale locks are removed before each start.
    pub user_data_dir: Option<PathBuf>,
    /// Auth state loaded after each start.
    pub auth: Option<AuthLoad>,
    /// Where unexpected exits are recorded for the readiness probe
    /// ([`crate::restarts`]) and agents' closes are noted ([`crate::agent_close`]).
    pub restart_record: Option<PathBuf>,
    /// The session the daemon serves.
    pub session: String,
    /// Recordings started after each start.
    pub recorder: Option<Recorder>,
}

/// Loads a mounted auth state into the session after the daemon starts.
#[derive(Debug, Clone)]
pub struct AuthLoad {
    /// The mounted state file.
    pub source: PathBuf,
    /// Whether the session's config named it at start (a warm Pod's file
    /// appears only once a session with auth state claims it).
    pub required: bool,
    /// Its owner-only copy in the namespace.
    pub copy: PathBuf,
    /// `playwright-cli state-load <copy>`.
    pub command: ChildSpec,
}

impl AuthLoad {
    pub(crate) async fn load(&self, managed: &Managed) {
        if !self.required && !self.source.exists() {
            return;
        }
        if let Err(err) = copy_owner_only(&self.source, &self.copy) {
            tracing::error!(source = %self.source.display(), %err, "cannot copy the auth state; the session starts without it");
            return;
        }
        run_to_end(&self.command, Duration::from_secs(30), managed).await;
        // The browser holds the state now; the copy sits in the data home an
        // agent sidecar shares, so it goes at once (the mount is read-only).
        match std::fs::remove_file(&self.copy) {
            Ok(()) => tracing::info!(copy = %self.copy.display(), "removed the auth state copy after state-load"),
            Err(err) => tracing::warn!(copy = %self.copy.display(), %err, "cannot remove the auth state copy"),
        }
    }
}

/// Waits up to `patience` for adopted orphans to exit, then kills the rest.
pub async fn kill_orphans(managed: &Managed, patience: Duration) {
    let deadline = Instant::now() + patience;
    while !live_orphans(managed).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for pid in live_orphans(managed) {
        tracing::warn!(pid, "killing a leftover process");
        signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        if let Ok(raw) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

enum StartError {
    Fatal(Fatal),
    /// The daemon exited before it listened.
    Exited(String),
    /// It was not listening by the deadline, or said it ran out of time.
    Slow(String),
}

/// A daemon that listens: its process, its PID and the socket it said it listens on.
struct Listening {
    child: Child,
    pid: u32,
    socket: Option<PathBuf>,
}

async fn start(spec: &ChildSpec, timeout: Duration, managed: &Managed) -> Result<Listening, StartError> {
    let mut child =
        spec.spawn().map_err(|e| StartError::Fatal(Fatal::DaemonStart(format!("{}: {e}", spec.program.display()))))?;
    let Some(pid) = child.id() else {
        return Err(StartError::Exited("the daemon exited at once".into()));
    };
    managed.add(pid);
    let tail = Tail::default();
    let mut stdout = child.stdout.take().map(|s| pump(spec.name, "stdout", s, tail.clone()));
    if let Some(stderr) = child.stderr.take() {
        drop(pump(spec.name, "stderr", stderr, tail.clone()));
    }
    let ready = async {
        while let Some(line) = stdout.as_mut()?.recv().await {
            if line.contains(READY_MARKER) {
                return Some(segments::socket_of(&line, READY_MARKER));
            }
        }
        None
    };
    match tokio::time::timeout(timeout, ready).await {
        Ok(Some(socket)) => Ok(Listening { child, pid, socket }),
        outcome => {
            signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            let status = child.wait().await;
            managed.remove(pid);
            let timed_out = outcome.is_err();
            let why = if timed_out { format!("not listening after {timeout:?}") } else { format!("{status:?}") };
            let output = tail.text();
            tracing::warn!(pid, %why, "daemon start failed");
            let said = format!("{}\n{output}", tail.notable());
            match classify_failure(&said) {
                Some(fatal) => Err(StartError::Fatal(fatal)),
                None if timed_out || exited_for_time(&said) => {
                    Err(StartError::Slow(format!("{why}; output:\n{output}")))
                }
                None => Err(StartError::Exited(format!("{why}; output:\n{output}"))),
            }
        }
    }
}

/// Runs the daemon until `stop` turns true; restarts it on exit with backoff.
/// Returns an error only for a fatal start failure.
pub async fn supervise(
    plan: DaemonPlan,
    managed: Managed,
    state: watch::Sender<DaemonState>,
    mut stop: watch::Receiver<bool>,
    exited: mpsc::UnboundedSender<u32>,
) -> Result<(), Fatal> {
    let mut backoff = Backoff::default();
    let mut failed_starts = 0;
    let mut slow_starts = 0;
    let mut reopening = false;
    while !*stop.borrow() {
        let started = Instant::now();
        let started_at = SystemTime::now();
        if let Some(profile) = &plan.user_data_dir {
            let removed = clear_stale_locks(profile);
            if removed > 0 {
                tracing::info!(removed, profile = %profile.display(), "removed stale Chromium profile locks");
            }
        }
        // SIGTERM during a start abandons it (the child is killed on drop).
        let deadline = start_deadline(plan.start_timeout, slow_starts);
        let attempt = tokio::select! {
            attempt = start(&plan.spec, deadline, &managed) => attempt,
            _ = stop.changed() => break,
        };
        match attempt {
            Ok(Listening { mut child, pid, socket }) => {
                failed_starts = 0;
                slow_starts = 0;
                tracing::info!(pid, "daemon running");
                if let (Some(dir), true) = (&plan.restart_record, std::mem::take(&mut reopening)) {
                    crate::agent_close::clear(dir);
                }
                if let Some(auth) = &plan.auth {
                    auth.load(&managed).await;
                }
                if let Some(recorder) = &plan.recorder {
                    if let Err(fatal) = recorder.start(&managed).await {
                        signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                        return Err(fatal);
                    }
                }
                let _ = state.send(DaemonState::Running { pid });
                // While it runs, the video is rotated into segments when the
                // session asks for them, and whenever a rotation is asked for.
                let status = match (&plan.recorder, socket) {
                    (Some(recorder @ Recorder { video: true, segments, .. }), Some(socket)) => {
                        tokio::select! {
                            status = child.wait() => status,
                            never = segments::rotate_every(recorder, &socket, *segments, &stop) => match never {},
                        }
                    }
                    (Some(Recorder { video: true, segments: Some(_), .. }), None) => {
                        tracing::warn!(
                            pid,
                            "the daemon did not say where it listens: one video until the close, no segments"
                        );
                        child.wait().await
                    }
                    _ => child.wait().await,
                };
                managed.remove(pid);
                tracing::warn!(pid, ?status, "daemon exited");
                // Its browser runs in a process group of its own and is adopted by us when the
                // daemon dies: let it go (it exits when its pipe closes), then kill what is left,
                // so that a restart never leaves two browsers on one profile.
                signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                kill_orphans(&managed, Duration::from_secs(5)).await;
                let _ = exited.send(pid);
                if let (Some(dir), false) = (&plan.restart_record, *stop.borrow()) {
                    let now = SystemTime::now();
                    let exit = status.as_ref().map_or_else(|e| e.to_string(), ToString::to_string);
                    if crate::agent_close::read(dir)
                        .is_some_and(|note| crate::agent_close::covers(&note, &plan.session, started_at, now))
                    {
                        tracing::info!(pid, %exit, "an agent closed the browser (playwright-cli close); opening a fresh one");
                        reopening = true;
                    } else {
                        let now_unix = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                        if let Err(err) = crate::restarts::record(dir, &exit, now_unix) {
                            tracing::warn!(%err, dir = %dir.display(), "cannot record the daemon restart for the probe");
                        }
                    }
                }
                let _ = state.send(DaemonState::Starting);
            }
            Err(StartError::Fatal(fatal)) => return Err(fatal),
            Err(StartError::Exited(why)) => {
                failed_starts += 1;
                if failed_starts >= MAX_FAILED_STARTS {
                    return Err(Fatal::DaemonStart(format!(
                        "{failed_starts} starts in a row exited before listening; last: {why}"
                    )));
                }
            }
            Err(StartError::Slow(why)) => {
                slow_starts += 1;
                let next = start_deadline(plan.start_timeout, slow_starts);
                tracing::warn!(attempt = slow_starts, next_deadline = ?next, %why,
                    "the daemon did not start in time: a slow node; trying again with a longer deadline");
            }
        }
        if *stop.borrow() {
            break;
        }
        let delay = backoff.after_run(started.elapsed());
        tracing::info!(?delay, "restarting the daemon");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = stop.changed() => {}
        }
    }
    let _ = state.send(DaemonState::Stopped);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_mirror_the_cli_and_turn_its_idle_close_off() {
        assert_eq!(
            daemon_args("/c/lib/entry/cliDaemon.js", "demo"),
            ["--max-semi-space-size=1", "/c/lib/entry/cliDaemon.js", "demo", "--idle-timeout=0"]
        );
    }

    #[test]
    fn node_flags_come_before_the_entry_script() {
        // After the script they would be the CLI's arguments, not Node's.
        let args = daemon_args("/c/lib/entry/cliDaemon.js", "demo");
        let entry = args.iter().position(|a| a.ends_with("cliDaemon.js")).unwrap();
        for flag in DAEMON_NODE_FLAGS {
            assert!(args.iter().position(|a| a == flag).unwrap() < entry, "{flag}");
        }
    }

    #[test]
    fn no_usable_sandbox_is_fatal_and_other_failures_are_not() {
        let out = "browserType.launch: Target page, context or browser has been closed\n[pid=1][err] [1:1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! If you are running on Ubuntu 23.10+ ...\n";
        let fatal = classify_failure(out).unwrap();
        assert_eq!(fatal.reason(), "NoUsableSandbox");
        assert!(fatal.to_string().contains("seccomp"), "the remedy is named");
        assert!(fatal.to_string().contains("FATAL:zygote"), "the daemon's line is quoted");
        assert!(classify_failure("Error: ECONNREFUSED").is_none());
        let root = "Chromium sandboxing failed!\n  - [pid=1][err] ERROR:zygote_host_impl_linux.cc:103] Running as root without --no-sandbox is not supported. See https://crbug.com/638180.";
        let fatal = classify_failure(root).unwrap();
        assert_eq!(fatal.reason(), "SandboxRequiresNonRoot");
        assert!(fatal.to_string().contains("runAsNonRoot"), "{fatal}");
        assert_eq!(classify_failure("Chromium sandboxing failed!").unwrap().reason(), "NoUsableSandbox");
    }

    fn plan(spec: ChildSpec) -> DaemonPlan {
        DaemonPlan {
            spec,
            start_timeout: Duration::from_secs(5),
            user_data_dir: None,
            auth: None,
            recorder: None,
            restart_record: None,
            session: "demo".into(),
        }
    }

    fn sh(script: &str) -> ChildSpec {
        ChildSpec {
            name: "fake-daemon",
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: "/".into(),
        }
    }

    #[tokio::test]
    async fn a_start_that_never_listens_is_torn_down_and_not_recorded() {
        let managed = Managed::default();
        let spec = sh("echo booting; exec sleep 30");
        let before = Instant::now();
        // 2 s, not less: on a loaded CI machine 500 ms passed once before the
        // shell had printed anything, and its output is part of the check.
        let err = start(&spec, Duration::from_secs(2), &managed).await.err().unwrap();
        assert!(before.elapsed() < Duration::from_secs(15), "the timeout bounds the wait (the child sleeps 30 s)");
        let StartError::Slow(why) = err else { panic!("expected a slow start") };
        assert!(why.contains("not listening") && why.contains("booting"), "{why}");
        assert!(managed.is_empty(), "nothing is recorded as running");
    }

    #[tokio::test]
    async fn a_sandbox_failure_stops_the_supervisor_with_its_reason() {
        let (state, _rx) = watch::channel(DaemonState::Starting);
        let (_stop_tx, stop) = watch::channel(false);
        let (exited, _e) = mpsc::unbounded_channel();
        let spec = sh("echo 'FATAL: No usable sandbox!'; exit 1");
        let err = supervise(plan(spec), Managed::default(), state, stop, exited).await.unwrap_err();
        assert_eq!(err.reason(), "NoUsableSandbox");
    }

    #[tokio::test]
    async fn an_exiting_daemon_is_restarted_until_stopped() {
        let (state, mut states) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, mut exits) = mpsc::unbounded_channel();
        let spec = sh("echo 'Daemon listening on /x.sock'; sleep 0.2; exit 3");
        let task = tokio::spawn(supervise(plan(spec), Managed::default(), state, stop, exited));
        let first = exits.recv().await.unwrap();
        let second = exits.recv().await.unwrap();
        assert_ne!(first, second, "a new process each time");
        stop_tx.send(true).unwrap();
        task.await.unwrap().unwrap();
        states.changed().await.ok();
        assert_eq!(*states.borrow(), DaemonState::Stopped);
    }

    #[tokio::test]
    async fn a_clean_exit_the_runtime_did_not_ask_for_is_restarted_and_recorded() {
        // A daemon whose browser was killed exits 0 (measured): that is a crash too.
        let dir = tempfile::tempdir().unwrap();
        let (state, _states) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, mut exits) = mpsc::unbounded_channel();
        let spec = sh("echo 'Daemon listening on /x.sock'; sleep 0.1; exit 0");
        let plan = DaemonPlan { restart_record: Some(dir.path().to_owned()), ..plan(spec) };
        let task = tokio::spawn(supervise(plan, Managed::default(), state, stop, exited));
        let first = exits.recv().await.unwrap();
        let second = exits.recv().await.unwrap();
        assert_ne!(first, second, "restarted after a clean exit");
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
        let record = crate::restarts::read(dir.path());
        assert!(record.count >= 2, "{record:?}");
        assert_eq!(record.last_exit, "exit status: 0");
    }

    #[tokio::test]
    async fn an_exit_an_agent_asked_for_reopens_without_a_recorded_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (state, mut states) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, mut exits) = mpsc::unbounded_channel();
        let spec = sh("echo 'Daemon listening on /x.sock'; sleep 0.5; exit 0");
        let plan = DaemonPlan { restart_record: Some(dir.path().to_owned()), ..plan(spec) };
        let task = tokio::spawn(supervise(plan, Managed::default(), state, stop, exited));
        let running = |s: &DaemonState| matches!(s, DaemonState::Running { .. });
        states.wait_for(running).await.unwrap();
        crate::agent_close::announce(dir.path(), "demo", SystemTime::now()).unwrap();
        let first = exits.recv().await.unwrap();
        states.wait_for(|s| running(s) && *s != DaemonState::Running { pid: first }).await.unwrap();
        assert_eq!(crate::agent_close::read(dir.path()), None, "the note is cleared once the fresh browser runs");
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
        assert_eq!(crate::restarts::read(dir.path()).count, 0, "the agent's close is not a crash");
    }

    #[tokio::test]
    async fn a_stop_during_a_slow_start_returns_at_once() {
        let (state, states) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, _e) = mpsc::unbounded_channel();
        let plan = DaemonPlan { start_timeout: Duration::from_secs(60), ..plan(sh("exec sleep 60")) };
        let task = tokio::spawn(supervise(plan, Managed::default(), state, stop, exited));
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
        assert_eq!(*states.borrow(), DaemonState::Stopped);
    }

    #[test]
    fn a_slow_start_gets_a_longer_deadline_each_time_up_to_a_bound() {
        let first = Duration::from_secs(60);
        let deadlines: Vec<u64> = (0..6).map(|n| start_deadline(first, n).as_secs()).collect();
        assert_eq!(deadlines, [60, 120, 240, 300, 300, 300]);
        assert_eq!(start_deadline(first, u32::MAX), MAX_START_TIMEOUT, "no overflow");
        assert_eq!(start_deadline(Duration::from_secs(600), 3).as_secs(), 600, "never below the first");
    }

    #[test]
    fn playwrights_timeouts_are_slowness_and_other_errors_are_not() {
        assert!(exited_for_time("browserType.launch: Timeout 180000ms exceeded.\nCall log:"));
        assert!(exited_for_time("Error: page.goto: Timeout 30000ms exceeded"));
        assert!(!exited_for_time("Error: Cannot find module 'playwright-core'"));
        assert!(!exited_for_time("Timeout ms exceeded"), "a number is part of the message");
        assert!(!exited_for_time("Timeout 5s"));
    }

    #[tokio::test]
    async fn a_daemon_that_never_listens_in_time_is_retried_without_end_and_never_fatal() {
        let (state, _rx) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, _e) = mpsc::unbounded_channel();
        let slow = DaemonPlan { start_timeout: Duration::from_millis(50), ..plan(sh("echo booting; exec sleep 30")) };
        let task = tokio::spawn(supervise(slow, Managed::default(), state, stop, exited));
        // Counted as failures, five starts of 50 ms with backoff (0.25, 0.5, 1, 2 s) would end it within 4.5 s.
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(!task.is_finished(), "a slow daemon made the runtime give up");
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_daemon_that_says_it_ran_out_of_time_is_retried_without_end() {
        let (state, _rx) = watch::channel(DaemonState::Starting);
        let (stop_tx, stop) = watch::channel(false);
        let (exited, _e) = mpsc::unbounded_channel();
        let spec = sh("echo 'browserType.launch: Timeout 180000ms exceeded.'; exit 1");
        let task = tokio::spawn(supervise(plan(spec), Managed::default(), state, stop, exited));
        // Backoff 0.25, 0.5, 1, 2 s: five exits take under 4 s.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!task.is_finished(), "Playwright's timeouts made the runtime give up");
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test]
    async fn repeated_failures_give_up_with_the_output() {
        let (state, _rx) = watch::channel(DaemonState::Starting);
        let (_stop_tx, stop) = watch::channel(false);
        let (exited, _e) = mpsc::unbounded_channel();
        let spec = sh("echo 'Error: cannot launch'; exit 1");
        let err = supervise(plan(spec), Managed::default(), state, stop, exited).await.unwrap_err();
        assert_eq!(err.reason(), "DaemonStartFailed");
        assert!(err.to_string().contains("cannot launch"), "{err}");
    }
}
