//! Waiting for the fork's snapshot: polled (two GETs a second for a minute
//! at most is cheap, and needs only `get`, which creating it implies in the
//! chart's roles) until Ready or Failed.

use std::time::Duration;

use kube::api::Api;
use playpen_api::v1alpha1::{BrowserSnapshot, BrowserSnapshotStatus, SnapshotPhase};

use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// How often the snapshot is read.
pub const POLL: Duration = Duration::from_millis(500);

/// The least time a snapshot is waited for (taking one asks the source's
/// runtime, like a suspend).
pub const MIN_WAIT: Duration = Duration::from_secs(60);

/// What a snapshot's status says about waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Ready: sessions may start from it.
    Ready,
    /// Failed: stop, with why.
    Failed(String),
    /// Keep waiting.
    Waiting,
}

/// The verdict on snapshot `ns/name`'s status.
pub fn verdict(ns: &str, name: &str, status: Option<&BrowserSnapshotStatus>) -> Verdict {
    match status.and_then(|s| s.phase) {
        Some(SnapshotPhase::Ready) => Verdict::Ready,
        Some(SnapshotPhase::Failed) => {
            let message = status.and_then(|s| s.message.as_deref()).filter(|m| !m.is_empty());
            let why = message.map(|m| format!(": {m}")).unwrap_or_else(|| " (no status.message)".to_owned());
            Verdict::Failed(format!("BrowserSnapshot {ns}/{name} failed{why}; no fork was created"))
        }
        Some(SnapshotPhase::Pending | SnapshotPhase::Taking) | None => Verdict::Waiting,
    }
}

/// The phase and reason last seen, and how to follow the snapshot.
pub fn timeout_message(ns: &str, name: &str, waited: Duration, status: Option<&BrowserSnapshotStatus>) -> String {
    let head = format!("timed out after {waited:?} waiting for BrowserSnapshot {ns}/{name} to become Ready");
    let seen = match status.and_then(|s| s.phase) {
        None => format!("it has no phase yet: is the Playpen operator running and watching namespace {ns}?"),
        Some(phase) => {
            let reason = status.and_then(|s| s.reason.as_deref()).map(|r| format!(" ({r})")).unwrap_or_default();
            let message = status.and_then(|s| s.message.as_deref()).map(|m| format!(": {m}")).unwrap_or_default();
            format!("its phase is {phase:?}{reason}{message}")
        }
    };
    format!("{head}: {seen}; no fork was created; follow it: kubectl get browsersnapshot {name} -n {ns} -w")
}

/// How long to wait for the snapshot: a minute, or `--wait` if longer.
pub fn budget(wait: Option<Duration>) -> Duration {
    wait.map_or(MIN_WAIT, |w| w.max(MIN_WAIT))
}

/// Reads snapshot `name` every [`POLL`] until Ready (Ok), Failed or `timeout`.
pub async fn until_ready(cluster: &Cluster, name: &str, timeout: Duration) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let api: Api<BrowserSnapshot> = Api::namespaced(cluster.client.clone(), ns);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let read = api.get_opt(name).await.map_err(|e| {
            forbidden::kube_error(e, &Attempt::snapshots("get", ns), format!("get BrowserSnapshot {ns}/{name}"))
        })?;
        let Some(snapshot) = read else {
            return Err(Error::SnapshotFailed(format!("BrowserSnapshot {ns}/{name} was deleted while waiting")));
        };
        let last = snapshot.status;
        match verdict(ns, name, last.as_ref()) {
            Verdict::Ready => return Ok(()),
            Verdict::Failed(why) => return Err(Error::SnapshotFailed(why)),
            Verdict::Waiting => {}
        }
        if tokio::time::Instant::now() + POLL > deadline {
            return Err(Error::Timeout(timeout_message(ns, name, timeout, last.as_ref())));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: Option<SnapshotPhase>, reason: Option<&str>, message: Option<&str>) -> BrowserSnapshotStatus {
        BrowserSnapshotStatus {
            phase,
            reason: reason.map(str::to_owned),
            message: message.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn ready_stops_failed_quotes_the_message_the_rest_waits() {
        assert_eq!(verdict("n", "s", None), Verdict::Waiting);
        for phase in [SnapshotPhase::Pending, SnapshotPhase::Taking] {
            assert_eq!(verdict("n", "s", Some(&status(Some(phase), None, None))), Verdict::Waiting);
        }
        assert_eq!(verdict("n", "s", Some(&status(Some(SnapshotPhase::Ready), None, None))), Verdict::Ready);
        assert_eq!(
            verdict(
                "n",
                "s",
                Some(&status(Some(SnapshotPhase::Failed), Some("TakeFailed"), Some("the runtime answered 503")))
            ),
            Verdict::Failed("BrowserSnapshot n/s failed: the runtime answered 503; no fork was created".into())
        );
        assert_eq!(
            verdict("n", "s", Some(&status(Some(SnapshotPhase::Failed), None, Some("")))),
            Verdict::Failed("BrowserSnapshot n/s failed (no status.message); no fork was created".into())
        );
    }

    #[test]
    fn timeouts_say_what_was_seen_and_how_to_follow() {
        let t = Duration::from_secs(60);
        assert_eq!(
            timeout_message("n", "s", t, None),
            "timed out after 60s waiting for BrowserSnapshot n/s to become Ready: it has no phase yet: is the \
             Playpen operator running and watching namespace n?; no fork was created; follow it: kubectl get \
             browsersnapshot s -n n -w"
        );
        let pending = status(Some(SnapshotPhase::Pending), Some("SourceNotReady"), Some("demo is Starting"));
        assert_eq!(
            timeout_message("n", "s", t, Some(&pending)),
            "timed out after 60s waiting for BrowserSnapshot n/s to become Ready: its phase is Pending \
             (SourceNotReady): demo is Starting; no fork was created; follow it: kubectl get browsersnapshot s -n n -w"
        );
        assert!(timeout_message("n", "s", t, Some(&status(Some(SnapshotPhase::Taking), None, None)))
            .contains("its phase is Taking; no fork"));
    }

    #[test]
    fn the_budget_is_a_minute_or_the_longer_wait() {
        assert_eq!(budget(None), MIN_WAIT);
        assert_eq!(budget(Some(Duration::from_secs(5))), MIN_WAIT);
        assert_eq!(budget(Some(Duration::from_secs(300))), Duration::from_secs(300));
    }
}
