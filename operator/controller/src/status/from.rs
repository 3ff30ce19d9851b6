//! The status of a session started from a BrowserSnapshot
//! (`spec.from.snapshot`) before its browser runs (pure): waiting for the
//! snapshot, or its pages copied to the session's own saved state, which
//! the resume path ([`crate::suspend`]) then reopens.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime};
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase, SuspendStatus};

use super::suspend::{replace, STATE_PATH};
use super::Cond;

/// Why a session waits for its snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// No BrowserSnapshot of that name in the session's namespace.
    NotFound,
    /// It exists and is not `Ready` yet (its phase, if any).
    NotReady(Option<String>),
    /// It failed: the session never starts from it.
    Failed,
    /// It says `Ready` and its Secret is gone or has no state.
    BytesMissing(String),
}

impl Waiting {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound => "SnapshotNotFound",
            Self::NotReady(_) => "SnapshotNotReady",
            Self::Failed => "SnapshotFailed",
            Self::BytesMissing(_) => "SnapshotBytesMissing",
        }
    }

    /// A sentence naming the field, the snapshot and the fix.
    pub fn message(&self, namespace: &str, snapshot: &str) -> String {
        let it = format!("spec.from.snapshot: BrowserSnapshot {namespace}/{snapshot}");
        match self {
            Self::NotFound => {
                format!("{it} not found; create it or correct the name (the session starts once it is Ready)")
            }
            Self::NotReady(phase) => {
                let phase = phase.as_deref().unwrap_or("new");
                format!("{it} is {phase}, not Ready yet; the session starts once it is")
            }
            Self::Failed => format!("{it} failed; take another snapshot and re-create this session from it"),
            Self::BytesMissing(secret) => {
                format!("{it} is Ready but its Secret {secret} has no saved state; take another snapshot")
            }
        }
    }

    /// Whether the session can never start from this snapshot as it is.
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Failed | Self::BytesMissing(_))
    }
}

/// A session that waits for its snapshot: no browser yet, `ConfigResolved`
/// and `Ready` false with the reason (`Failed` when it never will start).
pub fn waiting(
    new: &mut BrowserSessionStatus,
    why: &Waiting,
    namespace: &str,
    snapshot: &str,
    stored: &[Condition],
    now: Timestamp,
) {
    let message = why.message(namespace, snapshot);
    new.phase = Some(if why.is_final() { Phase::Failed } else { Phase::Pending });
    for type_ in [condition::CONFIG_RESOLVED, condition::READY] {
        replace(new, Cond::new(type_, false, why.reason(), message.clone()), stored, now);
    }
}

/// A session whose snapshot's pages were copied to its own `secret`: the
/// next reconcile resumes it from there, as if it had been suspended.
pub fn seeded(new: &mut BrowserSessionStatus, snapshot: &str, secret: &str, bytes: i64, tabs: i32, now: Timestamp) {
    new.phase = Some(Phase::Pending);
    new.suspend = Some(SuspendStatus {
        path: STATE_PATH.into(),
        reason: format!(
            "started from BrowserSnapshot {snapshot}: its storage state and {tabs} tab(s) are reopened in the new browser"
        ),
        state_secret: Some(secret.to_owned()),
        bytes: Some(bytes),
        tabs: Some(tabs),
        resume_requested_at: Some(MicroTime(now)),
        ..SuspendStatus::default()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition<'a>(status: &'a BrowserSessionStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).expect(type_)
    }

    #[test]
    fn a_session_waiting_for_its_snapshot_names_the_field_and_the_fix() {
        let now = Timestamp::now();
        for (why, phase) in [
            (Waiting::NotFound, Phase::Pending),
            (Waiting::NotReady(Some("Taking".into())), Phase::Pending),
            (Waiting::Failed, Phase::Failed),
            (Waiting::BytesMissing("snap-state".into()), Phase::Failed),
        ] {
            let mut new = BrowserSessionStatus::default();
            waiting(&mut new, &why, "team-a", "snap", &[], now);
            assert_eq!(new.phase, Some(phase), "{why:?}");
            for type_ in [condition::CONFIG_RESOLVED, condition::READY] {
                let c = condition(&new, type_);
                assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", why.reason()));
                assert!(c.message.starts_with("spec.from.snapshot: BrowserSnapshot team-a/snap"), "{}", c.message);
            }
        }
    }

    #[test]
    fn a_seeded_session_resumes_from_its_own_copy() {
        let now = Timestamp::now();
        let mut new = BrowserSessionStatus::default();
        seeded(&mut new, "snap", "fork-1-suspended", 651, 2, now);
        let suspend = new.suspend.expect("suspend");
        assert_eq!(suspend.state_secret.as_deref(), Some("fork-1-suspended"));
        assert_eq!((suspend.bytes, suspend.tabs, suspend.path.as_str()), (Some(651), Some(2), STATE_PATH));
        assert_eq!(suspend.resume_requested_at, Some(MicroTime(now)));
        assert!(suspend.reason.contains("BrowserSnapshot snap"));
        assert_eq!(new.phase, Some(Phase::Pending));
    }
}
