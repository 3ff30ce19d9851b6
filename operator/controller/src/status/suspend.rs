//! What `spec.suspended` makes of a session's status (pure): the phases
//! `Suspending`, `Suspended` and `Resuming`, the `Suspended` condition and
//! `status.suspend`, on top of what [`super::compute`] made of the browser.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase, SuspendStatus};

use super::{settle, Cond};
use crate::suspend::{Failure, Parking, Step};

/// `status.suspend.path` of a state saved and reopened.
pub const STATE_PATH: &str = "State";
/// `status.suspend.path` when nothing could be saved.
pub const EMPTY_PATH: &str = "Empty";
use crate::children::live::LIVE_PATH;
/// Reason of `Suspended=False` while a capture runs.
pub const SUSPENDING: &str = "Suspending";
/// Reason of `Suspended=False` after a failed capture.
pub const SUSPEND_FAILED: &str = "SuspendFailed";
/// Reason of `Suspended=False` while a resumed browser reopens its tabs.
pub const RESUMING: &str = "Resuming";
/// Reason of `Suspended=False` once it has.
pub const RESUMED: &str = "Resumed";
/// Reason of a session parked past `spec.suspend.maxSuspendedSeconds`.
pub const SUSPEND_EXPIRED: &str = "SuspendExpired";

/// The status of a parked session: no Pod, phase `Suspended`, what was kept.
///
/// `checkpoint`: the node and UID of the Pod a `Live` parking checkpointed.
pub fn parked(
    new: &mut BrowserSessionStatus,
    parking: Parking,
    state_secret: &str,
    checkpoint: Option<(&str, &str)>,
    stored: &[Condition],
    now: Timestamp,
) {
    let before = new.suspend.take();
    let suspend = match parking {
        Parking::Live { bytes, millis } => SuspendStatus {
            path: LIVE_PATH.into(),
            reason: "the node agent checkpointed the browser's gVisor sandbox (memory, pages, JavaScript state); \
                     resume restores it on the same node"
                .into(),
            node: checkpoint.map(|(node, _)| node.to_owned()),
            checkpoint: checkpoint.map(|(_, uid)| uid.to_owned()),
            suspended_at: Some(Time(now)),
            bytes: Some(bytes),
            suspend_millis: Some(millis),
            last_resume_millis: before.as_ref().and_then(|b| b.last_resume_millis),
            suspended_seconds: before.and_then(|b| b.suspended_seconds),
            ..SuspendStatus::default()
        },
        Parking::Saved(saved) => SuspendStatus {
            path: STATE_PATH.into(),
            reason: format!(
                "the browser was Ready: its storage state and {} tab(s) were saved; resume reopens them",
                saved.tabs
            ),
            state_secret: Some(state_secret.to_owned()),
            node: None,
            checkpoint: None,
            suspended_at: Some(Time(now)),
            bytes: Some(saved.bytes),
            tabs: Some(saved.tabs),
            suspend_millis: Some(saved.millis),
            resume_requested_at: None,
            last_resume_millis: before.as_ref().and_then(|b| b.last_resume_millis),
            suspended_seconds: before.and_then(|b| b.suspended_seconds),
            expired_at: None,
        },
        Parking::Empty => SuspendStatus {
            path: EMPTY_PATH.into(),
            reason: "the browser was not Ready: nothing was saved; resume starts a fresh browser".into(),
            suspended_at: Some(Time(now)),
            last_resume_millis: before.as_ref().and_then(|b| b.last_resume_millis),
            suspended_seconds: before.and_then(|b| b.suspended_seconds),
            ..SuspendStatus::default()
        },
        Parking::AsBefore | Parking::Expired => {
            let mut kept = before.unwrap_or_else(|| SuspendStatus {
                path: EMPTY_PATH.into(),
                reason: "nothing was saved".into(),
                ..SuspendStatus::default()
            });
            kept.resume_requested_at = None;
            kept.suspended_at.get_or_insert(Time(now));
            if parking == Parking::Expired {
                kept.state_secret = None;
                kept.checkpoint = None;
                kept.node = None;
                kept.expired_at = Some(Time(now));
                kept.reason = "parked longer than spec.suspend.maxSuspendedSeconds: the saved state was deleted; \
                               resume starts a fresh browser"
                    .into();
            }
            kept
        }
    };
    let expired = suspend.expired_at.is_some();
    let message = match (&suspend.state_secret, &suspend.node) {
        (Some(secret), _) => format!("the browser Pod was freed; its state is in Secret {secret}"),
        (None, Some(node)) if suspend.checkpoint.is_some() => {
            format!("the browser Pod was freed; its checkpoint is on node {node}")
        }
        (None, _) if expired => "parked longer than spec.suspend.maxSuspendedSeconds: its saved state was deleted; \
                            set spec.suspended to false for a fresh browser"
            .to_owned(),
        (None, _) => "the browser Pod was freed; nothing was saved".to_owned(),
    };
    new.phase = Some(if expired { Phase::Completed } else { Phase::Suspended });
    new.pod_name = None;
    new.restarts = None;
    new.suspend = Some(suspend);
    let why = if expired { SUSPEND_EXPIRED } else { "Suspended" };
    let said = |type_| Cond::new(type_, false, why, "spec.suspended is true: set it to false to resume");
    let viewer = Cond::new(condition::VIEWER_READY, false, "Suspended", "the viewer starts with the browser");
    let conditions = [said(condition::READY), said(condition::POD_SCHEDULED), said(condition::BROWSER_READY), viewer];
    for c in conditions.into_iter().chain([Cond::new(condition::SUSPENDED, true, why, message)]) {
        replace(new, c, stored, now);
    }
}

