//! The children the operator applies and compares (runtime ConfigMap,
//! viewer Service, NetworkPolicy, snapshot claim), cached as metadata only.
//! Whole, they were 43% of the operator's heap at 10,000 sessions
//! (heaptrack: 118 of 275 MiB), and a reconcile needs one answer of them:
//! is each still what was last applied? The digest the operator stamps on
//! a child says what it was built from; its resourceVersion, against the
//! one at which this process last saw it whole and as wanted, says whether
//! anyone changed it since. A child at a version not verified (changed by
//! hand, or the process just started) is read once and compared whole.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::{ObjectMeta, PartialObjectMeta};
use kube::runtime::watcher::Event;
use playpen_api::naming::{APPLIED_ANNOTATION, SESSION_LABEL};

/// What the cache says of a child about to be ensured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not cached: create it (and compare, if it exists after all).
    Missing,
    /// Stamped with another digest (built from something else): apply.
    Stale,
    /// Stamped alike and unchanged since it was seen as wanted: nothing to do.
    AsWanted,
    /// Stamped alike, but at a version not seen whole: read and compare.
    Unverified,
}

/// What the watch last saw of one child: what [`judge`] reads, and whose it
/// is (a claim checks its owners and session label). A few hundred bytes,
/// where a kube store of its metadata held two kilobytes (the struct and
/// two maps) and the whole object up to five.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    /// Its resourceVersion.
    pub version: Option<String>,
    /// The digest stamped on it ([`APPLIED_ANNOTATION`]).
    pub stamp: Option<String>,
    /// Its owner references.
    pub owners: Vec<OwnerReference>,
    /// Its session label ([`SESSION_LABEL`]).
    pub session: Option<String>,
}

impl Seen {
    /// What is kept of `meta`.
    pub fn of(meta: &ObjectMeta) -> Self {
        let get = |map: &Option<std::collections::BTreeMap<String, String>>, key: &str| {
            map.as_ref().and_then(|m| m.get(key)).cloned()
        };
        Self {
            version: meta.resource_version.clone(),
            stamp: get(&meta.annotations, APPLIED_ANNOTATION),
            owners: meta.owner_references.clone().unwrap_or_default(),
            session: get(&meta.labels, SESSION_LABEL),
        }
    }
}

/// Judges what was seen of a child against the `digest` of the child as
/// built now and the resourceVersion at which it was last `verified`.
pub fn judge(seen: Option<&Seen>, digest: &str, verified: Option<&str>) -> Verdict {
    let Some(seen) = seen else { return Verdict::Missing };
    if seen.stamp.as_deref() != Some(digest) {
        return Verdict::Stale;
    }
    match (seen.version.as_deref(), verified) {
        (Some(now), Some(then)) if now == then => Verdict::AsWanted,
        _ => Verdict::Unverified,
    }
}

/// A child's namespace and name.
type Key = (String, String);

