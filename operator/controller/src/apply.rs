//! Apply phase: server-side apply of every child with one field manager.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort};
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Client, Resource, ResourceExt};
use playpen_api::naming::MANAGER;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::children::Children;
use crate::error::{Error, Result};
use crate::leader::Fence;

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

/// Where children are written: the client, and the leadership fence every
/// write passes just before it is sent.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// API client.
    pub client: &'a Client,
    /// Leadership fence.
    pub fence: &'a Fence,
    /// Namespace of the session and its children.
    pub namespace: &'a str,
}

impl Debug for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("namespace", &self.namespace).field("fence", &self.fence).finish()
    }
}

/// Server-side applies `obj` (force: this manager owns these fields).
pub async fn apply<K: Child>(to: Target<'_>, obj: &K) -> Result<K> {
    let Target { client, fence, namespace } = to;
    if !fence.is_open() {
        return Err(Error::NotLeader);
    }
    let name = obj.name_any();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    api.patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(obj)).await.map_err(|source| Error::Kube {
        action: "apply",
        kind: <K as k8s_openapi::Resource>::KIND,
        namespace: namespace.to_owned(),
        name,
        source: Box::new(source),
    })
}

/// Applies every child. The Pod is created once and then only read: its
/// spec is immutable, so re-applying it after an operator upgrade that
/// builds it differently would fail every reconcile. It is only created
/// when `create_pod` (every reference resolved). Returns the Pod as the API
/// server holds it, with its status.
pub async fn apply_children(to: Target<'_>, children: &Children, create_pod: bool) -> Result<Option<Pod>> {
    let Target { client, namespace, .. } = to;
    // Everything the Pod mounts or is isolated by, in parallel (independent
    // objects), and the existing Pod; only then the Pod itself.
    let name = children.pod.name_any();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let existing = async {
        pods.get_opt(&name).await.map_err(|source| Error::Kube {
            action: "get",
            kind: "Pod",
            namespace: namespace.to_owned(),
            name: name.clone(),
            source: Box::new(source),
        })
    };
    let (existing, ()) = futures::try_join!(existing, apply_all_but_the_pod(to, children))?;
    match existing {
        Some(pod) => Ok(Some(pod)),
        None if create_pod => apply(to, &children.pod).await.map(Some),
        None => Ok(None),
    }
}

/// Applies every child but the Pod, in parallel: what a Pod mounts or is
/// isolated by (for a session whose Pod came from a pool, all there is to apply).
pub async fn apply_all_but_the_pod(to: Target<'_>, children: &Children) -> Result<()> {
    futures::try_join!(
        apply_opt(to, children.launch_secret.as_ref()),
        apply(to, &children.runtime_config),
        apply_opt(to, children.snapshot_claim.as_ref()),
        apply(to, &children.network_policy),
        apply_viewer_service(to, children.viewer_service.as_ref()),
    )?;
    Ok(())
}

/// The viewer Service, with its ports exactly as built. Server-side apply
/// only sets the fields it owns: a hand edit that replaced the ports list
/// took their ownership, so an apply either adds our port beside the foreign
/// one or is refused (two ports named `viewer`). Then a merge patch, which
/// replaces the list whole, puts the ports back.
async fn apply_viewer_service(to: Target<'_>, desired: Option<&Service>) -> Result<Option<Service>> {
    let Some(desired) = desired else { return Ok(None) };
    let ports = |s: &Service| s.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
    let key = |p: &ServicePort| (p.name.clone(), p.port, p.protocol.clone().unwrap_or_else(|| "TCP".into()));
    let want = ports(desired);
    match apply(to, desired).await {
        Ok(live) if want.iter().map(key).eq(ports(&live).iter().map(key)) => return Ok(Some(live)),
        Ok(_) => {}
        Err(Error::Kube { source, .. }) if matches!(*source, kube::Error::Api(ref s) if s.code == 422) => {}
        Err(other) => return Err(other),
    }
    let Target { client, fence, namespace } = to;
    if !fence.is_open() {
        return Err(Error::NotLeader);
    }
    let name = desired.name_any();
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    let api: Api<Service> = Api::namespaced(client.clone(), namespace);
    let patch = Patch::Merge(serde_json::json!({"spec": {"ports": want}}));
    api.patch(&name, &params, &patch).await.map_err(|source| Error::Kube {
        action: "repair ports of",
        kind: "Service",
        namespace: namespace.to_owned(),
        name,
        source: Box::new(source),
    })?;
    apply(to, desired).await.map(Some)
}

/// [`apply`] for an optional child.
async fn apply_opt<K: Child>(to: Target<'_>, obj: Option<&K>) -> Result<Option<K>> {
    match obj {
        Some(obj) => apply(to, obj).await.map(Some),
        None => Ok(None),
    }
}

/// Deletes the Pod `name` if it is still the one with `uid` (a replacement
/// created meanwhile is never deleted by mistake). Gone already is fine.
pub async fn delete_pod(to: Target<'_>, name: &str, uid: &str) -> Result<()> {
    let Target { client, fence, namespace } = to;
    if !fence.is_open() {
        return Err(Error::NotLeader);
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
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
