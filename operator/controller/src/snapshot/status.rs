//! A BrowserSnapshot's status, from what its reconcile decided (pure).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{BrowserSnapshotStatus, SnapshotPhase};

use super::plan::{Step, Wait};
use crate::status::suspend::STATE_PATH;

/// The status after `step`, from the `stored` one. `secret` names the
/// snapshot's state Secret; `source_uid` is its source session's.
pub fn next(
    stored: Option<&BrowserSnapshotStatus>,
    step: &Step,
    secret: &str,
    source_uid: Option<&str>,
    now: Timestamp,
) -> BrowserSnapshotStatus {
    let mut new = stored.cloned().unwrap_or_default();
    new.path = Some(STATE_PATH.to_owned());
    if let Some(uid) = source_uid.filter(|_| !matches!(step, Step::Done)) {
        new.source_uid = Some(uid.to_owned());
    }
    let mut say = |phase, reason: &str, message: String| {
        new.phase = Some(phase);
        new.reason = Some(reason.to_owned());
        new.message = Some(message);
    };
    match step {
        Step::Done => return new,
        Step::Wait(Wait::SourceNotFound, _) => say(
            SnapshotPhase::Pending,
            "SourceNotFound",
            "spec.source.session names no BrowserSession in this namespace; it is taken once one is Ready".into(),
        ),
        Step::Wait(Wait::SourceNotReady, phase) => say(
            SnapshotPhase::Pending,
            "SourceNotReady",
            format!(
                "the source session is {}, not Ready; it is taken once it is",
                phase.as_deref().unwrap_or("starting")
            ),
        ),
        Step::Take(_) | Step::AwaitTake => say(
            SnapshotPhase::Taking,
            "Taking",
            "asking the source's runtime for its storage state and tabs; the session keeps running".into(),
        ),
        Step::Retry { retry_in, message, attempts } => {
            say(
                SnapshotPhase::Taking,
                "TakeFailed",
                format!("{message}; tried again in {}s", retry_in.as_secs().max(1)),
            );
            new.attempts = Some(i32::try_from(*attempts).unwrap_or(i32::MAX));
        }
        Step::Record(saved) => {
            say(
                SnapshotPhase::Ready,
                "Taken",
                format!(
                    "{} tab(s) and the storage state are in Secret {secret}; start sessions with spec.from.snapshot",
                    saved.tabs
                ),
            );
            new.state_secret = Some(secret.to_owned());
            new.taken_at = Some(Time(now));
            new.bytes = Some(saved.bytes);
            new.tabs = Some(saved.tabs);
            new.take_millis = Some(saved.millis);
        }
        Step::GiveUp { message, attempts } => {
            say(SnapshotPhase::Failed, "TakeFailed", format!("{message}; gave up after {attempts} tries"));
            new.attempts = Some(i32::try_from(*attempts).unwrap_or(i32::MAX));
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suspend::Saved;
    use std::time::Duration;

    #[test]
    fn each_step_says_its_phase_and_reason() {
        let now = Timestamp::now();
        let cases = [
            (Step::Wait(Wait::SourceNotFound, None), SnapshotPhase::Pending, "SourceNotFound"),
            (Step::Wait(Wait::SourceNotReady, Some("Starting".into())), SnapshotPhase::Pending, "SourceNotReady"),
            (Step::AwaitTake, SnapshotPhase::Taking, "Taking"),
            (
                Step::Retry { retry_in: Duration::from_secs(5), message: "503".into(), attempts: 1 },
                SnapshotPhase::Taking,
                "TakeFailed",
            ),
            (Step::GiveUp { message: "503".into(), attempts: 5 }, SnapshotPhase::Failed, "TakeFailed"),
        ];
        for (step, phase, reason) in cases {
            let s = next(None, &step, "snap-state", Some("u1"), now);
            assert_eq!((s.phase, s.reason.as_deref()), (Some(phase), Some(reason)), "{step:?}");
            assert_eq!(s.state_secret, None, "only a taken snapshot names its bytes");
            assert_eq!(s.source_uid.as_deref(), Some("u1"));
        }
    }

    #[test]
    fn a_taken_snapshot_names_its_secret_and_size_and_is_left_alone_after() {
        let now = Timestamp::now();
        let saved = Saved { bytes: 651, tabs: 2, millis: 812 };
        let ready = next(None, &Step::Record(saved), "snap-state", Some("u1"), now);
        assert_eq!(ready.phase, Some(SnapshotPhase::Ready));
        assert_eq!(ready.state_secret.as_deref(), Some("snap-state"));
        assert_eq!((ready.bytes, ready.tabs, ready.take_millis), (Some(651), Some(2), Some(812)));
        assert_eq!(next(Some(&ready), &Step::Done, "snap-state", Some("u2"), now), ready);
    }
}
