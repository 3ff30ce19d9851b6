//! The idle timeout, decided by the runtime rather than by the daemon.
//!
//! The daemon always runs with `--idle-timeout=0`: its own idle close exits 0
//! exactly as a daemon whose browser was killed does (measured on 0.1.22), so
//! the two could not be told apart. Instead the runtime learns when clients
//! use the session: every playwright-cli client (the Node one and the native
//! fast path) opens `<PWTEST_DAEMON_SESSION_DIR>/<16hex>/<session>.session` to
//! find the socket before it sends a command. Neither the daemon nor the
//! dashboard opens that file while the session is idle (strace:
//! docs/session-runtime.md, The activity signal), so an `IN_OPEN` of that
//! file is a client's command.
//! A (re)start of the daemon counts as use too, and so does a reopen of a
//! suspended state through `POST /resume` (a resumed session was idle for as
//! long as it was suspended; the reopen is its first use since), and so does
//! a change of the
//! timeout: a setting delivered to a running Pod (a claim hands a warm Pod,
//! idle since its start, the session's timeout; an edit of a running
//! session's) counts from when it arrives, never closing the session at
//! once. When the currently configured idle timeout (re-read from
//! `runtime.json`) has passed since the last use, the runtime closes the
//! session itself.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use playpen_api::runtime_config::RuntimeConfig;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::{load, Options};
use crate::run::browser::daemon::DaemonState;
use crate::run::browser::namespace::daemon_sockets;

/// What the idle clock says at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The session has been idle for the whole timeout: close it.
    Close,
    /// Not yet; nothing can change the verdict sooner than this (short of a
    /// configuration change).
    CheckIn(Duration),
    /// No idle timeout is configured.
    NoTimeout,
}

/// The pure decision: `timeout` (none = never) against the time since the last use.
pub fn decide(last_use: Instant, now: Instant, timeout: Option<Duration>) -> Verdict {
    let Some(timeout) = timeout else { return Verdict::NoTimeout };
    let idle = now.saturating_duration_since(last_use);
    if idle >= timeout {
        Verdict::Close
    } else {
        Verdict::CheckIn(timeout - idle)
    }
}

/// `idleTimeoutSeconds` as a duration; absent, zero or negative means none.
pub fn timeout_of(seconds: Option<i64>) -> Option<Duration> {
    seconds.and_then(|s| u64::try_from(s).ok()).filter(|s| *s > 0).map(Duration::from_secs)
}

/// Whether an inotify event under the session directory is a client's use of `session`.
fn is_use(name: Option<&OsStr>, mask: AddWatchFlags, session_file: &OsStr) -> bool {
    mask.contains(AddWatchFlags::IN_OPEN) && !mask.contains(AddWatchFlags::IN_ISDIR) && name == Some(session_file)
}

/// Watches one `<16hex>` directory for opens of the files in it.
fn watch_dir(inotify: &Inotify, dir: &Path) -> Option<WatchDescriptor> {
    match inotify.add_watch(dir, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ONLYDIR) {
        Ok(wd) => Some(wd),
        Err(err) => {
            tracing::debug!(dir = %dir.display(), %err, "cannot watch a session directory");
            None
        }
    }
}

