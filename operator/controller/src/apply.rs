//! Apply phase: every child written with one field manager, skipped for a
//! child the controller's cache shows already as wanted ([`crate::cache`]):
//! a reconcile of an unchanged session writes nothing.
//!
//! A child no cache holds is created with a plain POST, since a server-side
//! apply that creates costs the API server about 1.5 times as much
//! (measured: 1,000 sessions' children, POST vs apply, same concurrency);
//! one that exists but differs is server-side applied (force), after its
//! fields are handed from the POST's entry to the apply's
//! ([`crate::ownership`]), so that what the session no longer asks for goes.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Pod, Secret, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource, ResourceExt};
use playpen_api::naming::{applied_digest, APPLIED_ANNOTATION, MANAGER};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cache::applied::Verdict;
use crate::cache::{self, Cached, Caches};
use crate::children::Children;
use crate::error::{Error, Result};
use crate::runtime::leader::Fence;
use crate::{own_writes, ownership};

/// What a child object must be to be server-side applied in a namespace.
pub trait Child:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + k8s_openapi::Resource
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
{
}

impl<K> Child for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + k8s_openapi::Resource
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
{
}

/// Where children are written: the client, the leadership fence every
/// write passes just before it is sent, and what is known of them already.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// API client.
    pub client: &'a Client,
    /// Leadership fence.
    pub fence: &'a Fence,
    /// Namespace of the session and its children.
    pub namespace: &'a str,
    /// The children as last seen (empty: every child is applied).
    pub cache: &'a Caches,
}

impl Target<'_> {
    /// An `Api` to write `K` in the target's namespace with ([`Fence::writer`]).
    pub fn writer<K>(&self) -> Result<Api<K>>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        self.fence.writer(self.client, self.namespace)
    }
}

impl Debug for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("namespace", &self.namespace).field("fence", &self.fence).finish()
    }
}

/// Server-side applies `obj`, [stamped](stamp) (force: this manager owns
/// these fields).
pub async fn apply<K: Cached + Child>(to: Target<'_>, obj: &K) -> Result<K> {
    apply_stamped(to, &stamp(obj)?).await
}

/// [`apply`] for an object [`stamp`] already made (the callers that compare
/// before they write): the digest is computed once. An object created with
/// a POST is handed over to the apply entry the first time ([`ownership`]).
/// What it returns is [remembered](remember) as wanted.
async fn apply_stamped<K: Cached + Child>(to: Target<'_>, obj: &K) -> Result<K> {
    let mut applied = server_side_apply(to, obj).await?;
    let entries = applied.meta().managed_fields.as_deref().unwrap_or_default();
    if let Some(adopted) = ownership::adopted(entries, MANAGER) {
        hand_over(to, &applied, adopted).await?;
        applied = server_side_apply(to, obj).await?;
    }
    if !cache::matches_exactly(&applied, obj) {
        applied = put_back(to, &applied, obj).await?;
    }
    remember(to, &applied);
    Ok(applied)
}

/// Writes `obj`'s values under `K::EXACT` over `live`'s, unless it changed
/// since: what another field manager added there (a hand edit) survives a
/// server-side apply, which removes only its own manager's fields.
async fn put_back<K: Cached + Child>(to: Target<'_>, live: &K, obj: &K) -> Result<K> {
    let namespace = to.namespace;
    let api: Api<K> = to.writer()?;
    let name = live.name_any();
    let kind = <K as k8s_openapi::Resource>::KIND;
    let (have, want) = match (serde_json::to_value(live), serde_json::to_value(obj)) {
        (Ok(have), Ok(want)) => (have, want),
        (Err(source), _) | (_, Err(source)) => return Err(Error::Serialize { what: "a child", source }),
    };
    let mut ops =
        vec![serde_json::json!({"op": "test", "path": "/metadata/resourceVersion", "value": live.resource_version()})];
    for pointer in K::EXACT {
        match (have.pointer(pointer).is_some(), want.pointer(pointer).filter(|v| !v.is_null())) {
            (_, Some(value)) => ops.push(serde_json::json!({"op": "add", "path": pointer, "value": value})),
            (true, None) => ops.push(serde_json::json!({"op": "remove", "path": pointer})),
            (false, None) => {}
        }
    }
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops))
        .map_err(|source| Error::Serialize { what: "a put-back patch", source })?;
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    api.patch(&name, &params, &Patch::Json::<()>(patch)).await.map_err(Error::kube("put back", kind, namespace, &name))
}

