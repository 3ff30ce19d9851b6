//! One reconcile of one BrowserSnapshot: read the source session and its
//! Pod, [`plan`](super::plan), start or await the take, write the status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use playpen_api::layout::RESUME_STATE_FILE;
use playpen_api::naming::{SnapshotNames, MANAGER, SNAPSHOT_LABEL};
use playpen_api::v1alpha1::{BrowserSnapshot, BrowserSnapshotStatus, Phase};
use playpen_api::BrowserSession;
use serde_json::json;
use tracing::instrument;

use super::plan::{is_finished, plan, Facts, Source, Step};
use super::policy::read_policy;
use super::status;
use crate::children::suspend::SUSPENDED_STATE_TYPE;
use crate::children::{managed_labels, Identity};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::suspend::capture::{self, elapsed_millis, Browser, Ledger, Task};
use crate::suspend::{control_secret_of, Capture, Saved};

/// How soon a snapshot that waits for its source looks again.
const WAIT_LOOK: Duration = Duration::from_secs(5);
/// How soon a snapshot whose take runs looks again (the take has no wake:
/// it ends within [`capture::CAPTURE_WITHIN`]).
const TAKE_LOOK: Duration = Duration::from_millis(500);

/// One reconcile of one BrowserSnapshot.
#[instrument(skip(snapshot, ctx), fields(namespace = snapshot.namespace().unwrap_or_default(), name = %snapshot.name_any()))]
pub async fn reconcile(snapshot: Arc<BrowserSnapshot>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = snapshot.namespace().ok_or(Error::MissingMetadata("namespace"))?;
    let name = snapshot.name_any();
    let uid = snapshot.meta().uid.clone().ok_or(Error::MissingMetadata("uid"))?;
    let owner = snapshot.controller_owner_ref(&()).ok_or(Error::MissingMetadata("uid"))?;
    if snapshot.meta().deletion_timestamp.is_some() {
        ctx.snapshots.forget(&uid);
        return Ok(Action::await_change());
    }
    let names = SnapshotNames::for_snapshot(&name);
    let phase = snapshot.status.as_ref().and_then(|s| s.phase);
    // A finished snapshot's source is not read again.
    let (source, source_id) =
        if is_finished(phase) { (Source::Missing, None) } else { read_source(&ctx, &snapshot, &namespace).await? };
    let facts = Facts { phase, source, take: ctx.snapshots.get(&uid), now: Instant::now() };
    let step = plan(&facts);
    let policies = ctx.fence.writer::<NetworkPolicy>(&ctx.client, &namespace)?;
    match (&step, &source_id) {
        (Step::Take(browser), Some(source_id)) => {
            if let Some(policy) =
                read_policy(&name, &namespace, owner.clone(), &snapshot.spec.source.session, &ctx.settings.egress)
            {
                policies
                    .patch(&names.read_policy, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&policy))
                    .await
                    .map_err(Error::kube("apply", "NetworkPolicy", &namespace, &names.read_policy))?;
            }
            start_take(
                &ctx,
                TakeOf { uid: uid.clone(), name: name.clone(), owner, names: names.clone() },
                source_id,
                browser,
            );
        }
        // Before the status that ends the take: the operator's way in goes.
        (Step::Record(_) | Step::GiveUp { .. }, _) if ctx.settings.egress.report_reader.is_some() => {
            match policies.delete(&names.read_policy, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(source) => {
                    return Err(Error::kube("delete", "NetworkPolicy", &namespace, &names.read_policy)(source))
                }
            }
        }
        _ => {}
    }
    let source_uid = source_id.as_ref().map(|id| id.owner.uid.as_str());
    let new = status::next(snapshot.status.as_ref(), &step, &names.state_secret, source_uid, Timestamp::now());
    write_status(&ctx, &snapshot, &namespace, new).await?;
    if matches!(step, Step::Record(_) | Step::GiveUp { .. }) {
        ctx.snapshots.forget(&uid);
    }
    Ok(match step {
        Step::Done | Step::Record(_) | Step::GiveUp { .. } => Action::await_change(),
        Step::Wait(..) => Action::requeue(WAIT_LOOK),
        Step::Take(_) | Step::AwaitTake => Action::requeue(TAKE_LOOK),
        Step::Retry { retry_in, .. } => Action::requeue(retry_in.max(TAKE_LOOK)),
    })
}

