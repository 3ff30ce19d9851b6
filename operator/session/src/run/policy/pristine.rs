//! A warm Pod's browser is nobody's until a session claims it, and nothing
//! of anyone reaches that session. The driver and viewer roles cover every
//! Pod of a namespace (RBAC has no label selectors), so someone with them
//! could `kubectl exec` into a warm Pod before a claim: `state-load` cookies,
//! leave a process behind, drop files in the snapshot volume.
//!
//! While `runtime.json` says `warm`, the runtime watches for any such use:
//! a playwright-cli command (an open of the session file, as the idle clock
//! sees it), a viewer or CDP connection, a file in the snapshot volume, a
//! process it did not start. On the first one it ends every such process,
//! empties the snapshot volume and exits so the kubelet restarts the
//! container: a fresh filesystem, a fresh browser with empty storage, no
//! process of the old one (the kernel ends them all with PID 1). It acts
//! [`CLAIM_GRACE`] after the first use it sees, unless the claim arrives
//! first (the ConfigMap turns `warm: false`): the claiming session is Ready
//! at the claim, and its agent may drive before the kubelet delivers that,
//! so a use this close before a claim counts as the session's own. A warm
//! start always begins with an empty snapshot volume.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use playpen_api::runtime_config::RuntimeConfig;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::config::{load, Options};
use crate::run::browser::daemon::DaemonState;
use crate::run::policy::idle::watch_uses;
use crate::run::process::reaper::{parse_stat, Managed};

/// How often the warm browser is checked when nothing wakes the check.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long a use seen while warm waits for a claim before the browser is
/// discarded: the claiming session is Ready at the claim, and its agent may
/// drive before the kubelet has delivered the claim's `runtime.json`
/// (typically within a second of the claim). A use this close before a
/// claim is taken as the claiming session's own.
const CLAIM_GRACE: Duration = Duration::from_secs(5);
/// How long after the browser (re)starts its own start-up is over: the
/// processes the runtime adopted by then (Chromium's crash handlers) are
/// its own, and the session file the daemon wrote is not a client's use.
const SETTLE: Duration = Duration::from_secs(5);

/// One process of the container's PID namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    /// Its PID.
    pub pid: u32,
    /// Its parent's PID; 0 when the parent is outside the namespace (an
    /// `exec` into the container).
    pub ppid: u32,
}

/// The processes the runtime did not start (pure): those whose line of
/// parents leaves the namespace anywhere but at the runtime (an `exec`, and
/// what it started), and those adopted by the runtime that it neither
/// started (`managed`) nor had adopted when the browser settled (`settled`:
/// the browser's own orphans), with everything below them.
pub fn foreign(procs: &[Proc], runtime: u32, managed: impl Fn(u32) -> bool, settled: &BTreeSet<u32>) -> Vec<u32> {
    let parent: BTreeMap<u32, u32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    let is_foreign = |pid: u32| {
        let mut at = pid;
        // Bounded: a PID table is a forest, but a racing read is not.
        for _ in 0..=procs.len() {
            if at == runtime {
                return false;
            }
            match parent.get(&at).copied() {
                // Below the runtime: ours if it started or had adopted it.
                Some(up) if up == runtime => return !managed(at) && !settled.contains(&at),
                Some(0) | None => return true,
                Some(up) => at = up,
            }
        }
        false
    };
    procs.iter().map(|p| p.pid).filter(|&pid| is_foreign(pid)).collect()
}

/// The processes of this PID namespace, from `/proc`.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
            (stat.state != 'Z').then_some(Proc { pid, ppid: stat.ppid })
        })
        .collect()
}

/// A process's command line, for the log (bounded).
fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text = String::from_utf8_lossy(&raw).replace('\0', " ");
    text.trim().chars().take(120).collect()
}

/// The entries of `dir` (none when it cannot be read).
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
}

/// Empties `dir`, keeping the directory itself.
pub fn empty_dir(dir: &Path) {
    for path in entries(dir) {
        let gone = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if let Err(err) = gone {
            tracing::warn!(path = %path.display(), %err, "cannot remove a file from the snapshot volume");
        }
    }
}

/// What a warm browser's guard watches.
pub struct Guard {
    /// `runtime.json`.
    pub config_path: PathBuf,
    /// The snapshot volume.
    pub output_dir: PathBuf,
    /// The children the runtime waits for itself.
    pub managed: Managed,
    /// Open viewer and CDP connections.
    pub viewers: Arc<AtomicUsize>,
    /// The daemon's state.
    pub daemon: watch::Receiver<DaemonState>,
    /// Opens of the session file (playwright-cli commands).
    pub uses: watch::Receiver<Instant>,
}

