//! The suspend stage of a session's reconcile ([`crate::suspend`]): what
//! `spec.suspended` and the session's status decide before anything is
//! read, a parked session's whole reconcile, and what a running one adds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use playpen_api::v1alpha1::{BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;

use super::report;
use crate::apply::Target;
use crate::cache::Caches;
use crate::children::Identity;
use crate::context::{key, Context};
use crate::error::{Error, Result};
use crate::recovery::Recovery;
use crate::status::{self, Observed};
use crate::suspend::plan::{plan, Facts};
use crate::suspend::{Capture, Parking, PodFact, Step};

/// How soon a session whose capture runs is looked at again if its task
/// does not wake it first.
const CAPTURE_LOOK: Duration = Duration::from_secs(5);

/// What the stage decided, and the Pod it decided about.
#[derive(Debug)]
pub(super) struct Stage {
    pub(super) step: Step,
    /// The browser Pod's name and UID, when the cache shows one.
    pod: Option<(String, String)>,
}

/// The stage's decision for `bs`.
pub(super) fn stage(ctx: &Context, caches: &Caches, bs: &BrowserSession, own: &Identity) -> Stage {
    let status = bs.status.as_ref();
    let pod_name = status.and_then(|s| s.pod_name.clone()).unwrap_or_else(|| own.names.pod.clone());
    let cached = caches.pods.get(&own.namespace, &pod_name).filter(|p| p.metadata.deletion_timestamp.is_none());
    let pod = match cached.as_ref().map(|p| p.ready_ip()) {
        None => PodFact::Absent,
        Some(None) => PodFact::NotReady,
        Some(Some(ip)) => PodFact::Ready(ip),
    };
    let facts = Facts {
        suspended: bs.spec.suspended,
        pooled: bs.spec.pool.is_some(),
        parked: status.and_then(|s| s.phase) == Some(Phase::Suspended),
        state_saved: status.and_then(|s| s.suspend.as_ref()).is_some_and(|s| s.state_secret.is_some()),
        capture: ctx.suspends.get(&own.owner.uid),
        pod,
        now: Instant::now(),
    };
    let step = plan(&facts);
    if matches!(step, Step::Run | Step::Resume) && facts.capture.is_some() {
        // Not suspended (any more): what a capture found is not wanted.
        ctx.suspends.forget(&own.owner.uid);
    }
    let pod = cached.map(|p| (pod_name, p.metadata.uid.clone().unwrap_or_default()));
    Stage { step, pod }
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
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    let mut new = status::compute(bs, own, observed, &ctx.settings.egress, now);
    new.pool = bs.status.as_ref().and_then(|s| s.pool.clone());
    let stored = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    status::suspend::parked(&mut new, parking, &own.names.suspended_state, stored, now);
    report::write_status(ctx, bs, own, new).await?;
    if matches!(parking, Parking::Saved(_)) {
        ctx.suspends.forget(&own.owner.uid);
    }
    ctx.failures.clear(&key(bs));
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Starts the capture the stage asked for (a task: the reconcile goes on).
pub(super) fn start_capture(ctx: &Arc<Context>, bs: &BrowserSession, own: &Identity, stage: &Stage) {
    if let (Step::Capture(ip), Some((pod_name, _))) = (stage.step, &stage.pod) {
        crate::suspend::capture::start(ctx, bs, own, pod_name, ip);
    }
}

/// The status of a session with a browser, as the stage shapes it.
pub(super) fn shape(
    ctx: &Context,
    bs: &BrowserSession,
    own: &Identity,
    stage: &Stage,
    new: &mut BrowserSessionStatus,
    now: Timestamp,
) {
    let failure = match ctx.suspends.get(&own.owner.uid) {
        Some(Capture::Failed(failure)) => Some(failure),
        _ => None,
    };
    let stored = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    status::suspend::running(new, &stage.step, failure.as_ref(), stored, now);
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
        Step::Capture(_) | Step::AwaitCapture => Action::requeue(CAPTURE_LOOK),
        Step::CaptureFailed { retry_in } => Action::requeue(retry_in.max(Duration::from_secs(1))),
        _ => planned,
    }
}
