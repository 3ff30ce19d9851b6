//! Status phase: a pure function from what the cluster reports (missing
//! references, the browser Pod's status and its termination message) to the
//! BrowserSession's status. The Pod holds no API credentials; everything the
//! runtime wants to say reaches us through its Pod status.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use playpen_api::export_status::ExportStatus;
use playpen_api::layout::RECORDINGS_DIR;
use playpen_api::runtime_config::{TerminationReport, FALLBACK_REASON, RUNTIME_FAILURE_REASONS};
use playpen_api::text::{condition_reason, truncate, CONDITION_MESSAGE_MAX_BYTES};
use playpen_api::v1alpha1::{
    condition, BrowserSessionStatus, CdpStatus, Phase, RecordingStatus, SandboxMode, ViewerStatus,
};
use playpen_api::BrowserSession;

use crate::children::{egress_summary, operator_reads, EgressDefaults, Identity};
pub use crate::error::Refused;
use crate::recovery::{self, Recovery};
use crate::validate::MissingReference;

/// What the cluster told us this reconcile.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// Referenced objects that do not exist.
    pub missing: &'a [MissingReference],
    /// The browser Pod as last applied or read, if it exists.
    pub pod: Option<&'a Pod>,
    /// What the recovery phase decided (and the reconcile did) about it.
    pub recovery: &'a Recovery,
    /// A child the API server refused this reconcile, if one was.
    pub refused: Option<&'a Refused>,
    /// What the session's exporter last reported ([`crate::export_watch`]).
    pub export: Option<&'a ExportStatus>,
}

/// The reason of `ChildrenApplied=False`, and of `Ready` while it is.
pub const CHILD_REFUSED: &str = "ChildRefused";

/// A condition before timestamps are settled.
pub(crate) struct Cond {
    type_: &'static str,
    ok: bool,
    reason: String,
    message: String,
}

impl Cond {
    pub(crate) fn new(type_: &'static str, ok: bool, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self { type_, ok, reason: reason.into(), message: message.into() }
    }
}

fn browser_container(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == crate::children::BROWSER_CONTAINER)
}

fn pod_condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// The runtime's last failure, from the current or previous termination.
fn last_failure(c: &ContainerStatus) -> Option<TerminationReport> {
    let terminated = c
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .or_else(|| c.last_state.as_ref().and_then(|s| s.terminated.as_ref()))?;
    if terminated.exit_code == 0 {
        return None;
    }
    // TerminationReport::parse bounds and cleans what the Pod wrote.
    let report =
        terminated.message.as_deref().filter(|m| !m.trim().is_empty()).map(TerminationReport::parse).unwrap_or_else(
            || TerminationReport {
                reason: terminated.reason.clone().unwrap_or_else(|| FALLBACK_REASON.into()),
                message: format!("the browser container exited with code {}", terminated.exit_code),
            },
        );
    Some(report)
}

/// The phase a session's status would report for its browser `pod` alone.
pub fn browser_phase(pod: Option<&Pod>) -> Phase {
    from_pod(pod).0
}

