//! One reconcile of one BrowserSession: gate → dereference → plan → apply
//! → report. The decisions are [`super::plan`]'s; this file reads and
//! writes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use playpen_api::naming::ChildNames;
use playpen_api::v1alpha1::{BrowserSource, Phase};
use playpen_api::BrowserSession;
use tracing::{instrument, warn};

use super::from;
use super::live;
use super::plan::{self, Arrival, Facts, Gate, Plan, Settle};
use super::read::{PoolAnswer, Read};
use super::report;
use super::suspend;
use crate::apply::{self, PodState, Target};
use crate::burst;
use crate::cache::{self, Caches};
use crate::children::{self, Children, Identity};
use crate::claim::{self, outcome};
use crate::context::{key, Context};
use crate::error::{Error, Result};
use crate::own_writes::{self, Key};
use crate::recovery::{self, Recovery};
use crate::room;
use crate::status::{self, Observed, Refused};
use crate::suspend::Step;
use crate::validate::{self, MissingReference};

/// One reconcile of one BrowserSession.
#[instrument(skip(bs, ctx), fields(namespace = bs.namespace().unwrap_or_default(), name = %bs.name_any()))]
pub async fn reconcile(bs: Arc<BrowserSession>, ctx: Arc<Context>) -> Result<Action> {
    let _timer = ctx.metrics.reconcile_started();
    let now = Timestamp::now();
    let caches = ctx.caches();
    match plan::gate(&arrival(&ctx, &caches, &bs, now)) {
        Gate::Forget => return Ok(forget(&ctx, &bs)),
        Gate::LookAgain(after) => return Ok(Action::requeue(after)),
        Gate::Reconcile => {}
    }
    let bs = children::cluster_defaults::with_cluster_defaults(bs, &ctx.settings);
    let own = Identity::of(&bs)?;
    let target = Target { client: &ctx.client, fence: &ctx.fence, namespace: &own.namespace, cache: &caches };
    if let Some(action) = from::seed(&ctx, &bs, &own, now).await? {
        return Ok(action);
    }
    let stage = suspend::stage(&ctx, &caches, &bs, &own, now);
    match (stage.step, &stage.pod) {
        (Step::Park(parking), _) => return suspend::park(&ctx, &bs, &own, target, &stage, parking, now).await,
        (Step::RestoreFailed, pod) => {
            let why = stage.restore_failure.as_deref().unwrap_or_default();
            return live::abandon(&ctx, &bs, &own, target, pod.as_ref(), why).await;
        }
        (Step::Checkpoint, Some((pod, _))) => live::ask(&ctx, &own, pod, &stage.request).await?,
        _ => {}
    }
    let bs = suspend::unparked(bs, now);
    let (read, built) = dereference(&ctx, target, &bs, &own, now).await?;
    let plan = plan::plan(&read.facts);
    let Some(Built { mut missing, children }) = built else {
        return report::without_browser(&ctx, &bs, &own, plan, &read.pool, now).await;
    };
    let (session, id) = read.session(&bs, &own);
    // apply: what the status reads first (a claim's delivery, the children)
    let (placed, refusal) = apply_first(target, plan, &read, (session, id), &children, &mut missing).await?;
    let pod = placed.pod(&children.pod);
    suspend::start_tasks(&ctx, &bs, &own, &stage, pod);
    let done = bs.status.as_ref().and_then(|s| s.pod_replacements.as_ref());
    let recovery = recovery::decide(pod, done, ctx.recovery, now);
    recover(&ctx, &bs, target, pod, &recovery, read.facts.gave_up).await?;
    if pod.and_then(room::plan::waits_for_room).is_some() {
        ctx.room.wake();
    }
    // report, beside what the status names (a Pod to create, a claim to settle)
    let export = ctx.exports.get(&crate::context::key(&bs));
    let status_of = |pod, refused| {
        let observed = Observed { missing: &missing, pod, recovery: &recovery, refused, export: export.as_ref() };
        let mut new = report::status(&ctx, &bs, &read, (session, id), observed, now);
        suspend::shape(&ctx, &bs, &own, &stage, pod, &mut new, now);
        new
    };
    let new = status_of(pod, refusal.as_ref().map(|(refused, _)| refused));
    suspend::finish_resume(&ctx, &own, &stage, &new).await?;
    let defer = matches!(plan, Plan::CreateAtOnce { defer_status: true });
    let written = report::write_with_events(&ctx, &bs, id, &new, defer);
    let (written, placed) = futures::join!(written, place_beside(target, plan, &placed, session, id, &children));
    written?;
    if let Err(error) = placed {
        // The status just written (or deferred) named a Pod the API server
        // did not take: say what it refused instead.
        if let Some(refused) = error.refused_child() {
            report::write_status(&ctx, &bs, id, status_of(None, Some(&refused))).await?;
        }
        return Err(error);
    }
    if let Some((_, error)) = refusal {
        return Err(error);
    }
    report::finish(&ctx, &bs, &read.pool, defer, now).await;
    Ok(suspend::next_look(&stage, next_look(&recovery, new.phase, !missing.is_empty(), now, defer)))
}

