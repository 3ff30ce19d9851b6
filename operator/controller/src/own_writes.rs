//! The one record of this process's own writes: what it wrote of each
//! object (a session's status, a Pod it created, a child it applied, a
//! launch Secret), and what it read and found as it wants it. A watch event
//! that only brings back such a write (its echo) wakes nobody; a cache
//! older than the write is waited for; a child unchanged since is trusted
//! unread.
//!
//! Keyed by the object's owner (the session's UID; for the namespace's
//! baseline policy, which no session owns, the namespace), its kind, its
//! namespace and name (an owner reference may name a UID from anywhere): a
//! session's records go with it ([`OwnWrites::retain`], every few seconds,
//! and [`OwnWrites::forget`] when it is deleted), so nothing here outlives
//! its sessions. Each query names how long it trusts a record; one lock
//! guards them all.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::core::ObjectMeta;
use serde::Serialize;

/// Whose object a record is about, and which.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// The owning session's UID, or the namespace of an object no session owns.
    owner: Box<str>,
    kind: &'static str,
    /// `namespace/name`.
    object: Box<str>,
}

impl Key {
    /// The record of `kind` `namespace/name` owned by `owner`.
    pub fn new(owner: &str, kind: &'static str, namespace: &str, name: &str) -> Self {
        Self { owner: owner.into(), kind, object: format!("{namespace}/{name}").into() }
    }

    /// The record of session `namespace/name`'s own status (it owns itself).
    pub fn session(uid: &str, namespace: &str, name: &str) -> Self {
        Self::new(uid, "BrowserSession", namespace, name)
    }

    /// The record of `bs`'s own status.
    pub fn status_of(bs: &playpen_api::BrowserSession) -> Self {
        let meta = &bs.metadata;
        let (namespace, name) =
            (meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default());
        Self::session(meta.uid.as_deref().unwrap_or_default(), namespace, name)
    }

    /// The record of an object by its metadata: its controlling owner's UID
    /// (a session's), or its namespace when nothing controls it.
    pub fn of<K: kube::Resource<DynamicType = ()>>(meta: &ObjectMeta) -> Self {
        let controller = meta.owner_references.iter().flatten().find(|o| o.controller == Some(true));
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let owner = controller.map_or(namespace, |o| o.uid.as_str());
        Self::new(owner, kind::<K>(), namespace, meta.name.as_deref().unwrap_or_default())
    }
}

/// `K`'s kind, as the records name it.
pub fn kind<K: kube::Resource<DynamicType = ()>>() -> &'static str {
    // Every kind the operator writes is a static k8s-openapi or CRD type.
    match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "Other",
    }
}

/// What is known of one object.
#[derive(Debug, Clone, Copy, Default)]
struct Record {
    /// The resourceVersion of our last write (or of a read found as
    /// wanted): a session's cache older than it is stale; a child's watch
    /// event at it is no news; a Pod's create, until its event is heard.
    version: Option<u64>,
    /// What our last write made of it (a keyed fingerprint): a session's
    /// status until its echo is heard, a child as the API server answered
    /// it until its watch shows it, a launch Secret as read or written.
    content: Option<u64>,
    /// When the last of these was recorded: each query names how long it trusts one.
    at: Option<Instant>,
    /// A reconcile found the cache older than our write and waits for its event.
    awaited: bool,
    /// The watch saw it deleted, at this revision and when.
    deleted: Option<(u64, Instant)>,
}

impl Record {
    fn is_empty(&self) -> bool {
        self.version.is_none() && self.content.is_none() && self.deleted.is_none()
    }

    fn recent(&self, window: Duration) -> bool {
        self.at.is_some_and(|at| at.elapsed() < window)
    }
}

/// resourceVersions are etcd revisions on every API server we run on; one
/// that is not a number turns the checks that compare them off.
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

/// The records, and the key of their fingerprints.
#[derive(Debug, Default)]
pub struct OwnWrites {
    records: Mutex<HashMap<Key, Record>>,
    /// Keys the fingerprints: a tenant cannot craft an object whose change
    /// passes for the operator's own write.
    keys: RandomState,
}

impl OwnWrites {
    /// The fingerprint of `content`. `None` if it cannot be serialised
    /// (never, for the types we have): such a write has no echo to recognise.
    pub fn fingerprint(&self, content: &impl Serialize) -> Option<u64> {
        let mut hasher = self.keys.build_hasher();
        serde_json::to_writer(HashWriter(&mut hasher), content).ok()?;
        Some(hasher.finish())
    }

    /// `change` applied to `key`'s record, a new one if it has none; an
    /// empty record is dropped.
    fn update<T>(&self, key: &Key, change: impl FnOnce(&mut Record) -> T) -> Option<T> {
        let mut map = self.records.lock().ok()?;
        let record = map.entry(key.clone()).or_default();
        let out = change(record);
        if record.is_empty() {
            map.remove(key);
        }
        Some(out)
    }

