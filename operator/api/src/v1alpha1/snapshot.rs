//! `BrowserSnapshot`: a copy of a running session's pages (its storage
//! state, open tabs, scroll positions and form values) taken while the
//! session keeps running, from which new sessions start
//! (`BrowserSession.spec.from.snapshot`): fork = one snapshot + N sessions.
//!
//! A snapshot holds the session's cookies: its bytes live in a Secret
//! `<snapshot>-state` owned by the snapshot (deleting the snapshot deletes
//! them), never in the snapshot's own object (docs/suspend-resume.md).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A copy of a running BrowserSession's pages, from which new sessions start.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "playpen.dev",
    version = "v1alpha1",
    kind = "BrowserSnapshot",
    plural = "browsersnapshots",
    singular = "browsersnapshot",
    shortname = "bsnap",
    category = "playpen",
    namespaced,
    // Helm installs the CRD as a template; keep it (and every snapshot) on uninstall.
    annotation("helm.sh/resource-policy", "keep"),
    status = "BrowserSnapshotStatus",
    doc = "A copy of a running BrowserSession's pages (storage state, tabs, form values), taken while it runs; sessions start from it with spec.from.snapshot.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Source", type_ = "string", json_path = ".spec.source.session"),
    printcolumn(name = "Tabs", type_ = "integer", json_path = ".status.tabs"),
    printcolumn(name = "Bytes", type_ = "integer", json_path = ".status.bytes", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 247")
        .message("metadata.name must be lowercase letters, digits and '-' (no dots), at most 247 characters, because its bytes are kept in the Secret <name>-state"),
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.source == oldSelf.source").message("spec.source is immutable: a snapshot is of one session; create another BrowserSnapshot"),
)]
pub struct BrowserSnapshotSpec {
    /// What to copy.
    pub source: SnapshotSource,
}

/// The session a snapshot copies, in the snapshot's namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSource {
    /// The BrowserSession's name. It must be `Ready` when the snapshot is taken.
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.source.session must name a BrowserSession in the snapshot's namespace"))]
    pub session: String,
}

/// Where a snapshot stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SnapshotPhase {
    /// Waiting for its source session to be `Ready`.
    Pending,
    /// The source's runtime is being asked for its pages.
    Taking,
    /// Its bytes are stored: sessions may start from it.
    Ready,
    /// It could not be taken, and is not tried again (`status.message` says why).
    Failed,
}

/// What the operator found and kept.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSnapshotStatus {
    /// Where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<SnapshotPhase>,
    /// How the pages were copied: `State` (storage state and tabs; the
    /// JavaScript heap is not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why it stands where it does, in one word (`SourceNotFound`,
    /// `SourceNotReady`, `TakeFailed`, `Taken`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The same, as a sentence for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The UID of the session it was taken from.
    #[serde(default, rename = "sourceUID", skip_serializing_if = "Option::is_none")]
    pub source_uid: Option<String>,
    /// The Secret holding its bytes (owned by the snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_secret: Option<String>,
    /// When it was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<Time>,
    /// Size of the stored document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    /// Tabs it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tabs: Option<i32>,
    /// How long taking it took, from the request to the stored Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take_millis: Option<i64>,
    /// Failed tries so far (after 5 it is `Failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i32>,
}

/// Tries of a snapshot before it is `Failed`.
pub const MAX_TAKE_ATTEMPTS: i32 = 5;

/// Where a session starts from instead of a blank browser.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionFrom {
    /// A `Ready` BrowserSnapshot in the session's namespace: the session's
    /// browser starts with its storage state and reopens its tabs.
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.from.snapshot must name a BrowserSnapshot in the session's namespace"))]
    pub snapshot: String,
}
