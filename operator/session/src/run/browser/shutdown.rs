//! Graceful close on SIGTERM: stop restarting children, finish recordings
//! (`tracing-stop`, `video-stop`), close the browser
//! through the CLI's own protocol (`playwright-cli -s=<session> close` with
//! the session's environment, so it finds the daemon), stop the dashboard,
//! and kill whatever is left once the grace period runs out.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::watch;

use crate::run::browser::daemon::{kill_orphans, DaemonState};
use crate::run::browser::recording::Recorder;
use crate::run::process::reaper::{reap_orphans, Managed};
use crate::run::process::supervisor::{run_to_end, signal_group, ChildSpec};

/// Time kept back at the end of the grace period for the hard kill.
const KILL_RESERVE: Duration = Duration::from_secs(3);

/// `close`'s argv for `session`.
pub fn close_args(session: &str) -> Vec<String> {
    vec![format!("-s={session}"), "close".to_owned()]
}

/// The whole sequence, bounded by `grace`.
pub async fn graceful(
    close: &ChildSpec,
    recorder: Option<&Recorder>,
    grace: Duration,
    managed: &Managed,
    stop: &watch::Sender<bool>,
    mut daemon: watch::Receiver<DaemonState>,
) {
    let deadline = Instant::now() + grace.saturating_sub(KILL_RESERVE);
    let _ = stop.send(true);
    if matches!(*daemon.borrow(), DaemonState::Running { .. }) {
        if let Some(recorder) = recorder {
            // Half the time left at most: the close must still fit.
            recorder.stop(managed, deadline.saturating_duration_since(Instant::now()) / 2).await;
        }
        run_to_end(close, deadline.saturating_duration_since(Instant::now()), managed).await;
    }
    let stopped = tokio::time::timeout(
        deadline.saturating_duration_since(Instant::now()),
        daemon.wait_for(|s| *s == DaemonState::Stopped),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    if !stopped {
        if let DaemonState::Running { pid } = *daemon.borrow() {
            tracing::warn!(pid, "the daemon did not stop in time; killing it");
            signal_group(pid, Signal::SIGKILL);
        }
    }
    // Browsers left by a daemon that died (adopted by us as subreaper / PID 1).
    kill_orphans(managed, Duration::from_secs(2)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    reap_orphans(managed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_the_session_explicitly() {
        assert_eq!(close_args("demo"), ["-s=demo", "close"]);
    }
}