/// Replaces `live`'s field managers with `entries`, unless it changed since.
async fn hand_over<K: Child>(to: Target<'_>, live: &K, entries: Vec<ManagedFieldsEntry>) -> Result<()> {
    let namespace = to.namespace;
    let api: Api<K> = to.writer()?;
    let name = live.name_any();
    let kind = <K as k8s_openapi::Resource>::KIND;
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": live.resource_version()},
        {"op": "replace", "path": "/metadata/managedFields", "value": entries},
    ]))
    .map_err(|source| Error::Serialize { what: "a field managers patch", source })?;
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    api.patch(&name, &params, &Patch::Json::<()>(patch)).await.map_err(Error::kube(
        "hand over the fields of",
        kind,
        namespace,
        &name,
    ))?;
    Ok(())
}

/// One server-side apply of `obj` (force: this manager owns these fields).
async fn server_side_apply<K: Child>(to: Target<'_>, obj: &K) -> Result<K> {
    let namespace = to.namespace;
    let name = obj.name_any();
    let api: Api<K> = to.writer()?;
    api.patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(obj)).await.map_err(|source| Error::Kube {
        action: "apply",
        kind: <K as k8s_openapi::Resource>::KIND,
        namespace: namespace.to_owned(),
        name,
        source: Box::new(source),
    })
}

/// `obj` with the digest of itself as built ([`APPLIED_ANNOTATION`]; a
/// stamp already there is replaced, not digested).
pub fn stamp<K: Child>(obj: &K) -> Result<K> {
    let mut stamped = obj.clone();
    let annotations = stamped.meta_mut().annotations.get_or_insert_default();
    annotations.remove(APPLIED_ANNOTATION);
    if annotations.is_empty() {
        stamped.meta_mut().annotations = None;
    }
    let json = serde_json::to_string(&stamped).map_err(|source| Error::Serialize { what: "a child", source })?;
    stamped.meta_mut().annotations.get_or_insert_default().insert(APPLIED_ANNOTATION.to_owned(), applied_digest(&json));
    Ok(stamped)
}

/// The digest [`stamp`] put on `stamped`.
pub fn digest_of<K: Resource>(stamped: &K) -> &str {
    stamped.meta().annotations.as_ref().and_then(|a| a.get(APPLIED_ANNOTATION)).map_or("", String::as_str)
}

/// Records that `obj`, as the API server returned it, is as wanted at its
/// resourceVersion: until it changes, a reconcile trusts it unread (and
/// until a watch shows it, for a few seconds, trusts it is there).
fn remember<K: Cached>(to: Target<'_>, obj: &K) {
    if let Some(applied) = K::applied(to.cache) {
        applied.remember(obj.meta(), digest_of(obj));
    }
}

/// Applies `obj` unless the cache shows it already as wanted: the same
/// digest (nothing we build changed) and unchanged since it was last seen
/// with every field as we set it (no hand edit since). Says what it found.
pub async fn ensure<K: Cached + Child>(to: Target<'_>, obj: &K) -> Result<Found> {
    let stamped = stamp(obj)?;
    let found = look(to, &stamped).await?;
    if found == Found::Differs {
        apply_stamped(to, &stamped).await?;
    }
    Ok(found)
}

