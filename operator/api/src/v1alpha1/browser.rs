//! The browser's shape: what defines a browser Pod (image, sandbox, launch
//! config, viewer, CDP, snapshot volume, Pod settings), shared by a
//! BrowserSession's spec, a BrowserPool's template and the template a
//! placed session records in its status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default pinned viewer port (the port `playwright-cli show` users know).
pub const DEFAULT_VIEWER_PORT: i32 = 9323;
/// Default pinned CDP port (Chromium's customary remote-debugging port).
pub const DEFAULT_CDP_PORT: i32 = 9222;
/// Default size of the in-memory `/dev/shm`.
pub const DEFAULT_SHM_SIZE: &str = "1Gi";
/// Default size limit of the snapshot emptyDir.
pub const DEFAULT_SNAPSHOT_SIZE_LIMIT: &str = "1Gi";
/// Default snapshot retention by age (seconds).
pub const DEFAULT_SNAPSHOT_MAX_AGE_SECONDS: i64 = 3600;
/// Default snapshot retention by count.
pub const DEFAULT_SNAPSHOT_MAX_COUNT: i32 = 500;

/// Image pull policy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PullPolicy {
    /// Always pull.
    Always,
    /// Pull when the image is not on the node.
    IfNotPresent,
    /// Never pull (images imported on the node).
    Never,
}

impl PullPolicy {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::IfNotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }
}

/// Chromium sandbox mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SandboxMode {
    /// Chromium's sandbox is on (`chromiumSandbox: true`), the Pod runs
    /// non-root with a seccomp profile that allows user namespaces.
    #[default]
    Enforced,
    /// Chromium's sandbox is off. Explicit, and recorded as an Event and a condition.
    Disabled,
}

/// The playwright-cli launch config.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.secretRef) || (!has(self.headless) && !has(self.executablePath) && !has(self.args))").message("spec.launchConfig.secretRef is exclusive with headless, executablePath and args: with your own config Secret the operator adds nothing, so set those in the Secret instead"))]
pub struct LaunchConfig {
    /// Use this Secret's key as the launch config, unmodified. It must hold
    /// the nested form `{"browser":{"browserName":"chromium",...}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyRef>,
    /// Run headless (default true). `false` runs headed on the runtime's display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<bool>,
    /// Chromium executable, for a distribution or archive Chromium
    /// (for example /usr/bin/chromium). Omit for Playwright's own build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_path: Option<String>,
    /// Extra Chromium command-line arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

/// A key in a Secret in the BrowserSession's namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Secret name.
    #[x_kube(validation = Rule::new("size(self) > 0").message("secretRef.name must name a Secret in the BrowserSession's namespace"))]
    pub name: String,
    /// Key inside the Secret (default `config.json` for launch configs, `state.json` for auth state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The human takeover viewer.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Viewer {
    /// Run the viewer relay and create the `<name>-view` Service (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The pinned port, on 127.0.0.1 in the Pod and on the Service (default 9323).
    #[serde(default = "default_viewer_port")]
    #[x_kube(validation = Rule::new("self >= 1024 && self <= 65535").message("spec.viewer.port must be between 1024 and 65535 (unprivileged, since the runtime runs as non-root)"))]
    pub port: i32,
}

impl Default for Viewer {
    fn default() -> Self {
        Self { enabled: true, port: DEFAULT_VIEWER_PORT }
    }
}

/// The Chrome DevTools Protocol endpoint: the session's own browser, on a
/// pinned port bound to 127.0.0.1 in the Pod (reached only through
/// `kubectl port-forward`, which RBAC authorises as `pods/portforward`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cdp {
    /// Expose the browser over CDP (default false): whoever can port-forward
    /// to the Pod then drives the browser, its cookies and its profile.
    #[serde(default)]
    pub enabled: bool,
    /// The pinned port, on 127.0.0.1 in the Pod and on the `<name>-view` Service (default 9222).
    #[serde(default = "default_cdp_port")]
    #[x_kube(validation = Rule::new("self >= 1024 && self <= 65535").message("spec.cdp.port must be between 1024 and 65535 (unprivileged, since the runtime runs as non-root)"))]
    pub port: i32,
}

impl Default for Cdp {
    fn default() -> Self {
        Self { enabled: false, port: DEFAULT_CDP_PORT }
    }
}

fn default_cdp_port() -> i32 {
    DEFAULT_CDP_PORT
}

