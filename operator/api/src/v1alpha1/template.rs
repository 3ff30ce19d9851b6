//! A BrowserPool's template: the browser every Pod of the pool runs, and
//! the record a placed session keeps of it (`status.pool.template`).

use k8s_openapi::api::core::v1::LocalObjectReference;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use super::browser::{Cdp, LaunchConfig, PodSettings, PullPolicy, SandboxMode, Snapshots, Viewer};

/// The browser-defining part of a BrowserSession spec. What a session
/// brings of its own (auth state, profile, recording, an agent sidecar)
/// cannot be in a browser started before the session: such a session starts
/// cold, and says why in its `PoolClaimed` condition.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.snapshots) || !has(self.snapshots.volume) || !has(self.snapshots.volume.persistentVolumeClaim)").message("spec.template.snapshots.volume.persistentVolumeClaim is not for pools: a claim holds one session's files; pool Pods use an emptyDir"),
    validation = Rule::new("!self.cdp.enabled || !self.viewer.enabled || self.cdp.port != self.viewer.port").message("spec.template.cdp.port must differ from spec.template.viewer.port: both are pinned on the Pod's loopback"),
)]
pub struct SessionTemplate {
    /// Browser image built by playpen-imagebuild.
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.template.image must name a browser image built by playpen-imagebuild"))]
    pub image: String,
    /// Image pull policy of the browser container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,
    /// Secrets used to pull the image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// playwright-cli session name in every pool Pod (default: the pool's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(
        validation = Rule::new("self.matches('^[a-z0-9][a-z0-9_.-]*$')").message("spec.template.sessionName must start with a lowercase letter or digit and contain only lowercase letters, digits, '-', '_' and '.'"),
    )]
    pub session_name: Option<String>,
    /// Chromium sandbox mode.
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// The launch config.
    #[serde(default)]
    pub launch_config: LaunchConfig,
    /// The viewer.
    #[serde(default)]
    pub viewer: Viewer,
    /// The CDP endpoint.
    #[serde(default)]
    pub cdp: Cdp,
    /// Snapshot volume (an emptyDir) and its default retention.
    #[serde(default)]
    pub snapshots: Snapshots,
    /// Pod-level settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodSettings>,
}
