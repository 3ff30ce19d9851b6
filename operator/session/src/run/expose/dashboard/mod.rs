//! The dashboard behind the viewer relay, as a supervised child that runs
//! only while viewers need it. Idle, its Node process held about 138 MB
//! RSS for nobody, so by default ([`Mode::OnDemand`]) a viewer's first
//! connection starts it, and once no viewer connection has been open for
//! the idle period it is stopped (its process group killed) and the
//! upstream withdrawn; the next connection starts it again. A dashboard
//! that crashes while in use is restarted with backoff, as before; a start
//! that fails is published, so the connections waiting for it get a 503
//! that says why, and the next viewer tries again. [`Mode::Eager`] keeps
//! the old behaviour: started at once, never stopped for idleness.

pub(crate) mod child;

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::run::expose::relay::upstream::{Publisher, Upstream, Viewers};
use crate::run::process::reaper::Managed;
use crate::run::process::supervisor::{Backoff, ChildSpec};
pub use child::dashboard_args;

/// When the dashboard runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// From start-up to the end, whether or not anyone views.
    Eager,
    /// From a viewer's first connection until no viewer connection has been
    /// open for `idle`.
    OnDemand {
        /// How long it stays up with no viewer.
        idle: Duration,
    },
}

/// Why a run of the dashboard ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// It never answered.
    StartFailed,
    /// It exited by itself while serving.
    Crashed,
    /// No viewer for the idle period: stopped on purpose.
    Idle,
    /// The runtime is closing.
    Stopping,
}

/// What the next start waits for (after the backoff delay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Nothing: start.
    Start,
    /// A viewer connection.
    Viewer,
}

/// When an idle dashboard is stopped: never in eager mode, nor while a
/// viewer connection is open; otherwise the idle period after the last one closed.
fn idle_deadline(mode: Mode, viewers: Viewers) -> Option<Instant> {
    match mode {
        Mode::OnDemand { idle } if viewers.open == 0 => Some(viewers.none_since + idle),
        _ => None,
    }
}

/// After a run: eager mode always starts again; on demand, only a crash
/// within the idle period does (someone may be looking; a WebSocket cut by
/// the crash may already have closed), everything else waits for a viewer.
fn next_after(mode: Mode, ended: Ended, viewers: Viewers, now: Instant) -> Next {
    let idle_over = idle_deadline(mode, viewers).is_some_and(|deadline| deadline <= now);
    match (mode, ended) {
        (Mode::Eager, _) => Next::Start,
        (Mode::OnDemand { .. }, Ended::Crashed) if !idle_over => Next::Start,
        (Mode::OnDemand { .. }, _) => Next::Viewer,
    }
}

/// Runs the dashboard as `mode` says until `stop`, publishing its state.
pub async fn supervise(
    spec: ChildSpec,
    start_timeout: Duration,
    mode: Mode,
    managed: Managed,
    mut publisher: Publisher,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::default();
    let mut next = if mode == Mode::Eager { Next::Start } else { Next::Viewer };
    let mut delay = Duration::ZERO;
    while !*stop.borrow() {
        let viewers = &mut publisher.viewers;
        let wanted = async {
            tokio::time::sleep(delay).await;
            if next == Next::Viewer && viewers.wait_for(|v| v.open > 0).await.is_err() {
                // No relay, so no viewer ever: nothing to start for.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = wanted => {}
            changed = stop.changed() => if changed.is_ok() { continue } else { break },
        }
        if next == Next::Viewer {
            tracing::info!("a viewer connected: starting the dashboard");
        }
        publisher.publish(Upstream::Starting);
        let started = Instant::now();
        let ended = match child::start(&spec, start_timeout, &managed).await {
            Err(failed) => {
                publisher.publish(Upstream::Failed(failed.to_string()));
                Ended::StartFailed
            }
            Ok(mut running) => {
                tracing::info!(pid = running.pid, addr = %running.addr, took = ?started.elapsed(), "dashboard running");
                publisher.publish(Upstream::Serving(running.addr));
                let ended = serve_until_end(&mut running, mode, &mut publisher.viewers, &mut stop).await;
                // Withdrawn before the kill: a connection arriving now waits for the next start.
                publisher.publish(if ended == Ended::Crashed { Upstream::Starting } else { Upstream::Stopped });
                running.stop(&managed).await;
                ended
            }
        };
        if ended == Ended::Stopping {
            break;
        }
        let after_backoff = backoff.after_run(started.elapsed());
        delay = if ended == Ended::Idle { Duration::ZERO } else { after_backoff };
        next = next_after(mode, ended, *publisher.viewers.borrow(), Instant::now());
        if next == Next::Viewer && ended == Ended::Crashed {
            publisher.publish(Upstream::Stopped);
        }
    }
    publisher.publish(Upstream::Stopped);
}

/// Waits until the running dashboard exits, the runtime stops, or it has
/// had no viewer for the idle period.
async fn serve_until_end(
    running: &mut child::Running,
    mode: Mode,
    viewers: &mut watch::Receiver<Viewers>,
    stop: &mut watch::Receiver<bool>,
) -> Ended {
    let mut relay_gone = false;
    loop {
        let deadline = idle_deadline(mode, *viewers.borrow_and_update());
        let idle = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let viewers_changed = async {
            if relay_gone {
                std::future::pending::<()>().await;
            }
            relay_gone = viewers.changed().await.is_err();
        };
        tokio::select! {
            status = running.exited() => {
                tracing::warn!(pid = running.pid, ?status, "dashboard exited");
                return Ended::Crashed;
            }
            _ = stop.changed() => return Ended::Stopping,
            () = idle => {
                tracing::info!(pid = running.pid, ?mode, "no viewer for the idle period: stopping the dashboard");
                return Ended::Idle;
            }
            () = viewers_changed => {}
        }
    }
}

#[cfg(test)]
mod tests;
