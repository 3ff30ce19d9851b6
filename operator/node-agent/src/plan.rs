//! What the agent does about a Pod it sees: pure, so every case is a unit
//! test. Anything a tenant could write on a Pod (annotations, labels,
//! owner references) is checked here before it names a path or a sandbox.

use k8s_openapi::api::core::v1::Pod;
use playpen_api::live::{
    self, CheckpointResult, CHECKPOINT_REQUEST, CHECKPOINT_RESULT, GVISOR_RESTORE_IMAGE, RESTORE_FROM, RESTORE_GATE,
    RESTORE_NODE_LABEL, RESTORE_RESULT,
};
use playpen_api::BrowserSession;
use serde::{Deserialize, Serialize};

/// The agent's decision for one Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Checkpoint the Pod's sandbox, answering `request`.
    Checkpoint {
        request: String,
    },
    /// Answer a checkpoint request that cannot be honoured, without acting.
    RefuseCheckpoint {
        request: String,
        error: String,
    },
    /// Stage checkpoint `from` for this (gated) Pod and lift its gate.
    Stage {
        from: String,
    },
    /// Answer a restore that cannot be staged; the gate stays.
    RefuseRestore {
        from: String,
        error: String,
    },
    Nothing,
}

/// Who controls a Pod: its controlling owner reference, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// What a checkpoint records about the Pod it was taken from: enough to
/// decide who may restore it, and when it may be deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub namespace: String,
    pub pod: String,
    pub pod_uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// Seconds since the Unix epoch.
    pub taken_at: u64,
    pub bytes: u64,
    pub millis: u64,
}

/// The decision for `pod`, seen by the agent of `node`.
pub fn action(pod: &Pod, node: &str) -> Action {
    if pod.metadata.deletion_timestamp.is_some() {
        return Action::Nothing;
    }
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let on_node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node);
    if let (true, Some(request)) = (on_node, annotations.get(CHECKPOINT_REQUEST)) {
        let answered = annotations
            .get(CHECKPOINT_RESULT)
            .and_then(|r| serde_json::from_str::<CheckpointResult>(r).ok())
            .is_some_and(|r| &r.request == request);
        if answered {
            return Action::Nothing;
        }
        if !live::is_request_id(request) {
            return Action::RefuseCheckpoint {
                request: String::new(),
                error: format!(
                    "{CHECKPOINT_REQUEST} must be 1 to {} letters, digits, '-', '.' or '_'",
                    live::MAX_REQUEST_ID
                ),
            };
        }
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if !running {
            return Action::RefuseCheckpoint { request: request.clone(), error: "the Pod is not Running".into() };
        }
        return Action::Checkpoint { request: request.clone() };
    }
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|gates| gates.iter().any(|g| g.name == RESTORE_GATE));
    let for_me = labels.get(RESTORE_NODE_LABEL).map(String::as_str) == Some(node);
    match annotations.get(RESTORE_FROM) {
        Some(from) if gated && for_me && !annotations.contains_key(RESTORE_RESULT) => {
            if annotations.contains_key(GVISOR_RESTORE_IMAGE) {
                // Staged and patched; the gate's removal is on its way.
                Action::Nothing
            } else if !live::is_uid(from) {
                Action::RefuseRestore {
                    from: String::new(),
                    error: format!("{RESTORE_FROM} must be the UID of a checkpointed Pod"),
                }
            } else {
                Action::Stage { from: from.clone() }
            }
        }
        _ => Action::Nothing,
    }
}

/// The controlling owner of `pod`.
pub fn owner_of(pod: &Pod) -> Option<Owner> {
    let refs = pod.metadata.owner_references.as_ref()?;
    let owner = refs.iter().find(|r| r.controller == Some(true))?;
    Some(Owner { kind: owner.kind.clone(), name: owner.name.clone(), uid: owner.uid.clone() })
}

/// Whether session `bs` (it must be the one with `owner_uid`) still waits
/// to be restored from checkpoint `pod_uid`: its status names it.
pub fn names_checkpoint(bs: &BrowserSession, owner_uid: &str, pod_uid: &str) -> bool {
    bs.metadata.uid.as_deref() == Some(owner_uid)
        && bs.status.as_ref().and_then(|s| s.suspend.as_ref()).and_then(|s| s.checkpoint.as_deref()) == Some(pod_uid)
}