/// Browser condition and phase from the Pod.
fn from_pod(pod: Option<&Pod>) -> (Phase, Cond, Cond) {
    let Some(pod) = pod else {
        return (
            Phase::Pending,
            Cond::new(condition::POD_SCHEDULED, false, "PodNotCreated", "the browser Pod does not exist yet"),
            Cond::new(condition::BROWSER_READY, false, "PodNotCreated", "the browser Pod does not exist yet"),
        );
    };
    let scheduled = match pod_condition(pod, "PodScheduled") {
        Some(c) if c.status == "True" => {
            Cond::new(condition::POD_SCHEDULED, true, "Scheduled", "the Pod is bound to a node")
        }
        Some(c) => Cond::new(
            condition::POD_SCHEDULED,
            false,
            c.reason.clone().unwrap_or_else(|| "Unschedulable".into()),
            c.message.clone().unwrap_or_default(),
        ),
        None => Cond::new(condition::POD_SCHEDULED, false, "Pending", "waiting for the scheduler"),
    };
    let pod_phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let container = browser_container(pod);
    let failure = container.and_then(last_failure);
    if pod.metadata.deletion_timestamp.is_some() {
        let b = Cond::new(condition::BROWSER_READY, false, "Terminating", "the browser is closing");
        return (Phase::Degraded, scheduled, b);
    }
    match pod_phase {
        "Succeeded" => {
            let b = Cond::new(
                condition::BROWSER_READY,
                false,
                "SessionEnded",
                "the session closed (idle timeout or maximum lifetime)",
            );
            return (Phase::Completed, scheduled, b);
        }
        "Failed" => {
            let r = failure.unwrap_or_else(|| TerminationReport {
                reason: pod.status.as_ref().and_then(|s| s.reason.clone()).unwrap_or_else(|| "PodFailed".into()),
                message: pod
                    .status
                    .as_ref()
                    .and_then(|s| s.message.clone())
                    .unwrap_or_else(|| "the browser Pod failed".into()),
            });
            return (Phase::Failed, scheduled, Cond::new(condition::BROWSER_READY, false, r.reason, r.message));
        }
        _ => {}
    }
    if !scheduled.ok {
        let b = Cond::new(condition::BROWSER_READY, false, "PodNotScheduled", "waiting for the Pod to be scheduled");
        return (Phase::Pending, scheduled, b);
    }
    let Some(c) = container else {
        let b =
            Cond::new(condition::BROWSER_READY, false, "ContainerCreating", "the browser container has not started");
        return (Phase::Starting, scheduled, b);
    };
    let restarts = c.restart_count;
    if c.ready {
        let message = match (&failure, restarts) {
            (Some(r), n) if n > 0 => {
                format!("recovered after {n} restart(s); last failure {}: {}", r.reason, r.message)
            }
            _ => DAEMON_UP.to_owned(),
        };
        return (Phase::Ready, scheduled, Cond::new(condition::BROWSER_READY, true, "Running", message));
    }
    if let Some(waiting) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) {
        let reason = waiting.reason.clone().unwrap_or_else(|| "Waiting".into());
        // A crash loop says more through the runtime's own report.
        if let (Some(r), true) = (&failure, reason == "CrashLoopBackOff") {
            return (
                Phase::Degraded,
                scheduled,
                Cond::new(condition::BROWSER_READY, false, r.reason.clone(), r.message.clone()),
            );
        }
        let phase = if restarts > 0 { Phase::Degraded } else { Phase::Starting };
        let message = waiting.message.clone().unwrap_or_else(|| format!("the browser container is waiting: {reason}"));
        return (phase, scheduled, Cond::new(condition::BROWSER_READY, false, reason, message));
    }
    if let Some(r) = failure {
        return (Phase::Degraded, scheduled, Cond::new(condition::BROWSER_READY, false, r.reason, r.message));
    }
    (
        Phase::Starting,
        scheduled,
        Cond::new(condition::BROWSER_READY, false, "Starting", "the runtime is starting the browser"),
    )
}

/// Whether a session that was never up, whose browser container failed for
/// `reason`, is still starting: Degraded is for a session that was Ready and
/// broke. A container killed or out of memory on a busy node is started
/// again; what the runtime reports when it gives up is the session's own
/// doing ([`RUNTIME_FAILURE_REASONS`]), and a Pod being deleted is not starting.
fn still_starting(pod: Option<&Pod>, reason: &str) -> bool {
    pod.is_some_and(|p| p.metadata.deletion_timestamp.is_none()) && !RUNTIME_FAILURE_REASONS.contains(&reason)
}

/// BrowserReady reason while the runtime restarts a browser in place.
const RECOVERING: &str = "BrowserRecovering";
/// BrowserReady reason once it is back.
const RECOVERED: &str = "Recovered";
/// The plain Ready message of [`from_pod`] (no container restarts to tell about).
const DAEMON_UP: &str = "the browser daemon is up";