/// What a reconcile knows before it reads anything.
fn arrival(ctx: &Context, caches: &Caches, bs: &BrowserSession, now: Timestamp) -> Arrival {
    let uid = bs.meta().uid.as_deref().unwrap_or_default();
    let deferred = is_deferred(ctx, bs);
    let yielding = deferred && ctx.burst.yields(uid, age(bs, now));
    Arrival {
        deleting: bs.meta().deletion_timestamp.is_some(),
        stale: ctx.own.is_stale(&Key::status_of(bs), bs.meta().resource_version.as_deref()),
        yielding_first: yielding.then(|| deferred_browser_phase(caches, bs)),
    }
}

/// A session going away: owner references let the garbage collector delete
/// its Pod, whose runtime closes the browser on SIGTERM.
fn forget(ctx: &Context, bs: &BrowserSession) -> Action {
    let uid = bs.meta().uid.as_deref().unwrap_or_default();
    ctx.own.forget(uid);
    ctx.burst.forget(uid);
    Action::await_change()
}

/// Its first status waits for a burst (its children exist).
fn is_deferred(ctx: &Context, bs: &BrowserSession) -> bool {
    bs.status.is_none() && ctx.burst.is_deferred(bs.meta().uid.as_deref().unwrap_or_default())
}

/// The session's age by the API server's clock (unknown: as old as can be).
fn age(bs: &BrowserSession, now: Timestamp) -> Duration {
    outcome::waited(bs.meta().creation_timestamp.as_ref(), now)
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .unwrap_or(Duration::MAX)
}

/// The browser phase of a session whose first status waits for a burst,
/// from its Pod in the cache (one made by this process but not seen yet is
/// `Pending`). Such a session is never pooled: its Pod has the session's
/// own name.
fn deferred_browser_phase(caches: &Caches, bs: &BrowserSession) -> Phase {
    let name = ChildNames::for_session(&bs.name_any()).pod;
    let cached = caches.pods.get(&bs.namespace().unwrap_or_default(), &name);
    status::browser_phase(cached.map(|pod| pod.to_pod()).as_ref())
}

/// What a session that runs a browser now is checked and built into.
#[derive(Debug)]
struct Built {
    /// References the spec names that do not exist.
    missing: Vec<MissingReference>,
    children: Children,
}

