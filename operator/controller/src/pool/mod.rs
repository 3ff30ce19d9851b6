//! The pool reconciler: keeps a BrowserPool's warm browsers. It reads the
//! pool's Pods (by label) → [`plan`] (pure) → creates and deletes →
//! [`status`] (pure). Warm Pods are cattle: created once with a plain
//! create, never updated, deleted when failed, slow or outdated. A claimed
//! Pod (the BrowserSession controller relabels it and takes it over) is
//! only counted.

pub mod plan;
mod run;
pub mod status;
pub mod warm;

use std::collections::BTreeSet;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Client, Resource, ResourceExt};
use playpen_api::naming::{
    MANAGER, POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM, POOL_TEMPLATE_LABEL, WARM_NAME_ANNOTATION,
};
use playpen_api::v1alpha1::BrowserPool;
use serde_json::json;
use tracing::{info, instrument};

use crate::apply::{self, Child, Target};
use crate::children::Settings;
use crate::error::{Error, Result};
use crate::room::Room;
use crate::runtime::leader::Fence;
use crate::runtime::metrics::Metrics;
use crate::runtime::{Reconciled, Shared};
use plan::{DeleteReason, PodState, PoolPod, Want};
use warm::{Fresh, PoolIdentity};

pub use run::run;

/// How often a pool is looked at without a watch event.
pub const REQUEUE: Duration = Duration::from_secs(10);

/// Shared state of the pool reconciler: what every controller has
/// ([`Shared`], reached through `Deref`) and the room it shares with the
/// session controller.
pub struct Context {
    shared: Shared,
    room: Arc<Room>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("pool::Context").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl Deref for Context {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Context {
    /// A context publishing Events as `reporter`, writing only while `fence` is open.
    pub fn new(client: Client, settings: Settings, metrics: Arc<Metrics>, reporter: &str, fence: Fence) -> Self {
        Self { shared: Shared::new(client, settings, metrics, reporter, fence), room: Arc::default() }
    }

    /// The same room as the session controller's (see [`crate::room`]).
    pub fn with_room(mut self, room: Arc<Room>) -> Self {
        self.room = room;
        self
    }
}

impl Reconciled for BrowserPool {
    fn failure_key(&self) -> String {
        format!("{}/{}", self.namespace().unwrap_or_default(), self.name_any())
    }
}

/// One reconcile of one BrowserPool.
#[instrument(skip(pool, ctx), fields(namespace = pool.namespace().unwrap_or_default(), name = %pool.name_any()))]
pub async fn reconcile(pool: Arc<BrowserPool>, ctx: Arc<Context>) -> Result<Action> {
    let _timer = ctx.metrics.reconcile_started();
    if pool.meta().deletion_timestamp.is_some() {
        // Owner references let the garbage collector delete the unclaimed Pods.
        return Ok(Action::await_change());
    }
    let id = identity(&pool)?;
    // Warm Pods and the pool's policy are few and rarely reconciled: applied without a cache.
    let nothing_cached = crate::cache::Caches::default();
    let target = Target { client: &ctx.client, fence: &ctx.fence, namespace: &id.namespace, cache: &nothing_cached };
    let hash = warm::template_hash(&pool.spec.template)?;
    // observe
    let pods = list_pods(&ctx.client, &id).await?;
    let uid = id.owner.uid.as_str();
    let now = Timestamp::now();
    let observed: Vec<PoolPod> = pods.iter().filter_map(|p| pool_pod(p, uid)).collect();
    // plan
    let hold = ctx.room.waiting() > 0;
    let want =
        Want { min_ready: pool.spec.min_ready, max_unclaimed: pool.spec.max_unclaimed(), template_hash: &hash, hold };
    let plan = plan::plan(want, &observed, now);
    // apply
    apply::apply(target, &warm::pool_network_policy(&id)).await?;
    for (name, reason) in &plan.delete {
        if let Some(pod) = pods.iter().find(|p| p.metadata.name.as_deref() == Some(name)) {
            delete_warm_pod(&ctx, &pool, target, pod, *reason).await?;
        }
    }
    sweep_orphans(&ctx.client, target, &id, &pods).await?;
    // A create the API server refuses for good (a missing RuntimeClass, a
    // quota) is said in the status before its error goes to the backoff:
    // the pool's status never freezes on it.
    let (mut refused, mut counts) = (None, plan.counts);
    for made in 0..plan.create {
        if let Err(error) = create_warm(&ctx, &pool, &id, &hash, target).await {
            let Some(child) = error.refused_child() else { return Err(error) };
            // The plan counted its creates as warming; these are not.
            counts.warming -= plan.create - made;
            refused = Some((child, error));
            break;
        }
    }
    // status
    let said = refused.as_ref().map(|(child, _)| child);
    let new = status::compute(&pool, &id.name, &hash, counts, (hold, said), now);
    if pool.status.as_ref() != Some(&new) {
        let api: Api<BrowserPool> = ctx.fence.writer(&ctx.client, &id.namespace)?;
        let patch = json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "status": new});
        api.patch_status(&id.name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&patch))
            .await
            .map_err(Error::kube("patch status", "BrowserPool", &id.namespace, &id.name))?;
    }
    if let Some((_, error)) = refused {
        return Err(error);
    }
    ctx.failures.clear(&pool.failure_key());
    Ok(Action::requeue(REQUEUE))
}