/// The source session and its browser, as far as a take needs them.
async fn read_source(ctx: &Context, snapshot: &BrowserSnapshot, namespace: &str) -> Result<(Source, Option<Identity>)> {
    let session_name = &snapshot.spec.source.session;
    let sessions: Api<BrowserSession> = Api::namespaced(ctx.client.clone(), namespace);
    let session =
        sessions.get_opt(session_name).await.map_err(Error::kube("get", "BrowserSession", namespace, session_name))?;
    let Some(session) = session else { return Ok((Source::Missing, None)) };
    let id = Identity::of(&session)?;
    let status = session.status.as_ref();
    let phase = status.and_then(|s| s.phase);
    let pod_name = status.and_then(|s| s.pod_name.clone());
    let cached = pod_name.as_ref().and_then(|p| ctx.caches().pods.get(namespace, p));
    let ready = cached.as_ref().filter(|p| p.metadata.deletion_timestamp.is_none()).and_then(|p| p.ready_ip());
    let source = match (phase, ready, pod_name) {
        (Some(Phase::Ready), Some(ip), Some(pod)) => {
            let annotations = cached.as_ref().and_then(|p| p.metadata.annotations.as_ref());
            let control_secret = control_secret_of(annotations, &id.names.control_secret);
            Source::Ready(Browser { pod, ip, control_secret })
        }
        (phase, ..) => Source::NotReady(phase.map(|p| format!("{p:?}"))),
    };
    Ok((source, Some(id)))
}

/// The snapshot a take is for.
struct TakeOf {
    uid: String,
    name: String,
    owner: OwnerReference,
    names: SnapshotNames,
}

/// Starts the take unless one of this snapshot runs: the source's pages
/// asked for as a suspend asks for them, the document written to the
/// snapshot's own Secret.
fn start_take(ctx: &Arc<Context>, of: TakeOf, source: &Identity, browser: &Browser) {
    let task = Task {
        ledger: Ledger::Snapshots,
        uid: of.uid.clone(),
        name: of.name.clone(),
        namespace: source.namespace.clone(),
        what: "snapshot",
        wake: None,
    };
    let (ctx2, source, browser) = (ctx.clone(), source.clone(), browser.clone());
    let work = async move {
        let started = Instant::now();
        let (document, tabs) = capture::fetch_state(&ctx2, &source, &browser).await?;
        let bytes = document.len();
        let secret = state_secret(&of, &source.namespace, document);
        let api = ctx2.fence.writer::<Secret>(&ctx2.client, &source.namespace).map_err(|e| e.to_string())?;
        api.patch(&of.names.state_secret, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&secret))
            .await
            .map_err(|e| format!("writing Secret {}: {e}", of.names.state_secret))?;
        Ok(Capture::Saved(Saved {
            bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
            tabs: i32::try_from(tabs).unwrap_or(i32::MAX),
            millis: elapsed_millis(started),
        }))
    };
    capture::spawn(ctx, task, work);
}

/// The Secret holding a snapshot's `document`, owned by the snapshot.
fn state_secret(of: &TakeOf, namespace: &str, document: Vec<u8>) -> Secret {
    let mut labels = managed_labels("snapshot-state");
    labels.insert(SNAPSHOT_LABEL.to_owned(), of.name.clone());
    Secret {
        metadata: ObjectMeta {
            name: Some(of.names.state_secret.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            owner_references: Some(vec![of.owner.clone()]),
            ..ObjectMeta::default()
        },
        type_: Some(SUSPENDED_STATE_TYPE.into()),
        data: Some([(RESUME_STATE_FILE.to_owned(), k8s_openapi::ByteString(document))].into()),
        ..Secret::default()
    }
}

/// Writes the status whole, unless it is unchanged.
async fn write_status(
    ctx: &Context,
    snapshot: &BrowserSnapshot,
    namespace: &str,
    new: BrowserSnapshotStatus,
) -> Result<()> {
    if snapshot.status.as_ref() == Some(&new) {
        return Ok(());
    }
    let name = snapshot.name_any();
    let api = ctx.fence.writer::<BrowserSnapshot>(&ctx.client, namespace)?;
    let patch = json!({"status": new});
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    api.patch_status(&name, &params, &Patch::Merge(&patch)).await.map(drop).map_err(Error::kube(
        "patch",
        "BrowserSnapshot",
        namespace,
        &name,
    ))
}