/// Reads what the plan decides from: the namespace's baseline, the pool's
/// answer (a claim is made here), the references and the caches; builds
/// the children of a session that runs a browser now.
async fn dereference(
    ctx: &Context,
    target: Target<'_>,
    bs: &BrowserSession,
    own: &Identity,
    now: Timestamp,
) -> Result<(Read, Option<Built>)> {
    let deferred = is_deferred(ctx, bs);
    let filled = target.cache.ready().await;
    let untouched = plan::untouched(bs.status.is_some(), deferred, ctx.failures.failing(&key(bs)), filled);
    // The namespace's baseline policy isolates every browser Pod until its
    // own policy exists; a cache lookup once it is in place.
    let baseline = match ctx.baselines.ensure(target).await {
        Ok(()) => true,
        Err(e) => {
            warn!(namespace = %own.namespace, error = %e, "the namespace's baseline NetworkPolicy could not be ensured: Pods are created after their own policies");
            false
        }
    };
    let pool = match bs.spec.source() {
        BrowserSource::Own(_) => PoolAnswer::Own,
        BrowserSource::Pool(pool_ref) => {
            let started = Instant::now();
            let resolved = match claim::resolve(target, bs, own, pool_ref, &ctx.settings, untouched).await {
                Ok(resolved) => resolved,
                Err(error) => return Err(report::refused_before_placing(ctx, bs, own, error, now).await),
            };
            if let Some(result) = outcome::attempt(&resolved) {
                ctx.metrics.claim_decided(result.as_str(), started.elapsed().as_secs_f64());
            }
            resolved.map_or_else(PoolAnswer::Refused, |pooled| PoolAnswer::Placed(Box::new(pooled)))
        }
    };
    let browser = pool.browser();
    let mut read = Read { facts: Facts { browser, ..Facts::default() }, pool };
    if !browser.runs() {
        return Ok((read, None));
    }
    let (session, id) = read.session(bs, own);
    let missing = validate::missing_references(&ctx.client, session, &id.namespace, &ctx.settings).await?;
    let mut children = children::build(session, id, &ctx.settings)?;
    let pod_name = children.pod.name_any();
    let uid = bs.meta().uid.as_deref().unwrap_or_default();
    let cached_pod = target.cache.pods.get(&id.namespace, &pod_name);
    let pod_cached = cached_pod.is_some();
    if let Some(pod_uid) = cached_pod.as_ref().and_then(|p| p.metadata.uid.as_deref()) {
        children::outlive_pod(&mut children.network_policy, &pod_name, pod_uid);
    }
    let facts = Facts {
        browser,
        auth_state: session.spec.auth_state.is_some(),
        references_missing: !missing.is_empty(),
        gave_up: bs.status.as_ref().and_then(|s| s.pod_replacements.as_ref()).is_some_and(|d| d.gave_up),
        untouched,
        baseline,
        pod_cached,
        deferred,
        // A cached Pod is one the watch has shown. Its events can all come
        // before the create's answer is recorded (kwok binds and readies a
        // Pod within milliseconds): the record alone would then hold the
        // status at the Pod as built, with no event left to wake it.
        created_unseen: !pod_cached
            && target.cache.own.awaits(
                &Key::new(uid, own_writes::kind::<Pod>(), &id.namespace, &pod_name),
                cache::CREATED_POD_EXPECTED,
            ),
        recorded: bs.status.as_ref().is_some_and(|s| s.pod_name.is_some()),
        burst: ctx.burst.yields(uid, age(bs, now)),
    };
    read.facts = facts;
    Ok((read, Some(Built { missing, children })))
}

/// The part of the plan the status reads: where the Pod stands (adding to
/// `missing` what a claim's delivery found missing). A child the API
/// server refuses for good (a quota, an admission policy) is said in the
/// status, with the Pod as it really is, and its error still goes to the
/// backoff: the status never freezes.
async fn apply_first(
    target: Target<'_>,
    plan: Plan,
    read: &Read,
    (session, id): (&BrowserSession, &Identity),
    children: &Children,
    missing: &mut Vec<MissingReference>,
) -> Result<(PodState, Option<(Refused, Error)>)> {
    match place_first(target, plan, read, session, id, children).await {
        Ok((placed, found)) => {
            missing.extend(found);
            Ok((placed, None))
        }
        Err(error) => {
            let Some(refused) = error.refused_child() else { return Err(error) };
            Ok((pod_as_it_is(target.cache, read, id, children), Some((refused, error))))
        }
    }
}

/// [`apply_first`] but the refusal.
async fn place_first(
    target: Target<'_>,
    plan: Plan,
    read: &Read,
    session: &BrowserSession,
    id: &Identity,
    children: &Children,
) -> Result<(PodState, Option<MissingReference>)> {
    let claimed = || read.pool.claimed_pod().map(|pod| PodState::Exists(Box::new(pod.clone())));
    Ok(match plan {
        Plan::Claimed(Settle::First { fresh }) => {
            let pod = read.pool.claimed_pod().ok_or(Error::MissingMetadata("the claimed Pod"))?;
            let missing = settle_claim(target, session, id, pod, children, fresh).await?;
            (PodState::Exists(Box::new(pod.clone())), missing)
        }
        Plan::Claimed(Settle::BesideStatus) => (claimed().unwrap_or(PodState::Absent), None),
        Plan::CreateAtOnce { .. } => (PodState::ToCreate, None),
        // Until the watch shows it, it is the Pod as built.
        Plan::AsBuilt => {
            apply::apply_all_but_the_pod(target, children, apply::Seen::Before).await?;
            (PodState::Exists(Box::new(children.pod.clone())), None)
        }
        Plan::ApplyThenCreate { create_pod, recorded } => {
            (apply::apply_children(target, children, create_pod, recorded).await?, None)
        }
        Plan::Wait | Plan::Refuse => (PodState::Absent, None),
    })
}

