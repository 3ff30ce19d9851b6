//! What one reconcile does about `spec.suspended` (pure).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::book::{Capture, Saved};

/// The session's browser Pod, as far as a suspend cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodFact {
    /// None, or one being deleted.
    Absent,
    /// Not Ready: its pages are not there to keep.
    NotReady,
    /// Ready, its runtime answering at this address.
    Ready(IpAddr),
}

/// The live path (a gVisor checkpoint by the node agent), as far as this
/// suspend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// The Pod cannot be checkpointed (built without it, or the agent's
    /// checkpoint failed): the State path.
    No,
    /// Live-ready; this suspend's checkpoint not asked for yet.
    Ready,
    /// Asked for, not answered yet.
    Asked,
    /// Checkpointed on the Pod's node.
    Taken {
        /// Bytes of the image on the node.
        bytes: i64,
        /// How long the checkpoint took.
        millis: i64,
    },
}

/// What the reconcile read, for the decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// `spec.suspended`.
    pub suspended: bool,
    /// Its status says `Suspended` (or `Completed` after a park expired):
    /// the Pod was freed.
    pub parked: bool,
    /// Parked longer than `spec.suspend.maxSuspendedSeconds`, its saved
    /// state not deleted yet.
    pub expired: bool,
    /// Its status names a saved state not resumed yet.
    pub state_saved: bool,
    /// What a capture found, if one ran.
    pub capture: Option<Capture>,
    /// Its Pod.
    pub pod: PodFact,
    /// The live path for this suspend.
    pub live: Live,
    /// Asked back from a checkpoint that could not be restored (the agent
    /// refused it, or the restore failed in the node's runtime).
    pub restore_failed: bool,
    /// Now, by the clock the book uses.
    pub now: Instant,
}

/// How a session is parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parking {
    /// With the state a capture just saved (the status does not say it yet).
    Saved(Saved),
    /// With what the status says already (parked before, or a saved state
    /// a resume had not consumed yet).
    AsBefore,
    /// With nothing: the browser was not Ready.
    Empty,
    /// Parked too long: its saved state deleted, the session `Completed`.
    Expired,
    /// With the checkpoint the Pod's node agent took (the status does not
    /// say it yet).
    Live {
        /// Bytes of the image on the node.
        bytes: i64,
        /// How long the checkpoint took.
        millis: i64,
    },
}

/// What the reconcile does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing to suspend or resume: the plain reconcile.
    Run,
    /// The plain reconcile, the children built to reopen the saved state.
    Resume,
    /// The plain reconcile, a capture started from this runtime address.
    Capture(IpAddr),
    /// The plain reconcile while a capture runs.
    AwaitCapture,
    /// The plain reconcile; the last capture failed and is retried after this.
    CaptureFailed {
        /// Until the next try.
        retry_in: Duration,
    },
    /// The plain reconcile, the Pod's node agent asked to checkpoint it.
    Checkpoint,
    /// The plain reconcile while the node agent checkpoints.
    AwaitCheckpoint,
    /// The checkpoint could not be restored: the waiting Pod is deleted and
    /// the checkpoint forgotten, and a fresh browser starts.
    RestoreFailed,
    /// No browser: its Pod deleted, the status `Suspended`.
    Park(Parking),
}