/// Watches `<base>/*/<session>.session` for opens and sends the time of each
/// on `uses`. Runs on a thread of its own (a blocking read) until `uses` has
/// no receiver left. Fails when inotify cannot be set up.
pub fn watch_uses(base: &Path, session: &str, uses: watch::Sender<Instant>) -> std::io::Result<()> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC)?;
    let dirs = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ONLYDIR;
    let base_wd = inotify.add_watch(base, dirs)?;
    // Directories created before the watch on the base (the daemon makes its own).
    let mut watched: Vec<WatchDescriptor> = std::fs::read_dir(base)?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| watch_dir(&inotify, &e.path()))
        .collect();
    let session_file = PathBuf::from(format!("{session}.session")).into_os_string();
    let base = base.to_owned();
    std::thread::Builder::new().name("idle-watch".into()).spawn(move || loop {
        let events = match inotify.read_events() {
            Ok(events) => events,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(err) => {
                tracing::error!(%err, "the session directory watch failed: the idle timeout is no longer enforced");
                // Use can no longer be seen: never call the session idle (only the daemon-start
                // sender would be left otherwise, and an agent's session would be closed under it).
                while uses.send(Instant::now()).is_ok() {
                    std::thread::sleep(Duration::from_secs(1));
                }
                return;
            }
        };
        let mut used = false;
        for event in events {
            if event.wd == base_wd {
                if let (true, Some(name)) = (event.mask.contains(AddWatchFlags::IN_ISDIR), &event.name) {
                    if let Some(wd) = watch_dir(&inotify, &base.join(name)) {
                        watched.push(wd);
                    }
                }
            } else if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)
                || (watched.contains(&event.wd) && is_use(event.name.as_deref(), event.mask, &session_file))
            {
                // An overflowed queue lost events: only a busy session gets there.
                used = true;
            }
        }
        if used && uses.send(Instant::now()).is_err() {
            return;
        }
    })?;
    Ok(())
}

/// Sends each time `from` carries on to `uses`, until either side is gone.
fn forward_uses(mut from: watch::Receiver<Instant>, uses: watch::Sender<Instant>) {
    tokio::spawn(async move {
        while from.changed().await.is_ok() {
            let at = *from.borrow_and_update();
            if uses.send(at).is_err() {
                return;
            }
        }
    });
}

/// How often a command still in flight is looked for again.
const BUSY_POLL: Duration = Duration::from_secs(1);

/// Connections accepted on one of `sockets` in `/proc/net/unix` text: a
/// client's command in flight. The listening socket itself (state `01`,
/// `__SO_ACCEPTCON`) does not count; an accepted one carries the listener's
/// path with state `03` (connected) until the client goes (measured on 0.1.22
/// during a four-second `run-code`).
pub fn in_flight(net_unix: &str, sockets: &[PathBuf]) -> usize {
    net_unix
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() >= 8
                && fields[5] == "03"
                && sockets.iter().any(|s| s.as_os_str().to_str() == Some(fields[7..].join(" ").as_str()))
        })
        .count()
}

/// Resolves once no client has used the session for the idle timeout, and
/// returns that timeout. The timeout is re-read through `reload` every
/// `every` (a ConfigMap change applies while running, counted from when it
/// is seen; `None` from `reload` keeps the previous value); `uses` carries
/// the time of the last use. A
/// command still running when the time is up (`busy`) postpones the close:
/// the clock then runs from when it was last seen running.
pub async fn idle_reached<F, B>(
    mut timeout: Option<Duration>,
    every: Duration,
    mut reload: F,
    mut busy: B,
    mut uses: watch::Receiver<Instant>,
) -> Duration
where
    F: FnMut() -> Option<Option<Duration>>,
    B: FnMut() -> bool,
{
    let mut next_reload = Instant::now() + every;
    let mut busy_at: Option<Instant> = None;
    let mut changed_at: Option<Instant> = None;
    let mut watching_busy = false;
    loop {
        let now = Instant::now();
        if now >= next_reload {
            if let Some(fresh) = reload() {
                if fresh != timeout {
                    tracing::info!(from = ?timeout, to = ?fresh, "the idle timeout changed; it counts from now");
                    changed_at = Some(now);
                }
                timeout = fresh;
            }
            next_reload = now + every;
        }
        if watching_busy {
            if busy() {
                busy_at = Some(now);
            } else {
                watching_busy = false;
            }
        }
        let last_use = [busy_at, changed_at].into_iter().flatten().fold(*uses.borrow(), Instant::max);
        let wait = match (decide(last_use, now, timeout), timeout) {
            (Verdict::Close, Some(timeout)) => {
                if !busy() {
                    return timeout;
                }
                tracing::info!("the idle timeout passed during a command: waiting for it to finish");
                busy_at = Some(now);
                watching_busy = true;
                BUSY_POLL
            }
            (Verdict::CheckIn(left), _) if watching_busy => left.min(BUSY_POLL),
            (Verdict::CheckIn(left), _) => left,
            _ => next_reload.saturating_duration_since(now),
        };
        let wait = wait.min(next_reload.saturating_duration_since(now)).max(Duration::from_millis(1));
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = uses.changed() => if changed.is_err() {
                // Nobody measures use any more: never call the session idle.
                std::future::pending::<()>().await;
            },
        }
    }
}

