//! The status this operator last wrote for each session. By the
//! resourceVersion the API server gave the write: a reconcile that reads
//! an older session from the cache is acting on a status it has already
//! replaced (a restart budget spent, a claim recorded), so it waits for
//! the cache instead, which lets the controller reconcile without a long
//! debounce. By its content: the watch event that brings the write back
//! (its echo) wakes nobody, since the reconcile that wrote it knew all it
//! says.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Mutex;

use serde::Serialize;

/// Session UID → our last status write, until the cache has caught up
/// with it and its echo has been heard.
#[derive(Debug, Default)]
pub struct Written {
    records: Mutex<HashMap<String, Record>>,
    /// Keys the content fingerprints: a tenant cannot craft a session
    /// whose change passes for the operator's own write.
    keys: RandomState,
}

/// One status write.
#[derive(Debug, Clone, Copy, Default)]
struct Record {
    /// The resourceVersion the API server gave it, until the cache has it.
    revision: Option<u64>,
    /// What the session looks like with it, until its echo is heard.
    content: Option<u64>,
    /// A reconcile found the cache older than it and waits for its event.
    awaited: bool,
}

impl Record {
    fn done(&self) -> bool {
        self.revision.is_none() && self.content.is_none()
    }
}

/// resourceVersions are etcd revisions on every API server we run on; one
/// that is not a number turns the staleness check off for that object.
fn revision(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

/// Feeds serialised bytes to a hasher without building them in memory.
struct HashWriter<'a>(&'a mut dyn Hasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Written {
    /// The fingerprint of `content` (everything a reconcile reads of a
    /// session but its resourceVersion), to compare an event against what
    /// a write made of it. `None` if it cannot be serialised (never, for
    /// the types we have): such a write has no echo to recognise.
    pub fn fingerprint(&self, content: &impl Serialize) -> Option<u64> {
        let mut hasher = self.keys.build_hasher();
        serde_json::to_writer(HashWriter(&mut hasher), content).ok()?;
        Some(hasher.finish())
    }

    /// A status write of `uid` is about to be sent: the session will then
    /// look like `content` (a [`Written::fingerprint`]). Before the write,
    /// because its watch event may arrive before its answer.
    pub fn expect(&self, uid: &str, content: Option<u64>) {
        if let Ok(mut map) = self.records.lock() {
            let entry = map.entry(uid.to_owned()).or_default();
            entry.content = content;
            if entry.done() {
                map.remove(uid);
            }
        }
    }

    /// The write that was expected for `uid` failed: no echo will come.
    pub fn abandon(&self, uid: &str) {
        self.expect(uid, None);
    }

    /// Remembers the write that gave `uid` the `resource_version`.
    pub fn record(&self, uid: &str, resource_version: Option<&str>) {
        let Some(revision) = revision(resource_version) else { return };
        if let Ok(mut map) = self.records.lock() {
            let entry = map.entry(uid.to_owned()).or_default();
            entry.revision = Some(entry.revision.unwrap_or_default().max(revision));
        }
    }

    /// Whether the cached object (at `resource_version`) predates our last
    /// status write for `uid`. Forgets the write's version once the cache
    /// has it.
    pub fn is_stale(&self, uid: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.records.lock() else { return false };
        let Some(written) = map.get_mut(uid) else { return false };
        match (revision(resource_version), written.revision) {
            (Some(cached), Some(ours)) if cached < ours => {
                written.awaited = true;
                true
            }
            _ => {
                written.revision = None;
                if written.done() {
                    map.remove(uid);
                }
                false
            }
        }
    }

    /// Whether a watch event of `uid` at `resource_version`, whose content
    /// has the fingerprint `content`, is only the echo of our own last
    /// status write: it says nothing the reconcile that wrote did not know
    /// (in a burst of 1,000 these echoes were a third of all reconciles),
    /// so it wakes nobody, unless a reconcile waits for it. Recognised by
    /// content, not version: the event may come before the write's answer.
    pub fn is_echo(&self, uid: &str, resource_version: Option<&str>, content: impl FnOnce() -> Option<u64>) -> bool {
        // Fingerprinted outside the lock, and only when an echo is expected.
        let expected = self.records.lock().is_ok_and(|map| map.get(uid).is_some_and(|w| w.content.is_some()));
        let content = if expected { content() } else { None };
        let Ok(mut map) = self.records.lock() else { return false };
        let Some(written) = map.get_mut(uid) else { return false };
        if let (Some(seen), Some(ours)) = (revision(resource_version), written.revision) {
            if seen >= ours {
                written.revision = None;
            }
        }
        let echo = written.content.is_some() && written.content == content;
        let wakes = written.awaited;
        if echo {
            written.content = None;
            written.awaited = false;
        }
        if written.done() {
            map.remove(uid);
        }
        echo && !wakes
    }

    /// Forgets `uid` (the session is going away).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut map) = self.records.lock() {
            map.remove(uid);
        }
    }

    /// Forgets every session `keep` does not name (they are gone).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut map) = self.records.lock() {
            map.retain(|uid, _| keep(uid));
        }
    }

    /// How many writes the cache has not caught up with, or whose echo
    /// has not been heard (for tests).
    pub fn pending(&self) -> usize {
        self.records.lock().map(|m| m.len()).unwrap_or(0)
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
    fn the_event_of_our_own_write_is_an_echo_whenever_it_comes() {
        let written = Written::default();
        let ours = written.fingerprint(&("Pending", 1));
        assert!(!written.is_echo("u", Some("10"), || ours), "nothing written: every event is news");

        // The answer first, then the event.
        written.expect("u", ours);
        written.record("u", Some("10"));
        assert!(written.is_echo("u", Some("10"), || ours));
        assert_eq!(written.pending(), 0, "heard, and the cache has it: forgotten");
        assert!(!written.is_echo("u", Some("10"), || ours), "heard once");

        // The event before the answer: the same, by content.
        written.expect("u", ours);
        assert!(written.is_echo("u", Some("11"), || ours));
        written.record("u", Some("11"));
        assert!(!written.is_stale("u", Some("11")), "the cache had it before the answer");
        assert_eq!(written.pending(), 0);
    }

    #[test]
    fn other_changes_wake_and_the_echo_is_still_recognised_after_them() {
        let written = Written::default();
        let ours = written.fingerprint(&("Pending", 1));
        let theirs = written.fingerprint(&("Pending", 2));
        assert_ne!(ours, theirs);
        written.expect("u", ours);
        assert!(!written.is_echo("u", Some("20"), || theirs), "someone else's change is news");
        assert!(written.is_echo("u", Some("21"), || ours), "our write, after theirs");

        written.expect("u", ours);
        written.abandon("u");
        assert_eq!(written.pending(), 0, "a failed write has no echo to wait for");
        assert!(!written.is_echo("u", Some("22"), || ours));

        written.expect("v", None);
        assert_eq!(written.pending(), 0, "nothing to recognise: nothing kept");
        assert!(!written.is_echo("v", Some("1"), || None), "no fingerprint never matches");
    }

    #[test]
    fn an_echo_a_reconcile_waits_for_wakes_it() {
        let written = Written::default();
        let ours = written.fingerprint(&"Ready");
        written.expect("u", ours);
        written.record("u", Some("30"));
        assert!(written.is_stale("u", Some("25")));
        assert!(!written.is_echo("u", Some("30"), || ours), "a reconcile waits for it: it wakes");
        assert_eq!(written.pending(), 0);
    }

    #[test]
    fn fingerprints_are_keyed_per_process() {
        let (a, b) = (Written::default(), Written::default());
        assert_eq!(a.fingerprint(&"x"), a.fingerprint(&"x"));
        assert_ne!(a.fingerprint(&"x"), b.fingerprint(&"x"), "another key: a tenant cannot precompute one");
    }
}