/// A use of a warm browser.
struct Found {
    /// What it was.
    what: String,
    /// The processes the runtime did not start, if any.
    strangers: Vec<u32>,
}

/// What the guard finds now: `None` when nothing.
fn evidence(guard: &Guard, settled: Option<&BTreeSet<u32>>, used: bool) -> Option<Found> {
    let found = |what: String| Some(Found { what, strangers: Vec::new() });
    let runtime = std::process::id();
    // Only as PID 1 is every process of the namespace the container's own.
    if runtime == 1 {
        let empty = BTreeSet::new();
        let strangers = foreign(&processes(), runtime, |pid| guard.managed.contains(pid), settled.unwrap_or(&empty));
        // Before the browser settled, adopted processes are not judged.
        let strangers: Vec<u32> = match settled {
            Some(_) => strangers,
            None => strangers.into_iter().filter(|&pid| !adopted(pid, runtime)).collect(),
        };
        if !strangers.is_empty() {
            let described: Vec<String> = strangers.iter().map(|&p| format!("{p} ({})", command_line(p))).collect();
            let what = format!("processes the runtime did not start: {}", described.join(", "));
            return Some(Found { what, strangers });
        }
    }
    if used {
        return found("a playwright-cli command".into());
    }
    if guard.viewers.load(Ordering::Relaxed) > 0 {
        return found("a viewer or CDP connection".into());
    }
    let files = entries(&guard.output_dir);
    let first = files.first()?;
    found(format!("{} file(s) in the snapshot volume, first {}", files.len(), first.display()))
}

/// Whether `runtime.json` still says warm (or cannot be read).
/// Whether `runtime.json` still says the browser is warm (unreadable: it
/// is, the careful answer for a guard).
pub(crate) fn still_warm(config_path: &Path) -> bool {
    match load(config_path) {
        Ok(config) => config.warm,
        Err(err) => {
            tracing::warn!(%err, "cannot read runtime.json; still warm");
            true
        }
    }
}

/// Whether `pid`'s parent is the runtime.
fn adopted(pid: u32, runtime: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| parse_stat(&t)).map(|s| s.ppid)
        == Some(runtime)
}

/// Watches a warm browser until a session claims it. Resolves with what
/// was found when it was used before the claim (the caller exits so the
/// kubelet starts the container afresh); never resolves once the browser
/// was claimed untouched.
pub async fn watch_until_claimed(mut guard: Guard) -> String {
    let config_changed = Arc::new(Notify::new());
    if let Some(dir) = guard.config_path.parent() {
        let events = nix::sys::inotify::AddWatchFlags::IN_CREATE | nix::sys::inotify::AddWatchFlags::IN_MOVED_TO;
        if let Err(err) =
            crate::run::process::dir_watch::notify_on_changes("claim-watch", &[dir], events, config_changed.clone())
        {
            tracing::warn!(%err, "cannot watch runtime.json: a claim is seen within a second");
        }
    }
    // When the browser's start-up is over (None while it starts), and what
    // the runtime had adopted by then.
    let mut settles_at: Option<Instant> = None;
    let mut settled: Option<BTreeSet<u32>> = None;
    let mut used = false;
    // The first use seen, and when: acted on after [`CLAIM_GRACE`] unless a claim came.
    let mut first_seen: Option<(Instant, String)> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            () = config_changed.notified() => {}
            // Only while still warm: the state a claim delivers is loaded
            // by the runtime itself once runtime.json says it is claimed.
            Ok(()) = guard.uses.changed() => used |= settled.is_some() && still_warm(&guard.config_path),
            Ok(()) = guard.daemon.changed() => {
                let running = matches!(*guard.daemon.borrow_and_update(), DaemonState::Running { .. });
                settles_at = running.then(|| Instant::now() + SETTLE);
                settled = None;
            }
        }
        if settled.is_none() && settles_at.is_some_and(|at| Instant::now() >= at) {
            let runtime = std::process::id();
            let adopted: BTreeSet<u32> = processes()
                .iter()
                .filter(|p| p.ppid == runtime && !guard.managed.contains(p.pid))
                .map(|p| p.pid)
                .collect();
            settled = Some(adopted);
            // The session file the daemon wrote at its start is no one's use.
            guard.uses.borrow_and_update();
        }
        if !still_warm(&guard.config_path) {
            match &first_seen {
                Some((at, found)) => tracing::info!(
                    before_the_claim = ?at.elapsed(), %found,
                    "claimed by a session: the use just before the claim is taken as the session's own"
                ),
                None => tracing::info!("claimed by a session: the warm browser was untouched"),
            }
            return std::future::pending().await;
        }
        // Acted on even when what was seen is gone since (a process that
        // ended): whatever it did stays.
        let found = evidence(&guard, settled.as_ref(), used);
        let strangers = found.as_ref().map(|f| f.strangers.clone()).unwrap_or_default();
        if first_seen.is_none() {
            first_seen = found.map(|f| (Instant::now(), f.what));
        }
        if let Some((at, what)) = &first_seen {
            if at.elapsed() >= CLAIM_GRACE {
                kill(&strangers);
                empty_dir(&guard.output_dir);
                return what.clone();
            }
        }
    }
}