/// Whether the status is of a parked session: `Suspended`, or `Completed`
/// because it was parked past its bound (its state is gone, but asking it
/// back still starts a browser). The one definition of "parked" every
/// caller uses.
pub fn is_parked(status: &BrowserSessionStatus) -> bool {
    match status.phase {
        Some(Phase::Suspended) => true,
        Some(Phase::Completed) => status.suspend.as_ref().is_some_and(|s| s.expired_at.is_some()),
        _ => false,
    }
}

/// A parked session asked back (`spec.suspended` false while its status
/// still says `Suspended`): the time it was parked is added to
/// `suspendedSeconds` now, before its browser is built, so the resumed
/// runtime's lifetime leaves it out from its first second. The status
/// this reconcile writes is no longer `Suspended`, so it is added once.
pub fn unparked(status: &mut BrowserSessionStatus, now: Timestamp) {
    if !is_parked(status) {
        return;
    }
    let Some(suspend) = status.suspend.as_mut() else { return };
    suspend.expired_at = None;
    let Some(since) = suspend.suspended_at.as_ref() else { return };
    let parked = now.duration_since(since.0).as_secs().max(0);
    suspend.suspended_seconds = Some(suspend.suspended_seconds.unwrap_or_default().saturating_add(parked));
}

/// The status of a session with a browser, as the suspend `step` shapes it.
///
/// `stored` are the conditions the session's status holds now: a
/// condition keeps its transition time while its status stays.
///
/// `awaiting_reopen`: the browser is a claimed warm one whose tabs the
/// operator has not reopened yet (its Ready says nothing of them).
pub fn running(
    new: &mut BrowserSessionStatus,
    step: &Step,
    failure: Option<&Failure>,
    awaiting_reopen: bool,
    stored: &[Condition],
    now: Timestamp,
) {
    let replace = |new: &mut BrowserSessionStatus, c: Cond, now| replace(new, c, stored, now);
    match step {
        // What the last suspend or resume said stays said.
        Step::Run => new.conditions.extend(stored.iter().filter(|c| c.type_ == condition::SUSPENDED).cloned()),
        Step::Capture(_) | Step::AwaitCapture => {
            new.phase = Some(Phase::Suspending);
            let message = "saving the browser's storage state and tabs; the Pod is freed once they are in a Secret";
            replace(new, Cond::new(condition::SUSPENDED, false, SUSPENDING, message), now);
        }
        Step::CaptureFailed { retry_in } => {
            let what = failure.map_or("the capture failed", |f| f.message.as_str());
            let message = format!("{what}; tried again in {}s, the browser keeps running", retry_in.as_secs().max(1));
            replace(new, Cond::new(condition::SUSPENDED, false, SUSPEND_FAILED, message), now);
        }
        Step::Checkpoint | Step::AwaitCheckpoint => {
            new.phase = Some(Phase::Suspending);
            let message = "the node agent checkpoints the browser's gVisor sandbox; the Pod is freed once it has";
            replace(new, Cond::new(condition::SUSPENDED, false, SUSPENDING, message), now);
        }
        Step::Resume => resuming(new, awaiting_reopen, failure, stored, now),
        Step::Park(_) | Step::RestoreFailed => {}
    }
}