fn key(meta: &ObjectMeta) -> Key {
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

/// One watch's children, kept like a kube reflector store keeps objects: a
/// relist fills a new map that replaces the old one when it is complete.
#[derive(Debug, Default)]
struct Watched {
    live: HashMap<Key, Seen>,
    relisting: Option<HashMap<Key, Seen>>,
}

/// How long a child this process wrote is trusted before its watch shows
/// it, and a deletion the watch showed outweighs a write answered after it.
/// A watch event takes milliseconds, seconds in a burst of a thousand.
const TRUST_UNSEEN: Duration = Duration::from_secs(5);

/// What happened lately to a child the stores do not show (yet).
#[derive(Debug, Clone)]
enum Lately {
    /// The API server answered this process with it (a write's answer, or
    /// a read's), stamped with this digest.
    Answered { digest: String, at: Instant },
    /// The watch saw it deleted at this revision.
    Deleted { revision: u64, at: Instant },
}

/// Children the API server answered this process with that no watch event
/// has shown yet, and children the watch saw deleted: between a create's answer and its
/// watch event a reconcile trusts the create instead of sending it again
/// (in a burst the session's next reconcile often came first, and each
/// such create was refused and read back).
#[derive(Debug, Default)]
struct Unseen(HashMap<Key, Lately>);

impl Unseen {
    /// Records `lately` of `key`. Every insert goes through here, so the
    /// map's size passes each power of two in an insert and old records go
    /// when it has doubled (a deletion's record was once kept without this
    /// check, so a map could pass its sweep point there and grow for good).
    fn insert(&mut self, key: Key, lately: Lately) {
        self.0.insert(key, lately);
        if self.0.len() >= SWEEP_FROM && self.0.len().is_power_of_two() {
            self.0.retain(|_, lately| match lately {
                Lately::Answered { at, .. } | Lately::Deleted { at, .. } => at.elapsed() < TRUST_UNSEEN,
            });
        }
    }
}

/// A resourceVersion as the number etcd gives it (0: opaque).
fn revision(version: Option<&str>) -> u64 {
    version.and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The writing end of one watch's store ([`Applied::store`]).
#[derive(Debug)]
pub struct Writer<K> {
    watched: Arc<RwLock<Watched>>,
    unseen: Arc<Mutex<Unseen>>,
    ready: tokio::sync::watch::Sender<bool>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Writer<K> {
    /// Applies one watch event of a child's metadata.
    pub fn apply(&self, event: &Event<PartialObjectMeta<K>>) {
        self.note(event);
        let Ok(mut watched) = self.watched.write() else { return };
        match event {
            Event::Apply(obj) => {
                watched.live.insert(key(&obj.metadata), Seen::of(&obj.metadata));
            }
            Event::Delete(obj) => {
                watched.live.remove(&key(&obj.metadata));
            }
            Event::Init => watched.relisting = Some(HashMap::new()),
            Event::InitApply(obj) => {
                if let Some(relisting) = watched.relisting.as_mut() {
                    relisting.insert(key(&obj.metadata), Seen::of(&obj.metadata));
                }
            }
            Event::InitDone => {
                if let Some(complete) = watched.relisting.take() {
                    watched.live = complete;
                }
                self.ready.send_replace(true);
            }
        }
    }
}

impl<K> Writer<K> {
    /// From an event on, the store speaks for its child; a deletion is kept
    /// a while, so that a write answered after it is not trusted.
    fn note(&self, event: &Event<PartialObjectMeta<K>>) {
        let Ok(mut unseen) = self.unseen.lock() else { return };
        match event {
            Event::Apply(obj) | Event::InitApply(obj) => {
                unseen.0.remove(&key(&obj.metadata));
            }
            Event::Delete(obj) => {
                let revision = revision(obj.metadata.resource_version.as_deref());
                unseen.insert(key(&obj.metadata), Lately::Deleted { revision, at: Instant::now() });
            }
            Event::Init | Event::InitDone => {}
        }
    }
}

/// The reading end of one watch's store.
#[derive(Debug, Clone)]
struct Reader {
    watched: Arc<RwLock<Watched>>,
    ready: tokio::sync::watch::Receiver<bool>,
}

/// One applied kind: what its metadata watches saw (one per watched
/// namespace, or one for all) and the resourceVersion at which each child
/// was last seen whole and as wanted (written by this operator, or read and
/// compared).
pub struct Applied<K> {
    stores: Vec<Reader>,
    verified: Arc<Mutex<HashMap<Key, String>>>,
    unseen: Arc<Mutex<Unseen>>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Applied<K> {
    fn clone(&self) -> Self {
        Self {
            stores: self.stores.clone(),
            verified: self.verified.clone(),
            unseen: self.unseen.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> Default for Applied<K> {
    fn default() -> Self {
        Self { stores: Vec::new(), verified: Arc::default(), unseen: Arc::default(), kind: PhantomData }
    }
}

impl<K> std::fmt::Debug for Applied<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applied").field("stores", &self.stores.len()).finish_non_exhaustive()
    }
}

/// Below this many verified versions the map is never swept.
const SWEEP_FROM: usize = 1024;

impl<K> Applied<K> {
    /// A store for one more watch; the watch feeds the writer.
    pub fn store(&mut self) -> Writer<K> {
        let watched = Arc::new(RwLock::new(Watched::default()));
        let (ready, seen) = tokio::sync::watch::channel(false);
        self.stores.push(Reader { watched: watched.clone(), ready: seen });
        Writer { watched, unseen: self.unseen.clone(), ready, kind: PhantomData }
    }

    /// What the watches saw of `namespace/name`.
    pub fn seen(&self, namespace: &str, name: &str) -> Option<Seen> {
        self.with_seen(&(namespace.to_owned(), name.to_owned()), |seen| seen.cloned())
    }

    /// `read` of what the watches saw of `key` (None: no store holds it),
    /// under the store's lock: a reconcile's look copies nothing.
    fn with_seen<T>(&self, key: &Key, read: impl Fn(Option<&Seen>) -> T) -> T {
        for store in &self.stores {
            if let Ok(watched) = store.watched.read() {
                if let Some(seen) = watched.live.get(key) {
                    return read(Some(seen));
                }
            }
        }
        read(None)
    }

    /// What the cache says of `namespace/name`, to be stamped with `digest`.
    /// A child no store holds that the API server answered with lately,
    /// stamped with `digest`, and no deletion seen since, is as wanted.
    pub fn look(&self, namespace: &str, name: &str, digest: &str) -> Verdict {
        let key = (namespace.to_owned(), name.to_owned());
        let then = self.verified.lock().ok().and_then(|v| v.get(&key).cloned());
        let verdict = self.with_seen(&key, |seen| judge(seen, digest, then.as_deref()));
        if verdict != Verdict::Missing {
            return verdict;
        }
        let lately = self.unseen.lock().ok().and_then(|u| u.0.get(&key).cloned());
        match lately {
            Some(Lately::Answered { digest: d, at }) if d == digest && at.elapsed() < TRUST_UNSEEN => Verdict::AsWanted,
            _ => Verdict::Missing,
        }
    }

    /// Records that the API server answered with `namespace/name` stamped
    /// with `digest` at `resource_version`, unless the watch saw it deleted
    /// at that revision or later. Old records go when the map has doubled.
    pub fn answered(&self, namespace: &str, name: &str, digest: &str, resource_version: Option<&str>) {
        let Ok(mut unseen) = self.unseen.lock() else { return };
        let key = (namespace.to_owned(), name.to_owned());
        let revision = revision(resource_version);
        if let Some(Lately::Deleted { revision: gone, at }) = unseen.0.get(&key) {
            if *gone >= revision && at.elapsed() < TRUST_UNSEEN {
                return;
            }
        }
        unseen.insert(key, Lately::Answered { digest: digest.to_owned(), at: Instant::now() });
    }

    /// Whether `meta` is a version of its child this process has verified
    /// as wanted (its own write's answer, or a read it compared): its watch
    /// event is no news to the owner's reconcile.
    pub fn known(&self, meta: &ObjectMeta) -> bool {
        let Some(version) = meta.resource_version.as_deref() else { return false };
        let Ok(verified) = self.verified.lock() else { return false };
        verified.get(&key(meta)).is_some_and(|v| v == version)
    }

    /// Records that `namespace/name` was as wanted at `resource_version`.
    /// Versions of children the stores no longer hold (their sessions
    /// deleted) go when the map has doubled since the last sweep.
    pub fn verified(&self, namespace: &str, name: &str, resource_version: Option<&str>) {
        let Some(version) = resource_version else { return };
        let Ok(mut verified) = self.verified.lock() else { return };
        verified.insert((namespace.to_owned(), name.to_owned()), version.to_owned());
        if verified.len() >= SWEEP_FROM && verified.len().is_power_of_two() {
            verified.retain(|key, _| self.with_seen(key, |seen| seen.is_some()));
        }
    }

    /// Waits until every watch has listed its children once.
    pub(super) async fn ready(&self) {
        for store in &self.stores {
            let mut ready = store.ready.clone();
            // Err: the writer is gone (controller stopped); nothing to wait for.
            let _ = ready.wait_for(|r| *r).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    fn seen(stamp: Option<&str>, version: Option<&str>) -> Seen {
        Seen { version: version.map(Into::into), stamp: stamp.map(Into::into), ..Seen::default() }
    }

    fn meta(name: &str, version: &str, stamp: &str) -> PartialObjectMeta<ConfigMap> {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": version,
            "annotations": {APPLIED_ANNOTATION: stamp}}}))
        .unwrap()
    }

    #[test]
    fn every_verdict_from_the_stamp_and_the_versions() {
        assert_eq!(judge(None, "d", Some("1")), Verdict::Missing);
        assert_eq!(judge(Some(&seen(Some("old"), Some("1"))), "d", Some("1")), Verdict::Stale, "built otherwise");
        assert_eq!(judge(Some(&seen(None, Some("1"))), "d", Some("1")), Verdict::Stale, "stamp removed by hand");
        assert_eq!(judge(Some(&seen(Some("d"), Some("1"))), "d", Some("1")), Verdict::AsWanted);
        assert_eq!(judge(Some(&seen(Some("d"), Some("2"))), "d", Some("1")), Verdict::Unverified, "changed since");
        assert_eq!(judge(Some(&seen(Some("d"), Some("1"))), "d", None), Verdict::Unverified, "never seen whole");
        assert_eq!(judge(Some(&seen(Some("d"), None)), "d", Some("1")), Verdict::Unverified);
        assert_eq!(judge(Some(&seen(Some("d"), None)), "d", None), Verdict::Unverified);
    }

    #[test]
    fn what_is_kept_of_a_child_is_its_version_stamp_owners_and_session() {
        let obj: PartialObjectMeta<ConfigMap> = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "c", "namespace": "ns", "resourceVersion": "7", "uid": "u",
                "labels": {"a": "1", SESSION_LABEL: "s"}, "annotations": {APPLIED_ANNOTATION: "d", "other": "x"},
                "ownerReferences": [{"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession", "name": "s",
                    "uid": "o", "controller": true}],
                "managedFields": [{"manager": "m"}], "creationTimestamp": "2026-01-01T00:00:00Z"}}))
        .unwrap();
        let kept = Seen::of(&obj.metadata);
        assert_eq!(kept.version.as_deref(), Some("7"));
        assert_eq!(kept.stamp.as_deref(), Some("d"));
        assert_eq!(Some(kept.owners.clone()), obj.metadata.owner_references, "a claim checks them");
        assert_eq!(kept.session.as_deref(), Some("s"), "a claim checks it");
        assert_eq!(Seen::of(&ObjectMeta::default()), Seen::default(), "nothing stamped, owned or labelled");
    }

    #[test]
    fn a_store_follows_its_watch_and_a_relist_replaces_it_when_complete() {
        let mut applied = Applied::<ConfigMap>::default();
        let writer = applied.store();
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(meta("a", "1", "d")));
        assert_eq!(applied.look("ns", "a", "d"), Verdict::Missing, "not before the list is complete");
        writer.apply(&Event::InitDone);
        assert_eq!(applied.look("ns", "a", "d"), Verdict::Unverified, "listed, never seen whole");
        applied.verified("ns", "a", Some("1"));
        assert_eq!(applied.look("ns", "a", "d"), Verdict::AsWanted);
        assert_eq!(applied.look("other", "a", "d"), Verdict::Missing, "namespaced");
        writer.apply(&Event::Apply(meta("a", "2", "d")));
        assert_eq!(applied.look("ns", "a", "d"), Verdict::Unverified, "changed since");
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(meta("b", "3", "d")));
        assert!(applied.seen("ns", "a").is_some(), "the old list serves until the new one is complete");
        writer.apply(&Event::InitDone);
        assert!(applied.seen("ns", "a").is_none() && applied.seen("ns", "b").is_some());
        writer.apply(&Event::Delete(meta("b", "4", "d")));
        assert_eq!(applied.look("ns", "b", "d"), Verdict::Missing);
    }

    #[tokio::test]
    async fn ready_waits_for_every_watch_to_list_once() {
        let mut applied = Applied::<ConfigMap>::default();
        let (first, second) = (applied.store(), applied.store());
        first.apply(&Event::InitDone);
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), applied.ready()).await;
        assert!(waiting.is_err(), "the second watch has not listed");
        second.apply(&Event::InitDone);
        tokio::time::timeout(std::time::Duration::from_secs(5), applied.ready()).await.expect("both listed");
    }

    #[test]
    fn a_child_no_store_holds_is_missing_whatever_was_verified() {
        let applied = Applied::<ConfigMap>::default();
        applied.verified("ns", "c", Some("1"));
        assert_eq!(applied.look("ns", "c", "d"), Verdict::Missing);
        applied.verified("ns", "other", None);
        assert_eq!(applied.verified.lock().unwrap().len(), 1, "no version, nothing recorded");
    }

    #[test]
    fn an_answer_the_watch_has_not_shown_yet_is_trusted_a_few_seconds_unless_a_deletion_came() {
        let mut applied = Applied::<ConfigMap>::default();
        let writer = applied.store();
        writer.apply(&Event::InitDone);
        // Created (the answer), its watch event still on its way.
        applied.answered("ns", "a", "d", Some("5"));
        assert_eq!(applied.look("ns", "a", "d"), Verdict::AsWanted, "just answered");
        assert_eq!(applied.look("ns", "a", "other"), Verdict::Missing, "answered as built otherwise");
        assert_eq!(applied.look("other", "a", "d"), Verdict::Missing, "namespaced");
        // Once the watch shows it, the store speaks for it: a deletion is a deletion.
        writer.apply(&Event::Apply(meta("a", "5", "d")));
        writer.apply(&Event::Delete(meta("a", "6", "d")));
        assert_eq!(applied.look("ns", "a", "d"), Verdict::Missing, "deleted after it was seen");
        // A deletion seen before the answer of an older write: not trusted.
        writer.apply(&Event::Delete(meta("b", "9", "d")));
        applied.answered("ns", "b", "d", Some("8"));
        assert_eq!(applied.look("ns", "b", "d"), Verdict::Missing, "deleted at 9, answered at 8");
        // A newer create after the deletion is.
        applied.answered("ns", "b", "d", Some("10"));
        assert_eq!(applied.look("ns", "b", "d"), Verdict::AsWanted, "created again at 10");
        // An answer older than the trust is not.
        let old = Instant::now().checked_sub(TRUST_UNSEEN + Duration::from_secs(1)).expect("uptime");
        let key = ("ns".to_owned(), "c".to_owned());
        applied.unseen.lock().unwrap().0.insert(key, Lately::Answered { digest: "d".into(), at: old });
        assert_eq!(applied.look("ns", "c", "d"), Verdict::Missing, "the watch should have shown it by now");
    }

    #[test]
    fn versions_of_children_no_store_holds_are_swept_when_the_map_doubles() {
        let mut applied = Applied::<ConfigMap>::default();
        let writer = applied.store();
        writer.apply(&Event::Apply(meta("kept", "1", "d")));
        applied.verified("ns", "kept", Some("1"));
        for i in 0..SWEEP_FROM - 2 {
            applied.verified("ns", &format!("c{i}"), Some("1"));
        }
        assert_eq!(applied.verified.lock().unwrap().len(), SWEEP_FROM - 1);
        applied.verified("ns", "last", Some("1"));
        let left: Vec<Key> = applied.verified.lock().unwrap().keys().cloned().collect();
        assert_eq!(left, [("ns".to_owned(), "kept".to_owned())], "only what a store holds");
    }

    #[test]
    fn deletions_alone_sweep_old_records_when_the_map_doubles() {
        let applied = Applied::<ConfigMap>::default();
        let long_ago = Instant::now().checked_sub(TRUST_UNSEEN * 2).expect("a clock past boot");
        let mut unseen = applied.unseen.lock().unwrap();
        for i in 0..SWEEP_FROM - 1 {
            unseen.insert(("ns".into(), format!("c{i}")), Lately::Deleted { revision: 1, at: long_ago });
        }
        assert_eq!(unseen.0.len(), SWEEP_FROM - 1);
        // The churn bench's case: sessions deleted, their children's deletions noted.
        unseen.insert(("ns".into(), "now".into()), Lately::Deleted { revision: 2, at: Instant::now() });
        assert_eq!(unseen.0.len(), 1, "only the recent deletion stays");
    }
}
