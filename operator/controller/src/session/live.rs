//! The live path's part of the suspend stage ([`crate::children::live`]
//! builds the Pods): what a Pod's annotations say of the node agent's work,
//! asking the agent for a checkpoint, and giving up a restore that cannot
//! happen. The agent and the operator talk only through those annotations
//! ([`playpen_api::live`]).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use playpen_api::live::{CheckpointResult, RestoreResult, CHECKPOINT_REQUEST, CHECKPOINT_RESULT, RESTORE_RESULT};
use playpen_api::naming::MANAGER;
use playpen_api::text::truncate;
use playpen_api::BrowserSession;
use serde_json::json;

use super::report;
use crate::apply::Target;
use crate::children::live::LIVE_READY_ANNOTATION;
use crate::children::Identity;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::suspend::Live;

/// What the status says of a restore that failed, at most.
const MAX_WHY: usize = 600;
/// How long the node agent has to answer a checkpoint request: past it the
/// suspend takes the State path (no agent on the Pod's node, or one that hangs).
const ANSWER_WITHIN: Duration = Duration::from_secs(90);

/// The checkpoint request of this suspend: one per generation, so a
/// suspend after a resume asks again.
pub(super) fn request_of(bs: &BrowserSession) -> String {
    format!("suspend-{}", bs.metadata.generation.unwrap_or_default())
}

/// The live path for `request`, from the Pod's annotations.
pub(super) fn fact(pod: Option<&Pod>, request: &str) -> Live {
    let Some(annotations) = pod.and_then(|p| p.metadata.annotations.as_ref()) else { return Live::No };
    if annotations.get(LIVE_READY_ANNOTATION).map(String::as_str) != Some("true") {
        return Live::No;
    }
    let answer = annotations.get(CHECKPOINT_RESULT).and_then(|r| serde_json::from_str::<CheckpointResult>(r).ok());
    match answer {
        Some(r) if r.request == request && r.ok => Live::Taken {
            bytes: i64::try_from(r.bytes).unwrap_or(i64::MAX),
            millis: i64::try_from(r.millis).unwrap_or(i64::MAX),
        },
        // Failed: the State path (the agent's error is in its log and on the Pod).
        Some(r) if r.request == request => Live::No,
        _ if annotations.get(CHECKPOINT_REQUEST).map(String::as_str) == Some(request) => Live::Asked,
        _ => Live::Ready,
    }
}

/// `live`, given up for the State path when its request has waited for the
/// agent longer than [`ANSWER_WITHIN`] since `waiting_since`.
pub(super) fn unless_unanswered(live: Live, waiting_since: Instant, now: Instant) -> Live {
    match live {
        Live::Asked if now.saturating_duration_since(waiting_since) > ANSWER_WITHIN => Live::No,
        other => other,
    }
}

/// The node the agent says holds the checkpoint for `request`.
pub(super) fn answered_node(pod: Option<&Pod>, request: &str) -> Option<String> {
    let answer = pod?.metadata.annotations.as_ref()?.get(CHECKPOINT_RESULT)?;
    let answer = serde_json::from_str::<CheckpointResult>(answer).ok()?;
    (answer.request == request && answer.ok && !answer.node.is_empty()).then_some(answer.node)
}

/// Why the Pod waiting for a restore will never have it: the agent refused
/// the checkpoint, or the node's runtime failed to restore it.
pub(super) fn restore_failure(pod: &Pod) -> Option<String> {
    if let Some(answer) = pod.metadata.annotations.as_ref().and_then(|a| a.get(RESTORE_RESULT)) {
        let refused = serde_json::from_str::<RestoreResult>(answer).map(|r| r.error);
        return Some(refused.unwrap_or_else(|_| "the node agent refused it".into()));
    }
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let message = waiting.message.as_deref()?;
        message.contains("restore failed").then(|| message.to_owned())
    })
}

/// Asks the node agent to checkpoint `pod`.
pub(super) async fn ask(ctx: &Context, own: &Identity, pod: &str, request: &str) -> Result<()> {
    let pods = ctx.fence.writer::<Pod>(&ctx.client, &own.namespace)?;
    let patch = json!({ "metadata": { "annotations": { CHECKPOINT_REQUEST: request } } });
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
    pods.patch(pod, &params, &Patch::Merge(&patch)).await.map_err(Error::kube("patch", "Pod", &own.namespace, pod))?;
    Ok(())
}