fn default_true() -> bool {
    true
}

fn default_viewer_port() -> i32 {
    DEFAULT_VIEWER_PORT
}

/// Snapshot storage and retention.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Snapshots {
    /// The volume mounted at /var/lib/playpen/snapshots (the CLI's output directory).
    #[serde(default)]
    pub volume: SnapshotVolume,
    /// Retention, enforced by the session runtime. Never deletes the file
    /// the session printed last.
    #[serde(default)]
    pub retention: Retention,
}

/// Snapshot volume: exactly one of `emptyDir` or `persistentVolumeClaim`
/// (an emptyDir with a 1Gi limit when both are omitted).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.emptyDir) && has(self.persistentVolumeClaim))").message("spec.snapshots.volume: set either emptyDir or persistentVolumeClaim, not both"))]
pub struct SnapshotVolume {
    /// A per-Pod emptyDir with a size limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<SnapshotEmptyDir>,
    /// A PersistentVolumeClaim: an existing claim, or one the operator creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<SnapshotClaim>,
}

/// An emptyDir for snapshots.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotEmptyDir {
    /// Size limit (default 1Gi); the kubelet evicts the Pod above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<Quantity>,
}

/// A PersistentVolumeClaim for snapshots.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.claimName) != has(self.size)").message("spec.snapshots.volume.persistentVolumeClaim: set claimName to use an existing claim, or size (and optionally storageClassName) to have the operator create one"))]
pub struct SnapshotClaim {
    /// Use this existing claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    /// Create `<name>-snapshots` with this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Storage class of the created claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// Snapshot retention by age, count and total size.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    /// Delete snapshots and recordings older than this (seconds, default 3600);
    /// never the last-printed snapshot nor the recording in progress.
    #[serde(default = "default_max_age")]
    #[x_kube(validation = Rule::new("self > 0").message("spec.snapshots.retention.maxAgeSeconds must be positive"))]
    pub max_age_seconds: i64,
    /// Keep at most this many snapshots, and separately this many recordings
    /// (default 500 each).
    #[serde(default = "default_max_count")]
    #[x_kube(validation = Rule::new("self > 0").message("spec.snapshots.retention.maxCount must be positive"))]
    pub max_count: i32,
    /// Keep the volume's snapshots and recordings under this total size (default: 80% of
    /// the volume; at most 90%, so a file still being written cannot fill it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_size: Option<Quantity>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_age_seconds: DEFAULT_SNAPSHOT_MAX_AGE_SECONDS,
            max_count: DEFAULT_SNAPSHOT_MAX_COUNT,
            max_total_size: None,
        }
    }
}

fn default_max_age() -> i64 {
    DEFAULT_SNAPSHOT_MAX_AGE_SECONDS
}

fn default_max_count() -> i32 {
    DEFAULT_SNAPSHOT_MAX_COUNT
}

/// Pod-level settings.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSettings {
    /// Resources of the browser container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Size of the in-memory `/dev/shm` (default 1Gi; Chromium needs more
    /// than the runtime's 64Mi default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_size: Option<Quantity>,
    /// Priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Run under this ServiceAccount and mount its token. By default no
    /// token is mounted: the browser Pod needs no API access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// RuntimeClass of the Pod, for a stronger sandbox where the cluster has
    /// one (gVisor, Kata). It must exist, or the API server refuses the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')").message("spec.pod.runtimeClassName must name a RuntimeClass: lowercase letters, digits, '-' and '.'"))]
    pub runtime_class_name: Option<String>,
    /// Entries the kubelet adds to the Pod's `/etc/hosts`: names Chromium
    /// and the egress proxy resolve without DNS (an internal service
    /// without a DNS record, a test fixture). Resolution only: the egress
    /// rules still decide whether a name and its address may be reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_aliases: Vec<HostAlias>,
}

/// One address and the names that resolve to it in the Pod.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HostAlias {
    /// An IPv4 or IPv6 address in canonical form.
    #[x_kube(validation = Rule::new("isIP(self) && ip.isCanonical(self)").message("spec.pod.hostAliases[].ip must be an IP address in canonical form, such as 10.96.3.4 or 2001:db8::1"))]
    pub ip: String,
    /// Host names for it (lowercase DNS names).
    #[schemars(length(min = 1))]
    pub hostnames: Vec<String>,
}