/// Resolves once no client has used the session for `idleTimeoutSeconds`
/// (re-read from `runtime.json` every retention interval); never when the
/// use of the session cannot be watched. `resumes` carries the time of each
/// reopen through `POST /resume`.
pub(crate) fn session_idle_reached(
    config: &RuntimeConfig,
    opts: &Options,
    mut daemon: watch::Receiver<DaemonState>,
    viewers: Arc<AtomicUsize>,
    resumes: watch::Receiver<Instant>,
) -> impl std::future::Future<Output = Duration> {
    let (uses_tx, uses_rx) = watch::channel(tokio::time::Instant::now());
    let watching = match watch_uses(Path::new(&config.daemon_session_dir), &config.session_name, uses_tx.clone()) {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(%err, dir = %config.daemon_session_dir, "cannot watch the session directory: the idle timeout is not enforced");
            false
        }
    };
    forward_uses(resumes, uses_tx.clone());
    // A (re)started daemon counts as use: the clock runs from when the browser is there.
    tokio::spawn(async move {
        while daemon.changed().await.is_ok() {
            if matches!(*daemon.borrow_and_update(), DaemonState::Running { .. }) {
                let _ = uses_tx.send(tokio::time::Instant::now());
            }
        }
    });
    let config_path = PathBuf::from(&opts.config);
    let sockets_dir = PathBuf::from(&config.sockets_dir);
    let session = config.session_name.clone();
    let reload = move || match load(&config_path) {
        Ok(fresh) => Some(timeout_of(fresh.idle_timeout_seconds)),
        Err(err) => {
            tracing::warn!(%err, "keeping the previous idle timeout");
            None
        }
    };
    let busy = move || {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        viewers.load(Ordering::Relaxed) > 0 || in_flight(&table, &daemon_sockets(&sockets_dir, &session)) > 0
    };
    let timeout = timeout_of(config.idle_timeout_seconds);
    let every = opts.retention_interval();
    async move {
        if !watching {
            return std::future::pending().await;
        }
        idle_reached(timeout, every, reload, busy, uses_rx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_counts_from_the_last_use() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(decide(t0, t0 + s(1), Some(s(3))), Verdict::CheckIn(s(2)));
        assert_eq!(decide(t0, t0 + s(3), Some(s(3))), Verdict::Close);
        assert_eq!(decide(t0, t0 + s(100), Some(s(3))), Verdict::Close);
        assert_eq!(decide(t0, t0 + s(100), None), Verdict::NoTimeout);
        // A use recorded "after" now (clock granularity) is no idle time at all.
        assert_eq!(decide(t0 + s(1), t0, Some(s(3))), Verdict::CheckIn(s(3)));
    }

    #[test]
    fn only_positive_timeouts_count() {
        assert_eq!(timeout_of(None), None);
        assert_eq!(timeout_of(Some(0)), None);
        assert_eq!(timeout_of(Some(-5)), None);
        assert_eq!(timeout_of(Some(900)), Some(Duration::from_secs(900)));
    }

    #[test]
    fn only_opens_of_the_session_file_are_uses() {
        let file = OsStr::new("demo.session");
        assert!(is_use(Some(file), AddWatchFlags::IN_OPEN, file));
        assert!(!is_use(Some(OsStr::new("other.session")), AddWatchFlags::IN_OPEN, file));
        assert!(!is_use(Some(OsStr::new("demo.err")), AddWatchFlags::IN_OPEN, file));
        assert!(!is_use(None, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ISDIR, file), "a readdir of the directory");
        assert!(!is_use(Some(file), AddWatchFlags::IN_CLOSE_WRITE, file));
    }

    /// The idle clock with `timeout`, checked every second, its timeout
    /// reloaded from the returned cell (as runtime.json would change it).
    fn clock_with(
        timeout: Option<Duration>,
        rx: watch::Receiver<Instant>,
    ) -> (tokio::task::JoinHandle<Duration>, std::sync::Arc<std::sync::Mutex<Option<Duration>>>) {
        let timeouts = std::sync::Arc::new(std::sync::Mutex::new(timeout));
        let source = timeouts.clone();
        let reload = move || Some(*source.lock().unwrap());
        (tokio::spawn(idle_reached(timeout, Duration::from_secs(1), reload, || false, rx)), timeouts)
    }

    #[tokio::test(start_paused = true)]
    async fn a_resume_is_a_use() {
        let (uses_tx, rx) = watch::channel(Instant::now());
        let (resumed, resumes) = watch::channel(Instant::now());
        forward_uses(resumes, uses_tx);
        let (task, _) = clock_with(Some(Duration::from_secs(3)), rx);
        tokio::time::sleep(Duration::from_secs(2)).await;
        resumed.send_replace(Instant::now());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!task.is_finished(), "the resume reset the clock");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(task.is_finished(), "three seconds after the resume, idle");
    }

    #[tokio::test(start_paused = true)]
    async fn uses_postpone_the_close_and_a_changed_timeout_applies() {
        let (tx, rx) = watch::channel(Instant::now());
        let started = Instant::now();
        let (task, timeouts) = clock_with(Some(Duration::from_secs(3)), rx);
        // Used every two seconds for ten seconds: still open.
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            tx.send(Instant::now()).unwrap();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!task.is_finished(), "used within every three seconds");
        // The timeout raised while running: not closed at three seconds idle.
        *timeouts.lock().unwrap() = Some(Duration::from_secs(60));
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!task.is_finished(), "the raised timeout applies");
        // Lowered below the time already idle: it counts from its arrival
        // (seen at the next re-read, within a second), not from the last use.
        *timeouts.lock().unwrap() = Some(Duration::from_secs(5));
        let lowered = Instant::now();
        tokio::time::sleep(Duration::from_millis(4900)).await;
        assert!(!task.is_finished(), "closed before the new timeout ran from its arrival");
        let fired = tokio::time::timeout(Duration::from_millis(1200), task).await.unwrap().unwrap();
        assert_eq!(fired, Duration::from_secs(5));
        assert!(lowered.elapsed() >= Duration::from_secs(5) && started.elapsed() >= Duration::from_secs(27));
    }

    #[tokio::test(start_paused = true)]
    async fn a_warm_browser_idle_for_long_gets_the_whole_timeout_from_its_claim() {
        // A warm Pod: no timeout, idle for 100 s since its daemon started.
        let (_tx, rx) = watch::channel(Instant::now());
        let (task, timeouts) = clock_with(None, rx);
        tokio::time::sleep(Duration::from_secs(100)).await;
        // The claim delivers `idleTimeoutSeconds: 90`.
        *timeouts.lock().unwrap() = Some(Duration::from_secs(90));
        let claimed = Instant::now();
        tokio::time::sleep(Duration::from_secs(89)).await;
        assert!(!task.is_finished(), "closed {:?} after the claim", claimed.elapsed());
        tokio::time::timeout(Duration::from_secs(3), task).await.unwrap().unwrap();
        assert!(claimed.elapsed() >= Duration::from_secs(90));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timeout_the_session_is_never_idle_until_one_is_set() {
        let (_tx, rx) = watch::channel(Instant::now());
        let (task, timeouts) = clock_with(None, rx);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!task.is_finished());
        *timeouts.lock().unwrap() = Some(Duration::from_secs(60));
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(!task.is_finished(), "a timeout set late counts from when it is set");
        tokio::time::timeout(Duration::from_millis(2100), task).await.unwrap().unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_command_in_flight_postpones_the_close_until_it_ends() {
        let (_tx, rx) = watch::channel(Instant::now());
        let started = Instant::now();
        // A command runs from the second second to the tenth.
        let busy = move || (2..10).contains(&started.elapsed().as_secs());
        let task = tokio::spawn(idle_reached(Some(Duration::from_secs(3)), Duration::from_secs(60), || None, busy, rx));
        let fired = tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap();
        assert_eq!(fired, Duration::from_secs(3));
        let at = started.elapsed();
        // Last seen running at 9 s (polled every second): closed three seconds later.
        assert!(at >= Duration::from_secs(12) && at <= Duration::from_secs(13), "{at:?}");
    }

    #[test]
    fn commands_in_flight_are_accepted_connections_on_the_daemon_socket() {
        let sock = PathBuf::from("/d/pw/1a2b3c4d/s/cli/5f140579e5662630-meas.sock");
        let listening = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            000000004e382c5f: 00000002 00000000 00010000 0001 01 1033961 /d/pw/1a2b3c4d/s/cli/5f140579e5662630-meas.sock\n\
            0000000011111111: 00000003 00000000 00000000 0001 03 1033962 /run/other.sock\n\
            0000000022222222: 00000003 00000000 00000000 0001 03 1033963\n";
        assert_eq!(in_flight(listening, std::slice::from_ref(&sock)), 0, "only the listener");
        let busy =
            format!("{listening}00000000c13cca39: 00000003 00000000 00000000 0001 03 1034470 {}\n", sock.display());
        assert_eq!(in_flight(&busy, std::slice::from_ref(&sock)), 1);
        assert_eq!(in_flight(&busy, &[]), 0);
    }

    #[tokio::test]
    async fn opens_of_the_session_file_are_seen_in_new_and_old_directories() {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("0000aaaa0000aaaa")).unwrap();
        std::fs::write(base.path().join("0000aaaa0000aaaa/demo.session"), "{}").unwrap();
        let t0 = Instant::now();
        let (tx, mut rx) = watch::channel(t0);
        watch_uses(base.path(), "demo", tx).unwrap();
        let seen = |rx: &watch::Receiver<Instant>| {
            let mut rx = rx.clone();
            async move { tokio::time::timeout(Duration::from_millis(500), rx.changed()).await.is_ok() }
        };
        // Opening another file, or listing the directory, is not a use.
        std::fs::write(base.path().join("0000aaaa0000aaaa/demo.err"), "").unwrap();
        let _ = std::fs::read_dir(base.path().join("0000aaaa0000aaaa")).unwrap().count();
        assert!(!seen(&rx).await, "no use yet");
        std::fs::read(base.path().join("0000aaaa0000aaaa/demo.session")).unwrap();
        assert!(seen(&rx).await, "a read of the session file is a use");
        rx.borrow_and_update();
        // A directory made after the watch started (a new daemon's) is watched too.
        std::fs::create_dir(base.path().join("1111bbbb1111bbbb")).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(base.path().join("1111bbbb1111bbbb/other.session"), "{}").unwrap();
        assert!(!seen(&rx).await, "another session's file is not a use");
        std::fs::read(base.path().join("1111bbbb1111bbbb/other.session")).unwrap();
        std::fs::write(base.path().join("1111bbbb1111bbbb/demo.session"), "{}").unwrap();
        assert!(seen(&rx).await, "the session file in the new directory is watched");
        assert!(*rx.borrow() > t0);
    }
}