/// Whether a resume is done: its browser is Ready with the tabs back (the
/// runtime holds its probe until they are; a claimed warm browser has them
/// from the operator's `POST /resume`), so the saved state can go.
pub fn resumed(new: &BrowserSessionStatus, step: &Step) -> bool {
    matches!(step, Step::Resume)
        && new.suspend.as_ref().is_some_and(|s| s.state_secret.is_none() && s.checkpoint.is_none())
}

fn resuming(
    new: &mut BrowserSessionStatus,
    awaiting_reopen: bool,
    failure: Option<&Failure>,
    stored: &[Condition],
    now: Timestamp,
) {
    let suspend = new.suspend.get_or_insert_with(SuspendStatus::default);
    let asked = suspend.resume_requested_at.get_or_insert(MicroTime(now)).0;
    if new.phase == Some(Phase::Ready) && !awaiting_reopen {
        let millis = now.duration_since(asked).as_millis();
        suspend.last_resume_millis = Some(i64::try_from(millis).unwrap_or(i64::MAX).max(0));
        suspend.state_secret = None;
        suspend.checkpoint = None;
        suspend.node = None;
        suspend.resume_requested_at = None;
        let message = format!("resumed with the saved tabs in {} ms", suspend.last_resume_millis.unwrap_or_default());
        replace(new, Cond::new(condition::SUSPENDED, false, RESUMED, message), stored, now);
        return;
    }
    // Until it is Ready (or failed for good), the session is resuming: a
    // Pod still stopping from the suspend shows as Degraded otherwise.
    if !matches!(new.phase, Some(Phase::Failed | Phase::Completed)) {
        new.phase = Some(Phase::Resuming);
    }
    let message = match failure {
        Some(f) => format!("reopening the saved tabs in the claimed browser failed ({}); tried again", f.message),
        None => "a browser starts and reopens the saved tabs; the session is Ready once they are back".to_owned(),
    };
    replace(new, Cond::new(condition::SUSPENDED, false, RESUMING, message), stored, now);
}

