//! What the session controller has seen of its own children. The watches
//! that wake it also fill these stores, so a reconcile reads a child from
//! memory and writes it only when it lacks something the session wants: a
//! resync of an unchanged session costs no write, and a reconcile no GET of
//! its Pod. Pods are cached as what a reconcile reads ([`CachedPod`]), the children the
//! operator compares as metadata ([`applied`]).
//!
//! A store can lag behind the API server by a watch event. A miss is
//! answered as before the caches existed (apply, or GET the Pod), so a lag
//! costs a no-op write at worst, never a wrong one; the Pod, which is never
//! re-applied, is read again when it is not in the store.

pub mod applied;
pub mod pod;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::Resource;
use playpen_api::v1alpha1::BrowserPool;
use serde_json::Value;

pub use applied::Applied;
pub use pod::CachedPod;

use crate::own_writes::OwnWrites;

/// One kind's stores: one per watched namespace (or one for all).
#[derive(Clone)]
pub struct Stores<K: Resource<DynamicType = ()> + Clone + 'static>(Vec<Store<K>>);

impl<K: Resource<DynamicType = ()> + Clone + 'static> std::fmt::Debug for Stores<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").field("stores", &self.0.len()).finish()
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Default for Stores<K> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Stores<K> {
    /// Adds the store of one more controller.
    pub fn push(&mut self, store: Store<K>) {
        self.0.push(store);
    }

    /// The object `namespace/name`, when a store holds it.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let key = ObjectRef::new(name).within(namespace);
        self.0.iter().find_map(|s| s.get(&key))
    }

    /// The first object `predicate` accepts, in any store.
    pub fn find(&self, predicate: impl Fn(&K) -> bool) -> Option<Arc<K>> {
        self.0.iter().find_map(|s| s.find(&predicate))
    }

    /// Every object `predicate` accepts.
    pub fn filter(&self, predicate: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.0.iter().flat_map(|s| s.state_filter(&predicate)).collect()
    }

    async fn ready(&self) {
        for store in &self.0 {
            // Err: the writer is gone (controller stopped); nothing to wait for.
            let _ = store.wait_until_ready().await;
        }
    }
}

/// The session controller's stores of the children it owns, and the
/// record of its own writes they are judged with.
#[derive(Debug, Clone, Default)]
pub struct Caches {
    /// What this process wrote (statuses, Pods, children, launch Secrets).
    pub own: Arc<OwnWrites>,
    /// Browser Pods (owned by sessions, claimed or cold, and the pools'
    /// warm ones), as a reconcile reads them.
    pub pods: Stores<CachedPod>,
    /// The pools' unclaimed Pods (a claim picks from these first).
    pub warm: Stores<CachedPod>,
    /// BrowserPools (a pooled session runs its pool's template).
    pub pools: Stores<BrowserPool>,
    /// Runtime ConfigMaps.
    pub config_maps: Applied<ConfigMap>,
    /// Viewer Services.
    pub services: Applied<Service>,
    /// Session NetworkPolicies.
    pub network_policies: Applied<NetworkPolicy>,
    /// Snapshot volume claims.
    pub claims: Applied<PersistentVolumeClaim>,
}

/// How long a launch Secret written or read as built is trusted without a
/// read: less than the 5-minute requeue, so that each periodic reconcile
/// reads it and a hand edit is put back within it.
pub const SECRET_RECHECK: Duration = Duration::from_secs(240);

/// How long a Pod this process created is expected before its watch event
/// (its event came first, or it was deleted first: then it never comes).
pub const CREATED_POD_EXPECTED: Duration = Duration::from_secs(60);

/// How long a reconcile waits for the first list of every store before it
/// goes on without them (misses: as if nothing were cached).
const READY_WAIT: Duration = Duration::from_secs(10);

impl Caches {
    /// Empty stores, judged with `own`.
    pub fn new(own: Arc<OwnWrites>) -> Self {
        Self {
            config_maps: Applied::new(own.clone()),
            services: Applied::new(own.clone()),
            network_policies: Applied::new(own.clone()),
            claims: Applied::new(own.clone()),
            own,
            ..Self::default()
        }
    }

