//! A session's Pod as the session controller keeps it: only what a
//! reconcile reads. The watch decodes Pods straight into this type, so the
//! rest of a Pod (most of its spec, its IPs, images and mounts) is skipped
//! while decoding and never held. At 10,000 sessions the cached Pods were
//! the largest part of the operator's heap (55 MiB as `k8s_openapi` Pods,
//! whose struct alone is 2.4 KB before any content); this keeps a few
//! hundred bytes each.
//!
//! A reconcile reads a Pod's metadata (labels, annotations, owners, the
//! deletion mark), its node, how many containers it has, its phase, reason
//! and message, its `PodScheduled` and `Ready` conditions, and its
//! containers' statuses: name, readiness, restarts, current and last state.
//! [`CachedPod::to_pod`] gives it back as a `Pod` with just those fields.

use k8s_openapi::api::core::v1::{Container, ContainerState, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// The Pod conditions a reconcile reads; the others are dropped.
const CONDITIONS_READ: [&str; 2] = ["PodScheduled", "Ready"];

/// A cached Pod (see the module's documentation).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct CachedPod {
    /// The Pod's metadata, without managed fields.
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<Named>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
struct Named {
    name: String,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    /// Read by the egress report's reader only (16 bytes a Pod).
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    reason: Option<String>,
    message: Option<String>,
    conditions: Option<Vec<PodCondition>>,
    container_statuses: Option<Vec<ContainerReport>>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ContainerReport {
    name: String,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    restart_count: i32,
    started: Option<bool>,
    state: Option<ContainerState>,
    last_state: Option<ContainerState>,
}

impl k8s_openapi::Resource for CachedPod {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Pod as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for CachedPod {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl CachedPod {
    /// Drops what was decoded but is not read: managed fields, and the
    /// conditions other than [`CONDITIONS_READ`]. Run on every watch event.
    pub fn trim(&mut self) {
        self.metadata.managed_fields = None;
        if let Some(conditions) = self.status.conditions.as_mut() {
            conditions.retain(|c| CONDITIONS_READ.contains(&c.type_.as_str()));
        }
    }

    /// Whether the scheduler reported it could not place the Pod
    /// (`PodScheduled` False, `Unschedulable`): a cheap filter before [`Self::to_pod`].
    pub fn refused_by_scheduler(&self) -> bool {
        self.status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    }

    /// The Pod's address once it has one and is Ready (where its runtime
    /// answers the egress report).
    pub fn ready_ip(&self) -> Option<std::net::IpAddr> {
        let ready = self.status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
        self.status.pod_ip.as_deref().filter(|_| ready)?.parse().ok()
    }

    /// The Pod with the fields a reconcile reads (the others unset; a
    /// container's image is empty).
    pub fn to_pod(&self) -> Pod {
        let status = &self.status;
        let report = |c: &ContainerReport| ContainerStatus {
            name: c.name.clone(),
            ready: c.ready,
            restart_count: c.restart_count,
            started: c.started,
            state: c.state.clone(),
            last_state: c.last_state.clone(),
            ..ContainerStatus::default()
        };
        Pod {
            metadata: self.metadata.clone(),
            spec: Some(PodSpec {
                node_name: self.spec.node_name.clone(),
                containers: self
                    .spec
                    .containers
                    .iter()
                    .map(|c| Container { name: c.name.clone(), ..Container::default() })
                    .collect(),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: status.phase.clone(),
                reason: status.reason.clone(),
                message: status.message.clone(),
                conditions: status.conditions.clone(),
                container_statuses: status.container_statuses.as_ref().map(|cs| cs.iter().map(report).collect()),
                ..PodStatus::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Pod as a kubelet reports it, with what a reconcile reads and a lot it does not.
    fn live() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "s-browser", "namespace": "team", "uid": "u", "resourceVersion": "7",
                "labels": {"a": "1"}, "annotations": {"b": "2"},
                "ownerReferences": [{"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession", "name": "s",
                    "uid": "o", "controller": true}],
                "deletionTimestamp": "2026-12-02T10:00:00Z",
                "managedFields": [{"manager": "x"}]},
            "spec": {"nodeName": "n1", "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": [{"key": "k"}],
                "containers": [{"name": "browser", "image": "i", "env": [{"name": "E", "value": "x"}]},
                    {"name": "agent", "image": "j"}]},
            "status": {"phase": "Running", "reason": "R", "message": "M", "podIP": "10.0.0.9",
                "hostIP": "192.168.0.1", "qosClass": "Burstable", "startTime": "2026-12-02T09:00:00Z",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                     "lastTransitionTime": "2026-12-02T09:00:01Z"},
                    {"type": "ContainersReady", "status": "False"}],
                "containerStatuses": [
                    {"name": "browser", "ready": false, "restartCount": 3, "started": true, "image": "i",
                     "imageID": "sha256:abc", "containerID": "containerd://1",
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 1, "message": "boom"}},
                     "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                    {"name": "agent", "ready": true, "restartCount": 0, "image": "j", "imageID": "sha256:def"}]}
        })
    }

    fn cached(value: serde_json::Value) -> CachedPod {
        let mut pod: CachedPod = serde_json::from_value(value).unwrap();
        pod.trim();
        pod
    }

    #[test]
    fn a_cached_pod_gives_back_every_field_a_reconcile_reads() {
        let full: Pod = serde_json::from_value(live()).unwrap();
        let pod = cached(live()).to_pod();
        let mut meta = full.metadata.clone();
        meta.managed_fields = None;
        assert_eq!(pod.metadata, meta, "labels, annotations, owners, deletion mark");
        let (spec, full_spec) = (pod.spec.as_ref().unwrap(), full.spec.as_ref().unwrap());
        assert_eq!(spec.node_name, full_spec.node_name);
        let names = |s: &PodSpec| s.containers.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(spec), names(full_spec), "several containers: what Ready means differs");
        assert!(spec.containers.iter().all(|c| c.image.is_none() && c.env.is_none()));
        assert!(spec.volumes.is_none() && spec.tolerations.is_none());
        let (status, full_status) = (pod.status.as_ref().unwrap(), full.status.as_ref().unwrap());
        assert_eq!(
            (&status.phase, &status.reason, &status.message),
            (&full_status.phase, &full_status.reason, &full_status.message)
        );
        let types: Vec<&str> = status.conditions.iter().flatten().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["PodScheduled", "Ready"]);
        let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready");
        assert_eq!(ready, full_status.conditions.iter().flatten().find(|c| c.type_ == "Ready"), "whole, with its time");
        let statuses = status.container_statuses.as_ref().unwrap();
        let full_statuses = full_status.container_statuses.as_ref().unwrap();
        assert_eq!(statuses.len(), full_statuses.len());
        for (kept, whole) in statuses.iter().zip(full_statuses) {
            assert_eq!(
                (&kept.name, kept.ready, kept.restart_count, kept.started),
                (&whole.name, whole.ready, whole.restart_count, whole.started)
            );
            assert_eq!((&kept.state, &kept.last_state), (&whole.state, &whole.last_state));
            assert!(kept.image.is_empty() && kept.container_id.is_none() && kept.volume_mounts.is_none());
        }
        assert!(status.pod_ip.is_none() && status.host_ip.is_none() && status.start_time.is_none());
    }

    #[test]
    fn the_address_is_given_once_the_pod_is_ready() {
        assert_eq!(cached(live()).ready_ip(), None, "not Ready");
        let mut ready = live();
        ready["status"]["conditions"][2]["status"] = json!("True");
        assert_eq!(cached(ready.clone()).ready_ip(), Some("10.0.0.9".parse().unwrap()));
        ready["status"]["podIP"] = json!("not an address");
        assert_eq!(cached(ready).ready_ip(), None);
    }

    #[test]
    fn a_pod_just_created_has_no_status_and_still_decodes() {
        let pod = cached(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "browser"}]}})).to_pod();
        let status = pod.status.unwrap();
        assert_eq!((status.phase, status.conditions, status.container_statuses), (None, None, None));
        assert_eq!(pod.spec.unwrap().containers.len(), 1);
    }

    #[test]
    fn the_cached_pod_is_much_smaller_than_a_pod() {
        assert!(
            std::mem::size_of::<CachedPod>() * 3 < std::mem::size_of::<Pod>(),
            "{} vs {}",
            std::mem::size_of::<CachedPod>(),
            std::mem::size_of::<Pod>()
        );
    }
}
