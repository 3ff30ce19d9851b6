//! In a burst, a session's first status write yields to the other
//! sessions' first reconciles.
//!
//! A first reconcile sends a session's children, its Pod and its first
//! status (`Pending`) at once. The status write is the dearest of them (~4
//! ms of API-server CPU against ~1 ms per child: a custom resource's update
//! validates the whole object against its schema) and tells nobody
//! anything urgent: the Pod is created either way. While other sessions
//! are in their first reconcile (waiting for a slot, or making their
//! children), it waits instead, for at most [`MAX_DELAY`] after the
//! session was created, and only while its Pod is not yet Ready, failed
//! or ended: that news is written at once. A session made alone never
//! waits. (Waiting for a slot was not the sign of a burst: in a burst of
//! 1,000 the API server's CPU, not the 96 slots, held the first
//! reconciles back.)

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use playpen_api::v1alpha1::Phase;

/// The longest a session goes without a status because of a burst.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// How soon a session whose first status waits looks again.
pub const RETRY: Duration = Duration::from_secs(1);

/// Whether a first status that would report `phase` may wait for a burst:
/// only one that says the browser is still on its way.
pub fn may_wait(phase: Phase) -> bool {
    matches!(phase, Phase::Pending | Phase::Starting)
}

/// Sessions in their first reconcile, and those whose first status write
/// waits for them.
#[derive(Debug, Default)]
pub struct Burst {
    /// First reconciles waiting for a slot or running.
    first: AtomicUsize,
    /// UIDs of sessions whose children exist and whose first status waits.
    deferred: Mutex<HashSet<String>>,
}

/// Counts one first reconcile until dropped.
#[derive(Debug)]
pub struct First<'a>(&'a Burst);

impl Drop for First<'_> {
    fn drop(&mut self) {
        self.0.first.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Burst {
    /// Whether the session `uid` (with a status or not: `has_status`)
    /// would be reconciled for the first time: no status and no children
    /// made for it yet.
    pub fn is_first(&self, uid: &str, has_status: bool) -> bool {
        !has_status && !self.is_deferred(uid)
    }

    /// Counts a first reconcile, from its wait for a slot to its end,
    /// while the guard lives.
    pub fn begin(&self) -> First<'_> {
        self.first.fetch_add(1, Ordering::Relaxed);
        First(self)
    }

    /// Whether a session `age` old, in its first reconcile, should leave
    /// its first status for later: other first reconciles are under way,
    /// and it is young enough.
    pub fn yields(&self, age: Duration) -> bool {
        age < MAX_DELAY && self.first.load(Ordering::Relaxed) > 1
    }

    /// The children of `uid` exist; its first status waits.
    pub fn defer(&self, uid: &str) {
        if let Ok(mut deferred) = self.deferred.lock() {
            deferred.insert(uid.to_owned());
        }
    }

    /// Whether the first status of `uid` waits (its children exist).
    pub fn is_deferred(&self, uid: &str) -> bool {
        self.deferred.lock().is_ok_and(|d| d.contains(uid))
    }

    /// `uid` has a status now, or is going away.
    pub fn forget(&self, uid: &str) {
        if let Ok(mut deferred) = self.deferred.lock() {
            deferred.remove(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_yield_only_to_other_first_reconciles_and_only_so_long() {
        let burst = Burst::default();
        let young = Duration::from_secs(1);
        let mine = burst.begin();
        assert!(!burst.yields(young), "a session made alone: nothing yields");
        let other = burst.begin();
        assert!(burst.yields(young));
        assert!(!burst.yields(MAX_DELAY), "old enough: written whatever is under way");
        drop(other);
        assert!(!burst.yields(young), "the other one is done");
        drop(mine);
    }

    #[test]
    fn only_a_browser_on_its_way_waits() {
        assert!(may_wait(Phase::Pending));
        assert!(may_wait(Phase::Starting));
        for news in [Phase::Ready, Phase::Degraded, Phase::Failed, Phase::Completed] {
            assert!(!may_wait(news), "{news:?} is written at once");
        }
    }

    #[test]
    fn a_deferred_session_is_no_longer_first_until_forgotten() {
        let burst = Burst::default();
        assert!(burst.is_first("u", false));
        assert!(!burst.is_first("u", true), "a status: not first");
        burst.defer("u");
        assert!(!burst.is_first("u", false), "its children exist");
        assert!(burst.is_deferred("u"));
        burst.forget("u");
        assert!(!burst.is_deferred("u"));
        assert!(burst.is_first("u", false));
    }
}