    /// Waits until every store of children holds its first list, so the
    /// first reconciles after a start (a full resync) find what exists.
    /// False when they did not within [`READY_WAIT`]: a miss then says
    /// nothing. Not the warm Pods' and pools' stores: a claim asks the API
    /// server when they miss, and a cluster without the BrowserPool CRD
    /// (whose watch never lists) must not hold up every reconcile.
    pub async fn ready(&self) -> bool {
        let all = async {
            self.pods.ready().await;
            self.config_maps.ready().await;
            self.services.ready().await;
            self.network_policies.ready().await;
            self.claims.ready().await;
        };
        let filled = tokio::time::timeout(READY_WAIT, all).await.is_ok();
        if !filled {
            tracing::warn!("child caches not filled within {READY_WAIT:?}; reconciling without them");
        }
        filled
    }
}

/// A child kind the operator applies and compares before it writes.
pub trait Cached: Resource<DynamicType = ()> + Clone + serde::Serialize + 'static {
    /// JSON pointers under which a live child must be exactly as built,
    /// not merely hold every field built (see [`covers`]): there a field
    /// added by hand changes what the child does (a rule added to a
    /// NetworkPolicy, a selector narrowed, a key added to a Service's
    /// selector or to the runtime ConfigMap).
    const EXACT: &'static [&'static str] = &[];

    /// Its metadata cache, when the controller watches the kind.
    fn applied(caches: &Caches) -> Option<&Applied<Self>>;
}

macro_rules! cached {
    ($kind:ty, $field:ident, $exact:expr) => {
        impl Cached for $kind {
            const EXACT: &'static [&'static str] = $exact;

            fn applied(caches: &Caches) -> Option<&Applied<Self>> {
                Some(&caches.$field)
            }
        }
    };
}
cached!(ConfigMap, config_maps, &["/data", "/binaryData"]);
cached!(Service, services, &["/spec/selector"]);
// Every rule and selector; the API server adds nothing to a policy spec
// the builders do not set already (ports carry their protocol).
cached!(NetworkPolicy, network_policies, &["/spec"]);
cached!(PersistentVolumeClaim, claims, &[]);

/// Secrets are not watched (a watch needs list on every Secret in the
/// cluster); the apply phase reads them instead.
impl Cached for Secret {
    fn applied(_: &Caches) -> Option<&Applied<Self>> {
        None
    }
}

/// Whether `live` has every field `desired` sets, with the same value.
pub fn matches<K: serde::Serialize>(live: &K, desired: &K) -> bool {
    match (serde_json::to_value(live), serde_json::to_value(desired)) {
        (Ok(live), Ok(desired)) => covers(&live, &desired),
        _ => false,
    }
}

/// [`matches`], and under `K::EXACT` nothing more than `desired` either.
pub fn matches_exactly<K: Cached>(live: &K, desired: &K) -> bool {
    match (serde_json::to_value(live), serde_json::to_value(desired)) {
        (Ok(live), Ok(desired)) => covers(&live, &desired) && exactly(&live, &desired, K::EXACT),
        _ => false,
    }
}

/// Whether `live` and `desired` hold the same under each of `pointers`
/// (absent and null alike).
pub fn exactly(live: &Value, desired: &Value, pointers: &[&str]) -> bool {
    pointers.iter().all(|p| without_nulls(live.pointer(p)) == without_nulls(desired.pointer(p)))
}

fn without_nulls(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(map)) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(Some(v)))).collect(),
        ),
        Some(Value::Array(items)) => Value::Array(items.iter().map(|v| without_nulls(Some(v))).collect()),
        Some(other) => other.clone(),
    }
}

/// `live` covers `desired`: every key of a desired object is in the live
/// one and covered; lists have the same length and are covered item by
/// item; anything else is equal. What the API server adds (defaults, a
/// Service's cluster IP, status) is ignored; what a hand edit changed or
/// removed is not.
pub fn covers(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (_, Value::Null) => true,
        (Value::Object(live), Value::Object(desired)) => {
            desired.iter().all(|(key, want)| live.get(key).map_or(want.is_null(), |have| covers(have, want)))
        }
        (Value::Array(live), Value::Array(desired)) => {
            live.len() == desired.len() && live.iter().zip(desired).all(|(have, want)| covers(have, want))
        }
        _ => live == desired,
    }
}

