//! What one reconcile of a BrowserSnapshot does (pure).

use std::time::{Duration, Instant};

use playpen_api::v1alpha1::{SnapshotPhase, MAX_TAKE_ATTEMPTS};

use crate::suspend::capture::Browser;
use crate::suspend::{Capture, Saved};

/// The source session, as far as a snapshot cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// No session of that name in the snapshot's namespace.
    Missing,
    /// It exists and its browser is not Ready (its phase, if any).
    NotReady(Option<String>),
    /// Ready: its runtime answers here.
    Ready(Browser),
}

/// What the reconcile read.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The snapshot's phase as its status says it.
    pub phase: Option<SnapshotPhase>,
    /// Its source.
    pub source: Source,
    /// What a take found, if one ran.
    pub take: Option<Capture>,
    /// Now, by the book's clock.
    pub now: Instant,
}

/// Why a snapshot waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Its source does not exist (yet).
    SourceNotFound,
    /// Its source's browser is not Ready.
    SourceNotReady,
}

/// What the reconcile does.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Ready or Failed already: nothing but tidying up.
    Done,
    /// `Pending`: looked at again later.
    Wait(Wait, Option<String>),
    /// Start a take from this browser (`Taking`).
    Take(Browser),
    /// A take runs (`Taking`).
    AwaitTake,
    /// The last take failed; tried again after `retry_in` (`Taking`).
    Retry {
        /// Until the next try.
        retry_in: Duration,
        /// What failed.
        message: String,
        /// Failed tries so far.
        attempts: u32,
    },
    /// The take stored its bytes: `Ready`.
    Record(Saved),
    /// Too many failed takes: `Failed`, for good.
    GiveUp {
        /// The last failure.
        message: String,
        /// Failed tries.
        attempts: u32,
    },
}

/// Whether a snapshot in `phase` is finished: taken, or given up on.
pub fn is_finished(phase: Option<SnapshotPhase>) -> bool {
    matches!(phase, Some(SnapshotPhase::Ready | SnapshotPhase::Failed))
}

/// The decision.
pub fn plan(facts: &Facts) -> Step {
    if is_finished(facts.phase) {
        return Step::Done;
    }
    match &facts.take {
        Some(Capture::Saved(saved)) => return Step::Record(*saved),
        Some(Capture::Running { .. }) => return Step::AwaitTake,
        Some(Capture::Failed(f)) if f.attempts >= MAX_TAKE_ATTEMPTS.unsigned_abs() => {
            return Step::GiveUp { message: f.message.clone(), attempts: f.attempts };
        }
        Some(Capture::Failed(f)) if f.retry_at() > facts.now => {
            return Step::Retry {
                retry_in: f.retry_at() - facts.now,
                message: f.message.clone(),
                attempts: f.attempts,
            };
        }
        _ => {}
    }
    match &facts.source {
        Source::Missing => Step::Wait(Wait::SourceNotFound, None),
        Source::NotReady(phase) => Step::Wait(Wait::SourceNotReady, phase.clone()),
        Source::Ready(browser) => Step::Take(browser.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suspend::Failure;
    use std::net::IpAddr;

    fn browser() -> Browser {
        Browser { pod: "s-browser".into(), ip: IpAddr::from([10, 0, 0, 9]), control_secret: "s-control".into() }
    }

    fn facts() -> Facts {
        Facts { phase: None, source: Source::Ready(browser()), take: None, now: Instant::now() }
    }

    #[test]
    fn a_ready_source_is_taken_then_recorded() {
        let f = facts();
        assert_eq!(plan(&f), Step::Take(browser()));
        let running = Facts { take: Some(Capture::Running { failed_before: 0 }), ..f.clone() };
        assert_eq!(plan(&running), Step::AwaitTake);
        let saved = Saved { bytes: 651, tabs: 2, millis: 900 };
        assert_eq!(plan(&Facts { take: Some(Capture::Saved(saved)), ..f }), Step::Record(saved));
    }

    #[test]
    fn a_snapshot_waits_for_its_source() {
        assert_eq!(plan(&Facts { source: Source::Missing, ..facts() }), Step::Wait(Wait::SourceNotFound, None));
        let starting = Facts { source: Source::NotReady(Some("Starting".into())), ..facts() };
        assert_eq!(plan(&starting), Step::Wait(Wait::SourceNotReady, Some("Starting".into())));
    }

    #[test]
    fn failures_back_off_then_give_up() {
        let f = facts();
        let failure = Failure { message: "the runtime answered 503".into(), at: f.now, attempts: 1 };
        let failed = Facts { take: Some(Capture::Failed(failure.clone())), ..f.clone() };
        assert!(matches!(plan(&failed), Step::Retry { attempts: 1, .. }));
        let later = Facts { now: f.now + Duration::from_secs(6), ..failed };
        assert_eq!(plan(&later), Step::Take(browser()), "tried again after the backoff");
        let spent = Failure { attempts: MAX_TAKE_ATTEMPTS.unsigned_abs(), ..failure };
        let given_up = plan(&Facts { take: Some(Capture::Failed(spent)), ..f });
        assert!(matches!(given_up, Step::GiveUp { attempts: 5, .. }), "{given_up:?}");
    }

    #[test]
    fn a_finished_snapshot_is_never_taken_again() {
        for phase in [SnapshotPhase::Ready, SnapshotPhase::Failed] {
            assert_eq!(plan(&Facts { phase: Some(phase), ..facts() }), Step::Done);
        }
    }
}