/// The decision.
pub fn plan(facts: &Facts) -> Step {
    if !facts.suspended {
        if facts.restore_failed {
            return Step::RestoreFailed;
        }
        return if facts.state_saved { Step::Resume } else { Step::Run };
    }
    if facts.parked && facts.expired {
        return Step::Park(Parking::Expired);
    }
    // Suspended again before a resume was Ready: the saved state stays.
    if facts.parked || facts.state_saved {
        return Step::Park(Parking::AsBefore);
    }
    match facts.live {
        Live::Taken { bytes, millis } => return Step::Park(Parking::Live { bytes, millis }),
        Live::Asked => return Step::AwaitCheckpoint,
        Live::Ready if matches!(facts.pod, PodFact::Ready(_)) => return Step::Checkpoint,
        Live::Ready | Live::No => {}
    }
    match &facts.capture {
        Some(Capture::Saved(saved)) => return Step::Park(Parking::Saved(*saved)),
        Some(Capture::Running { .. }) => return Step::AwaitCapture,
        Some(Capture::Failed(failure)) if failure.retry_at() > facts.now => {
            return Step::CaptureFailed { retry_in: failure.retry_at() - facts.now };
        }
        _ => {}
    }
    match facts.pod {
        PodFact::Ready(ip) => Step::Capture(ip),
        PodFact::NotReady | PodFact::Absent => Step::Park(Parking::Empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suspend::book::Failure;

    fn facts() -> Facts {
        Facts {
            suspended: true,
            parked: false,
            expired: false,
            state_saved: false,
            capture: None,
            pod: PodFact::Ready(IpAddr::from([10, 0, 0, 7])),
            live: Live::No,
            restore_failed: false,
            now: Instant::now(),
        }
    }

    #[test]
    fn a_ready_browser_is_captured_then_parked_with_its_state() {
        let f = facts();
        assert_eq!(plan(&f), Step::Capture(IpAddr::from([10, 0, 0, 7])));
        let running = Facts { capture: Some(Capture::Running { failed_before: 0 }), ..f.clone() };
        assert_eq!(plan(&running), Step::AwaitCapture);
        let saved = Saved { bytes: 900, tabs: 3, millis: 420 };
        let done = Facts { capture: Some(Capture::Saved(saved)), ..f.clone() };
        assert_eq!(plan(&done), Step::Park(Parking::Saved(saved)));
        let parked = Facts { parked: true, state_saved: true, pod: PodFact::Absent, ..f };
        assert_eq!(plan(&parked), Step::Park(Parking::AsBefore));
    }

    #[test]
    fn a_failed_capture_waits_its_backoff_then_tries_again() {
        let f = facts();
        let failure = Failure { message: "x".into(), at: f.now, attempts: 1 };
        let failed = Facts { capture: Some(Capture::Failed(failure.clone())), ..f.clone() };
        assert_eq!(plan(&failed), Step::CaptureFailed { retry_in: Duration::from_secs(5) });
        let later = Facts { now: f.now + Duration::from_secs(6), ..failed };
        assert_eq!(plan(&later), Step::Capture(IpAddr::from([10, 0, 0, 7])));
    }

    #[test]
    fn a_park_that_lasted_too_long_expires_while_suspended_only() {
        let parked = Facts { parked: true, state_saved: true, pod: PodFact::Absent, expired: true, ..facts() };
        assert_eq!(plan(&parked), Step::Park(Parking::Expired));
        // Not parked yet (a capture, a resume on its way): nothing expires.
        assert_eq!(plan(&Facts { parked: false, ..parked.clone() }), Step::Park(Parking::AsBefore));
        // Asked back: an expired session starts a fresh browser.
        let back = Facts { suspended: false, state_saved: false, ..parked };
        assert_eq!(plan(&back), Step::Run);
    }

    #[test]
    fn a_browser_not_ready_is_parked_empty() {
        for pod in [PodFact::NotReady, PodFact::Absent] {
            assert_eq!(plan(&Facts { pod, ..facts() }), Step::Park(Parking::Empty));
        }
    }

    #[test]
    fn resuming_keeps_the_saved_state_until_a_resume_consumed_it() {
        let resume = Facts { suspended: false, state_saved: true, parked: true, pod: PodFact::Absent, ..facts() };
        assert_eq!(plan(&resume), Step::Resume);
        assert_eq!(plan(&Facts { state_saved: false, ..resume.clone() }), Step::Run);
        // Suspended again while resuming (not Ready yet): parked as it was, the state kept.
        let again = Facts { suspended: true, parked: false, pod: PodFact::NotReady, ..resume };
        assert_eq!(plan(&again), Step::Park(Parking::AsBefore));
    }

    #[test]
    fn a_live_ready_browser_is_checkpointed_then_parked_with_the_checkpoint() {
        let f = Facts { live: Live::Ready, ..facts() };
        assert_eq!(plan(&f), Step::Checkpoint);
        assert_eq!(plan(&Facts { live: Live::Asked, ..f.clone() }), Step::AwaitCheckpoint);
        // The checkpoint stops the sandbox: the Pod is not Ready any more, and parks with it all the same.
        let taken = Facts { live: Live::Taken { bytes: 9, millis: 80 }, pod: PodFact::NotReady, ..f.clone() };
        assert_eq!(plan(&taken), Step::Park(Parking::Live { bytes: 9, millis: 80 }));
        // Not Ready before any checkpoint: nothing to keep.
        assert_eq!(plan(&Facts { pod: PodFact::NotReady, ..f.clone() }), Step::Park(Parking::Empty));
        // The agent failed it: the State path.
        assert_eq!(plan(&Facts { live: Live::No, ..f }), Step::Capture(IpAddr::from([10, 0, 0, 7])));
    }

    #[test]
    fn a_checkpoint_that_cannot_be_restored_gives_way_to_a_fresh_browser() {
        let f = Facts { suspended: false, state_saved: true, restore_failed: true, ..facts() };
        assert_eq!(plan(&f), Step::RestoreFailed);
        assert_eq!(plan(&Facts { restore_failed: false, ..f }), Step::Resume);
    }
}