/// What [`ensure`] found of a stamped child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// It was missing: created as built now.
    Created,
    /// There, as wanted: nothing to write.
    AsWanted,
    /// There (or gone again) but not as wanted: to be applied.
    Differs,
}

/// Finds `stamped` in the cache, or creates it when the cache lacks it. A
/// create refused because it exists (the cache lags a watch event, or a
/// status naming it was lost) reads it and compares; so does a cached child
/// changed since it was last seen as wanted.
async fn look<K: Cached + Child>(to: Target<'_>, stamped: &K) -> Result<Found> {
    let Some(applied) = K::applied(to.cache) else { return create_or_compare(to, stamped).await };
    match applied.look(stamped.meta(), digest_of(stamped)) {
        Verdict::Missing => create_or_compare(to, stamped).await,
        Verdict::Stale => Ok(Found::Differs),
        Verdict::AsWanted => Ok(Found::AsWanted),
        Verdict::Unverified => read_and_compare(to, stamped).await,
    }
}

/// Reads `stamped`'s live object and compares; gone meanwhile: created.
async fn read_and_compare<K: Cached + Child>(to: Target<'_>, stamped: &K) -> Result<Found> {
    let name = stamped.name_any();
    let api: Api<K> = Api::namespaced(to.client.clone(), to.namespace);
    let kind = <K as k8s_openapi::Resource>::KIND;
    match api.get_opt(&name).await.map_err(Error::kube("get", kind, to.namespace, &name))? {
        Some(live) => Ok(compared(to, &live, stamped)),
        None => create_or_compare(to, stamped).await,
    }
}

/// Whether `live` is as `stamped` wants it; remembered when it is.
fn compared<K: Cached>(to: Target<'_>, live: &K, stamped: &K) -> Found {
    if !cache::matches_exactly(live, stamped) {
        return Found::Differs;
    }
    remember(to, live);
    Found::AsWanted
}

/// POSTs `stamped`; when it exists already, reads it and compares.
async fn create_or_compare<K: Cached + Child>(to: Target<'_>, stamped: &K) -> Result<Found> {
    Ok(match create_or_read(to, stamped).await? {
        (Some(created), true) => {
            remember(to, &created);
            Found::Created
        }
        (Some(live), false) => compared(to, &live, stamped),
        (None, _) => Found::Differs,
    })
}

/// POSTs `stamped`; when it exists already, reads it. Returns the object as
/// the API server has it (`None`: deleted since the refused create) and
/// whether this call created it.
async fn create_or_read<K: Child>(to: Target<'_>, stamped: &K) -> Result<(Option<K>, bool)> {
    if let Some(created) = create_stamped(to, stamped).await? {
        return Ok((Some(created), true));
    }
    let name = stamped.name_any();
    let api: Api<K> = Api::namespaced(to.client.clone(), to.namespace);
    let kind = <K as k8s_openapi::Resource>::KIND;
    let live = api.get_opt(&name).await.map_err(Error::kube("get", kind, to.namespace, &name))?;
    Ok((live, false))
}

/// Creates `obj` (stamped already) with a plain POST under this operator's
/// field manager. `None`: it exists already (409), nothing was written.
pub async fn create_stamped<K: Child>(to: Target<'_>, obj: &K) -> Result<Option<K>> {
    let namespace = to.namespace;
    let api: Api<K> = to.writer()?;
    let params = PostParams { field_manager: Some(MANAGER.to_owned()), ..PostParams::default() };
    match api.create(&params, obj).await {
        Ok(created) => Ok(Some(created)),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
        Err(source) => {
            Err(Error::kube("create", <K as k8s_openapi::Resource>::KIND, namespace, &obj.name_any())(source))
        }
    }
}

/// Creates the Pod (a Pod is never re-applied: see [`apply_children`]).
/// One there already is left as it is: its watch event wakes the next
/// reconcile, which finds it in the cache.
pub async fn create_the_pod(to: Target<'_>, pod: &Pod) -> Result<()> {
    let created = create_stamped(to, &stamp(pod)?).await?;
    expect_echo(to, created.as_ref());
    Ok(())
}

