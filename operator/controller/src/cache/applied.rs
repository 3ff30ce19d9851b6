//! The children the operator applies and compares (runtime ConfigMap,
//! viewer Service, NetworkPolicy, snapshot claim), cached as metadata only.
//! Whole, they were 43% of the operator's heap at 10,000 sessions
//! (heaptrack: 118 of 275 MiB), and a reconcile needs one answer of them:
//! is each still what was last applied? The digest the operator stamps on
//! a child says what it was built from; its resourceVersion, against the
//! one at which this process last saw it whole and as wanted, says whether
//! anyone changed it since. A child at a version not verified (changed by
//! hand, or the process just started) is read once and compared whole.
//! What this process wrote or verified is in its one record of its own
//! writes ([`OwnWrites`]); the stores here hold what the watches saw.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::{ObjectMeta, PartialObjectMeta};
use kube::runtime::watcher::Event;
use playpen_api::naming::{APPLIED_ANNOTATION, SESSION_LABEL};

use crate::own_writes::{Key as OwnKey, OwnWrites};

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
pub fn judge(seen: Option<&Seen>, digest: &str, verified: Option<u64>) -> Verdict {
    let Some(seen) = seen else { return Verdict::Missing };
    if seen.stamp.as_deref() != Some(digest) {
        return Verdict::Stale;
    }
    match (seen.version.as_deref().and_then(|v| v.parse::<u64>().ok()), verified) {
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
pub const TRUST_UNSEEN: Duration = Duration::from_secs(5);

/// The writing end of one watch's store ([`Applied::store`]).
#[derive(Debug)]
pub struct Writer<K> {
    watched: Arc<RwLock<Watched>>,
    own: Arc<OwnWrites>,
    ready: tokio::sync::watch::Sender<bool>,
    kind: PhantomData<fn() -> K>,
}

impl<K: kube::Resource<DynamicType = ()>> Writer<K> {
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

impl<K: kube::Resource<DynamicType = ()>> Writer<K> {
    /// From an event on, the store speaks for its child; a deletion is kept
    /// a while, so that a write answered after it is not trusted.
    fn note(&self, event: &Event<PartialObjectMeta<K>>) {
        match event {
            Event::Apply(obj) | Event::InitApply(obj) => self.own.shown(&OwnKey::of::<K>(&obj.metadata)),
            Event::Delete(obj) => {
                self.own.deleted(&OwnKey::of::<K>(&obj.metadata), obj.metadata.resource_version.as_deref());
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
/// namespace, or one for all), judged with what the record of our own
/// writes says of each child (the version at which it was last seen whole
/// and as wanted, an answer its watch has not shown yet).
pub struct Applied<K> {
    stores: Vec<Reader>,
    own: Arc<OwnWrites>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Applied<K> {
    fn clone(&self) -> Self {
        Self { stores: self.stores.clone(), own: self.own.clone(), kind: PhantomData }
    }
}

impl<K> Default for Applied<K> {
    fn default() -> Self {
        Self::new(Arc::default())
    }
}

impl<K> std::fmt::Debug for Applied<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applied").field("stores", &self.stores.len()).finish_non_exhaustive()
    }
}

impl<K> Applied<K> {
    /// No store yet, judged with `own`.
    pub fn new(own: Arc<OwnWrites>) -> Self {
        Self { stores: Vec::new(), own, kind: PhantomData }
    }
}

impl<K: kube::Resource<DynamicType = ()>> Applied<K> {
    /// A store for one more watch; the watch feeds the writer.
    pub fn store(&mut self) -> Writer<K> {
        let watched = Arc::new(RwLock::new(Watched::default()));
        let (ready, seen) = tokio::sync::watch::channel(false);
        self.stores.push(Reader { watched: watched.clone(), ready: seen });
        Writer { watched, own: self.own.clone(), ready, kind: PhantomData }
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

    /// What the cache says of `stamped`, a child as built and stamped with
    /// `digest`. A child no store holds that the API server answered with
    /// lately, stamped with `digest`, and no deletion seen since, is as wanted.
    pub fn look(&self, stamped: &ObjectMeta, digest: &str) -> Verdict {
        let own = OwnKey::of::<K>(stamped);
        let verdict = self.with_seen(&key(stamped), |seen| judge(seen, digest, self.own.verified_version(&own)));
        // Missing or older than what this process just wrote (a child that
        // changed, like a policy naming its Pod): its watch event is on its way.
        let lagging = matches!(verdict, Verdict::Missing | Verdict::Stale);
        if lagging && self.own.answered_lately(&own, self.own.fingerprint(&digest), TRUST_UNSEEN) {
            return Verdict::AsWanted;
        }
        verdict
    }

    /// Records that the API server answered with `obj` (its metadata),
    /// stamped with `digest`, or that a read found it so, as wanted: until
    /// it changes, a reconcile trusts it unread (and until a watch shows
    /// it, for a few seconds, trusts it is there).
    pub fn remember(&self, obj: &ObjectMeta, digest: &str) {
        let own = OwnKey::of::<K>(obj);
        let version = obj.resource_version.as_deref();
        self.own.verified(&own, version);
        self.own.answered(&own, self.own.fingerprint(&digest), version, TRUST_UNSEEN);
    }

    /// Whether `meta` is a version of its child this process has verified
    /// as wanted (its own write's answer, or a read it compared): its watch
    /// event is no news to the owner's reconcile.
    pub fn known(&self, meta: &ObjectMeta) -> bool {
        let version = meta.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok());
        version.is_some() && self.own.verified_version(&OwnKey::of::<K>(meta)) == version
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

    /// A child of the session with UID `owner-uid` in `ns` (in the store's eyes, metadata only).
    fn meta(name: &str, version: &str, stamp: &str) -> PartialObjectMeta<ConfigMap> {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": version,
            "annotations": {APPLIED_ANNOTATION: stamp},
            "ownerReferences": [{"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession", "name": "s",
                "uid": "owner-uid", "controller": true}]}}))
        .unwrap()
    }

    /// The same child as built (no version yet).
    fn built(name: &str) -> ObjectMeta {
        let mut m = meta(name, "0", "d").metadata;
        m.resource_version = None;
        m
    }

    #[test]
    fn every_verdict_from_the_stamp_and_the_versions() {
        assert_eq!(judge(None, "d", Some(1)), Verdict::Missing);
        assert_eq!(judge(Some(&seen(Some("old"), Some("1"))), "d", Some(1)), Verdict::Stale, "built otherwise");
        assert_eq!(judge(Some(&seen(None, Some("1"))), "d", Some(1)), Verdict::Stale, "stamp removed by hand");
        assert_eq!(judge(Some(&seen(Some("d"), Some("1"))), "d", Some(1)), Verdict::AsWanted);
        assert_eq!(judge(Some(&seen(Some("d"), Some("2"))), "d", Some(1)), Verdict::Unverified, "changed since");
        assert_eq!(judge(Some(&seen(Some("d"), Some("1"))), "d", None), Verdict::Unverified, "never seen whole");
        assert_eq!(judge(Some(&seen(Some("d"), None)), "d", Some(1)), Verdict::Unverified);
        assert_eq!(judge(Some(&seen(Some("d"), Some("opaque"))), "d", None), Verdict::Unverified);
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
        assert_eq!(applied.look(&built("a"), "d"), Verdict::Missing, "not before the list is complete");
        writer.apply(&Event::InitDone);
        assert_eq!(applied.look(&built("a"), "d"), Verdict::Unverified, "listed, never seen whole");
        applied.remember(&meta("a", "1", "d").metadata, "d");
        assert_eq!(applied.look(&built("a"), "d"), Verdict::AsWanted);
        assert!(applied.known(&meta("a", "1", "d").metadata), "its event at that version is no news");
        let mut elsewhere = built("a");
        elsewhere.namespace = Some("other".into());
        assert_eq!(applied.look(&elsewhere, "d"), Verdict::Missing, "namespaced");
        writer.apply(&Event::Apply(meta("a", "2", "d")));
        assert_eq!(applied.look(&built("a"), "d"), Verdict::Unverified, "changed since");
        assert!(!applied.known(&meta("a", "2", "d").metadata), "a change by someone else is news");
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(meta("b", "3", "d")));
        assert!(applied.seen("ns", "a").is_some(), "the old list serves until the new one is complete");
        writer.apply(&Event::InitDone);
        assert!(applied.seen("ns", "a").is_none() && applied.seen("ns", "b").is_some());
        writer.apply(&Event::Delete(meta("b", "4", "d")));
        assert_eq!(applied.look(&built("b"), "d"), Verdict::Missing);
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
        applied.own.verified(&OwnKey::of::<ConfigMap>(&built("c")), Some("1"));
        assert_eq!(applied.look(&built("c"), "d"), Verdict::Missing);
    }

    #[test]
    fn an_answer_the_watch_has_not_shown_yet_is_trusted_a_few_seconds_unless_a_deletion_came() {
        let mut applied = Applied::<ConfigMap>::default();
        let writer = applied.store();
        writer.apply(&Event::InitDone);
        // Created (the answer), its watch event still on its way.
        applied.remember(&meta("a", "5", "d").metadata, "d");
        assert_eq!(applied.look(&built("a"), "d"), Verdict::AsWanted, "just answered");
        assert_eq!(applied.look(&built("a"), "other"), Verdict::Missing, "answered as built otherwise");
        // Once the watch shows it, the store speaks for it: a deletion is a deletion.
        writer.apply(&Event::Apply(meta("a", "5", "d")));
        writer.apply(&Event::Delete(meta("a", "6", "d")));
        assert_eq!(applied.look(&built("a"), "d"), Verdict::Missing, "deleted after it was seen");
        // A deletion seen before the answer of an older write: not trusted.
        writer.apply(&Event::Delete(meta("b", "9", "d")));
        applied.remember(&meta("b", "8", "d").metadata, "d");
        assert_eq!(applied.look(&built("b"), "d"), Verdict::Missing, "deleted at 9, answered at 8");
        // A newer create after the deletion is.
        applied.remember(&meta("b", "10", "d").metadata, "d");
        assert_eq!(applied.look(&built("b"), "d"), Verdict::AsWanted, "created again at 10");
    }
}
