//! `new --wait`: watch the session until it is Ready, fails, or time runs out.

use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use playpen_api::v1alpha1::{condition, Phase};
use playpen_api::BrowserSessionStatus;

use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::rbac::{is_forbidden, Attempt};
use crate::sessions;

/// What a status says about waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Ready: stop waiting.
    Ready,
    /// Failed or Completed: stop, with why.
    Ended(String),
    /// Keep waiting.
    Waiting,
}

/// The verdict on `status` for session `ns/name`.
pub fn verdict(ns: &str, name: &str, status: Option<&BrowserSessionStatus>) -> Verdict {
    match status.and_then(|s| s.phase) {
        Some(Phase::Ready) => Verdict::Ready,
        Some(phase @ (Phase::Failed | Phase::Completed)) => {
            let why = status.map(condition_messages).filter(|m| !m.is_empty());
            let why = why.map(|m| format!(": {m}")).unwrap_or_default();
            Verdict::Ended(format!("BrowserSession {ns}/{name} is {}{why}", phase.as_str()))
        }
        _ => Verdict::Waiting,
    }
}

/// Every condition that is not True, with its reason and message, Ready last.
pub fn condition_messages(status: &BrowserSessionStatus) -> String {
    let mut not_true: Vec<_> = status.conditions.iter().filter(|c| c.status != "True").collect();
    not_true.sort_by_key(|c| c.type_ == condition::READY);
    not_true
        .iter()
        .map(|c| {
            let reason = if c.reason.is_empty() { String::new() } else { format!(" ({})", c.reason) };
            let message = if c.message.is_empty() { String::new() } else { format!(" {}", c.message) };
            format!("{}={}{reason}{message}", c.type_, c.status)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What waiting saw last, for the timeout message.
pub fn timeout_message(ns: &str, name: &str, timeout: Duration, status: Option<&BrowserSessionStatus>) -> String {
    let head = format!("timed out after {timeout:?} waiting for BrowserSession {ns}/{name} to become Ready");
    match status.and_then(|s| s.phase) {
        None => format!(
            "{head}: it has no phase yet (no status): is the Playpen operator running and watching namespace {ns}?"
        ),
        Some(phase) => {
            let why = status.map(condition_messages).filter(|m| !m.is_empty());
            let why = why.map(|m| format!(" ({m})")).unwrap_or_default();
            format!("{head}: its phase is {}{why}", phase.as_str())
        }
    }
}

/// A watch error worth stopping for (forbidden, or the type or namespace
/// gone), worded; any other is printed as a warning and retried (`None`).
pub fn watch_error(err: watcher::Error, ns: &str, name: &str) -> Option<Error> {
    let source = match err {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            e
        }
        watcher::Error::WatchError(status) => kube::Error::Api(status),
        _ => return None,
    };
    match &source {
        kube::Error::Api(status) if is_forbidden(status) || status.is_not_found() => {
            Some(sessions::api_error(source, &Attempt::sessions("watch", Some(ns)), None, ns, format!("watch {name}")))
        }
        _ => {
            eprintln!("warning: watching BrowserSession {ns}/{name}: {source} (retrying)");
            None
        }
    }
}

/// Watches session `name` until Ready; its last status.
pub async fn until_ready(cluster: &Cluster, name: &str, timeout: Duration) -> Result<BrowserSessionStatus> {
    let ns = cluster.namespace.as_str();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(sessions::api(cluster, ns), config).default_backoff().boxed();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last: Option<BrowserSessionStatus> = None;
    loop {
        let event = match tokio::time::timeout_at(deadline, events.next()).await {
            Err(_) => return Err(Error::Timeout(timeout_message(ns, name, timeout, last.as_ref()))),
            Ok(None) => return Err(Error::Timeout(format!("the watch on BrowserSession {ns}/{name} ended"))),
            Ok(Some(event)) => event,
        };
        let session = match event {
            Ok(Event::Apply(s) | Event::InitApply(s)) => s,
            Ok(Event::Delete(_)) => {
                return Err(Error::SessionFailed(format!("BrowserSession {ns}/{name} was deleted while waiting")))
            }
            Ok(Event::Init | Event::InitDone) => continue,
            Err(e) => match watch_error(e, ns, name) {
                Some(fatal) => return Err(fatal),
                None => continue,
            },
        };
        last = session.status;
        match verdict(ns, name, last.as_ref()) {
            Verdict::Ready => return Ok(last.unwrap_or_default()),
            Verdict::Ended(why) => return Err(Error::SessionFailed(why)),
            Verdict::Waiting => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }
    }

    fn status(phase: Option<Phase>, conditions: Vec<Condition>) -> BrowserSessionStatus {
        BrowserSessionStatus { phase, conditions, ..Default::default() }
    }

    #[test]
    fn ready_stops_failed_and_completed_end_everything_else_waits() {
        assert_eq!(verdict("n", "x", None), Verdict::Waiting);
        for phase in [Phase::Pending, Phase::Starting, Phase::Degraded] {
            assert_eq!(verdict("n", "x", Some(&status(Some(phase), vec![]))), Verdict::Waiting, "{phase:?}");
        }
        assert_eq!(verdict("n", "x", Some(&status(Some(Phase::Ready), vec![]))), Verdict::Ready);
        assert_eq!(
            verdict("n", "x", Some(&status(Some(Phase::Completed), vec![]))),
            Verdict::Ended("BrowserSession n/x is Completed".into())
        );
    }

    #[test]
    fn failure_names_the_phase_and_the_conditions_why() {
        let s = status(
            Some(Phase::Failed),
            vec![
                cond("Ready", "False", "ConfigUnresolved", "the session cannot start"),
                cond(
                    "ConfigResolved",
                    "False",
                    "SecretNotFound",
                    "spec.launchConfig.secretRef: Secret \"x\" not found",
                ),
                cond("SandboxEnforced", "True", "Enforced", "fine"),
            ],
        );
        let Verdict::Ended(why) = verdict("team-a", "demo", Some(&s)) else { panic!("not ended") };
        assert_eq!(
            why,
            "BrowserSession team-a/demo is Failed: ConfigResolved=False (SecretNotFound) spec.launchConfig.secretRef: \
             Secret \"x\" not found; Ready=False (ConfigUnresolved) the session cannot start"
        );
    }

    #[test]
    fn condition_messages_skip_empty_parts() {
        let s =
            status(None, vec![cond("BrowserReady", "Unknown", "", ""), cond("ViewerReady", "False", "Starting", "")]);
        assert_eq!(condition_messages(&s), "BrowserReady=Unknown; ViewerReady=False (Starting)");
        assert_eq!(condition_messages(&status(None, vec![])), "");
    }

    #[test]
    fn timeouts_name_the_phase_seen_or_its_absence() {
        let t = Duration::from_secs(3);
        let none = timeout_message("ns", "x", t, None);
        assert_eq!(
            none,
            "timed out after 3s waiting for BrowserSession ns/x to become Ready: it has no phase yet (no status): \
             is the Playpen operator running and watching namespace ns?"
        );
        let pending = status(Some(Phase::Pending), vec![cond("PodScheduled", "False", "Unschedulable", "no nodes")]);
        assert_eq!(
            timeout_message("ns", "x", t, Some(&pending)),
            "timed out after 3s waiting for BrowserSession ns/x to become Ready: its phase is Pending \
             (PodScheduled=False (Unschedulable) no nodes)"
        );
        assert!(timeout_message("ns", "x", t, Some(&status(Some(Phase::Starting), vec![])))
            .ends_with("its phase is Starting"));
    }
}