/// Whether `pod` may be restored from the checkpoint `meta` describes: the
/// same namespace and the same controlling owner (by UID). A Pod in another
/// namespace, or one owned by something else, never gets another's memory.
pub fn may_restore(meta: &Meta, pod: &Pod) -> Result<(), String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    if meta.namespace != namespace {
        return Err(format!("it was taken in another namespace than {namespace:?}"));
    }
    let owner = owner_of(pod);
    if meta.owner.as_ref().map(|o| &o.uid) != owner.as_ref().map(|o| &o.uid) {
        return Err("the Pod's controlling owner is not the one the checkpoint was taken for".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSchedulingGate, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use k8s_openapi::jiff::Timestamp;
    use std::collections::BTreeMap;

    const NODE: &str = "node-a";
    const UID: &str = "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a47";

    fn pod(annotations: &[(&str, &str)], labels: &[(&str, &str)], node: Option<&str>, gate: bool) -> Pod {
        let map =
            |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("team".into()),
                annotations: Some(map(annotations)),
                labels: Some(map(labels)),
                owner_references: Some(vec![OwnerReference {
                    kind: "BrowserSession".into(),
                    name: "s".into(),
                    uid: "owner-1".into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                scheduling_gates: gate.then(|| vec![PodSchedulingGate { name: RESTORE_GATE.into() }]),
                ..PodSpec::default()
            }),
            status: Some(PodStatus { phase: Some("Running".into()), ..PodStatus::default() }),
        }
    }

    fn result(request: &str) -> String {
        serde_json::to_string(&CheckpointResult { request: request.into(), ok: true, ..Default::default() }).unwrap()
    }

    #[test]
    fn a_request_on_this_node_is_checkpointed_once() {
        let asked = pod(&[(CHECKPOINT_REQUEST, "r1")], &[], Some(NODE), false);
        assert_eq!(action(&asked, NODE), Action::Checkpoint { request: "r1".into() });
        // Another node's Pod is another agent's.
        assert_eq!(action(&asked, "node-b"), Action::Nothing);
        // Answered: nothing more; a new request is answered again.
        let answered = pod(&[(CHECKPOINT_REQUEST, "r1"), (CHECKPOINT_RESULT, &result("r1"))], &[], Some(NODE), false);
        assert_eq!(action(&answered, NODE), Action::Nothing);
        let again = pod(&[(CHECKPOINT_REQUEST, "r2"), (CHECKPOINT_RESULT, &result("r1"))], &[], Some(NODE), false);
        assert_eq!(action(&again, NODE), Action::Checkpoint { request: "r2".into() });
    }

    #[test]
    fn bad_or_early_checkpoint_requests_are_answered_without_acting() {
        let bad = pod(&[(CHECKPOINT_REQUEST, "../x y")], &[], Some(NODE), false);
        assert!(matches!(action(&bad, NODE), Action::RefuseCheckpoint { request, .. } if request.is_empty()));
        let mut pending = pod(&[(CHECKPOINT_REQUEST, "r1")], &[], Some(NODE), false);
        pending.status = Some(PodStatus { phase: Some("Pending".into()), ..PodStatus::default() });
        assert!(matches!(action(&pending, NODE), Action::RefuseCheckpoint { request, .. } if request == "r1"));
        let mut leaving = pod(&[(CHECKPOINT_REQUEST, "r1")], &[], Some(NODE), false);
        leaving.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        assert_eq!(action(&leaving, NODE), Action::Nothing);
    }

    #[test]
    fn a_gated_pod_labelled_for_this_node_is_staged_and_nothing_else_is() {
        let restore = |gate, node_label: &str, from: &str| {
            pod(&[(RESTORE_FROM, from)], &[(RESTORE_NODE_LABEL, node_label)], None, gate)
        };
        assert_eq!(action(&restore(true, NODE, UID), NODE), Action::Stage { from: UID.into() });
        assert_eq!(action(&restore(false, NODE, UID), NODE), Action::Nothing, "no gate: too late to restore");
        assert_eq!(action(&restore(true, "node-b", UID), NODE), Action::Nothing);
        assert!(
            matches!(action(&restore(true, NODE, "../../etc"), NODE), Action::RefuseRestore { from, .. } if from.is_empty())
        );
        let mut answered = restore(true, NODE, UID);
        answered.metadata.annotations.as_mut().unwrap().insert(RESTORE_RESULT.into(), "{}".into());
        assert_eq!(action(&answered, NODE), Action::Nothing);
        let mut staged = restore(true, NODE, UID);
        staged.metadata.annotations.as_mut().unwrap().insert(GVISOR_RESTORE_IMAGE.into(), "/x".into());
        assert_eq!(action(&staged, NODE), Action::Nothing);
    }

    #[test]
    fn a_checkpoint_is_wanted_while_its_session_names_it() {
        use playpen_api::v1alpha1::SuspendStatus;
        let mut bs = BrowserSession::new("s", Default::default());
        bs.metadata.uid = Some("owner-1".into());
        assert!(!names_checkpoint(&bs, "owner-1", UID), "no status: resumed afresh or never parked");
        bs.status = Some(playpen_api::BrowserSessionStatus {
            suspend: Some(SuspendStatus { checkpoint: Some(UID.into()), ..SuspendStatus::default() }),
            ..Default::default()
        });
        assert!(names_checkpoint(&bs, "owner-1", UID));
        assert!(!names_checkpoint(&bs, "owner-2", UID), "a session of the same name made again");
        assert!(!names_checkpoint(&bs, "owner-1", "9b926003-1796-4d30-9dd4-7fa322eade1f"), "another checkpoint");
    }

    #[test]
    fn only_the_same_namespace_and_owner_may_restore() {
        let target = pod(&[], &[], None, true);
        let owner = owner_of(&target);
        assert_eq!(owner.as_ref().map(|o| o.uid.as_str()), Some("owner-1"));
        let meta = Meta { namespace: "team".into(), owner: owner.clone(), ..Meta::default() };
        assert_eq!(may_restore(&meta, &target), Ok(()));
        let elsewhere = Meta { namespace: "other".into(), ..meta.clone() };
        assert!(may_restore(&elsewhere, &target).unwrap_err().contains("namespace"));
        let other_owner = Meta { owner: Some(Owner { uid: "owner-2".into(), ..Owner::default() }), ..meta.clone() };
        assert!(may_restore(&other_owner, &target).unwrap_err().contains("owner"));
        let unowned = Meta { owner: None, ..meta };
        assert!(may_restore(&unowned, &target).is_err(), "a Pod with an owner may not take an unowned checkpoint");
        let mut orphan = target;
        orphan.metadata.owner_references = None;
        assert_eq!(may_restore(&unowned, &orphan), Ok(()));
    }
}
