//! `BrowserPool`: browsers started ahead of time, each handed out once to a
//! BrowserSession that names the pool (`spec.pool`), so a session is Ready
//! as soon as the operator relabels a warm Pod instead of after a cold start.
//!
//! A pool Pod is never reused: its session's end deletes it. A template
//! change replaces the pool's unclaimed Pods, never the claimed ones.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::browser_spec::BrowserSpec;
use super::spec::{BrowserSessionSpec, EgressMode};

/// Most unclaimed Pods one pool keeps (a tenant's pool must not fill the cluster).
pub const MAX_POOL_SIZE: i32 = 100;

/// Warm browsers, each claimed once by a BrowserSession whose `spec.pool` names the pool.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "playpen.dev",
    version = "v1alpha1",
    kind = "BrowserPool",
    plural = "browserpools",
    singular = "browserpool",
    shortname = "bp",
    category = "playpen",
    namespaced,
    annotation("helm.sh/resource-policy", "keep"),
    status = "BrowserPoolStatus",
    doc = "Browsers started ahead of time; a BrowserSession whose spec.pool names the pool takes one, Ready without a cold start.",
    scale(
        spec_replicas_path = ".spec.minReady",
        status_replicas_path = ".status.ready",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Min-Ready", type_ = "integer", json_path = ".spec.minReady"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.ready"),
    printcolumn(name = "Warming", type_ = "integer", json_path = ".status.warming"),
    printcolumn(name = "Claimed", type_ = "integer", json_path = ".status.claimed"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 40")
        .message("metadata.name must be a DNS-1035 label of at most 40 characters: each pool Pod is named <pool>-<template hash>.<suffix>-browser"),
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.maxSize) || self.maxSize >= self.minReady").message("spec.maxSize must be at least spec.minReady: it bounds the unclaimed Pods, ready and warming"),
)]
pub struct BrowserPoolSpec {
    /// The browser every Pod of the pool runs: the same fields as a
    /// BrowserSession's browser (`image`, `sandbox`, `viewer`, …), which a
    /// session naming the pool leaves unset. What a session brings of its
    /// own (auth state, profile, recording, an agent sidecar) cannot be in a
    /// browser started before the session: such a session starts cold, and
    /// says why in its `PoolClaimed` condition.
    // What only a template must be (a pooled session's image is empty, and a
    // session may keep its snapshots on a claim): rules on this field, not on
    // BrowserSpec. The field path puts the image's refusal at spec.template.image.
    #[x_kube(
        validation = Rule::new("size(self.image) > 0").message("spec.template.image must name a browser image built by playpen-imagebuild").field_path(".image"),
        validation = Rule::new("!has(self.snapshots) || !has(self.snapshots.volume) || !has(self.snapshots.volume.persistentVolumeClaim)").message("spec.template.snapshots.volume.persistentVolumeClaim is not for pools: a claim holds one session's files; pool Pods use an emptyDir"),
    )]
    pub template: BrowserSpec,
    /// Ready, unclaimed Pods the pool keeps (default 1). The `scale`
    /// subresource's replicas, so an HPA or KEDA can size the pool.
    #[serde(default = "default_min_ready")]
    #[x_kube(validation = Rule::new("self >= 0 && self <= 100").message("spec.minReady must be between 0 and 100"))]
    pub min_ready: i32,
    /// Most unclaimed Pods at once, warming and ready, a template change's
    /// replacements included (default: minReady + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self >= 1 && self <= 100").message("spec.maxSize must be between 1 and 100"))]
    pub max_size: Option<i32>,
    /// What a session does when the pool has no ready browser of its current
    /// template: start cold from the template (the default) or wait for one.
    #[serde(default)]
    pub when_empty: WhenEmpty,
}

/// What a session claiming from an empty pool does. A session that needs a
/// cold start for its own state (auth state, profile, recording, an agent)
/// starts cold either way: no warm browser could ever serve it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum WhenEmpty {
    /// Start cold from the pool's template (`PoolClaimed=False`, reason `PoolEmpty`).
    #[default]
    ColdStart,
    /// Stay Pending (`PoolClaimed=False`, reason `PoolWaiting`) until a Pod of
    /// the pool is ready, then claim it.
    Wait,
}

fn default_min_ready() -> i32 {
    1
}

impl BrowserPoolSpec {
    /// The most unclaimed Pods the pool may hold.
    pub fn max_unclaimed(&self) -> i32 {
        self.max_size.unwrap_or(self.min_ready.saturating_add(1)).clamp(self.min_ready.max(1), MAX_POOL_SIZE)
    }
}

impl BrowserSpec {
    /// The BrowserSession spec a pool Pod is built from: this browser,
    /// nothing per-session, and no egress at all while it waits (a warm
    /// browser loads nothing; its session's own NetworkPolicy takes over
    /// when it is claimed).
    pub fn warm_session_spec(&self) -> BrowserSessionSpec {
        let mut spec = BrowserSessionSpec { browser: self.clone(), ..BrowserSessionSpec::default() };
        spec.network.egress.mode = EgressMode::DenyAll;
        spec
    }
}

/// Observed state of a BrowserPool.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserPoolStatus {
    /// Unclaimed Pods of the current template whose browser is ready.
    #[serde(default)]
    pub ready: i32,
    /// Unclaimed Pods still starting (or of an older template, waiting to be replaced).
    #[serde(default)]
    pub warming: i32,
    /// Pods sessions claimed from this pool that still run.
    #[serde(default)]
    pub claimed: i32,
    /// The label selector of the pool's unclaimed Pods (for the `scale` subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The hash of the template the pool's new Pods run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions: Ready (minReady Pods of the current template are ready).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
