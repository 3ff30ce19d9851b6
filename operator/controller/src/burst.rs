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
//! session was created (by the API server's clock) and after this process
//! first deferred it (by its own monotonic clock: an operator whose clock
//! runs behind the server's would otherwise see every session young for
//! as long as the skew), and only while its Pod is not yet Ready, failed
//! or ended: that news is written at once. A session made alone never
//! waits. (Waiting for a slot was not the sign of a burst: in a burst of
//! 1,000 the API server's CPU, not the 96 slots, held the first
//! reconciles back.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// UIDs of sessions whose children exist and whose first status waits,
    /// with when this process first deferred it.
    deferred: Mutex<HashMap<String, Instant>>,
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

    /// Whether the session `uid`, `age` old by the API server's clock,
    /// should leave its first status for later: other first reconciles are
    /// under way, it is young enough, and it has not waited [`MAX_DELAY`]
    /// here already.
    pub fn yields(&self, uid: &str, age: Duration) -> bool {
        let waited = self.deferred.lock().ok().and_then(|d| d.get(uid).map(Instant::elapsed)).unwrap_or_default();
        age < MAX_DELAY && waited < MAX_DELAY && self.first.load(Ordering::Relaxed) > 1
    }

    /// The children of `uid` exist; its first status waits (since now, the
    /// first time).
    pub fn defer(&self, uid: &str) {
        if let Ok(mut deferred) = self.deferred.lock() {
            deferred.entry(uid.to_owned()).or_insert_with(Instant::now);
        }
    }

    /// Whether the first status of `uid` waits (its children exist).
    pub fn is_deferred(&self, uid: &str) -> bool {
        self.deferred.lock().is_ok_and(|d| d.contains_key(uid))
    }

    /// `uid` has a status now, or is going away.
    pub fn forget(&self, uid: &str) {
        if let Ok(mut deferred) = self.deferred.lock() {
            deferred.remove(uid);
        }
    }

    /// Forgets every session `keep` does not name (they are gone).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut deferred) = self.deferred.lock() {
            deferred.retain(|uid, _| keep(uid));
        }
    }

    /// Sessions whose first status waits.
    pub fn deferred(&self) -> usize {
        self.deferred.lock().map(|d| d.len()).unwrap_or(0)
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
        assert!(!burst.yields("u", young), "a session made alone: nothing yields");
        let other = burst.begin();
        assert!(burst.yields("u", young));
        assert!(!burst.yields("u", MAX_DELAY), "old enough: written whatever is under way");
        drop(other);
        assert!(!burst.yields("u", young), "the other one is done");
        drop(mine);
    }

    #[test]
    fn a_clock_behind_the_servers_does_not_stretch_the_wait() {
        let burst = Burst::default();
        let (_mine, _other) = (burst.begin(), burst.begin());
        // The operator's clock runs behind: the session looks new for ever.
        let seen_as = Duration::ZERO;
        burst.defer("u");
        assert!(burst.yields("u", seen_as));
        // Deferred MAX_DELAY ago by this process's own clock: written now.
        if let Ok(mut deferred) = burst.deferred.lock() {
            deferred.insert("u".into(), Instant::now() - MAX_DELAY);
        }
        assert!(!burst.yields("u", seen_as));
        // A second defer keeps the first time.
        burst.defer("u");
        assert!(!burst.yields("u", seen_as));
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
