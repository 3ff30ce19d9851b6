//! A BrowserSession with `spec.pool`: its browser is a warm Pod of the
//! BrowserPool, taken in place, or (when the pool has none ready, or the
//! session brings what a warm browser cannot take) a cold start from the
//! pool's template, or (`whenEmpty: Wait`) no browser yet: the session waits
//! for one of the pool's Pods to become ready.
//!
//! The claim is one merge patch of the Pod with its `resourceVersion` as a
//! precondition: labels to the session, owner to the session. Two sessions
//! racing for one Pod (a burst, two operator replicas) cannot both win: the
//! second patch carries a stale `resourceVersion` and gets 409, and tries
//! the next Pod. A claimed browser is never without a policy: the pool's
//! deny-all one keeps selecting it (by the pool label) and the session's
//! adds what the session allows, so the claim and the session's policy are
//! written at once (or, under a pool policy an older operator built, the
//! session's policy first).

pub mod conflicts;
pub mod deliver;
pub mod effective;
pub mod outcome;
pub mod pick;
pub mod source;
pub mod wake;

pub use source::{template_gone, when_none_ready, ColdReason, Refusal, Source, Template};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use playpen_api::naming::{
    ChildNames, MANAGER, POOL_LABEL, POOL_STATE_CLAIMED, POOL_STATE_LABEL, POOL_STATE_WARM, SESSION_LABEL,
    WARM_NAME_ANNOTATION, WARM_SESSION_NAME_ANNOTATION, WARM_SOCKET_NAMESPACE_ANNOTATION,
};
use playpen_api::v1alpha1::{condition, BrowserPool, PoolRef};
use playpen_api::BrowserSession;
use serde_json::json;

use crate::apply::Target;
use crate::cache::applied::Seen;
use crate::cache::CachedPod;
use crate::children::{child_labels, Identity, Settings, COMPONENT_BROWSER};
use crate::error::{Error, Result};

/// Patches of one Pod a claim tries before it moves on to the next Pod.
const CLAIM_ATTEMPTS_PER_POD: usize = 4;

/// A pooled session, resolved.
#[derive(Debug, Clone)]
pub struct Pooled {
    /// The session as it runs: its own metadata, the effective spec.
    pub session: BrowserSession,
    /// The template its browser runs (recorded in its status).
    pub template: Template,
    /// The identity its children and status use (a claimed Pod keeps its
    /// own Pod, Secret and ConfigMap names, session name and sockets).
    pub id: Identity,
    /// Where the browser comes from.
    pub source: Source,
    /// This reconcile chose the source (the session had no browser yet);
    /// false when it only found the browser it already has.
    pub decided: bool,
}

/// Resolves a pooled session: its effective spec, and the browser it has,
/// claims or will start cold. `untouched`: nothing of the session can exist
/// that the caches do not show (see [`own_pod`]). Once a browser was
/// placed, the session runs the template recorded then, whatever became of
/// the pool: a replacement Pod is claimed only from Pods of that template,
/// else started cold from the record.
pub async fn resolve(
    to: Target<'_>,
    bs: &BrowserSession,
    id: &Identity,
    pool_ref: &PoolRef,
    settings: &Settings,
    untouched: bool,
) -> Result<std::result::Result<Pooled, Refusal>> {
    let uid = bs.meta().uid.clone().unwrap_or_default();
    // A claim's latency is counted in round trips: the pool and its warm
    // Pods come from the caches, and a read goes to the API server only
    // for what they miss; independent reads go at once.
    let unplaced = bs.status.as_ref().and_then(|s| s.pod_name.as_ref()).is_none();
    let warm = unplaced.then(|| cached_warm_pods(to, &pool_ref.name));
    let (pool, own) = futures::try_join!(pool_of(to, &pool_ref.name), own_pod(to, bs, id, &uid, untouched))?;
    let conflicts = conflicts::template_conflicts(&bs.spec)?;
    if !conflicts.is_empty() {
        return Ok(Err(Refusal::TemplateConflict(conflicts)));
    }
    let template = match (Template::recorded(bs, &pool_ref.name), &pool) {
        (Some(recorded), _) => recorded,
        (None, Some(pool)) => Template::of(pool)?,
        (None, None) => return Ok(Err(Refusal::PoolNotFound(pool_ref.name.clone()))),
    };
    let mut session = bs.clone();
    session.spec = effective::effective_spec(&template.spec, &bs.spec);
    // The pool, when its current template is the one the session runs.
    let serving = match &pool {
        Some(pool) if Template::of(pool)?.hash == template.hash => Some(pool),
        _ => None,
    };
    let decided = own.is_none();
    let source = match own {
        Some(pod) if is_claimed(&pod) => {
            // Checked on every reconcile: an operator stopped between the
            // claim and the re-owning leaves the pool as their owner.
            let claimed = claimed_identity(id, &pod);
            if !rehomed(to, &claimed).await? {
                rehome(to, &claimed).await?;
            }
            Source::Claimed(Box::new(pod))
        }
        Some(_) => previous_cold(bs),
        None => match effective::cold_start_reason(&bs.spec) {
            Some(message) => Source::Cold { reason: ColdReason::NeedsColdStart, message },
            None => match serving {
                Some(pool) => match claim(to, pool, &template.hash, warm, id, &session, settings).await? {
                    Claim::Took(pod) => Source::Claimed(pod),
                    Claim::NoneReady { warming } => when_none_ready(&pool_ref.name, pool.spec.when_empty, warming),
                },
                None => Source::Cold { reason: ColdReason::PoolEmpty, message: template_gone(&pool_ref.name) },
            },
        },
    };
    let id = match &source {
        Source::Claimed(pod) => claimed_identity(id, pod),
        Source::Cold { .. } | Source::Waiting { .. } => id.clone(),
    };
    Ok(Ok(Pooled { session, template, id, source, decided }))
}