/// Puts `c` in place of the condition of its type (its transition time
/// kept when its status did not change).
pub(super) fn replace(new: &mut BrowserSessionStatus, c: Cond, stored: &[Condition], now: Timestamp) {
    let settled = settle(c, stored, new.observed_generation, now);
    match new.conditions.iter_mut().find(|p| p.type_ == settled.type_) {
        Some(slot) => *slot = settled,
        None => new.conditions.push(settled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suspend::Saved;
    use std::time::Duration;

    fn ready() -> BrowserSessionStatus {
        BrowserSessionStatus {
            phase: Some(Phase::Ready),
            pod_name: Some("s-browser".into()),
            restarts: Some(0),
            ..BrowserSessionStatus::default()
        }
    }

    fn said<'a>(status: &'a BrowserSessionStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_}"))
    }

    #[test]
    fn a_checkpointed_session_names_its_node_until_the_resume_is_ready() {
        let now = Timestamp::now();
        let mut new = ready();
        parked(&mut new, Parking::Live { bytes: 10 << 20, millis: 90 }, "s-suspended", Some(("n1", "u1")), &[], now);
        let suspend = new.suspend.clone().unwrap();
        assert_eq!(
            (suspend.path.as_str(), suspend.node.as_deref(), suspend.checkpoint.as_deref()),
            (LIVE_PATH, Some("n1"), Some("u1"))
        );
        assert_eq!((suspend.bytes, suspend.suspend_millis, suspend.state_secret), (Some(10 << 20), Some(90), None));
        assert!(said(&new, condition::SUSPENDED).message.contains("node n1"));
        // Resumed and Ready: the checkpoint is spent, and only then.
        let mut resuming = new.clone();
        resuming.phase = Some(Phase::Starting);
        running(&mut resuming, &Step::Resume, None, false, &new.conditions, now);
        assert!(!resumed(&resuming, &Step::Resume));
        let mut back = new.clone();
        back.phase = Some(Phase::Ready);
        running(&mut back, &Step::Resume, None, false, &new.conditions, now);
        assert!(resumed(&back, &Step::Resume));
        let suspend = back.suspend.unwrap();
        assert_eq!((suspend.node, suspend.checkpoint), (None, None));
    }

    #[test]
    fn parked_is_suspended_or_completed_by_expiry_only() {
        let with = |phase, expired: bool| BrowserSessionStatus {
            phase: Some(phase),
            suspend: Some(SuspendStatus {
                expired_at: expired.then(|| Time(Timestamp::now())),
                ..SuspendStatus::default()
            }),
            ..BrowserSessionStatus::default()
        };
        assert!(is_parked(&with(Phase::Suspended, false)));
        assert!(is_parked(&with(Phase::Completed, true)));
        // Completed for any other reason (its lifetime, its own exit) is not parked.
        assert!(!is_parked(&with(Phase::Completed, false)));
        assert!(!is_parked(&BrowserSessionStatus { phase: Some(Phase::Completed), ..BrowserSessionStatus::default() }));
        for phase in [Phase::Pending, Phase::Ready, Phase::Suspending, Phase::Resuming, Phase::Failed] {
            assert!(!is_parked(&with(phase, true)), "{phase:?}");
        }
        assert!(!is_parked(&BrowserSessionStatus::default()));
    }

    #[test]
    fn a_parked_session_has_no_pod_and_names_its_saved_state() {
        let now = Timestamp::now();
        let mut new = ready();
        let saved = Saved { bytes: 2048, tabs: 3, millis: 640 };
        parked(&mut new, Parking::Saved(saved), "s-suspended", None, &[], now);
        assert_eq!((new.phase, new.pod_name.as_deref(), new.restarts), (Some(Phase::Suspended), None, None));
        let suspend = new.suspend.clone().unwrap();
        assert_eq!((suspend.path.as_str(), suspend.state_secret.as_deref()), (STATE_PATH, Some("s-suspended")));
        assert_eq!((suspend.bytes, suspend.tabs, suspend.suspend_millis), (Some(2048), Some(3), Some(640)));
        assert_eq!(said(&new, condition::SUSPENDED).status, "True");
        assert_eq!(said(&new, condition::READY).reason, "Suspended");
        // Parked again (a later reconcile): nothing changes, transition times included.
        let mut again = new.clone();
        parked(&mut again, Parking::AsBefore, "s-suspended", None, &new.conditions, now + Duration::from_secs(60));
        assert_eq!(again, new);
    }

    #[test]
    fn the_time_parked_is_counted_once_and_kept_across_suspends() {
        let at = |s: i64| Timestamp::from_second(1_796_112_000 + s).expect("ts");
        let mut new = ready();
        parked(&mut new, Parking::Saved(Saved { bytes: 1, tabs: 1, millis: 1 }), "s-suspended", None, &[], at(0));
        unparked(&mut new, at(3600));
        assert_eq!(new.suspend.as_ref().and_then(|s| s.suspended_seconds), Some(3600));
        // Once resumed the status is no longer Suspended: nothing more is added.
        new.phase = Some(Phase::Resuming);
        unparked(&mut new, at(7200));
        assert_eq!(new.suspend.as_ref().and_then(|s| s.suspended_seconds), Some(3600));
        // A second suspend adds its own time to the first's, whatever was saved.
        parked(&mut new, Parking::Empty, "s-suspended", None, &[], at(10_000));
        unparked(&mut new, at(10_060));
        assert_eq!(new.suspend.as_ref().and_then(|s| s.suspended_seconds), Some(3660));
        // A session never parked has nothing to count.
        let mut running = ready();
        unparked(&mut running, at(50));
        assert_eq!(running.suspend, None);
    }

    #[test]
    fn a_park_that_expired_is_completed_without_its_state_until_asked_back() {
        let at = |s: i64| Timestamp::from_second(1_796_112_000 + s).expect("ts");
        let mut new = ready();
        parked(&mut new, Parking::Saved(Saved { bytes: 1, tabs: 1, millis: 1 }), "s-suspended", None, &[], at(0));
        let mut expired = new.clone();
        parked(&mut expired, Parking::Expired, "s-suspended", None, &new.conditions, at(600));
        assert_eq!(expired.phase, Some(Phase::Completed));
        let suspend = expired.suspend.clone().unwrap();
        assert_eq!((suspend.state_secret, suspend.expired_at), (None, Some(Time(at(600)))));
        assert_eq!(said(&expired, condition::READY).reason, SUSPEND_EXPIRED);
        assert_eq!(said(&expired, condition::SUSPENDED).reason, SUSPEND_EXPIRED);
        // Later reconciles keep it so.
        let mut again = expired.clone();
        parked(&mut again, Parking::AsBefore, "s-suspended", None, &expired.conditions, at(900));
        assert_eq!(again, expired);
        // Asked back: the time parked is counted and the mark goes.
        unparked(&mut again, at(1000));
        let suspend = again.suspend.unwrap();
        assert_eq!((suspend.suspended_seconds, suspend.expired_at), (Some(1000), None));
    }

    #[test]
    fn a_browser_that_was_not_ready_is_parked_empty() {
        let mut new = ready();
        parked(&mut new, Parking::Empty, "s-suspended", None, &[], Timestamp::now());
        let suspend = new.suspend.unwrap();
        assert_eq!((suspend.path.as_str(), suspend.state_secret), (EMPTY_PATH, None));
    }

    #[test]
    fn capturing_failing_and_resuming_say_so_and_a_ready_resume_clears_the_state() {
        let now = Timestamp::now();
        let mut capturing = ready();
        running(&mut capturing, &Step::AwaitCapture, None, false, &[], now);
        assert_eq!(capturing.phase, Some(Phase::Suspending));
        assert_eq!(said(&capturing, condition::SUSPENDED).reason, SUSPENDING);

        let failure =
            Failure { message: "the runtime answered 503".into(), at: std::time::Instant::now(), attempts: 1 };
        let mut failed = ready();
        running(
            &mut failed,
            &Step::CaptureFailed { retry_in: Duration::from_secs(5) },
            Some(&failure),
            false,
            &[],
            now,
        );
        assert_eq!(failed.phase, Some(Phase::Ready), "the browser keeps running");
        let c = said(&failed, condition::SUSPENDED);
        assert!(c.reason == SUSPEND_FAILED && c.message.contains("503") && c.message.contains("5s"), "{c:?}");

        let saved = SuspendStatus { state_secret: Some("s-suspended".into()), ..SuspendStatus::default() };
        let mut starting = BrowserSessionStatus { phase: Some(Phase::Starting), suspend: Some(saved), ..ready() };
        running(&mut starting, &Step::Resume, None, false, &[], now);
        assert_eq!(starting.phase, Some(Phase::Resuming));
        assert!(!resumed(&starting, &Step::Resume));
        let asked = starting.suspend.as_ref().and_then(|s| s.resume_requested_at.clone()).unwrap();
        // A claimed warm browser is Ready before its tabs are back: still resuming.
        let mut claimed = BrowserSessionStatus { phase: Some(Phase::Ready), ..starting.clone() };
        running(&mut claimed, &Step::Resume, None, true, &starting.conditions, now);
        assert_eq!(claimed.phase, Some(Phase::Resuming));
        assert!(!resumed(&claimed, &Step::Resume));
        let mut up = BrowserSessionStatus { phase: Some(Phase::Ready), ..starting.clone() };
        running(&mut up, &Step::Resume, None, false, &starting.conditions, now + Duration::from_millis(750));
        assert!(resumed(&up, &Step::Resume));
        let suspend = up.suspend.clone().unwrap();
        assert_eq!((suspend.state_secret, suspend.last_resume_millis), (None, Some(750)));
        assert_eq!(asked.0, now);
        assert_eq!(said(&up, condition::SUSPENDED).reason, RESUMED);
        // Later reconciles keep what the resume said.
        let mut later = ready();
        running(&mut later, &Step::Run, None, false, &up.conditions, now);
        assert_eq!(said(&later, condition::SUSPENDED), said(&up, condition::SUSPENDED));
    }
}
