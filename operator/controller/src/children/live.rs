//! What the live suspend path changes in a browser Pod (pure;
//! docs/suspend-resume.md, "The live path on Kubernetes").
//!
//! - A Pod the node agent may checkpoint is built **live-ready** from its
//!   first start: its emptyDirs carry gVisor's mount hints, so they live in
//!   the sandbox's memory and a checkpoint holds their files (host-backed,
//!   the restore would look for files the new Pod does not have); its
//!   runtime's readiness endpoint listens on every address (the restored
//!   sandbox has the new Pod's address, not the one it bound); and it says
//!   so in [`LIVE_READY_ANNOTATION`]. The Pod must be the same at restore,
//!   so the choice is made when it is built, not when it is suspended.
//! - A Pod resumed from a checkpoint is created gated ([`live::RESTORE_GATE`])
//!   and pinned to the checkpoint's node; that node's agent stages the
//!   checkpoint for it and lifts the gate.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSchedulingGate,
};
use playpen_api::live::{RESTORE_FROM, RESTORE_GATE, RESTORE_NODE_LABEL};
use playpen_api::BrowserSession;

use super::Settings;

/// On a live-ready browser Pod: the node agent may checkpoint it.
pub const LIVE_READY_ANNOTATION: &str = "playpen.dev/live-suspend";
/// `status.suspend.path` of a checkpointed session.
pub const LIVE_PATH: &str = "Live";
/// gVisor's mount hints, per volume name.
const MOUNT_HINT: &str = "dev.gvisor.spec.mount";

/// Why a session's Pod, under RuntimeClass `class`, is not built
/// live-ready (`None`: it is).
pub fn not_live_ready(bs: &BrowserSession, class: Option<&str>, settings: &Settings) -> Option<&'static str> {
    if !class.is_some_and(|c| settings.live_runtime_classes.iter().any(|l| l == c)) {
        return Some("its RuntimeClass is not one the node agents checkpoint (suspend.live in the chart)");
    }
    if bs.spec.profile.is_some() {
        return Some("its profile is a PersistentVolumeClaim, whose files a checkpoint does not hold");
    }
    if bs.spec.browser.snapshots.volume.persistent_volume_claim.is_some() {
        return Some("its snapshot volume is a PersistentVolumeClaim, whose files a checkpoint does not hold");
    }
    if super::exporter::exports(bs) {
        return Some("its recordings are exported: the exporter's uploads do not survive a checkpoint");
    }
    None
}

/// Makes `pod` live-ready: the mount hints of its emptyDirs (`shared`:
/// mounted by more than one container) and the annotation.
pub fn make_live_ready(pod: &mut Pod, shared: &[&str], private_memory: &[&str]) {
    let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut hint = |volume: &str, share: &str, kind: &str| {
        annotations.insert(format!("{MOUNT_HINT}.{volume}.share"), share.to_owned());
        annotations.insert(format!("{MOUNT_HINT}.{volume}.type"), kind.to_owned());
        annotations.insert(format!("{MOUNT_HINT}.{volume}.options"), "rw".to_owned());
    };
    // A disk-backed emptyDir is hinted `bind`: the shim turns it into a
    // tmpfs inside the sandbox when it is empty (a new Pod's always is).
    for volume in shared {
        hint(volume, "pod", "bind");
    }
    for volume in private_memory {
        hint(volume, "container", "tmpfs");
    }
    annotations.insert(LIVE_READY_ANNOTATION.to_owned(), "true".to_owned());
}

/// The checkpoint a Pod built now restores from: `(node, checkpointed Pod
/// UID)` while the session is asked back from a Live suspend.
pub fn restore_from(bs: &BrowserSession) -> Option<(&str, &str)> {
    if bs.spec.suspended {
        return None;
    }
    let suspend = bs.status.as_ref()?.suspend.as_ref()?;
    if suspend.path != LIVE_PATH {
        return None;
    }
    Some((suspend.node.as_deref()?, suspend.checkpoint.as_deref()?))
}