/// An in-place restart changes nothing in the Pod but its readiness (the
/// runtime's probe fails once per restart): the container kept running, so
/// only the previous condition can tell "starting" from "was up, went down".
/// Remember it, so that the status still says what happened once it is back.
/// A flip too short to be seen still leaves the Pod's Ready condition with a
/// transition later than the one we recorded: that counts too.
fn remember_recovery(
    browser: Cond,
    previous: &[Condition],
    pod_ready_since: Option<Timestamp>,
    now: Timestamp,
) -> Cond {
    let Some(prev) = previous.iter().find(|c| c.type_ == condition::BROWSER_READY) else { return browser };
    let still_starting = !browser.ok && browser.reason == "Starting";
    let plainly_up = browser.ok && browser.message == DAEMON_UP;
    let back = pod_ready_since.unwrap_or(now);
    let recovered = |message: String| Cond::new(condition::BROWSER_READY, true, RECOVERED, message);
    match (prev.status.as_str(), prev.reason.as_str()) {
        ("True", _) if still_starting => Cond::new(
            condition::BROWSER_READY,
            false,
            RECOVERING,
            format!(
                "the browser stopped answering at {now} while its container kept running; the runtime restarts it \
                 in place (the Pod's events carry the probe's message)"
            ),
        ),
        ("False", RECOVERING) if still_starting => {
            Cond::new(condition::BROWSER_READY, false, RECOVERING, &prev.message)
        }
        ("False", RECOVERING) if plainly_up => recovered(format!(
            "the browser daemon is up; it was restarted in place after it stopped answering at {} (back at {back})",
            prev.last_transition_time.0
        )),
        ("True", reason) if plainly_up && pod_ready_since.is_some_and(|t| t > prev.last_transition_time.0) => {
            let message = format!(
                "the browser daemon is up; it was restarted in place after {} (back at {back})",
                prev.last_transition_time.0
            );
            if reason == RECOVERED && prev.message.ends_with(&format!("(back at {back})")) {
                recovered(prev.message.clone())
            } else {
                recovered(message)
            }
        }
        ("True", RECOVERED) if plainly_up => recovered(prev.message.clone()),
        _ => browser,
    }
}

/// `kubectl port-forward` command that reaches the viewer.
pub fn port_forward_command(namespace: &str, service: &str, port: i32) -> String {
    format!("kubectl -n {namespace} port-forward svc/{service} {port}:{port}")
}

