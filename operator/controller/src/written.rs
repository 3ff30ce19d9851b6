//! The status this operator last wrote for each session, by the
//! resourceVersion the API server gave the write. A reconcile that reads
//! an older session from the cache is acting on a status it has already
//! replaced (a restart budget spent, a claim recorded): it waits for the
//! cache instead, which lets the controller reconcile without a long
//! debounce.

use std::collections::HashMap;
use std::sync::Mutex;

/// Session UID → our last status write, until the cache has caught up
/// with it.
#[derive(Debug, Default)]
pub struct Written(Mutex<HashMap<String, Record>>);

/// One status write.
#[derive(Debug, Clone, Copy, Default)]
struct Record {
    /// The resourceVersion the API server gave it.
    revision: u64,
    /// A reconcile found the cache older than it and waits for its event.
    awaited: bool,
}

/// resourceVersions are etcd revisions on every API server we run on; one
/// that is not a number turns the check off for that object (never on).
fn revision(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

impl Written {
    /// Remembers the write that gave `uid` the `resource_version`.
    pub fn record(&self, uid: &str, resource_version: Option<&str>) {
        let Some(revision) = revision(resource_version) else { return };
        if let Ok(mut map) = self.0.lock() {
            let entry = map.entry(uid.to_owned()).or_default();
            entry.revision = entry.revision.max(revision);
        }
    }

    /// Whether the cached object (at `resource_version`) predates our last
    /// status write for `uid`. Forgets the write once the cache has it.
    pub fn is_stale(&self, uid: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.0.lock() else { return false };
        let Some(written) = map.get_mut(uid) else { return false };
        match revision(resource_version) {
            Some(cached) if cached < written.revision => {
                written.awaited = true;
                true
            }
            _ => {
                map.remove(uid);
                false
            }
        }
    }

    /// Whether a watch event of `uid` at `resource_version` is only the
    /// echo of our own last status write: the reconcile that wrote it knew
    /// all it says, so it wakes nobody (in a burst of 1,000 these echoes
    /// were a third of all reconciles) unless a reconcile waits for it.
    /// Forgets the write either way once the cache has it.
    pub fn is_echo(&self, uid: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.0.lock() else { return false };
        let Some(written) = map.get(uid).copied() else { return false };
        let Some(seen) = revision(resource_version) else { return false };
        if seen < written.revision {
            return false;
        }
        map.remove(uid);
        seen == written.revision && !written.awaited
    }

    /// Forgets `uid` (the session is going away).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(uid);
        }
    }

    /// How many writes the cache has not caught up with (for tests).
    pub fn pending(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_cached_object_is_stale_until_the_cache_catches_up() {
        let written = Written::default();
        assert!(!written.is_stale("u", Some("5")), "nothing written: nothing stale");
        written.record("u", Some("10"));
        assert!(written.is_stale("u", Some("9")));
        assert!(written.is_stale("u", Some("9")), "still stale: the record stays");
        assert!(!written.is_stale("u", Some("10")));
        assert_eq!(written.pending(), 0, "caught up: forgotten");
        assert!(!written.is_stale("u", Some("9")), "forgotten: an older copy is not ours to wait for");
    }

    #[test]
    fn the_newest_write_counts_and_opaque_versions_turn_the_check_off() {
        let written = Written::default();
        written.record("u", Some("10"));
        written.record("u", Some("7"));
        assert!(written.is_stale("u", Some("9")), "the newer write is kept");
        assert!(!written.is_stale("u", Some("opaque")), "not a number: never stale");
        written.record("v", Some("opaque"));
        assert_eq!(written.pending(), 0);
        written.record("w", Some("3"));
        written.forget("w");
        assert!(!written.is_stale("w", Some("1")));
    }

    #[test]
    fn the_event_of_our_own_write_is_an_echo_unless_a_reconcile_waits_for_it() {
        let written = Written::default();
        assert!(!written.is_echo("u", Some("10")), "nothing written: every event is news");
        written.record("u", Some("10"));
        assert!(!written.is_echo("u", Some("9")), "an older event is someone else's change");
        assert!(written.is_echo("u", Some("10")));
        assert_eq!(written.pending(), 0, "the cache has it now: forgotten");
        assert!(!written.is_echo("u", Some("10")), "heard once");

        written.record("u", Some("20"));
        assert!(!written.is_echo("u", Some("21")), "a later change is news");
        assert_eq!(written.pending(), 0);

        written.record("u", Some("30"));
        assert!(written.is_stale("u", Some("25")));
        assert!(!written.is_echo("u", Some("30")), "a reconcile waits for it: it wakes");
        assert_eq!(written.pending(), 0);
        written.record("v", Some("opaque"));
        assert!(!written.is_echo("v", Some("opaque")), "opaque versions: never an echo");
    }
}
