//! The suspend stage of a session's reconcile ([`crate::suspend`]): what
//! `spec.suspended` and the session's status decide before anything is
//! read, a parked session's whole reconcile, and what a running one adds.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use kube::ResourceExt;
use playpen_api::naming::WARM_NAME_ANNOTATION;
use playpen_api::v1alpha1::{BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use tracing::warn;

use super::report;
use crate::apply::Target;
use crate::cache::Caches;
use crate::children::Identity;
use crate::context::{key, Context};
use crate::error::{Error, Result};
use crate::recovery::Recovery;
use crate::status::{self, Observed};
use crate::suspend::capture::Browser;
use crate::suspend::plan::{plan, Facts};
use crate::suspend::{control_secret_of, Capture, Live, Parking, PodFact, Step};

/// How soon a session whose capture runs is looked at again if its task
/// does not wake it first.
const CAPTURE_LOOK: Duration = Duration::from_secs(5);

/// What the stage decided, and the Pod it decided about.
#[derive(Debug)]
pub(super) struct Stage {
    pub(super) step: Step,
    /// The browser Pod's name and UID, when the cache shows one.
    pub(super) pod: Option<(String, String)>,
    /// Its node, when it has one (where a checkpoint of it stays).
    node: Option<String>,
    /// This suspend's checkpoint request (the live path).
    pub(super) request: String,
    /// Why a restore from a checkpoint will not happen, when it will not.
    pub(super) restore_failure: Option<String>,
    /// Its control Secret (a claimed warm Pod's is named after it).
    control_secret: String,
}

/// Whether `pod` is a warm Pod the session claimed.
fn is_claimed_warm(pod: &Pod) -> bool {
    pod.annotations().contains_key(WARM_NAME_ANNOTATION)
}

/// The stage's decision for `bs`.
pub(super) fn stage(ctx: &Context, caches: &Caches, bs: &BrowserSession, own: &Identity, now: Timestamp) -> Stage {
    let status = bs.status.as_ref();
    let phase = status.and_then(|s| s.phase);
    let saved = status.and_then(|s| s.suspend.as_ref());
    let pod_name = status.and_then(|s| s.pod_name.clone()).unwrap_or_else(|| own.names.pod.clone());
    let cached = caches.pods.get(&own.namespace, &pod_name).filter(|p| p.metadata.deletion_timestamp.is_none());
    let pod = match cached.as_ref().map(|p| p.ready_ip()) {
        None => PodFact::Absent,
        Some(None) => PodFact::NotReady,
        Some(Some(ip)) => PodFact::Ready(ip),
    };
    // The Pod's annotations and node matter to a suspend or a live resume only.
    let live_relevant = bs.spec.suspended || saved.is_some_and(|s| s.checkpoint.is_some());
    let as_pod = cached.as_ref().filter(|_| live_relevant).map(|p| p.to_pod());
    let request = super::live::request_of(bs);
    let mut live = super::live::fact(as_pod.as_ref(), &request);
    if live == Live::Asked {
        let since = ctx.suspends.checkpoint_waiting(&own.owner.uid, &request, Instant::now());
        live = super::live::unless_unanswered(live, since, Instant::now());
        if live == Live::No {
            warn!(request = %request, "the node agent did not answer the checkpoint request in time: the State path");
        }
    }
    let restore_failure = as_pod
        .as_ref()
        .filter(|_| !bs.spec.suspended && saved.is_some_and(|s| s.checkpoint.is_some()))
        .and_then(super::live::restore_failure);
    let facts = Facts {
        suspended: bs.spec.suspended,
        parked: status.is_some_and(status::suspend::is_parked),
        expired: phase == Some(Phase::Suspended) && parked_for(bs, now) >= bs.spec.suspend.max_suspended_seconds(),
        state_saved: saved.is_some_and(|s| s.state_secret.is_some() || s.checkpoint.is_some()),
        capture: ctx.suspends.get(&own.owner.uid),
        pod,
        live,
        restore_failed: restore_failure.is_some(),
        now: Instant::now(),
    };
    let step = plan(&facts);
    // Not suspended (any more): what a capture found is not wanted (a
    // resume's own reopen is).
    let stale = match step {
        Step::Run => facts.capture.is_some(),
        Step::Resume => matches!(facts.capture, Some(Capture::Saved(_))),
        _ => false,
    };
    if stale {
        ctx.suspends.forget(&own.owner.uid);
    }
    let control_secret =
        control_secret_of(cached.as_ref().and_then(|p| p.metadata.annotations.as_ref()), &own.names.control_secret);
    // Where the agent that answered runs (its node is the Pod's).
    let node = super::live::answered_node(as_pod.as_ref(), &request)
        .or_else(|| as_pod.as_ref().and_then(|p| p.spec.as_ref()).and_then(|s| s.node_name.clone()));
    let pod = cached.map(|p| (pod_name, p.metadata.uid.clone().unwrap_or_default()));
    Stage { step, pod, node, request, restore_failure, control_secret }
}

/// `bs` as its browser is built and its status computed: a parked session
/// asked back has its parked time counted ([`status::suspend::unparked`]).
pub(super) fn unparked(bs: Arc<BrowserSession>, now: Timestamp) -> Arc<BrowserSession> {
    let asked_back = !bs.spec.suspended && bs.status.as_ref().is_some_and(status::suspend::is_parked);
    if !asked_back {
        return bs;
    }
    let mut unparked = (*bs).clone();
    if let Some(status) = unparked.status.as_mut() {
        status::suspend::unparked(status, now);
    }
    Arc::new(unparked)
}

/// Seconds `bs` has been parked this time (0 when it is not).
fn parked_for(bs: &BrowserSession, now: Timestamp) -> i64 {
    let since = bs.status.as_ref().and_then(|s| s.suspend.as_ref()).and_then(|s| s.suspended_at.as_ref());
    since.map_or(0, |at| now.duration_since(at.0).as_secs())
}

/// A parked session's reconcile: its Pod deleted, its status `Suspended`.
/// Its other children stay (they cost nothing and a resume reuses them).
pub(super) async fn park(
    ctx: &Context,
    bs: &BrowserSession,
    own: &Identity,
    target: Target<'_>,
    stage: &Stage,
    parking: Parking,
    now: Timestamp,
) -> Result<Action> {
    if let Some((name, uid)) = &stage.pod {
        crate::apply::delete_pod(target, name, uid).await?;
    }
    if parking == Parking::Expired {
        delete_saved_state(ctx, own).await?;
    }
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    let mut new = status::compute(bs, own, observed, &ctx.settings.egress, now);
    new.pool = bs.status.as_ref().and_then(|s| s.pool.clone());
    let stored = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let checkpoint = stage.pod.as_ref().zip(stage.node.as_ref()).map(|((_, uid), node)| (node.as_str(), uid.as_str()));
    status::suspend::parked(&mut new, parking, &own.names.suspended_state, checkpoint, stored, now);
    report::write_status(ctx, bs, own, new).await?;
    if matches!(parking, Parking::Saved(_)) {
        ctx.suspends.forget(&own.owner.uid);
    }
    ctx.failures.clear(&key(bs));
    // Looked at again when its park expires, if that comes first.
    let left = bs.spec.suspend.max_suspended_seconds().saturating_sub(parked_for(bs, now)).max(1);
    Ok(Action::requeue(Duration::from_secs(300).min(Duration::from_secs(left.unsigned_abs()))))
}

/// Starts the task the stage asks for (the reconcile goes on): the
/// capture of a suspend, or the reopen of a resume into a claimed warm
/// `pod` once it is Ready (a resume into a Pod of the session's own
/// reopens its tabs before it is Ready, from the mounted state).
pub(super) fn start_tasks(ctx: &Arc<Context>, bs: &BrowserSession, own: &Identity, stage: &Stage, pod: Option<&Pod>) {
    match (stage.step, &stage.pod, pod) {
        (Step::Capture(ip), Some((pod_name, _)), _) => {
            let browser = Browser { pod: pod_name.clone(), ip, control_secret: stage.control_secret.clone() };
            crate::suspend::capture::start(ctx, bs, own, browser);
        }
        (Step::Resume, _, Some(pod)) if is_claimed_warm(pod) => {
            let waiting = match ctx.suspends.get(&own.owner.uid) {
                Some(Capture::Running { .. } | Capture::Reopened { .. }) => true,
                Some(Capture::Failed(f)) => f.retry_at() > Instant::now(),
                _ => false,
            };
            let Some(ip) = ready_ip(pod).filter(|_| !waiting) else { return };
            let control_secret = control_secret_of(pod.metadata.annotations.as_ref(), &own.names.control_secret);
            let browser = Browser { pod: pod.name_any(), ip, control_secret };
            crate::suspend::capture::start_reopen(ctx, bs, own, browser);
        }
        _ => {}
    }
}

/// A Pod's address once it is Ready.
fn ready_ip(pod: &Pod) -> Option<IpAddr> {
    let status = pod.status.as_ref()?;
    let ready = status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
    status.pod_ip.as_deref().filter(|_| ready)?.parse().ok()
}

/// The status of a session with a browser (`pod`), as the stage shapes it.
pub(super) fn shape(
    ctx: &Context,
    bs: &BrowserSession,
    own: &Identity,
    stage: &Stage,
    pod: Option<&Pod>,
    new: &mut BrowserSessionStatus,
    now: Timestamp,
) {
    let entry = ctx.suspends.get(&own.owner.uid);
    let failure = match &entry {
        Some(Capture::Failed(failure)) => Some(failure),
        _ => None,
    };
    let reopened = matches!(entry, Some(Capture::Reopened { .. }));
    let awaiting_reopen = pod.is_some_and(is_claimed_warm) && !reopened;
    let stored = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    status::suspend::running(new, &stage.step, failure, awaiting_reopen, stored, now);
}

/// Before the status that says a resume is done: its saved state goes (a
/// resumed session keeps no stale copy of its cookies).
pub(super) async fn finish_resume(
    ctx: &Context,
    own: &Identity,
    stage: &Stage,
    new: &BrowserSessionStatus,
) -> Result<()> {
    if !status::suspend::resumed(new, &stage.step) {
        return Ok(());
    }
    // The book keeps the reopen until a reconcile finds the status saying
    // it (then the step is Run): a status write that fails after this
    // delete must not start the reopen again.
    delete_saved_state(ctx, own).await
}

/// Deletes the session's `<session>-suspended` Secret, if there is one.
async fn delete_saved_state(ctx: &Context, own: &Identity) -> Result<()> {
    let secrets = ctx.fence.writer::<Secret>(&ctx.client, &own.namespace)?;
    match secrets.delete(&own.names.suspended_state, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::kube("delete", "Secret", &own.namespace, &own.names.suspended_state)(source)),
    }
}

/// When the session is looked at again, as the stage needs it.
pub(super) fn next_look(stage: &Stage, planned: Action) -> Action {
    match stage.step {
        Step::Capture(_) | Step::AwaitCapture | Step::Resume => Action::requeue(CAPTURE_LOOK),
        // The agent's answer on the Pod wakes the session; this is in case it is lost.
        Step::Checkpoint | Step::AwaitCheckpoint => Action::requeue(Duration::from_secs(2)),
        Step::CaptureFailed { retry_in } => Action::requeue(retry_in.max(Duration::from_secs(1))),
        _ => planned,
    }
}