/// The whole status of `bs` given what we observed and the cluster's egress settings.
pub fn compute(
    bs: &BrowserSession,
    id: &Identity,
    observed: Observed<'_>,
    egress: &EgressDefaults,
    now: Timestamp,
) -> BrowserSessionStatus {
    let spec = &bs.spec;
    let resolved = match observed.missing.first() {
        None => Cond::new(condition::CONFIG_RESOLVED, true, "Resolved", "every referenced object exists"),
        Some(m) => {
            let all: Vec<String> = observed.missing.iter().map(|m| m.message(&id.namespace)).collect();
            Cond::new(condition::CONFIG_RESOLVED, false, m.reason(), all.join("; "))
        }
    };
    let previous = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let (mut phase, scheduled, browser) = from_pod(observed.pod);
    let was_up = matches!(bs.status.as_ref().and_then(|s| s.phase), Some(Phase::Ready | Phase::Degraded));
    if phase == Phase::Degraded && !was_up && still_starting(observed.pod, &browser.reason) {
        phase = Phase::Starting;
    }
    // The Pod's Ready speaks for the browser only when the browser is its only
    // container: an agent sidecar's own restarts flip it too.
    let browser_only = observed
        .pod
        .filter(|p| p.spec.as_ref().is_none_or(|s| s.containers.len() <= 1))
        .filter(|p| p.status.as_ref().and_then(|s| s.container_statuses.as_ref()).is_none_or(|c| c.len() == 1));
    let pod_ready_since =
        browser_only.and_then(|p| pod_condition(p, "Ready")).and_then(|c| c.last_transition_time.as_ref()).map(|t| t.0);
    let mut browser = remember_recovery(browser, previous, pod_ready_since, now);
    if browser.reason == RECOVERING {
        phase = Phase::Degraded;
    }
    let done = bs.status.as_ref().and_then(|s| s.pod_replacements.as_ref());
    let replacements = recovery::record(done, observed.recovery, now);
    match observed.recovery {
        Recovery::Replace { reason, message } => {
            let n = replacements.as_ref().map_or(1, |r| r.count);
            phase = Phase::Degraded;
            browser = Cond::new(
                condition::BROWSER_READY,
                false,
                "BrowserPodReplaced",
                format!("the browser Pod failed ({reason}: {message}); replaced it (replacement {n})"),
            );
        }
        Recovery::Wait { until, reason, message } => {
            phase = Phase::Degraded;
            browser = Cond::new(
                condition::BROWSER_READY,
                false,
                reason.clone(),
                format!("the browser Pod failed ({message}); it is replaced at {until}"),
            );
        }
        Recovery::GiveUp { message, .. } => {
            phase = Phase::Failed;
            browser = Cond::new(condition::BROWSER_READY, false, recovery::BUDGET_EXHAUSTED, message.clone());
        }
        Recovery::None if replacements.as_ref().is_some_and(|r| r.gave_up) => {
            // The Pod was stopped when the budget ran out; say so for good.
            phase = Phase::Failed;
            let said = previous.iter().find(|c| c.type_ == condition::BROWSER_READY);
            let message = said
                .filter(|c| c.reason == recovery::BUDGET_EXHAUSTED)
                .map_or_else(|| "the restart budget is spent".to_owned(), |c| c.message.clone());
            browser = Cond::new(condition::BROWSER_READY, false, recovery::BUDGET_EXHAUSTED, message);
        }
        Recovery::None => {}
    }
    if !resolved.ok {
        phase = Phase::Failed;
    }
    let applied = match observed.refused {
        None => Cond::new(
            condition::CHILDREN_APPLIED,
            true,
            "Applied",
            "every object of the session is as the operator wants it",
        ),
        Some(r) => Cond::new(
            condition::CHILDREN_APPLIED,
            false,
            CHILD_REFUSED,
            format!(
                "the API server refused {} {}: {}; retried with backoff until it is accepted",
                r.kind, r.name, r.message
            ),
        ),
    };
    // The real Pod's phase, but never Ready while the session lacks a child
    // (without its NetworkPolicy a Pod has no network at all).
    if !applied.ok && phase == Phase::Ready {
        phase = if was_up { Phase::Degraded } else { Phase::Starting };
    }
    let viewer = if spec.browser.viewer.enabled {
        if browser.ok {
            Cond::new(
                condition::VIEWER_READY,
                true,
                "Listening",
                format!("the viewer answers on 127.0.0.1:{} in the Pod", spec.browser.viewer.port),
            )
        } else {
            Cond::new(condition::VIEWER_READY, false, "BrowserNotReady", "the viewer starts with the browser")
        }
    } else {
        Cond::new(condition::VIEWER_READY, false, "Disabled", "spec.viewer.enabled is false")
    };
    let sandbox = match spec.browser.sandbox {
        SandboxMode::Enforced => Cond::new(condition::SANDBOX_ENFORCED, true, "Enforced", "Chromium's sandbox is on"),
        SandboxMode::Disabled => Cond::new(
            condition::SANDBOX_ENFORCED,
            false,
            "Disabled",
            "Chromium's sandbox is off because spec.sandbox is Disabled; renderers share the browser's privileges",
        ),
    };
    // True whatever the mode: the condition says which policy the operator
    // applied; whether the cluster's network plugin enforces it is its own.
    let mode = spec.network.egress.mode;
    let egress = Cond::new(
        condition::EGRESS_POLICY,
        true,
        mode.as_str(),
        egress_summary(&spec.network.egress, operator_reads(bs), egress),
    );
    let ready_ok = resolved.ok && applied.ok && browser.ok && (viewer.ok || !spec.browser.viewer.enabled);
    let ready = if ready_ok {
        Cond::new(
            condition::READY,
            true,
            "SessionReady",
            "drive it with playwright-cli; view it through the port-forward command",
        )
    } else {
        let first = [&resolved, &applied, &scheduled, &browser].into_iter().find(|c| !c.ok).unwrap_or(&browser);
        Cond::new(condition::READY, false, first.reason.clone(), first.message.clone())
    };
    let generation = bs.metadata.generation;
    let exporting = spec.recording.export.is_some();
    let exported = exporting.then(|| export::condition(observed.export));
    let conditions = [ready, resolved, applied, scheduled, browser, viewer, sandbox, egress]
        .into_iter()
        .chain(exported)
        .map(|c| settle(c, previous, generation, now))
        .collect();
    let viewer_status = spec.browser.viewer.enabled.then(|| ViewerStatus {
        service: id.names.viewer_service.clone(),
        port: spec.browser.viewer.port,
        command: port_forward_command(&id.namespace, &id.names.viewer_service, spec.browser.viewer.port),
    });
    BrowserSessionStatus {
        phase: Some(phase),
        observed_generation: generation,
        conditions,
        session_name: Some(id.session_name.clone()),
        socket_namespace: Some(id.socket_namespace.clone()),
        pod_name: observed.pod.map(|_| id.names.pod.clone()),
        viewer: viewer_status,
        cdp: spec.browser.cdp.enabled.then(|| CdpStatus {
            service: id.names.viewer_service.clone(),
            port: spec.browser.cdp.port,
            command: port_forward_command(&id.namespace, &id.names.viewer_service, spec.browser.cdp.port),
        }),
        recording: (spec.recording.video || spec.recording.trace).then(|| RecordingStatus {
            directory: RECORDINGS_DIR.to_owned(),
            video: spec.recording.video,
            trace: spec.recording.trace,
            command: format!("kubectl playpen record {} -n {}", id.name, id.namespace),
            export: observed.export.filter(|_| exporting).map(export::export_status),
        }),
        exec_hint: Some(format!(
            "kubectl -n {} exec {} -c browser -- playwright-cli goto https://example.com",
            id.namespace, id.names.pod
        )),
        restarts: observed.pod.and_then(browser_container).map(|c| c.restart_count),
        pod_replacements: replacements,
        pool: None,
        // What the suspend stage ([`crate::suspend`]) makes of it.
        suspend: bs.status.as_ref().and_then(|s| s.suspend.clone()),
    }
}

/// Reason of a condition whose reason (from a Pod, a kubelet or a scheduler)
/// the API server would refuse.
const UNREADABLE_REASON: &str = "Unspecified";

/// Keeps `lastTransitionTime` when the condition's status did not change.
/// Every condition leaves through here, so this is where text from outside
/// is made acceptable to the API server: a refused status patch would leave
/// the session without a status for good.
pub(crate) fn settle(c: Cond, previous: &[Condition], generation: Option<i64>, now: Timestamp) -> Condition {
    let status = if c.ok { "True" } else { "False" };
    let last = previous
        .iter()
        .find(|p| p.type_ == c.type_ && p.status == status)
        .map(|p| p.last_transition_time.clone())
        .unwrap_or(Time(now));
    Condition {
        type_: c.type_.to_owned(),
        status: status.to_owned(),
        reason: condition_reason(&c.reason, UNREADABLE_REASON),
        message: truncate(&c.message, CONDITION_MESSAGE_MAX_BYTES),
        observed_generation: generation,
        last_transition_time: last,
    }
}

pub mod export;
pub mod from;
pub mod pool;
pub mod suspend;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