/// The pool, from the cache; read when the cache has not seen it (just
/// created). `None`: it does not exist.
async fn pool_of(to: Target<'_>, name: &str) -> Result<Option<BrowserPool>> {
    if let Some(pool) = to.cache.pools.get(to.namespace, name) {
        return Ok(Some((*pool).clone()));
    }
    let pools: Api<BrowserPool> = Api::namespaced(to.client.clone(), to.namespace);
    pools.get_opt(name).await.map_err(Error::kube("get", "BrowserPool", to.namespace, name))
}

/// The Pod this session already runs in, if any: the one its status names,
/// from the cache; for an `untouched` session (no status, no reconcile
/// that failed half-way, caches filled) whatever the cache holds with its
/// label and ownership; otherwise (a status write that never landed, a
/// reconcile that failed after its claim) whatever the API server lists.
async fn own_pod(
    to: Target<'_>,
    bs: &BrowserSession,
    id: &Identity,
    uid: &str,
    untouched: bool,
) -> Result<Option<Pod>> {
    let owned =
        |meta: &ObjectMeta| meta.owner_references.iter().flatten().any(|o| o.uid == uid && o.controller == Some(true));
    let named = bs.status.as_ref().and_then(|s| s.pod_name.as_deref());
    if let Some(pod) = named.and_then(|name| to.cache.pods.get(to.namespace, name)).filter(|p| owned(&p.metadata)) {
        return Ok(Some(pod.to_pod()));
    }
    if untouched {
        let labelled = |pod: &CachedPod| {
            pod.metadata.namespace.as_deref() == Some(to.namespace)
                && pod.metadata.labels.as_ref().and_then(|l| l.get(SESSION_LABEL)) == Some(&id.name)
                && owned(&pod.metadata)
        };
        return Ok(to.cache.pods.find(labelled).map(|pod| pod.to_pod()));
    }
    let pods: Api<Pod> = Api::namespaced(to.client.clone(), to.namespace);
    let mine = ListParams::default().labels(&format!("{SESSION_LABEL}={}", id.name));
    let listed = pods.list(&mine).await.map_err(Error::kube("list", "Pod", to.namespace, &id.name))?.items;
    Ok(listed.into_iter().find(|p| owned(&p.metadata)))
}

fn is_claimed(pod: &Pod) -> bool {
    pod.labels().get(POOL_STATE_LABEL).map(String::as_str) == Some(POOL_STATE_CLAIMED)
}

/// The cold start as the last status said it.
fn previous_cold(bs: &BrowserSession) -> Source {
    let said = bs.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == condition::POOL_CLAIMED));
    let needs = said.is_some_and(|c| c.reason == ColdReason::NeedsColdStart.as_str());
    let reason = if needs { ColdReason::NeedsColdStart } else { ColdReason::PoolEmpty };
    let message = said.map_or_else(|| "this session started cold".to_owned(), |c| c.message.clone());
    Source::Cold { reason, message }
}

