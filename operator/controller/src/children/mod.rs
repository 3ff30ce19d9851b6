//! Pure builders: a BrowserSession (plus operator settings) in, the child
//! objects out. Nothing here touches the network, so every field is
//! unit-tested without a cluster.

pub mod cluster_defaults;
mod egress_defaults;
pub mod egress_hosts;
mod exporter;
mod labels;
mod launch;
pub mod live;
mod network;
mod pod;
mod resources;
mod runtime;
mod storage;
pub mod suspend;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, ResourceRequirements, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use playpen_api::naming::{generated_session_name, socket_namespace, ChildNames};
use playpen_api::v1alpha1::RecordingExport;
use playpen_api::BrowserSession;

use crate::error::{Error, Result};

pub use egress_hosts::egress_hosts_config;
pub use exporter::EXPORTER_CONTAINER;
pub use labels::{child_labels, managed_labels, managed_selector, pod_selector, COMPONENT_BROWSER, MANAGED_BY_LABEL};
pub use launch::launch_config_json;
pub use network::{
    baseline_policy, egress_summary, operator_ingress, operator_reads, outlive_pod, Cidr, CidrError, DnsPeer,
    EgressDefaults, PodPeer, BASELINE_POLICY, COMPONENT_BASELINE, SPECIAL_RANGES,
};
pub use pod::{own_runtime_class, runtime_class, SeccompChoice, AGENT_CONTAINER, BROWSER_CONTAINER};
pub use resources::{browser_resources, parse_defaults as parse_browser_resources, DEFAULT_BROWSER_RESOURCES};
pub use runtime::{runtime_config, warm_runtime_config_map};

/// Who a session is: everything derived from its metadata, computed once.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// metadata.name.
    pub name: String,
    /// metadata.namespace.
    pub namespace: String,
    /// Owner reference placed on every child.
    pub owner: OwnerReference,
    /// playwright-cli session name (spec or generated).
    pub session_name: String,
    /// 8-hex socket namespace derived from the UID.
    pub socket_namespace: String,
    /// Deterministic child names.
    pub names: ChildNames,
}

impl Identity {
    /// Derives the identity of `bs`; fails only on objects the API server
    /// would never hand out (no name, namespace or UID).
    pub fn of(bs: &BrowserSession) -> Result<Self> {
        let meta = bs.meta();
        let name = meta.name.clone().ok_or(Error::MissingMetadata("name"))?;
        let namespace = meta.namespace.clone().ok_or(Error::MissingMetadata("namespace"))?;
        let uid = meta.uid.clone().ok_or(Error::MissingMetadata("uid"))?;
        let owner = bs.controller_owner_ref(&()).ok_or(Error::MissingMetadata("uid"))?;
        let session_name = bs.spec.browser.session_name.clone().unwrap_or_else(|| generated_session_name(&name, &uid));
        Ok(Self {
            names: ChildNames::for_session(&name),
            socket_namespace: socket_namespace(&uid),
            session_name,
            owner,
            namespace,
            name,
        })
    }
}

/// Operator-wide settings that shape every session.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Seccomp profile for sessions whose sandbox is Enforced.
    pub enforced_seccomp: SeccompChoice,
    /// UID and GID the browser container runs as (the image's user).
    pub run_as_user: i64,
    /// Cluster-wide egress settings.
    pub egress: EgressDefaults,
    /// The browser container's resources where a session (or pool template) sets none.
    pub browser_resources: ResourceRequirements,
    /// The RuntimeClass of browser Pods whose session (or pool template)
    /// names none (`None`: the cluster's default runtime).
    pub runtime_class: Option<String>,
    /// The seccomp choice of Enforced sessions under a RuntimeClass, by its
    /// name, in place of `enforced_seccomp` (gVisor ignores the OCI profile:
    /// docs/security.md).
    pub seccomp_by_runtime_class: BTreeMap<String, SeccompChoice>,
    /// Where the recordings of a session that names no destination go
    /// ([`cluster_defaults`]; `None`: they stay on its volume).
    pub recording_export: Option<RecordingExport>,
    /// RuntimeClasses whose Pods the node agent can checkpoint ([`live`]).
    pub live_runtime_classes: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enforced_seccomp: SeccompChoice::Localhost(pod::DEFAULT_SECCOMP_PROFILE.to_owned()),
            run_as_user: 1000,
            egress: EgressDefaults::default(),
            browser_resources: resources::parse_defaults(DEFAULT_BROWSER_RESOURCES).unwrap_or_default(),
            runtime_class: None,
            seccomp_by_runtime_class: BTreeMap::new(),
            recording_export: None,
            live_runtime_classes: Vec::new(),
        }
    }
}

/// Every child object of one session, ready for server-side apply.
#[derive(Debug, Clone)]
pub struct Children {
    /// Generated launch config; `None` when the user names their own Secret.
    pub launch_secret: Option<Secret>,
    /// The runtime ConfigMap.
    pub runtime_config: ConfigMap,
    /// Snapshot claim the operator creates; `None` for emptyDir or an existing claim.
    pub snapshot_claim: Option<PersistentVolumeClaim>,
    /// The browser Pod.
    pub pod: Pod,
    /// The viewer Service; `None` when the viewer is disabled.
    pub viewer_service: Option<Service>,
    /// Deny-all-ingress and egress policy for the browser Pod.
    pub network_policy: NetworkPolicy,
}

/// Builds all children of `bs`.
pub fn build(bs: &BrowserSession, id: &Identity, settings: &Settings) -> Result<Children> {
    Ok(Children {
        launch_secret: launch::launch_secret(bs, id)?,
        runtime_config: runtime::runtime_config_map(bs, id, &settings.egress)?,
        snapshot_claim: storage::snapshot_claim(bs, id),
        pod: pod::pod(bs, id, settings),
        viewer_service: network::viewer_service(bs, id),
        network_policy: network::network_policy(bs, id, &settings.egress).map_err(|e| {
            // Admission checks allowCIDRs already; this catches a CRD older than the operator.
            Error::InvalidSpec(format!("spec.network.egress.allowCIDRs: {e}"))
        })?,
    })
}