/// The pool's name, namespace and the owner reference its objects carry.
pub(crate) fn identity(pool: &BrowserPool) -> Result<PoolIdentity> {
    let meta = pool.meta();
    Ok(PoolIdentity {
        name: meta.name.clone().ok_or(Error::MissingPoolMetadata("name"))?,
        namespace: meta.namespace.clone().ok_or(Error::MissingPoolMetadata("namespace"))?,
        owner: pool.controller_owner_ref(&()).ok_or(Error::MissingPoolMetadata("uid"))?,
    })
}

async fn list_pods(client: &Client, id: &PoolIdentity) -> Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &id.namespace);
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={}", id.name));
    Ok(api.list(&params).await.map_err(Error::kube("list", "Pod", &id.namespace, &id.name))?.items)
}

/// The plan's view of `pod`. A Pod is the pool's (warm) only while it is
/// labelled warm and the pool is its controller: a claim changes both.
fn pool_pod(pod: &Pod, pool_uid: &str) -> Option<PoolPod> {
    let meta = &pod.metadata;
    let labels = meta.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key)).cloned();
    let controlled = meta.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == pool_uid);
    let warm = label(POOL_STATE_LABEL).as_deref() == Some(POOL_STATE_WARM) && controlled;
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    Some(PoolPod {
        name: meta.name.clone()?,
        template_hash: label(POOL_TEMPLATE_LABEL).unwrap_or_default(),
        state: if warm { PodState::Warm } else { PodState::Claimed },
        ready,
        failed: matches!(phase, Some("Failed" | "Succeeded")),
        terminating: meta.deletion_timestamp.is_some(),
        created: meta.creation_timestamp.as_ref().map_or_else(Timestamp::now, |t| t.0),
    })
}

/// Deletes a warm Pod only if it is still exactly as listed (a claim that
/// relabelled it meanwhile changed its resourceVersion: then it is left
/// alone), then its Secret and ConfigMap, which the pool owns.
async fn delete_warm_pod(
    ctx: &Context,
    pool: &BrowserPool,
    target: Target<'_>,
    pod: &Pod,
    reason: DeleteReason,
) -> Result<()> {
    let name = pod.name_any();
    let preconditions = Preconditions { uid: pod.metadata.uid.clone(), resource_version: pod.resource_version() };
    if !delete(target, &name, Some(preconditions), std::marker::PhantomData::<Pod>).await? {
        return Ok(());
    }
    if let Some(warm_name) = pod.annotations().get(WARM_NAME_ANNOTATION) {
        delete_warm_children(target, warm_name).await?;
    }
    info!(pod = %name, reason = reason.as_str(), "deleted warm Pod");
    match reason {
        DeleteReason::Surplus => {}
        DeleteReason::Outdated => {
            let note = format!("replacing warm Pod {name}: it runs an older template");
            ctx.publish(pool, EventType::Normal, "WarmPodReplaced", note).await;
        }
        DeleteReason::Failed | DeleteReason::NeverReady => {
            let note = format!("replacing warm Pod {name}: {}", reason.as_str());
            ctx.publish(pool, EventType::Warning, "WarmPodReplaced", note).await;
        }
    }
    Ok(())
}