/// The session's identity with the claimed Pod's own names: its Pod, Secret
/// and ConfigMap (built for the warm name), its CLI session and sockets. The
/// Service and NetworkPolicy stay the session's.
pub fn claimed_identity(id: &Identity, pod: &Pod) -> Identity {
    let annotation = |key: &str| pod.annotations().get(key).cloned();
    let warm = annotation(WARM_NAME_ANNOTATION).unwrap_or_else(|| id.name.clone());
    let warm_names = ChildNames::for_session(&warm);
    Identity {
        session_name: annotation(WARM_SESSION_NAME_ANNOTATION).unwrap_or_else(|| id.session_name.clone()),
        socket_namespace: annotation(WARM_SOCKET_NAMESPACE_ANNOTATION).unwrap_or_else(|| id.socket_namespace.clone()),
        names: ChildNames {
            pod: pod.name_any(),
            launch_secret: warm_names.launch_secret,
            runtime_config: warm_names.runtime_config,
            // What the warm Pod's launch-config volume projects.
            control_secret: warm_names.control_secret,
            ..id.names.clone()
        },
        ..id.clone()
    }
}

/// A number from the session's UID that spreads a burst of claims over
/// the pool's Pods.
fn salt(bs: &BrowserSession) -> u64 {
    let uid = bs.meta().uid.as_deref().unwrap_or_default();
    uid.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What a claim found.
enum Claim {
    /// This Pod, now the session's.
    Took(Box<Pod>),
    /// No ready Pod to take; this many of the pool's are still starting.
    NoneReady { warming: usize },
}

/// The unclaimed Pods of pool `pool_name`, as the warm Pods' watch has them.
fn cached_warm_pods(to: Target<'_>, pool_name: &str) -> Vec<Pod> {
    let of_pool = |pod: &CachedPod| {
        pod.metadata.namespace.as_deref() == Some(to.namespace)
            && pod.metadata.labels.as_ref().and_then(|l| l.get(POOL_LABEL)).map(String::as_str) == Some(pool_name)
    };
    to.cache.warm.filter(of_pool).iter().map(|pod| pod.to_pod()).collect()
}

/// The unclaimed Pods of pool `pool_name`, as the API server has them now.
async fn warm_pods(to: Target<'_>, pool_name: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(to.client.clone(), to.namespace);
    let warm = ListParams::default().labels(&format!("{POOL_LABEL}={pool_name},{POOL_STATE_LABEL}={POOL_STATE_WARM}"));
    Ok(pods.list(&warm).await.map_err(Error::kube("list", "Pod", to.namespace, pool_name))?.items)
}

/// Takes a ready warm Pod for the session, if the pool has one (of
/// `listed`, from the cache, or listed now): the Pod (labels and
/// owner, under its resourceVersion), and the session's NetworkPolicy and
/// viewer Service. Its Secret and ConfigMap are the
/// caller's to re-own ([`rehome`]).
async fn claim(
    to: Target<'_>,
    pool: &BrowserPool,
    hash: &str,
    listed: Option<Vec<Pod>>,
    id: &Identity,
    session: &BrowserSession,
    settings: &Settings,
) -> Result<Claim> {
    let pool_name = pool.name_any();
    let pool_uid = pool.meta().uid.clone().unwrap_or_default();
    let cached = listed.is_some();
    let mut candidates = match listed {
        Some(listed) => listed,
        None => warm_pods(to, &pool_name).await?,
    };
    // A cached Pod that changed since is caught by the claim's
    // resourceVersion; one that turned ready since is not in the cache yet:
    // no cold start or wait before the API server says none is ready.
    if cached && !candidates.iter().any(|p| pick::claimable(p, &pool_uid, hash)) {
        candidates = warm_pods(to, &pool_name).await?;
    }
    let order = pick::order(&candidates, &pool_uid, hash, salt(session));
    let none_ready = Claim::NoneReady { warming: pick::warming(&candidates, &pool_uid, hash) };
    if order.is_empty() {
        return Ok(none_ready);
    }
    // The session's egress policy and viewer Service (both the session's,
    // whichever Pod), in place before the session is said Ready. While the
    // pool's policy covers claimed Pods (it denies all, and policies add
    // up), a claimed Pod is never without a policy, so the claim goes at
    // the same time; otherwise (a pool's policy not yet rebuilt by this
    // operator) the session's policy comes before any Pod has its labels.
    let children = crate::children::build(session, id, settings)?;
    let isolation = crate::apply::apply_isolation_and_viewer(to, &children);
    let take = take_one(to, &pool_name, order, &pool_uid, hash, id);
    let took = if pool_policy_covers_claims(to, pool)? {
        let (applied, took) = futures::join!(isolation, take);
        applied?;
        took?
    } else {
        isolation.await?;
        take.await?
    };
    Ok(took.map_or(none_ready, |pod| Claim::Took(Box::new(pod))))
}

/// Whether the pool's NetworkPolicy, as last watched, is the one this
/// operator builds, which covers the pool's claimed Pods as well as its
/// warm ones ([`crate::pool::warm::pool_network_policy`]).
fn pool_policy_covers_claims(to: Target<'_>, pool: &BrowserPool) -> Result<bool> {
    let name = crate::pool::warm::network_policy_name(&pool.name_any());
    covers_claims(to.cache.network_policies.seen(to.namespace, &name).as_ref(), pool)
}

/// Whether `seen`, the pool's NetworkPolicy as watched, bears the digest
/// of the policy this operator builds for `pool`.
fn covers_claims(seen: Option<&Seen>, pool: &BrowserPool) -> Result<bool> {
    let built = crate::apply::stamp(&crate::pool::warm::pool_network_policy(&crate::pool::identity(pool)?))?;
    Ok(seen.and_then(|s| s.stamp.as_deref()) == Some(crate::apply::digest_of(&built)))
}

/// The labels a claim gives a Pod: the session's, and the pool's with the
/// state `claimed` (the pool label keeps the pool's policy on it).
fn claimed_labels(session: &str, pool_name: &str) -> std::collections::BTreeMap<String, String> {
    let mut labels = child_labels(session, COMPONENT_BROWSER);
    labels.insert(POOL_LABEL.to_owned(), pool_name.to_owned());
    labels.insert(POOL_STATE_LABEL.to_owned(), POOL_STATE_CLAIMED.to_owned());
    labels
}

/// Claims the first of `order` that is still claimable: labels and owner
/// to the session, under the Pod's resourceVersion.
async fn take_one(
    to: Target<'_>,
    pool_name: &str,
    order: Vec<&Pod>,
    pool_uid: &str,
    hash: &str,
    id: &Identity,
) -> Result<Option<Pod>> {
    let ns = to.namespace;
    let pods: Api<Pod> = Api::namespaced(to.client.clone(), ns);
    let labels = claimed_labels(&id.name, pool_name);
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    for candidate in order {
        let name = candidate.name_any();
        let mut seen = candidate.clone();
        // A 409 also comes from writes that are not claims (the kubelet's or
        // the scheduler's status updates): the Pod is read again and tried
        // again while it is still claimable, a few times.
        for _ in 0..CLAIM_ATTEMPTS_PER_POD {
            let writer: Api<Pod> = to.writer()?;
            let patch = json!({"metadata": {
                "resourceVersion": seen.resource_version(),
                "labels": labels,
                "ownerReferences": [id.owner],
            }});
            match writer.patch(&name, &params, &Patch::Merge(&patch)).await {
                Ok(pod) => return Ok(Some(pod)),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    match pods.get_opt(&name).await.map_err(Error::kube("get", "Pod", ns, &name))? {
                        Some(fresh) if pick::claimable(&fresh, pool_uid, hash) => seen = fresh,
                        // Another session took it, or it is leaving: the next one.
                        _ => break,
                    }
                }
                Err(kube::Error::Api(s)) if s.code == 404 => break,
                Err(source) => return Err(Error::kube("claim", "Pod", ns, &name)(source)),
            }
        }
    }
    Ok(None)
}