/// Gives up a restore: the waiting Pod (`pod`: name and UID) is deleted and
/// the status forgets the checkpoint, saying why; the next reconcile starts
/// a fresh browser.
pub(super) async fn abandon(
    ctx: &Context,
    bs: &BrowserSession,
    own: &Identity,
    target: Target<'_>,
    pod: Option<&(String, String)>,
    why: &str,
) -> Result<Action> {
    if let Some((name, uid)) = pod {
        crate::apply::delete_pod(target, name, uid).await?;
    }
    let mut new = bs.status.clone().unwrap_or_default();
    if let Some(suspend) = new.suspend.as_mut() {
        suspend.checkpoint = None;
        suspend.node = None;
        suspend.reason =
            format!("the live checkpoint could not be restored ({}); a fresh browser starts", truncate(why, MAX_WHY));
    }
    report::write_status(ctx, bs, own, new).await?;
    Ok(Action::requeue(Duration::from_secs(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, ContainerStatus, PodStatus};
    use std::collections::BTreeMap;

    fn pod(annotations: &[(&str, &str)]) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.annotations =
            Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>());
        pod
    }

    fn answer(request: &str, ok: bool) -> String {
        serde_json::to_string(&CheckpointResult {
            request: request.into(),
            ok,
            bytes: 7,
            millis: 3,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn the_annotations_say_where_the_checkpoint_stands() {
        let ready = (LIVE_READY_ANNOTATION, "true");
        assert_eq!(fact(None, "suspend-2"), Live::No);
        assert_eq!(fact(Some(&pod(&[])), "suspend-2"), Live::No, "not built live-ready");
        assert_eq!(fact(Some(&pod(&[ready])), "suspend-2"), Live::Ready);
        assert_eq!(fact(Some(&pod(&[ready, (CHECKPOINT_REQUEST, "suspend-2")])), "suspend-2"), Live::Asked);
        let taken = answer("suspend-2", true);
        let taken_pod = pod(&[ready, (CHECKPOINT_REQUEST, "suspend-2"), (CHECKPOINT_RESULT, &taken)]);
        assert_eq!(fact(Some(&taken_pod), "suspend-2"), Live::Taken { bytes: 7, millis: 3 });
        assert_eq!(answered_node(Some(&taken_pod), "suspend-2"), None, "an answer without a node names none");
        let failed = answer("suspend-2", false);
        assert_eq!(fact(Some(&pod(&[ready, (CHECKPOINT_RESULT, &failed)])), "suspend-2"), Live::No);
        // An answer to an earlier suspend is no answer to this one.
        let old = answer("suspend-1", true);
        assert_eq!(fact(Some(&pod(&[ready, (CHECKPOINT_RESULT, &old)])), "suspend-2"), Live::Ready);
    }

    #[test]
    fn an_unanswered_checkpoint_gives_way_to_the_state_path() {
        let asked = Instant::now();
        assert_eq!(unless_unanswered(Live::Asked, asked, asked + Duration::from_secs(60)), Live::Asked);
        assert_eq!(unless_unanswered(Live::Asked, asked, asked + ANSWER_WITHIN + Duration::from_secs(1)), Live::No);
        let taken = Live::Taken { bytes: 1, millis: 1 };
        assert_eq!(unless_unanswered(taken, asked, asked + Duration::from_secs(600)), taken, "an answer stands");
    }

    #[test]
    fn a_refusal_or_a_runtime_error_is_a_failed_restore() {
        assert_eq!(restore_failure(&pod(&[])), None);
        let refused =
            serde_json::to_string(&RestoreResult { from: "u".into(), error: "not on this node".into() }).unwrap();
        assert_eq!(restore_failure(&pod(&[(RESTORE_RESULT, &refused)])).as_deref(), Some("not on this node"));
        let mut failing = pod(&[]);
        let waiting = |message: &str| ContainerStatus {
            name: "browser".into(),
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("RunContainerError".into()),
                    message: Some(message.into()),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        };
        failing.status =
            Some(PodStatus { container_statuses: Some(vec![waiting("image pull")]), ..PodStatus::default() });
        assert_eq!(restore_failure(&failing), None);
        let message = "failed to start containerd task \"browser\": OCI runtime restore failed: x";
        failing.status = Some(PodStatus { container_statuses: Some(vec![waiting(message)]), ..PodStatus::default() });
        assert_eq!(restore_failure(&failing).as_deref(), Some(message));
    }
}