    /// `change` applied to `key`'s record if it has one (most watch events
    /// are of objects with none: nothing is allocated for them).
    fn update_held<T>(&self, key: &Key, change: impl FnOnce(&mut Record) -> T) -> Option<T> {
        let mut map = self.records.lock().ok()?;
        let record = map.get_mut(key)?;
        let out = change(record);
        if record.is_empty() {
            map.remove(key);
        }
        Some(out)
    }

    /// `read` of `key`'s record, if there is one.
    fn read<T>(&self, key: &Key, read: impl FnOnce(&Record) -> T) -> Option<T> {
        self.records.lock().ok()?.get(key).map(read)
    }

    // A session's status.

    /// A status write of `key` is about to be sent: the session will then
    /// look like `content` (a [`OwnWrites::fingerprint`]). Before the
    /// write, because its watch event may arrive before its answer.
    pub fn expect(&self, key: &Key, content: Option<u64>) {
        self.update(key, |r| {
            r.content = content;
            r.at = Some(Instant::now());
        });
    }

    /// The write that was expected for `key` failed: no echo will come.
    pub fn abandon(&self, key: &Key) {
        self.expect(key, None);
    }

    /// Remembers that our write gave `key` the `resource_version` (the
    /// newest wins).
    pub fn wrote(&self, key: &Key, resource_version: Option<&str>) {
        let Some(revision) = revision(resource_version) else { return };
        self.update(key, |r| r.version = Some(r.version.unwrap_or_default().max(revision)));
    }

    /// Whether the cached object (at `resource_version`) predates our last
    /// write of `key`. Forgets the write's version once the cache has it.
    pub fn is_stale(&self, key: &Key, resource_version: Option<&str>) -> bool {
        self.update_held(key, |r| match (revision(resource_version), r.version) {
            (Some(cached), Some(ours)) if cached < ours => {
                r.awaited = true;
                true
            }
            _ => {
                r.version = None;
                false
            }
        })
        .unwrap_or(false)
    }

    /// Whether a watch event of `key` at `resource_version`, whose content
    /// has the fingerprint `content`, is only the echo of our own last
    /// write: it says nothing the reconcile that wrote did not know, so it
    /// wakes nobody, unless a reconcile waits for it. Recognised by
    /// content, not version: the event may come before the write's answer.
    pub fn is_echo(&self, key: &Key, resource_version: Option<&str>, content: impl FnOnce() -> Option<u64>) -> bool {
        // Fingerprinted outside the lock, and only when an echo is expected.
        let expected = self.read(key, |r| r.content.is_some()).unwrap_or(false);
        let content = if expected { content() } else { None };
        self.update_held(key, |r| {
            if let (Some(seen), Some(ours)) = (revision(resource_version), r.version) {
                if seen >= ours {
                    r.version = None;
                }
            }
            let echo = r.content.is_some() && r.content == content;
            let wakes = r.awaited;
            if echo {
                r.content = None;
                r.awaited = false;
            }
            echo && !wakes
        })
        .unwrap_or(false)
    }

    // A Pod this process created.

    /// Expects the watch event of the Pod `key`, created at `resource_version`.
    pub fn created(&self, key: &Key, resource_version: Option<&str>) {
        let Some(version) = revision(resource_version) else { return };
        self.update(key, |r| {
            r.version = Some(version);
            r.at = Some(Instant::now());
        });
    }

    /// Whether the Pod `key` was created here within `window` and the
    /// watch has not shown it yet.
    pub fn awaits(&self, key: &Key, window: Duration) -> bool {
        self.read(key, |r| r.version.is_some() && r.recent(window)).unwrap_or(false)
    }

    /// Whether `meta` is the Pod `key` as this process created it (then
    /// forgotten: any later event is news).
    pub fn heard_created(&self, key: &Key, meta: &ObjectMeta) -> bool {
        let seen = revision(meta.resource_version.as_deref());
        self.update_held(key, |r| {
            let heard = seen.is_some() && r.version == seen;
            // Another version: ours was replaced or went; stop expecting it.
            r.version = None;
            heard
        })
        .unwrap_or(false)
    }

    // A child applied and compared.

    /// Records that `key` was found as wanted at `resource_version` (our
    /// write's answer, or a read compared): its watch event at that
    /// version is no news, and a reconcile trusts it unread until it changes.
    pub fn verified(&self, key: &Key, resource_version: Option<&str>) {
        let Some(version) = revision(resource_version) else { return };
        self.update(key, |r| r.version = Some(version));
    }

    /// The resourceVersion at which `key` was last found as wanted.
    pub fn verified_version(&self, key: &Key) -> Option<u64> {
        self.read(key, |r| r.version).flatten()
    }

