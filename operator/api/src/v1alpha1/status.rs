//! `BrowserSession.status`: what happened and how to connect.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::browser_spec::BrowserSpec;

/// Observed state of a BrowserSession.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSessionStatus {
    /// Coarse lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions: Ready, ConfigResolved, PodScheduled, BrowserReady,
    /// ViewerReady, SandboxEnforced, EgressPolicy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The playwright-cli session name (`PLAYWRIGHT_CLI_SESSION`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// The 8-hex socket namespace: sockets live under /var/lib/playpen/pw/<ns>/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_namespace: Option<String>,
    /// The browser Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// How a human reaches the viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<ViewerStatus>,
    /// How a client reaches the CDP endpoint, when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdp: Option<CdpStatus>,
    /// Where the session's recordings are, when it records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<RecordingStatus>,
    /// An example command that drives the session from outside the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_hint: Option<String>,
    /// How many times the browser container restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<i32>,
    /// Browser Pods the operator replaced after they failed or were evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_replacements: Option<PodReplacements>,
    /// Where the browser came from, for a session with `spec.pool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolClaimStatus>,
    /// The session's last suspend and resume (`spec.suspended`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<SuspendStatus>,
}

/// A session's last suspend and resume.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspendStatus {
    /// How the pages were kept: `Live` (the gVisor sandbox checkpointed,
    /// memory and all, restored on resume), `State` (storage state and
    /// tabs, reopened on resume) or `Empty` (the browser was not Ready:
    /// nothing was kept).
    pub path: String,
    /// Why that path: a sentence.
    pub reason: String,
    /// The Secret holding the saved state while it waits for a resume
    /// (deleted once the resumed browser is Ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_secret: Option<String>,
    /// The node whose agent holds the checkpoint (`Live`): the resumed
    /// Pod runs there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The UID of the Pod that was checkpointed (`Live`): the node agent's
    /// name for the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// When the Pod was freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_at: Option<Time>,
    /// Size of the saved state document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    /// Tabs saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tabs: Option<i32>,
    /// From asking the runtime for the state to the Secret holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_millis: Option<i64>,
    /// When `spec.suspended` was last seen false with a state to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_requested_at: Option<MicroTime>,
    /// From that moment to the resumed browser Ready with its tabs back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resume_millis: Option<i64>,
    /// Seconds the session has spent parked, every suspend together (the
    /// one under way counted once it is resumed): `maxLifetimeSeconds`
    /// counts only the time it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_seconds: Option<i64>,
    /// When the saved state was deleted because the session stayed parked
    /// longer than `spec.suspend.maxSuspendedSeconds` (phase `Completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<Time>,
}

/// How a session with `spec.pool` got its browser.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolClaimStatus {
    /// The BrowserPool.
    pub name: String,
    /// Whether the Pod is a warm one claimed from the pool (`false`: a cold start).
    pub claimed: bool,
    /// When the operator claimed the Pod (or decided on a cold start).
    pub time: Time,
    /// The hash of the pool's template the browser was placed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// The pool's template as it was when the browser was placed: the
    /// session runs it for life (its children are built from it), so a
    /// later edit or deletion of the pool changes only unclaimed Pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<BrowserSpec>,
}

/// Browser Pods the operator replaced, and whether it gave up.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodReplacements {
    /// How many.
    pub count: i32,
    /// When the last one was replaced.
    pub last_time: Time,
    /// Why the last one was (the Pod's reason, e.g. `Evicted`).
    pub last_reason: String,
    /// The restart budget is spent: no Pod is created again for this session.
    #[serde(default)]
    pub gave_up: bool,
}

/// Coarse lifecycle phase.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    /// Children are being created or the Pod is not scheduled yet.
    Pending,
    /// The Pod runs; the browser or viewer is not ready yet.
    Starting,
    /// Browser (and viewer, when enabled) ready.
    Ready,
    /// Was ready, is not now (restarting, failing probes).
    Degraded,
    /// Cannot start: a referenced object is missing, or the browser fails.
    Failed,
    /// The session finished (idle timeout, maximum lifetime, or the Pod ended).
    Completed,
    /// `spec.suspended` is true: its state is being saved.
    Suspending,
    /// Its state is saved and its Pod is gone.
    Suspended,
    /// `spec.suspended` went back to false: a browser starts with the saved state.
    Resuming,
}