/// The create's own watch event is no news to the reconcile that made it.
fn expect_echo(to: Target<'_>, created: Option<&Pod>) {
    if let Some(pod) = created {
        to.cache.own.created(&own_writes::Key::of::<Pod>(pod.meta()), pod.meta().resource_version.as_deref());
    }
}

/// Whether the children were applied before: a launch Secret is then read
/// and compared before it is written (Secrets are not cached); on a first
/// apply the read would only add a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Applied before (the Pod exists, or the status names it): read the
    /// Secret unless seen lately, write on a change.
    Before,
    /// Maybe never: write the Secret.
    Unknown,
}

/// Where the session's Pod stands once every other child is in place.
#[derive(Debug)]
pub enum PodState {
    /// As the API server (or the cache of it) holds it, with its status.
    Exists(Box<Pod>),
    /// Not there, and every reference resolved: the caller creates it
    /// ([`create_the_pod`]), at once with the status write that names it.
    ToCreate,
    /// Not there, and not to be created now.
    Absent,
}

impl PodState {
    /// The Pod as the status reads it: as it is, or `as_built` when it is
    /// to be created.
    pub fn pod<'a>(&'a self, as_built: &'a Pod) -> Option<&'a Pod> {
        match self {
            PodState::Exists(pod) => Some(pod),
            PodState::ToCreate => Some(as_built),
            PodState::Absent => None,
        }
    }
}

