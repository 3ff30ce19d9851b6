//! Recovery phase: a pure decision, from the browser Pod as it stands and
//! what the operator already did, whether to replace the Pod. An evicted or
//! Failed Pod (the node ran short, the Pod was preempted, the node went
//! away) is replaced, with a growing delay between replacements and a
//! budget; a browser container that crash-loops past its budget is stopped.
//! A Succeeded Pod is a session that ended: it is left alone.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use playpen_api::v1alpha1::PodReplacements;

use crate::children::BROWSER_CONTAINER;

/// How much recovery a session gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryBudget {
    /// Failed or evicted Pods replaced per session, at most.
    pub pod_replacements: i32,
    /// Restarts of the browser container (in place, by the kubelet) before
    /// the operator stops a crash-looping Pod for good.
    pub container_restarts: i32,
    /// Delay before the second replacement; it doubles for each further one.
    pub backoff: Duration,
    /// The longest delay between replacements.
    pub max_backoff: Duration,
}

impl Default for RecoveryBudget {
    fn default() -> Self {
        Self {
            pod_replacements: 5,
            container_restarts: 10,
            backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
        }
    }
}

/// What to do about the browser Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing: no Pod, or a Pod that is running, starting or ended.
    None,
    /// Delete the failed Pod now (the next reconcile creates a new one).
    Replace {
        /// The Pod's reason (`Evicted`, `PodFailed`, ...).
        reason: String,
        /// What happened, for the Event and the condition.
        message: String,
    },
    /// The Pod failed, but the last replacement was too recent.
    Wait {
        /// When it may be replaced.
        until: Timestamp,
        /// The Pod's reason.
        reason: String,
        /// What happened.
        message: String,
    },
    /// The budget is spent: the session is Failed for good.
    GiveUp {
        /// Why, for the condition.
        message: String,
        /// Whether the Pod is still running (crash-looping) and must be stopped.
        stop_pod: bool,
    },
}

/// Reason of the condition once the budget is spent.
pub const BUDGET_EXHAUSTED: &str = "RestartBudgetExhausted";

fn failure(pod: &Pod) -> (String, String) {
    let status = pod.status.as_ref();
    let reason = status.and_then(|s| s.reason.clone()).unwrap_or_else(|| "PodFailed".to_owned());
    let message = status.and_then(|s| s.message.clone()).unwrap_or_else(|| "the browser Pod failed".to_owned());
    (reason, message)
}

/// The delay before replacement number `done + 1`.
fn delay(budget: RecoveryBudget, done: i32) -> Duration {
    if done <= 0 {
        return Duration::ZERO;
    }
    let factor = 1u32 << u32::try_from(done - 1).unwrap_or(0).min(16);
    budget.backoff.saturating_mul(factor).min(budget.max_backoff)
}

/// Decides what to do about `pod`, given the replacements recorded so far.
pub fn decide(pod: Option<&Pod>, done: Option<&PodReplacements>, budget: RecoveryBudget, now: Timestamp) -> Recovery {
    let Some(pod) = pod.filter(|p| p.metadata.deletion_timestamp.is_none()) else { return Recovery::None };
    let count = done.map_or(0, |d| d.count);
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    if phase == "Failed" {
        let (reason, message) = failure(pod);
        if count >= budget.pod_replacements {
            return Recovery::GiveUp {
                message: format!(
                    "the browser Pod failed ({reason}: {message}) after {count} replacement(s), the budget; \
                     delete and re-create the BrowserSession once the cause is fixed"
                ),
                stop_pod: false,
            };
        }
        let wait = SignedDuration::try_from(delay(budget, count)).unwrap_or(SignedDuration::MAX);
        let until = done.map_or(now, |d| d.last_time.0.saturating_add(wait).unwrap_or(now));
        return if until > now {
            Recovery::Wait { until, reason, message }
        } else {
            Recovery::Replace { reason, message }
        };
    }
    let crash_looping = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == BROWSER_CONTAINER))
        .filter(|c| c.restart_count >= budget.container_restarts && !c.ready);
    if let Some(c) = crash_looping {
        return Recovery::GiveUp {
            message: format!(
                "the browser container restarted {} times without becoming ready, the budget; the Pod was \
                 stopped (its last report is in the Pod's events); delete and re-create the BrowserSession once \
                 the cause is fixed",
                c.restart_count
            ),
            stop_pod: true,
        };
    }
    Recovery::None
}