impl Phase {
    /// Every phase, in lifecycle order.
    pub const ALL: [Self; 9] = [
        Self::Pending,
        Self::Starting,
        Self::Ready,
        Self::Degraded,
        Self::Failed,
        Self::Completed,
        Self::Suspending,
        Self::Suspended,
        Self::Resuming,
    ];

    /// The serialized spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Starting => "Starting",
            Self::Ready => "Ready",
            Self::Degraded => "Degraded",
            Self::Failed => "Failed",
            Self::Completed => "Completed",
            Self::Suspending => "Suspending",
            Self::Suspended => "Suspended",
            Self::Resuming => "Resuming",
        }
    }
}

/// Where and how to reach the viewer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewerStatus {
    /// The viewer Service name (`<name>-view`).
    pub service: String,
    /// The pinned port.
    pub port: i32,
    /// The exact command a viewer runs to tunnel in, then open http://127.0.0.1:<port>/.
    pub command: String,
}

/// Where and how to reach the CDP endpoint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CdpStatus {
    /// The Service that carries the port (`<name>-view`).
    pub service: String,
    /// The pinned port.
    pub port: i32,
    /// The exact command that tunnels in; clients then connect to http://127.0.0.1:<port>.
    pub command: String,
}

/// Where a recorded session's files are and how to copy them out.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingStatus {
    /// The directory on the snapshot volume: `video-<ms>.webm` per browser
    /// start, `traces/trace-<ms>.trace`, and `interrupted.json` listing
    /// recordings a crash cut short.
    pub directory: String,
    /// A video is recorded.
    pub video: bool,
    /// A trace is recorded.
    pub trace: bool,
    /// The command that copies them out.
    pub command: String,
    /// Where the recordings are exported and how far the uploads got, as
    /// the exporter last reported it (`spec.recording.export`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<RecordingExportStatus>,
}

/// The export of a session's recordings to object storage, as its exporter
/// container last reported it (read by the operator at most every
/// few seconds; the counts lag the store by that much).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingExportStatus {
    /// `s3://<bucket>/<prefix>/`: where `manifest.json` and the segments are.
    pub destination: String,
    /// Objects stored since the exporter started (segments, manifests, markers).
    pub objects: u64,
    /// Bytes stored since the exporter started.
    pub bytes: u64,
    /// Segments the session's manifest lists.
    pub segments: u64,
    /// `interrupted` markers: recordings a crash or an eviction cut short.
    pub interruptions: u64,
    /// When the last object was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_upload: Option<Time>,
    /// The store's answer to the last failed upload (credentials masked);
    /// cleared by the next success. Recording goes on locally meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Condition types the operator maintains.
pub mod condition {
    /// Everything needed for the session to be used is true.
    pub const READY: &str = "Ready";
    /// Referenced Secrets and claims exist and the spec is usable.
    pub const CONFIG_RESOLVED: &str = "ConfigResolved";
    /// The Pod was scheduled to a node.
    pub const POD_SCHEDULED: &str = "PodScheduled";
    /// The runtime reports the browser daemon up.
    pub const BROWSER_READY: &str = "BrowserReady";
    /// The viewer relay answers on the pinned port.
    pub const VIEWER_READY: &str = "ViewerReady";
    /// Chromium's sandbox is on.
    pub const SANDBOX_ENFORCED: &str = "SandboxEnforced";
    /// The egress policy in force: reason = mode, message = what the browser may reach.
    pub const EGRESS_POLICY: &str = "EgressPolicy";
    /// Every object the operator makes for the session is as it wants it:
    /// False (reason `ChildRefused`) names the child the API server refused
    /// and its message (a ResourceQuota, an admission policy), retried with
    /// backoff until it is accepted.
    pub const CHILDREN_APPLIED: &str = "ChildrenApplied";
    /// For a session with `spec.pool`: True when its browser is a warm Pod
    /// claimed from the pool; False (with the reason) when it started cold.
    pub const POOL_CLAIMED: &str = "PoolClaimed";
    /// For a session with `spec.suspended` (or resuming from it): True once
    /// its state is saved and its Pod freed; False while it is being saved
    /// (`Suspending`), when saving failed (`SuspendFailed`, retried) or
    /// while a resumed browser reopens the saved tabs (`Resuming`).
    pub const SUSPENDED: &str = "Suspended";
    /// For a session with `spec.recording.export`: True while its exporter
    /// uploads; False with the store's answer when uploads fail (recording
    /// continues on the volume and the uploads are retried), or before the
    /// exporter first reported.
    pub const RECORDINGS_EXPORTED: &str = "RecordingsExported";
}