    /// Records that the API server answered with `key` stamped with
    /// `digest` (a fingerprint) at `resource_version`, unless the watch saw
    /// it deleted at that revision or later within `window`.
    pub fn answered(&self, key: &Key, digest: Option<u64>, resource_version: Option<&str>, window: Duration) {
        let version = revision(resource_version).unwrap_or(0);
        self.update(key, |r| {
            if r.deleted.is_some_and(|(gone, at)| gone >= version && at.elapsed() < window) {
                return;
            }
            r.content = digest;
            r.at = Some(Instant::now());
        });
    }

    /// Whether `key` was answered (or, for a Secret, seen) holding
    /// `digest` within `window`, and no watch has shown it since.
    pub fn answered_lately(&self, key: &Key, digest: Option<u64>, window: Duration) -> bool {
        digest.is_some() && self.read(key, |r| r.content == digest && r.recent(window)).unwrap_or(false)
    }

    /// A watch showed `key` (created or changed): from now on its store
    /// speaks for it.
    pub fn shown(&self, key: &Key) {
        self.update_held(key, |r| {
            r.content = None;
            r.deleted = None;
        });
    }

    /// A watch saw `key` deleted at `resource_version`: kept a while, so
    /// that a write answered before it is not trusted.
    pub fn deleted(&self, key: &Key, resource_version: Option<&str>) {
        let revision = revision(resource_version).unwrap_or(0);
        self.update(key, |r| {
            r.content = None;
            r.deleted = Some((revision, Instant::now()));
        });
    }

    // A launch Secret (not watched).

    /// Records that `key` holds `digest` now (read or written).
    pub fn saw(&self, key: &Key, digest: Option<u64>) {
        self.update(key, |r| {
            r.content = digest;
            r.at = Some(Instant::now());
        });
    }

    // Lifetime.

    /// Forgets everything of `owner` (its session is going away).
    pub fn forget(&self, owner: &str) {
        if let Ok(mut map) = self.records.lock() {
            map.retain(|key, _| &*key.owner != owner);
        }
    }

