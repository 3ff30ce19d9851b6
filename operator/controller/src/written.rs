//! The status this operator last wrote for each session, by the
//! resourceVersion the API server gave the write. A reconcile that reads
//! an older session from the cache is acting on a status it has already
//! replaced (a restart budget spent, a claim recorded): it waits for the
//! cache instead, which lets the controller reconcile without a long
//! debounce.

use std::collections::HashMap;
use std::sync::Mutex;

/// Session UID → resourceVersion of our last status write, until the cache
/// has caught up with it.
#[derive(Debug, Default)]
pub struct Written(Mutex<HashMap<String, u64>>);

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
            *entry = (*entry).max(revision);
        }
    }

    /// Whether the cached object (at `resource_version`) predates our last
    /// status write for `uid`. Forgets the write once the cache has it.
    pub fn is_stale(&self, uid: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.0.lock() else { return false };
        let Some(&written) = map.get(uid) else { return false };
        match revision(resource_version) {
            Some(cached) if cached < written => true,
            _ => {
                map.remove(uid);
                false
            }
        }
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
}