/// Ends the processes the runtime did not start.
fn kill(pids: &[u32]) {
    for &pid in pids {
        if let Ok(raw) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Resolves when a warm browser was used before its claim, with what was
/// found ([`watch_until_claimed`]); never for a session's own browser, nor once a
/// warm one was claimed untouched.
pub(crate) fn warm_guard(
    config: &RuntimeConfig,
    opts: &Options,
    managed: &Managed,
    daemon: watch::Receiver<DaemonState>,
    viewers: Arc<AtomicUsize>,
) -> impl std::future::Future<Output = String> {
    let (uses_tx, uses) = watch::channel(tokio::time::Instant::now());
    let watching = config.warm
        && watch_uses(Path::new(&config.daemon_session_dir), &config.session_name, uses_tx)
            .inspect_err(
                |err| tracing::error!(%err, "cannot watch the session directory: a warm browser is not guarded"),
            )
            .is_ok();
    let guard = Guard {
        config_path: PathBuf::from(&opts.config),
        output_dir: PathBuf::from(&config.output_dir),
        managed: managed.clone(),
        viewers,
        daemon,
        uses,
    };
    async move {
        if !watching {
            return std::future::pending().await;
        }
        watch_until_claimed(guard).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32) -> Proc {
        Proc { pid, ppid }
    }

    /// The tree of a warm Pod as measured on the node: the runtime (1), the
    /// daemon it started (8), Chromium below it, two crash handlers adopted.
    fn warm_pod() -> Vec<Proc> {
        vec![p(1, 0), p(8, 1), p(23, 8), p(38, 1), p(40, 1), p(43, 23), p(44, 23), p(64, 43), p(67, 23)]
    }

    #[test]
    fn the_browsers_own_processes_are_not_foreign() {
        let settled = BTreeSet::from([38, 40]);
        assert!(foreign(&warm_pod(), 1, |pid| pid == 8, &settled).is_empty());
    }

    #[test]
    fn an_exec_and_what_it_started_are_foreign() {
        let mut procs = warm_pod();
        procs.extend([p(102, 0), p(103, 102), p(104, 103)]);
        let settled = BTreeSet::from([38, 40]);
        assert_eq!(foreign(&procs, 1, |pid| pid == 8, &settled), [102, 103, 104]);
    }

    #[test]
    fn a_process_left_behind_and_adopted_after_the_browser_settled_is_foreign() {
        // `setsid sleep 600 &` from an exec: its shell exits, PID 1 adopts it.
        let mut procs = warm_pod();
        procs.extend([p(170, 1), p(171, 170)]);
        let settled = BTreeSet::from([38, 40]);
        assert_eq!(foreign(&procs, 1, |pid| pid == 8, &settled), [170, 171]);
        // A child the runtime started itself (a CLI command it runs) is not.
        assert!(foreign(&procs, 1, |pid| pid == 8 || pid == 170, &settled).is_empty());
    }

    #[test]
    fn a_racing_read_with_a_loop_ends() {
        let procs = vec![p(1, 0), p(5, 6), p(6, 5)];
        assert!(foreign(&procs, 1, |_| false, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn emptying_the_snapshot_volume_keeps_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("evil.yml"), b"x").unwrap();
        std::fs::create_dir_all(dir.path().join("recordings/deep")).unwrap();
        empty_dir(dir.path());
        assert!(dir.path().is_dir());
        assert!(entries(dir.path()).is_empty());
    }
}