/// The part of the plan that goes beside the status write: a reconcile
/// holds its concurrency slot for as many round trips as it waits.
async fn place_beside(
    target: Target<'_>,
    plan: Plan,
    placed: &PodState,
    session: &BrowserSession,
    id: &Identity,
    children: &Children,
) -> Result<()> {
    match (plan, placed) {
        (Plan::Claimed(Settle::BesideStatus), PodState::Exists(pod)) => {
            settle_claim(target, session, id, pod, children, true).await.map(drop)
        }
        (Plan::CreateAtOnce { .. }, PodState::ToCreate) => apply::create_with_children(target, children).await,
        (_, PodState::ToCreate) => apply::create_the_pod(target, &children.pod).await,
        _ => Ok(()),
    }
}

/// The Pod as it really is, when a child was refused: a claimed one, or
/// the session's own as the cache shows it.
fn pod_as_it_is(caches: &Caches, read: &Read, id: &Identity, children: &Children) -> PodState {
    let pod = match read.pool.claimed_pod() {
        Some(pod) => Some(pod.clone()),
        None => caches.pods.get(&id.namespace, &children.pod.name_any()).map(|p| p.to_pod()),
    };
    pod.map_or(PodState::Absent, |pod| PodState::Exists(Box::new(pod)))
}

/// Makes a claimed Pod's mounts the session's: re-owned from the pool when
/// this reconcile claimed it (`fresh`: its isolation and viewer are in place
/// already), applied as the session builds them, delivered to the browser.
/// Returns the key the session's auth state Secret lacks, if it does.
async fn settle_claim(
    target: Target<'_>,
    session: &BrowserSession,
    id: &Identity,
    pod: &Pod,
    children: &Children,
    fresh: bool,
) -> Result<Option<MissingReference>> {
    if fresh {
        claim::rehome(target, id).await?;
        apply::apply_mounted(target, children, apply::Seen::Before).await?;
    } else {
        apply::apply_all_but_the_pod(target, children, apply::Seen::Before).await?;
    }
    claim::deliver::deliver(target, session, id, pod, &children.runtime_config).await
}

/// Carries out the recovery decision: deletes a failed (or budget-spent,
/// crash-looping) Pod and says so in an Event; the next reconcile, woken by
/// the Pod's deletion, creates its replacement.
async fn recover(
    ctx: &Context,
    bs: &BrowserSession,
    target: Target<'_>,
    pod: Option<&Pod>,
    recovery: &Recovery,
    gave_up: bool,
) -> Result<()> {
    let (Some(pod), Some(name)) = (pod, pod.and_then(|p| p.metadata.name.as_deref())) else { return Ok(()) };
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    match recovery {
        Recovery::Replace { reason, message } => {
            apply::delete_pod(target, name, uid).await?;
            let note = format!("replacing browser Pod {name}, which failed ({reason}: {message})");
            ctx.publish(bs, EventType::Warning, "BrowserPodReplaced", note).await;
        }
        Recovery::GiveUp { message, stop_pod } if !gave_up => {
            if *stop_pod {
                apply::delete_pod(target, name, uid).await?;
            }
            ctx.publish(bs, EventType::Warning, recovery::BUDGET_EXHAUSTED, message.clone()).await;
        }
        _ => {}
    }
    Ok(())
}

/// When the session is looked at again unless something wakes it.
fn next_look(
    recovery: &Recovery,
    phase: Option<Phase>,
    references_missing: bool,
    now: Timestamp,
    deferred: bool,
) -> Action {
    if deferred {
        return Action::requeue(burst::RETRY);
    }
    match (recovery, phase) {
        (Recovery::Wait { until, .. }, _) => {
            let wait = until.duration_since(now);
            Action::requeue(Duration::try_from(wait).unwrap_or_default().max(Duration::from_secs(1)))
        }
        // Missing references are not watched: look again soon.
        (_, Some(Phase::Failed)) if references_missing => Action::requeue(Duration::from_secs(10)),
        _ => Action::requeue(Duration::from_secs(300)),
    }
}