async fn delete_warm_children(target: Target<'_>, warm_name: &str) -> Result<()> {
    let names = warm::child_names(warm_name);
    delete(target, &names.launch_secret, None, std::marker::PhantomData::<Secret>).await?;
    delete(target, &names.control_secret, None, std::marker::PhantomData::<Secret>).await?;
    delete(target, &names.runtime_config, None, std::marker::PhantomData::<ConfigMap>).await?;
    Ok(())
}

/// Deletes `name`; `false` when it is gone already or no longer matches `preconditions`.
async fn delete<K: Child>(
    target: Target<'_>,
    name: &str,
    preconditions: Option<Preconditions>,
    _kind: std::marker::PhantomData<K>,
) -> Result<bool> {
    let api: Api<K> = target.writer()?;
    let params = DeleteParams { preconditions, ..DeleteParams::default() };
    match api.delete(name, &params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(false),
        Err(source) => Err(Error::kube("delete", <K as k8s_openapi::Resource>::KIND, target.namespace, name)(source)),
    }
}

/// The ConfigMaps (and Secrets) of warm browsers whose Pod never came or is
/// gone, still owned by the pool: a create that failed half-way leaves them.
/// Those a claim took over belong to their session and are skipped.
async fn sweep_orphans(client: &Client, target: Target<'_>, id: &PoolIdentity, pods: &[Pod]) -> Result<()> {
    let live: BTreeSet<&str> =
        pods.iter().filter_map(|p| p.annotations().get(WARM_NAME_ANNOTATION)).map(String::as_str).collect();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &id.namespace);
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={}", id.name));
    let maps = api.list(&params).await.map_err(Error::kube("list", "ConfigMap", &id.namespace, &id.name))?;
    for cm in maps.items {
        let owned = cm.owner_references().iter().any(|o| o.controller == Some(true) && o.uid == id.owner.uid);
        let Some(warm_name) = cm.annotations().get(WARM_NAME_ANNOTATION) else { continue };
        if owned && !live.contains(warm_name.as_str()) {
            info!(warm_name, "deleting the children of a warm browser without a Pod");
            delete_warm_children(target, warm_name).await?;
        }
    }
    Ok(())
}

/// Creates one warm browser: its Secrets, ConfigMap, then the Pod.
async fn create_warm(
    ctx: &Context,
    pool: &BrowserPool,
    id: &PoolIdentity,
    hash: &str,
    target: Target<'_>,
) -> Result<()> {
    let fresh = Fresh::new(&id.name, hash);
    let children = warm::warm_children(id, &pool.spec.template, hash, &fresh, &ctx.settings)?;
    if let Some(secret) = &children.launch_secret {
        create(target, secret).await?;
    }
    create(target, &children.runtime_config).await?;
    if let Some(secret) = &children.control_secret {
        create(target, secret).await?;
    }
    create(target, &children.pod).await?;
    info!(warm_name = %fresh.warm_name, "created warm Pod");
    Ok(())
}

async fn create<K: Child>(target: Target<'_>, obj: &K) -> Result<K> {
    let api: Api<K> = target.writer()?;
    let params = PostParams { field_manager: Some(MANAGER.to_owned()), ..PostParams::default() };
    api.create(&params, obj).await.map_err(Error::kube(
        "create",
        <K as k8s_openapi::Resource>::KIND,
        target.namespace,
        &obj.name_any(),
    ))
}