/// Applies every child but the Pod and says where the Pod stands. The Pod
/// is created once (by the caller, on [`PodState::ToCreate`]) and then only
/// read: its spec is immutable, so re-applying it after an operator upgrade
/// that builds it differently would fail every reconcile. It is only to be
/// created when `create_pod` (every reference resolved).
///
/// A Pod neither cached nor `recorded` (named in the session's status,
/// which [`crate::written`] keeps current) was never created: it is to be
/// created without a read first. Were it there after all (a status write
/// lost), the create is refused and the next reconcile reads it.
pub async fn apply_children(to: Target<'_>, children: &Children, create_pod: bool, recorded: bool) -> Result<PodState> {
    let Target { client, namespace, .. } = to;
    let name = children.pod.name_any();
    if let Some(pod) = to.cache.pods.get(namespace, &name) {
        apply_all_but_the_pod(to, children, Seen::Before).await?;
        return Ok(PodState::Exists(Box::new(pod.to_pod())));
    }
    let existing = async {
        if !recorded {
            return Ok(None);
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        pods.get_opt(&name).await.map_err(|source| Error::Kube {
            action: "get",
            kind: "Pod",
            namespace: namespace.to_owned(),
            name: name.clone(),
            source: Box::new(source),
        })
    };
    // Everything the Pod mounts or is isolated by, in parallel (independent
    // objects), and the recorded Pod; only then the Pod itself. A status
    // names the Pod only after its mounts were applied: a launch Secret
    // seen lately is not sent again (the window between a status and its
    // Pod reaching the caches, in a burst, made it a refused create).
    let seen = if recorded { Seen::Before } else { Seen::Unknown };
    let (existing, ()) = futures::try_join!(existing, apply_all_but_the_pod(to, children, seen))?;
    Ok(match existing {
        Some(pod) => PodState::Exists(Box::new(pod)),
        None if create_pod => PodState::ToCreate,
        None => PodState::Absent,
    })
}

/// Applies every child but the Pod, in parallel: what a Pod mounts or is
/// isolated by (for a session whose Pod came from a pool, all there is to apply).
pub async fn apply_all_but_the_pod(to: Target<'_>, children: &Children, seen: Seen) -> Result<()> {
    futures::try_join!(apply_mounted(to, children, seen), apply_isolation_and_viewer(to, children))?;
    Ok(())
}

/// Creates the Pod at once with everything it mounts and is isolated by,
/// for a session none of whose children were made yet: one round trip
/// where [`apply_children`] then [`create_the_pod`] take two, and a
/// reconcile holds its slot that much less. Only under the namespace's
/// baseline policy ([`crate::baseline`]): it isolates the Pod until the
/// session's own policy exists. A mount that was there already with other
/// contents (left by a deleted session of the same name, not collected
/// yet) may have been read by the Pod before it was rewritten: that Pod is
/// deleted, and the next reconcile (woken by the deletion) creates it
/// again, after its mounts.
pub async fn create_with_children(to: Target<'_>, children: &Children) -> Result<()> {
    let pod = stamp(&children.pod)?;
    // The policy right after the Pod, naming it as its second owner
    // (`children::outlive_pod`): one write, where applying it beside the
    // Pod would take a second once the Pod's UID is known.
    let pod_then_policy = async {
        let created = create_stamped(to, &pod).await?;
        let mut policy = children.network_policy.clone();
        if let Some(uid) = created.as_ref().and_then(|p| p.meta().uid.as_deref()) {
            crate::children::outlive_pod(&mut policy, &pod.name_any(), uid);
        }
        ensure(to, &policy).await?;
        Ok(created)
    };
    let (rewrote, viewer, created) = futures::join!(
        apply_mounted(to, children, Seen::Unknown),
        apply_viewer_service(to, children.viewer_service.as_ref()),
        pod_then_policy,
    );
    let isolated = viewer;
    if let (Ok(true), Ok(Some(created))) = (&rewrote, &created) {
        let uid = created.uid().unwrap_or_default();
        delete_pod(to, &created.name_any(), &uid).await?;
    } else if let Ok(created) = &created {
        expect_echo(to, created.as_ref());
    }
    rewrote?;
    isolated?;
    created.map(drop)
}

/// What the Pod mounts: its launch Secret, runtime ConfigMap, snapshot
/// claim. Says whether one of them was there with other contents (and was
/// rewritten).
pub async fn apply_mounted(to: Target<'_>, children: &Children, seen: Seen) -> Result<bool> {
    let found = futures::try_join!(
        ensure_secret(to, children.launch_secret.as_ref(), seen),
        ensure(to, &children.runtime_config),
        ensure_opt(to, children.snapshot_claim.as_ref()),
    )?;
    Ok([found.0, found.1, found.2].contains(&Found::Differs))
}

/// The session's NetworkPolicy and viewer Service: they select the session's
/// Pod by its labels, whichever Pod that is.
pub async fn apply_isolation_and_viewer(to: Target<'_>, children: &Children) -> Result<()> {
    futures::try_join!(
        ensure(to, &children.network_policy),
        apply_viewer_service(to, children.viewer_service.as_ref())
    )?;
    Ok(())
}

/// The launch config Secret: read and compared first when it was applied
/// before, so an unchanged one is not written; a hand edit is still put
/// back. On a first apply it is created (compared when it exists).
async fn ensure_secret(to: Target<'_>, desired: Option<&Secret>, seen: Seen) -> Result<Found> {
    let Some(desired) = desired else { return Ok(Found::AsWanted) };
    let desired = &stamp(desired)?;
    let name = desired.name_any();
    let (own, key) = (&to.cache.own, own_writes::Key::of::<Secret>(desired.meta()));
    let digest = own.fingerprint(&digest_of(desired));
    let seen_lately = |_: Target<'_>| own.saw(&key, digest);
    if seen == Seen::Unknown {
        let found = create_or_compare(to, desired).await?;
        if found != Found::Differs {
            seen_lately(to);
            return Ok(found);
        }
    }
    if seen == Seen::Before {
        if own.answered_lately(&key, digest, cache::SECRET_RECHECK) {
            return Ok(Found::AsWanted);
        }
        let api: Api<Secret> = Api::namespaced(to.client.clone(), to.namespace);
        let live = api.get_opt(&name).await.map_err(Error::kube("get", "Secret", to.namespace, &name))?;
        if live.is_some_and(|live| cache::matches(&live, desired)) {
            seen_lately(to);
            return Ok(Found::AsWanted);
        }
    }
    apply_stamped(to, desired).await?;
    seen_lately(to);
    Ok(Found::Differs)
}

/// The viewer Service, with its ports exactly as built. Server-side apply
/// only sets the fields it owns: a hand edit that replaced the ports list
/// took their ownership, so an apply either adds our port beside the foreign
/// one or is refused (two ports named `viewer`). Then a merge patch, which
/// replaces the list whole, puts the ports back.
async fn apply_viewer_service(to: Target<'_>, desired: Option<&Service>) -> Result<()> {
    let Some(desired) = desired else { return Ok(()) };
    let desired = &stamp(desired)?;
    if look(to, desired).await? != Found::Differs {
        return Ok(());
    }
    let ports = |s: &Service| s.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
    let key = |p: &ServicePort| (p.name.clone(), p.port, p.protocol.clone().unwrap_or_else(|| "TCP".into()));
    let want = ports(desired);
    match apply_stamped(to, desired).await {
        Ok(live) if want.iter().map(key).eq(ports(&live).iter().map(key)) => return Ok(()),
        Ok(_) => {}
        Err(Error::Kube { source, .. }) if matches!(*source, kube::Error::Api(ref s) if s.code == 422) => {}
        Err(other) => return Err(other),
    }
    let namespace = to.namespace;
    let name = desired.name_any();
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    let api: Api<Service> = to.writer()?;
    let patch = Patch::Merge(serde_json::json!({"spec": {"ports": want}}));
    api.patch(&name, &params, &patch).await.map_err(|source| Error::Kube {
        action: "repair ports of",
        kind: "Service",
        namespace: namespace.to_owned(),
        name,
        source: Box::new(source),
    })?;
    apply_stamped(to, desired).await.map(drop)
}

/// [`ensure`] for an optional child.
async fn ensure_opt<K: Cached + Child>(to: Target<'_>, obj: Option<&K>) -> Result<Found> {
    match obj {
        Some(obj) => ensure(to, obj).await,
        None => Ok(Found::AsWanted),
    }
}

/// Deletes the Pod `name` if it is still the one with `uid` (a replacement
/// created meanwhile is never deleted by mistake). Gone already is fine.
pub async fn delete_pod(to: Target<'_>, name: &str, uid: &str) -> Result<()> {
    let namespace = to.namespace;
    let pods: Api<Pod> = to.writer()?;
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: Some(uid.to_owned()), ..Preconditions::default() }),
        ..DeleteParams::default()
    };
    match pods.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(source) => Err(Error::Kube {
            action: "delete",
            kind: "Pod",
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: Box::new(source),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    fn map(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta { name: Some("m".into()), ..ObjectMeta::default() },
            data: Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>()),
            ..ConfigMap::default()
        }
    }

    fn digest_of(obj: &ConfigMap) -> String {
        obj.annotations()[APPLIED_ANNOTATION].clone()
    }

    #[test]
    fn the_stamp_follows_what_is_built_and_stamping_twice_changes_nothing() {
        let a = stamp(&map(&[("k", "v")])).unwrap();
        assert_eq!(digest_of(&a).len(), 16);
        assert_eq!(stamp(&a).unwrap(), a, "idempotent: an applied object is not a new one");
        assert_ne!(digest_of(&a), digest_of(&stamp(&map(&[("k", "w")])).unwrap()));
        // A field the builder stops setting changes the digest, though the
        // live object still has it (a subset comparison alone would miss it).
        let fewer = stamp(&map(&[])).unwrap();
        assert_ne!(digest_of(&a), digest_of(&fewer));
        assert!(!cache::matches(&a, &fewer), "the stamps differ");
    }
}