/// Whether the claimed Pod's ConfigMap (from the cache) and Secret (its
/// metadata: Secrets are not cached) are the session's already.
async fn rehomed(to: Target<'_>, claimed: &Identity) -> Result<bool> {
    let ours = |seen: &Seen| {
        seen.owners.as_slice() == std::slice::from_ref(&claimed.owner) && seen.session.as_ref() == Some(&claimed.name)
    };
    let Some(map) = to.cache.config_maps.seen(to.namespace, &claimed.names.runtime_config) else { return Ok(false) };
    if !ours(&map) {
        return Ok(false);
    }
    let secrets: Api<Secret> = Api::namespaced(to.client.clone(), to.namespace);
    let name = &claimed.names.launch_secret;
    let secret = secrets.get_metadata_opt(name).await.map_err(Error::kube("get", "Secret", to.namespace, name))?;
    // None: a pool whose template names its own launch config Secret made none.
    Ok(secret.is_none_or(|s| ours(&Seen::of(&s.metadata))))
}

/// Gives the claimed Pod's Secrets and ConfigMap to the session (one
/// controller owner each: the pool's is replaced, so deleting the pool
/// leaves them and deleting the session removes them). A merge patch, not
/// an apply: the pool created them, and an apply would add the session's
/// owner beside the pool's, two controllers the API server refuses.
pub async fn rehome(to: Target<'_>, claimed: &Identity) -> Result<()> {
    let patch = json!({"metadata": {"ownerReferences": [claimed.owner], "labels": {SESSION_LABEL: claimed.name}}});
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    let ns = to.namespace;
    let secrets: Api<Secret> = to.writer()?;
    let maps: Api<ConfigMap> = to.writer()?;
    let (secret, map, control) =
        (&claimed.names.launch_secret, &claimed.names.runtime_config, &claimed.names.control_secret);
    // At once: a claim's latency is counted in round trips.
    let merge = Patch::Merge(&patch);
    let (secret_done, map_done, control_done) = tokio::join!(
        secrets.patch(secret, &params, &merge),
        maps.patch(map, &params, &merge),
        secrets.patch(control, &params, &merge)
    );
    for (done, name) in [(secret_done, secret), (control_done, control)] {
        match done {
            // A pool whose template names its own launch config Secret made
            // none; a warm Pod of an older operator has no control Secret.
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => return Err(Error::kube("re-own", "Secret", ns, name)(source)),
        }
    }
    map_done.map_err(Error::kube("re-own", "ConfigMap", ns, map))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::v1alpha1::BrowserSessionSpec;

    #[test]
    fn a_claimed_pod_gets_the_policy_and_viewer_built_before_the_claim() {
        // The claim applies them with the session's own identity, before it
        // knows the Pod; the reconciles after it build them with the
        // claimed identity: the same objects, or each would write again.
        let spec = serde_json::from_value::<BrowserSessionSpec>(json!({"image": "i"})).unwrap();
        let mut bs = BrowserSession::new("shop", spec);
        bs.metadata.namespace = Some("team".into());
        bs.metadata.uid = Some("uid-1".into());
        let id = Identity::of(&bs).unwrap();
        let mut pod = Pod::default();
        pod.metadata.name = Some("agents-abc123.x1y2z".into());
        pod.metadata.annotations = Some(
            [
                (WARM_NAME_ANNOTATION, "agents-abc123.x1y2z"),
                (WARM_SESSION_NAME_ANNOTATION, "warm-cli"),
                (WARM_SOCKET_NAMESPACE_ANNOTATION, "0badcafe"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        );
        let claimed = claimed_identity(&id, &pod);
        let settings = Settings::default();
        let before = crate::children::build(&bs, &id, &settings).unwrap();
        let after = crate::children::build(&bs, &claimed, &settings).unwrap();
        assert_eq!(before.network_policy, after.network_policy);
        assert!(before.viewer_service.is_some());
        assert_eq!(before.viewer_service, after.viewer_service);
        assert_ne!(before.runtime_config.metadata.name, after.runtime_config.metadata.name, "the Pod's own");
    }

    fn pool(name: &str) -> BrowserPool {
        let mut pool: BrowserPool = serde_json::from_value(json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
            "metadata": {"name": name, "namespace": "team", "uid": "pool-uid"},
            "spec": {"minReady": 1, "template": {"image": "i"}}
        }))
        .unwrap();
        pool.metadata.uid = Some("pool-uid".into());
        pool
    }

    #[test]
    fn a_claimed_pod_stays_under_the_pools_deny_all_policy() {
        let policy = crate::pool::warm::pool_network_policy(&crate::pool::identity(&pool("shop")).unwrap());
        let selector = policy.spec.and_then(|s| s.pod_selector).and_then(|s| s.match_labels).unwrap();
        let claimed = claimed_labels("task", "shop");
        assert!(selector.iter().all(|(k, v)| claimed.get(k) == Some(v)), "{selector:?} vs {claimed:?}");
        assert_eq!(claimed[SESSION_LABEL], "task", "and the session's policy and Service select it");
    }

    #[test]
    fn a_claim_goes_beside_the_sessions_policy_only_under_a_pool_policy_this_operator_built() {
        let shop = pool("shop");
        let built =
            crate::apply::stamp(&crate::pool::warm::pool_network_policy(&crate::pool::identity(&shop).unwrap()))
                .unwrap();
        let seen = Seen::of(&built.metadata);
        assert!(covers_claims(Some(&seen), &shop).unwrap());
        assert!(!covers_claims(None, &shop).unwrap(), "not watched yet: the session's policy first");
        // An older operator's policy selected only warm Pods: another digest.
        let mut older = crate::pool::warm::pool_network_policy(&crate::pool::identity(&shop).unwrap());
        let spec = older.spec.as_mut().unwrap();
        spec.pod_selector.as_mut().unwrap().match_labels = Some(crate::pool::warm::warm_selector("shop"));
        let older = Seen::of(&crate::apply::stamp(&older).unwrap().metadata);
        assert!(!covers_claims(Some(&older), &shop).unwrap());
        // Another pool's policy is not this one's.
        assert!(!covers_claims(Some(&seen), &pool("other")).unwrap());
    }
}