/// Drops what no reconcile reads and what makes a cached object large:
/// the field managers' records.
pub fn slim<K: Resource>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn under_the_exact_pointers_an_addition_is_a_difference() {
        let desired = json!({"spec": {"podSelector": {"matchLabels": {"s": "a"}}, "policyTypes": ["Egress"], "egress": null},
            "metadata": {"name": "p"}});
        let same = json!({"spec": {"podSelector": {"matchLabels": {"s": "a"}}, "policyTypes": ["Egress"]},
            "metadata": {"name": "p", "uid": "u", "resourceVersion": "9"}});
        assert!(covers(&same, &desired) && exactly(&same, &desired, &["/spec"]));
        let opened = json!({"spec": {"podSelector": {"matchLabels": {"s": "a"}}, "policyTypes": ["Egress"],
            "egress": [{}]}, "metadata": {"name": "p"}});
        assert!(covers(&opened, &desired), "covering alone misses an added rule");
        assert!(!exactly(&opened, &desired, &["/spec"]));
        let narrowed =
            json!({"spec": {"podSelector": {"matchLabels": {"s": "a", "x": "y"}}, "policyTypes": ["Egress"]}});
        assert!(!exactly(&narrowed, &desired, &["/spec"]));
        // Outside the pointers, additions stay allowed.
        assert!(exactly(&opened, &desired, &["/metadata/name"]));
    }

    #[test]
    fn server_additions_are_covered_and_edits_are_not() {
        let desired = json!({"metadata": {"name": "s", "labels": {"a": "1"}},
            "spec": {"ports": [{"name": "viewer", "port": 8080}], "selector": {"x": "y"}}});
        let live = json!({"metadata": {"name": "s", "uid": "u", "labels": {"a": "1", "extra": "kept"}},
            "spec": {"ports": [{"name": "viewer", "port": 8080, "protocol": "TCP"}], "selector": {"x": "y"},
                     "clusterIP": "10.0.0.1"}, "status": {}});
        assert!(covers(&live, &desired), "defaults and server fields are not drift");

        let edited = json!({"metadata": {"name": "s", "labels": {"a": "1"}},
            "spec": {"ports": [{"name": "viewer", "port": 1111}], "selector": {"x": "y"}}});
        assert!(!covers(&edited, &desired), "a changed port is drift");

        let extra_port = json!({"metadata": {"name": "s", "labels": {"a": "1"}},
            "spec": {"ports": [{"name": "viewer", "port": 8080}, {"name": "x", "port": 1}], "selector": {"x": "y"}}});
        assert!(!covers(&extra_port, &desired), "a list of another length is drift");

        let unlabelled = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"name": "viewer", "port": 8080}],
            "selector": {"x": "y"}}});
        assert!(!covers(&unlabelled, &desired), "a removed label is drift");
    }

    #[test]
    fn a_desired_null_or_absent_field_asks_for_nothing() {
        assert!(covers(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(covers(&json!({"a": 1, "b": 2}), &json!({"a": 1})));
        assert!(!covers(&json!({"a": "1"}), &json!({"a": 1})), "types differ");
        assert!(!covers(&json!({}), &json!({"data": {"k": ""}})), "an empty value is still a value");
    }

    #[test]
    fn secrets_are_never_cached_and_an_empty_cache_holds_nothing() {
        let caches = Caches::default();
        let built =
            kube::api::ObjectMeta { name: Some("m".into()), namespace: Some("ns".into()), ..Default::default() };
        assert_eq!(ConfigMap::applied(&caches).map(|a| a.look(&built, "d")), Some(applied::Verdict::Missing));
        assert!(Secret::applied(&caches).is_none(), "Secrets are not watched");
    }

    #[test]
    fn slimming_drops_managed_fields_only() {
        let mut map = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("m".into()),
                managed_fields: Some(vec![Default::default()]),
                ..Default::default()
            },
            ..ConfigMap::default()
        };
        slim(&mut map);
        assert_eq!(map.metadata.managed_fields, None);
        assert_eq!(map.metadata.name.as_deref(), Some("m"));
    }
}