    /// Forgets every owner `keep` does not name (its session, or every
    /// session of its namespace, is gone).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut map) = self.records.lock() {
            map.retain(|key, _| keep(&key.owner));
        }
    }

    /// How many objects have a record (the `own_writes` gauge).
    pub fn len(&self) -> usize {
        self.records.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, Secret};

    fn status() -> Key {
        Key::session("u", "ns", "s")
    }

    #[test]
    fn an_older_cached_session_is_stale_until_the_cache_catches_up() {
        let own = OwnWrites::default();
        assert!(!own.is_stale(&status(), Some("5")), "nothing written: nothing stale");
        own.wrote(&status(), Some("10"));
        assert!(own.is_stale(&status(), Some("9")));
        assert!(own.is_stale(&status(), Some("9")), "still stale: the record stays");
        assert!(!own.is_stale(&status(), Some("10")));
        assert!(own.is_empty(), "caught up: forgotten");
        assert!(!own.is_stale(&status(), Some("9")), "forgotten: an older copy is not ours to wait for");
    }

    #[test]
    fn the_newest_write_counts_and_opaque_versions_turn_the_check_off() {
        let own = OwnWrites::default();
        own.wrote(&status(), Some("10"));
        own.wrote(&status(), Some("7"));
        assert!(own.is_stale(&status(), Some("9")), "the newer write is kept");
        assert!(!own.is_stale(&status(), Some("opaque")), "not a number: never stale");
        own.wrote(&Key::session("v", "ns", "s"), Some("opaque"));
        assert!(own.is_empty());
    }

    #[test]
    fn the_event_of_our_own_status_write_is_an_echo_whenever_it_comes() {
        let own = OwnWrites::default();
        let ours = own.fingerprint(&("Pending", 1));
        assert!(!own.is_echo(&status(), Some("10"), || ours), "nothing written: every event is news");
        // The answer first, then the event.
        own.expect(&status(), ours);
        own.wrote(&status(), Some("10"));
        assert!(own.is_echo(&status(), Some("10"), || ours));
        assert!(own.is_empty(), "heard, and the cache has it: forgotten");
        assert!(!own.is_echo(&status(), Some("10"), || ours), "heard once");
        // The event before the answer: the same, by content.
        own.expect(&status(), ours);
        assert!(own.is_echo(&status(), Some("11"), || ours));
        own.wrote(&status(), Some("11"));
        assert!(!own.is_stale(&status(), Some("11")), "the cache had it before the answer");
        assert!(own.is_empty());
    }

    #[test]
    fn other_changes_wake_and_an_awaited_echo_wakes_too() {
        let own = OwnWrites::default();
        let (ours, theirs) = (own.fingerprint(&("Pending", 1)), own.fingerprint(&("Pending", 2)));
        assert_ne!(ours, theirs);
        own.expect(&status(), ours);
        assert!(!own.is_echo(&status(), Some("20"), || theirs), "someone else's change is news");
        assert!(own.is_echo(&status(), Some("21"), || ours), "our write, after theirs");
        own.expect(&status(), ours);
        own.abandon(&status());
        assert!(own.is_empty(), "a failed write has no echo to wait for");

        own.expect(&status(), ours);
        own.wrote(&status(), Some("30"));
        assert!(own.is_stale(&status(), Some("25")));
        assert!(!own.is_echo(&status(), Some("30"), || ours), "a reconcile waits for it: it wakes");
        assert!(own.is_empty());
    }

    #[test]
    fn fingerprints_are_keyed_per_process() {
        let (a, b) = (OwnWrites::default(), OwnWrites::default());
        assert_eq!(a.fingerprint(&"x"), a.fingerprint(&"x"));
        assert_ne!(a.fingerprint(&"x"), b.fingerprint(&"x"), "another key: a tenant cannot precompute one");
    }

    fn owned(name: &str, version: Option<&str>) -> ObjectMeta {
        serde_json::from_value(serde_json::json!({"name": name, "namespace": "ns", "resourceVersion": version,
            "ownerReferences": [{"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession", "name": "s",
                "uid": "u", "controller": true}]}))
        .unwrap()
    }

    #[test]
    fn a_record_is_keyed_by_its_controlling_owner_or_its_namespace() {
        assert_eq!(Key::of::<Pod>(&owned("p", None)), Key::new("u", "Pod", "ns", "p"));
        assert_ne!(Key::of::<Pod>(&owned("p", None)), Key::of::<Secret>(&owned("p", None)), "kinds apart");
        let baseline = ObjectMeta { name: Some("b".into()), namespace: Some("ns".into()), ..Default::default() };
        assert_eq!(Key::of::<Pod>(&baseline), Key::new("ns", "Pod", "ns", "b"), "nothing controls it: its namespace");
        assert_ne!(Key::session("u", "ns", "p"), Key::new("u", "Pod", "ns", "p"), "a status is not a Pod");
    }

    #[test]
    fn only_the_created_version_of_a_pod_is_an_echo_and_only_once() {
        let own = OwnWrites::default();
        let key = Key::of::<Pod>(&owned("p", None));
        assert!(!own.heard_created(&key, &owned("p", Some("5"))), "not created here");
        own.created(&key, Some("5"));
        assert!(own.awaits(&key, Duration::from_secs(60)));
        assert!(!own.awaits(&key, Duration::ZERO), "expected no longer than asked");
        assert!(own.heard_created(&key, &owned("p", Some("5"))));
        assert!(!own.awaits(&key, Duration::from_secs(60)), "the watch showed it");
        assert!(!own.heard_created(&key, &owned("p", Some("5"))), "heard once");
        own.created(&key, Some("7"));
        assert!(!own.heard_created(&key, &owned("p", Some("8"))), "changed since: news");
        assert!(!own.heard_created(&key, &owned("p", Some("7"))), "no longer expected");
        own.created(&key, None);
        assert!(own.is_empty(), "no version: nothing to recognise it by");
    }

    #[test]
    fn a_secret_is_fresh_with_the_digest_it_was_seen_with_within_the_window() {
        let own = OwnWrites::default();
        let key = Key::of::<Secret>(&owned("launch", None));
        let (d1, d2) = (own.fingerprint(&"d1"), own.fingerprint(&"d2"));
        let window = Duration::from_secs(240);
        assert!(!own.answered_lately(&key, d1, window));
        own.saw(&key, d1);
        assert!(own.answered_lately(&key, d1, window));
        assert!(!own.answered_lately(&key, d2, window), "built differently now: read it");
        assert!(!own.answered_lately(&key, d1, Duration::ZERO), "too long ago: read it");
        assert!(!own.answered_lately(&key, None, window), "no digest never matches");
    }

    #[test]
    fn records_go_with_their_owner() {
        let own = OwnWrites::default();
        own.wrote(&Key::session("u", "ns", "s"), Some("1"));
        own.created(&Key::new("u", "Pod", "ns", "p"), Some("2"));
        own.verified(&Key::new("v", "ConfigMap", "ns", "c"), Some("3"));
        own.verified(&Key::new("ns", "NetworkPolicy", "ns", "baseline"), Some("4"));
        assert_eq!(own.len(), 4);
        own.forget("u");
        assert_eq!(own.len(), 2, "the deleted session's records went at once");
        own.deleted(&Key::new("gone", "Service", "ns", "x"), Some("5"));
        own.retain(|owner| owner == "v");
        assert_eq!(own.len(), 1, "sessions and namespaces no longer there: forgotten");
        assert_eq!(own.verified_version(&Key::new("v", "ConfigMap", "ns", "c")), Some(3));
    }
}