/// The replacements record after acting on `recovery`.
pub fn record(done: Option<&PodReplacements>, recovery: &Recovery, now: Timestamp) -> Option<PodReplacements> {
    match recovery {
        Recovery::Replace { reason, .. } => Some(PodReplacements {
            count: done.map_or(0, |d| d.count).saturating_add(1),
            last_time: Time(now),
            last_reason: reason.clone(),
            gave_up: false,
        }),
        Recovery::GiveUp { .. } => Some(PodReplacements {
            count: done.map_or(0, |d| d.count),
            last_time: done.map_or(Time(now), |d| d.last_time.clone()),
            last_reason: done.map_or_else(|| BUDGET_EXHAUSTED.to_owned(), |d| d.last_reason.clone()),
            gave_up: true,
        }),
        Recovery::None | Recovery::Wait { .. } => done.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("ts")
    }

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status})).expect("pod")
    }

    fn evicted() -> Pod {
        pod(json!({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}))
    }

    fn done(count: i32, at: &str) -> PodReplacements {
        PodReplacements { count, last_time: Time(ts(at)), last_reason: "Evicted".into(), gave_up: false }
    }

    const NOW: &str = "2026-12-01T12:00:00Z";

    #[test]
    fn an_evicted_pod_is_replaced_at_once_the_first_time() {
        let r = decide(Some(&evicted()), None, RecoveryBudget::default(), ts(NOW));
        assert_eq!(
            r,
            Recovery::Replace { reason: "Evicted".into(), message: "The node was low on resource: memory.".into() }
        );
        let recorded = record(None, &r, ts(NOW)).expect("recorded");
        assert_eq!((recorded.count, recorded.last_reason.as_str(), recorded.gave_up), (1, "Evicted", false));
    }

    #[test]
    fn later_replacements_wait_a_doubling_delay() {
        let budget = RecoveryBudget::default();
        // One done 5 s ago: the second waits 10 s.
        let r = decide(Some(&evicted()), Some(&done(1, "2026-12-01T11:59:55Z")), budget, ts(NOW));
        assert!(matches!(r, Recovery::Wait { until, .. } if until == ts("2026-12-01T12:00:05Z")), "{r:?}");
        // Three done, the last 30 s ago: the fourth waits 40 s.
        let r = decide(Some(&evicted()), Some(&done(3, "2026-12-01T11:59:30Z")), budget, ts(NOW));
        assert!(matches!(r, Recovery::Wait { until, .. } if until == ts("2026-12-01T12:00:10Z")), "{r:?}");
        let r = decide(Some(&evicted()), Some(&done(3, "2026-12-01T11:59:00Z")), budget, ts(NOW));
        assert!(matches!(r, Recovery::Replace { .. }), "{r:?}");
        assert_eq!(delay(budget, 30), budget.max_backoff, "capped");
    }

    #[test]
    fn the_budget_ends_replacements() {
        let r = decide(Some(&evicted()), Some(&done(5, "2026-12-01T10:00:00Z")), RecoveryBudget::default(), ts(NOW));
        let Recovery::GiveUp { message, stop_pod } = &r else { panic!("{r:?}") };
        assert!(!stop_pod && message.contains("Evicted") && message.contains("after 5 replacement(s)"), "{message}");
        let recorded = record(Some(&done(5, "2026-12-01T10:00:00Z")), &r, ts(NOW)).expect("recorded");
        assert!(recorded.gave_up && recorded.count == 5);
    }

    #[test]
    fn a_crash_loop_past_its_budget_is_stopped_and_an_ended_or_healthy_pod_is_left_alone() {
        let looping = pod(json!({"phase": "Running", "containerStatuses": [{"name": "browser", "ready": false,
            "restartCount": 10, "image": "i", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}));
        let r = decide(Some(&looping), None, RecoveryBudget::default(), ts(NOW));
        assert!(matches!(r, Recovery::GiveUp { stop_pod: true, .. }), "{r:?}");
        let recovering = pod(json!({"phase": "Running", "containerStatuses": [{"name": "browser", "ready": true,
            "restartCount": 12, "image": "i", "imageID": ""}]}));
        assert_eq!(decide(Some(&recovering), None, RecoveryBudget::default(), ts(NOW)), Recovery::None);
        let ended = pod(json!({"phase": "Succeeded"}));
        assert_eq!(decide(Some(&ended), None, RecoveryBudget::default(), ts(NOW)), Recovery::None);
        assert_eq!(decide(None, None, RecoveryBudget::default(), ts(NOW)), Recovery::None);
        let mut deleting = evicted();
        deleting.metadata.deletion_timestamp = Some(Time(ts(NOW)));
        assert_eq!(decide(Some(&deleting), None, RecoveryBudget::default(), ts(NOW)), Recovery::None);
    }
}