/// Makes `pod` wait for the agent of `node` to stage checkpoint `from`:
/// gated, labelled for that agent, and allowed to run on that node only.
pub fn restore_into(pod: &mut Pod, node: &str, from: &str) {
    pod.metadata.labels.get_or_insert_with(BTreeMap::new).insert(RESTORE_NODE_LABEL.into(), node.into());
    pod.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(RESTORE_FROM.into(), from.into());
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.scheduling_gates.get_or_insert_with(Vec::new).push(PodSchedulingGate { name: RESTORE_GATE.into() });
    // The node by name, added to every term the session's own affinity has
    // (terms are ORed, requirements within one ANDed).
    let on_node = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "In".into(),
        values: Some(vec![node.to_owned()]),
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector { node_selector_terms: Vec::new() });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields.get_or_insert_with(Vec::new).push(on_node.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;
    use playpen_api::v1alpha1::SuspendStatus;
    use playpen_api::BrowserSessionStatus;

    fn session(class: Option<&str>) -> BrowserSession {
        let mut bs = BrowserSession::new("s", Default::default());
        bs.spec.browser.image = "img".into();
        bs.spec.browser.pod = class.map(|class| playpen_api::v1alpha1::PodSettings {
            runtime_class_name: Some(class.into()),
            ..Default::default()
        });
        bs
    }

    fn settings() -> Settings {
        Settings { live_runtime_classes: vec!["gvisor".into()], ..Settings::default() }
    }

    #[test]
    fn only_pods_under_a_live_class_without_host_backed_files_are_live_ready() {
        let bs = session(None);
        assert_eq!(not_live_ready(&bs, Some("gvisor"), &settings()), None);
        assert!(not_live_ready(&bs, Some("kata"), &settings()).unwrap().contains("RuntimeClass"));
        assert!(not_live_ready(&bs, None, &settings()).is_some());
        assert!(not_live_ready(&bs, Some("gvisor"), &Settings::default()).is_some(), "no classes configured");
        let mut with_profile = session(None);
        with_profile.spec.profile = Some(playpen_api::v1alpha1::Profile { claim_name: "p".into() });
        assert!(not_live_ready(&with_profile, Some("gvisor"), &settings()).unwrap().contains("profile"));
    }

    #[test]
    fn a_live_ready_pod_keeps_its_empty_dirs_in_the_sandbox() {
        let mut pod = Pod::default();
        make_live_ready(&mut pod, &["data-home", "tmp"], &["dshm"]);
        let a = pod.metadata.annotations.unwrap();
        assert_eq!(a["dev.gvisor.spec.mount.data-home.share"], "pod");
        assert_eq!(a["dev.gvisor.spec.mount.tmp.type"], "bind");
        assert_eq!(a["dev.gvisor.spec.mount.dshm.share"], "container");
        assert_eq!(a["dev.gvisor.spec.mount.dshm.type"], "tmpfs");
        assert_eq!(a[LIVE_READY_ANNOTATION], "true");
        assert_eq!(a.len(), 10);
    }

    #[test]
    fn a_resume_from_a_checkpoint_is_gated_and_pinned_to_its_node() {
        let mut bs = session(Some("gvisor"));
        assert_eq!(restore_from(&bs), None);
        bs.status = Some(BrowserSessionStatus {
            suspend: Some(SuspendStatus {
                path: LIVE_PATH.into(),
                node: Some("n1".into()),
                checkpoint: Some("uid-1".into()),
                ..SuspendStatus::default()
            }),
            ..BrowserSessionStatus::default()
        });
        assert_eq!(restore_from(&bs), Some(("n1", "uid-1")));
        bs.spec.suspended = true;
        assert_eq!(restore_from(&bs), None, "still suspended: nothing to restore yet");
        let mut pod = Pod { spec: Some(PodSpec::default()), ..Pod::default() };
        restore_into(&mut pod, "n1", "uid-1");
        assert_eq!(pod.metadata.labels.as_ref().unwrap()[RESTORE_NODE_LABEL], "n1");
        assert_eq!(pod.metadata.annotations.as_ref().unwrap()[RESTORE_FROM], "uid-1");
        let spec = pod.spec.unwrap();
        assert_eq!(spec.scheduling_gates.unwrap()[0].name, RESTORE_GATE);
        let terms = spec.affinity.unwrap().node_affinity.unwrap().required_during_scheduling_ignored_during_execution;
        let terms = terms.unwrap().node_selector_terms;
        assert_eq!(terms.len(), 1);
        let fields = terms[0].match_fields.as_ref().unwrap();
        assert_eq!(
            (fields[0].key.as_str(), fields[0].values.as_deref()),
            ("metadata.name", Some(&["n1".to_owned()][..]))
        );
    }

    #[test]
    fn the_node_is_added_to_each_of_the_sessions_own_terms() {
        let term = |zone: &str| NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: "zone".into(),
                operator: "In".into(),
                values: Some(vec![zone.into()]),
            }]),
            ..NodeSelectorTerm::default()
        };
        let mut pod = Pod {
            spec: Some(PodSpec {
                affinity: Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![term("a"), term("b")],
                        }),
                        ..NodeAffinity::default()
                    }),
                    ..Affinity::default()
                }),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        restore_into(&mut pod, "n1", "u");
        let spec = pod.spec.unwrap();
        let terms = spec.affinity.unwrap().node_affinity.unwrap().required_during_scheduling_ignored_during_execution;
        for t in terms.unwrap().node_selector_terms {
            assert_eq!(t.match_expressions.unwrap().len(), 1, "the session's own requirement stays");
            assert_eq!(t.match_fields.unwrap()[0].values.as_deref(), Some(&["n1".to_owned()][..]));
        }
    }
}
