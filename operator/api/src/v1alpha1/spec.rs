//! `BrowserSession.spec`: what a platform team asks for: a browser (its
//! fields, shared with a BrowserPool's template, are [`BrowserSpec`]'s,
//! flattened to the top level of `spec`) or a pool to take one from, and
//! what the session brings of its own.
//!
//! Fields that define the running browser are immutable (a change would need
//! a new browser, and Playpen never restarts a browser behind an agent's
//! back). Only the runtime policy fields — snapshot retention, idle timeout
//! and maximum lifetime — may change; they reach the runtime through its
//! ConfigMap without a restart. The CEL rules sit next to the fields they guard.

use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::browser::*;
use super::browser_spec::BrowserSpec;
use super::snapshot::SessionFrom;
use super::status::BrowserSessionStatus;

/// A sandboxed Chromium browser session driven through `playwright-cli`.
///
/// The operator turns it into a Pod whose PID 1 is the Playpen session
/// runtime, a launch-config Secret, a runtime ConfigMap, a snapshot volume, a
/// loopback-only viewer reachable through `kubectl port-forward` to the
/// `<name>-view` Service, and a NetworkPolicy that denies in-cluster ingress.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "playpen.dev",
    version = "v1alpha1",
    kind = "BrowserSession",
    plural = "browsersessions",
    singular = "browsersession",
    shortname = "bs",
    category = "playpen",
    namespaced,
    // Helm installs the CRD as a template; keep it (and every session) on uninstall.
    annotation("helm.sh/resource-policy", "keep"),
    status = "BrowserSessionStatus",
    doc = "A sandboxed Chromium browser session driven through playwright-cli, with a pinned-port viewer reachable through kubectl port-forward.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Ready", type_ = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].status"),
    printcolumn(name = "Session", type_ = "string", json_path = ".status.sessionName", priority = 1),
    printcolumn(name = "Viewer-Port", type_ = "integer", json_path = ".status.viewer.port"),
    printcolumn(name = "CDP-Port", type_ = "integer", json_path = ".status.cdp.port", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 58")
        .message("metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter) of at most 58 characters, because the viewer Service is named <name>-view (at most 63)"),
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.pool) != (size(self.image) > 0)").message("set exactly one of spec.image (a browser image built by playpen-imagebuild) and spec.pool (a BrowserPool, whose template names the image)"),
    validation = Rule::new("has(self.pool) == has(oldSelf.pool) && (!has(self.pool) || self.pool == oldSelf.pool)").message("spec.pool is immutable: the session's browser came from it; delete and re-create the BrowserSession"),
    validation = Rule::new("self.image == oldSelf.image").message("spec.image is immutable: a running browser cannot change its image; delete and re-create the BrowserSession"),
    validation = Rule::new("has(self.sessionName) == has(oldSelf.sessionName) && (!has(self.sessionName) || self.sessionName == oldSelf.sessionName)").message("spec.sessionName is immutable: agents and sockets are bound to it; delete and re-create the BrowserSession"),
    validation = Rule::new("self.sandbox == oldSelf.sandbox").message("spec.sandbox is immutable: the browser was launched under it; delete and re-create the BrowserSession"),
    validation = Rule::new("self.launchConfig == oldSelf.launchConfig").message("spec.launchConfig is immutable: the browser was launched with it; delete and re-create the BrowserSession"),
    validation = Rule::new("self.viewer == oldSelf.viewer").message("spec.viewer is immutable: the runtime holds the pinned port for the browser's lifetime; delete and re-create the BrowserSession"),
    validation = Rule::new("self.cdp == oldSelf.cdp").message("spec.cdp is immutable: the browser was launched with its debugging port and the runtime holds the pinned port; delete and re-create the BrowserSession"),
    validation = Rule::new("self.snapshots.volume == oldSelf.snapshots.volume").message("spec.snapshots.volume is immutable: moving it would lose snapshots the agent holds paths to; delete and re-create the BrowserSession"),
    validation = Rule::new("has(self.authState) == has(oldSelf.authState) && (!has(self.authState) || self.authState == oldSelf.authState)").message("spec.authState is immutable: it is loaded once when the browser starts; delete and re-create the BrowserSession"),
    validation = Rule::new("has(self.profile) == has(oldSelf.profile) && (!has(self.profile) || self.profile == oldSelf.profile)").message("spec.profile is immutable: the browser holds the profile open; delete and re-create the BrowserSession"),
    validation = Rule::new("has(self.pod) == has(oldSelf.pod) && (!has(self.pod) || self.pod == oldSelf.pod)").message("spec.pod is immutable: a running Pod cannot change resources, scheduling or images; delete and re-create the BrowserSession"),
    validation = Rule::new("self.recording == oldSelf.recording").message("spec.recording is immutable: recordings start with the browser; delete and re-create the BrowserSession"),
    validation = Rule::new("has(self.from) == has(oldSelf.from) && (!has(self.from) || self.from == oldSelf.from)").message("spec.from is immutable: the browser started from it; delete and re-create the BrowserSession"),
    validation = Rule::new("!has(self.from) || !has(self.authState)").message("set at most one of spec.from (a BrowserSnapshot's pages) and spec.authState (a saved storage state): both load cookies at start"),
    validation = Rule::new("has(self.agent) == has(oldSelf.agent) && (!has(self.agent) || self.agent == oldSelf.agent)").message("spec.agent is immutable: the sidecar shares the running browser's Pod; delete and re-create the BrowserSession"),
)]
pub struct BrowserSessionSpec {
    /// The browser: `image`, `sandbox`, `launchConfig`, `viewer`, `cdp`,
    /// `snapshots`, `pod`, … at the top level of `spec`, as a BrowserPool's
    /// `spec.template` holds them. A pooled session leaves them unset: the
    /// pool's template defines its browser.
    #[serde(flatten)]
    pub browser: BrowserSpec,

    /// Saved auth state (`state-load`) taken from a Secret when the browser starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_state: Option<AuthState>,

    /// A persistent browser profile (user data directory) on a PersistentVolumeClaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,

    /// Close the session after this many seconds without an agent command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("spec.idleTimeoutSeconds must be positive; omit it to never close an idle session"))]
    pub idle_timeout_seconds: Option<i64>,

    /// Close the session this many seconds after the browser started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("spec.maxLifetimeSeconds must be positive; omit it for no limit"))]
    pub max_lifetime_seconds: Option<i64>,

    /// An optional agent sidecar that shares the session's sockets, config
    /// and environment, so plain `playwright-cli <verb>` in it drives this browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSidecar>,

    /// The browser Pod's network boundary. Ingress is always denied; egress
    /// defaults to the cluster's DNS and the public internet only.
    #[serde(default)]
    pub network: Network,

    /// Record the whole session: a video and/or a Playwright trace, on the
    /// snapshot volume under `recordings/`, finalised on a graceful close.
    #[serde(default)]
    pub recording: Recording,

    /// Take a warm browser from this BrowserPool instead of starting one
    /// (then `image` stays empty: the pool's template defines the browser).
    /// A session with auth state, a profile, recording or an agent sidecar
    /// starts cold from the pool's template, and its `PoolClaimed`
    /// condition says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolRef>,

    /// Park the session: `true` saves its pages (storage state, open tabs,
    /// scroll positions, form values) into a Secret and frees its Pod;
    /// `false` again starts a browser with them back (docs/suspend-resume.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended: bool,

    /// How a parked session is kept.
    #[serde(default, skip_serializing_if = "SuspendSpec::is_default")]
    pub suspend: SuspendSpec,

    /// Start from a BrowserSnapshot's pages (its storage state and tabs)
    /// instead of a blank browser: `kubectl playpen fork` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SessionFrom>,
}

/// How long a parked session is kept (`spec.suspend`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SuspendSpec {
    /// After this many seconds parked the saved state is deleted and the
    /// session is `Completed` (reason `SuspendExpired`); default 604800 (7
    /// days). Mutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("spec.suspend.maxSuspendedSeconds must be positive; omit it for the default of 7 days"))]
    pub max_suspended_seconds: Option<i64>,
}

/// How long a parked session is kept when `spec.suspend.maxSuspendedSeconds` is unset: 7 days.
pub const DEFAULT_MAX_SUSPENDED_SECONDS: i64 = 7 * 24 * 3600;

impl SuspendSpec {
    /// Whether nothing is set (then the field is left out).
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// Seconds a parked session is kept.
    pub fn max_suspended_seconds(&self) -> i64 {
        self.max_suspended_seconds.unwrap_or(DEFAULT_MAX_SUSPENDED_SECONDS)
    }
}

/// Where a session's browser is defined: its own spec, or a BrowserPool's
/// template (the CEL rules admit exactly one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BrowserSource<'a> {
    /// The session's own browser fields (`spec.image` names the image).
    Own(&'a BrowserSpec),
    /// The pool whose template defines the browser (`spec.pool`).
    Pool(&'a PoolRef),
}

impl BrowserSessionSpec {
    /// Where this session's browser is defined.
    pub fn source(&self) -> BrowserSource<'_> {
        match &self.pool {
            Some(pool) => BrowserSource::Pool(pool),
            None => BrowserSource::Own(&self.browser),
        }
    }
}

/// What the session records, with the CLI's own `video-start` and `tracing-start`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    /// A WebM video of the session's pages (the image needs ffmpeg).
    #[serde(default)]
    pub video: bool,
    /// A Playwright trace (actions, DOM snapshots, screenshots, network),
    /// written as it happens, so a crash leaves what came before it.
    #[serde(default)]
    pub trace: bool,
    /// Seconds per video segment: the video is finished and a new one
    /// started this often, so finished segments exist (and are exported)
    /// while the session runs. Default: 60 with `export`, one video per
    /// browser start without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self >= 10 && self <= 3600").message("spec.recording.segmentSeconds must be between 10 and 3600; omit it for the default (60 with export)"))]
    pub segment_seconds: Option<i32>,
    /// Where the recordings go while the session runs: each finished
    /// segment is uploaded at once, so a crash or an eviction loses at most
    /// the one in progress (docs/recordings-export.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<RecordingExport>,
}

/// The region of an export that names none.
pub const DEFAULT_EXPORT_REGION: &str = "us-east-1";
/// The key prefix template of an export that names none.
pub const DEFAULT_EXPORT_PREFIX: &str = "{namespace}/{name}/{uid}";
/// Video segment length with an export and no `segmentSeconds`.
pub const DEFAULT_EXPORT_SEGMENT_SECONDS: i32 = 60;
/// The longest export endpoint URL.
pub const MAX_EXPORT_ENDPOINT_LEN: u32 = 512;
/// The longest key prefix template.
pub const MAX_EXPORT_PREFIX_LEN: u32 = 256;

/// A recordings destination.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecordingExport {
    /// An S3-compatible object store.
    pub s3: S3Export,
}

/// An S3-compatible bucket and the Secret holding its credentials.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct S3Export {
    /// `https://host[:port]` (or `http://` for a store on a network the
    /// cluster trusts): no path, no credentials. The session's egress must
    /// reach it (`network.egress`: an `allowCIDRs` entry or `allowPeers` for
    /// an in-cluster store); the browser can reach it too, never its keys.
    #[schemars(length(max = MAX_EXPORT_ENDPOINT_LEN))]
    #[x_kube(validation = Rule::new("self.matches('^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$')").message("spec.recording.export.s3.endpoint must be a URL like https://s3.example.com or http://store.ns.svc:8333: scheme, host name or IPv4 address and optional port only (no path, no user:password@)"))]
    pub endpoint: String,
    /// The bucket (3–63 lowercase letters, digits, `.` and `-`).
    #[schemars(length(max = 63))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$')").message("spec.recording.export.s3.bucket must be an S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"))]
    pub bucket: String,
    /// The region signed into requests (default `us-east-1`, what most
    /// S3-compatible stores expect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9-]+$')").message("spec.recording.export.s3.region must be a region name such as us-east-1 (lowercase letters, digits and '-')"))]
    pub region: Option<String>,
    /// The key prefix template: `{namespace}`, `{name}`, `{uid}`, `{date}`
    /// (the session's start, `YYYY-MM-DD`) and `{time}` (`HHMMSS`) between
    /// literal path segments; it must hold `{uid}`, so two sessions never
    /// share a manifest. Default `{namespace}/{name}/{uid}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_EXPORT_PREFIX_LEN))]
    #[x_kube(validation = Rule::new("self.contains('{uid}') && !self.startsWith('/') && !self.contains('..') && !self.contains('//')").message("spec.recording.export.s3.prefix must hold {uid} (so two sessions never share a manifest), not start with '/', and hold no '..' or '//'; the default is {namespace}/{name}/{uid}"))]
    pub prefix: Option<String>,
    /// Path-style requests (`<endpoint>/<bucket>/<key>`), what most
    /// self-hosted stores need; otherwise virtual-hosted (`<bucket>.<host>`).
    #[serde(default)]
    pub path_style: bool,
    /// The Secret in the session's namespace with the keys `accessKeyId`
    /// and `secretAccessKey` (and `sessionToken` for temporary
    /// credentials). Mounted only into the Pod's exporter container, never
    /// the browser's or an agent's; its content may change while the
    /// session runs (the next upload reads it).
    pub credentials_secret: SecretName,
}

/// A Secret in the object's namespace, by name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecretName {
    /// The Secret's name.
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')").message("credentialsSecret.name must name a Secret in the BrowserSession's namespace (a DNS subdomain)"))]
    pub name: String,
}

/// Saved auth state loaded with `state-load` when the browser starts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthState {
    /// The Secret key holding a `state-save` JSON file (key default `state.json`).
    pub secret_ref: SecretKeyRef,
}

/// A persistent browser profile.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// An existing PersistentVolumeClaim holding the user data directory.
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.profile.claimName must name a PersistentVolumeClaim"))]
    pub claim_name: String,
}

/// An agent sidecar sharing the session.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentSidecar {
    /// Agent image. It needs `playwright-cli` on PATH to drive the browser
    /// (the browser image itself works).
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.agent.image must name the agent's image"))]
    pub image: String,
    /// Command (entrypoint override).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Extra environment. The session's variables are always set and win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Resources of the agent container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// Longest CIDR spelling (an IPv6 address of 39 characters plus `/128`).
pub const MAX_CIDR_LEN: u32 = 43;
/// Most CIDRs in `spec.network.egress.allowCIDRs`.
pub const MAX_ALLOW_CIDRS: u32 = 32;
/// Most host rules in `spec.network.egress.allowHosts` (and in `denyHosts`).
pub const MAX_HOST_RULES: u32 = 64;
/// Longest host rule: a DNS name (a port, when given, counts too).
pub const MAX_HOST_RULE_LEN: u32 = 253;
/// Most peers in `spec.network.egress.allowPeers`.
pub const MAX_ALLOW_PEERS: u32 = 16;
/// Most labels a peer selector may require.
pub const MAX_PEER_LABELS: u32 = 16;

/// The browser Pod's network boundary.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    /// Where the browser may open connections. A page the browser loads can
    /// reach whatever the browser can, so the default is the public web only.
    #[serde(default)]
    pub egress: Egress,
}

/// What the browser may reach.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum EgressMode {
    /// DNS to the cluster's resolver and the public internet; private and
    /// special ranges (RFC 1918, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16,
    /// fc00::/7, fe80::/10, the cluster's Pod and Service ranges) are denied.
    /// The allow-lists add to it.
    #[default]
    Internet,
    /// DNS to the cluster's resolver and the allow-lists, nothing else.
    AllowListOnly,
    /// No egress at all (sessions that load only what the Pod serves itself).
    DenyAll,
}

impl EgressMode {
    /// The serialized spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Internet => "Internet",
            Self::AllowListOnly => "AllowListOnly",
            Self::DenyAll => "DenyAll",
        }
    }
}

/// Egress of the browser Pod.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.mode != 'DenyAll' || (!has(self.allowCIDRs) && !has(self.allowPeers) && !has(self.allowHosts))").message("spec.network.egress: allowCIDRs, allowPeers and allowHosts cannot be used with mode DenyAll; use mode AllowListOnly to reach only the listed destinations"))]
pub struct Egress {
    /// `Internet` (default), `AllowListOnly` or `DenyAll`.
    #[serde(default)]
    pub mode: EgressMode,
    /// Destinations to allow in addition to the mode's, as canonical CIDRs
    /// (for example 10.20.0.0/16 or 2001:db8::/32); they may lie inside a denied range.
    #[serde(default, rename = "allowCIDRs", skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_ALLOW_CIDRS), inner(length(max = MAX_CIDR_LEN)))]
    #[x_kube(validation = Rule::new("self.all(c, isCIDR(c) && string(cidr(c).masked()) == c)").message("spec.network.egress.allowCIDRs: every entry must be a canonical CIDR such as 10.20.0.0/16 or 2001:db8::/32 (address bits beyond the prefix zero)"))]
    pub allow_cidrs: Vec<String>,
    /// In-cluster Pods to allow, by namespace and labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_ALLOW_PEERS))]
    pub allow_peers: Vec<EgressPeer>,
    /// Hosts the browser may reach, by name (`*.example.com`,
    /// `sso.corp.test:443`). Set, or with `denyHosts` set, the browser goes
    /// through the session runtime's proxy, which checks every request's host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_HOST_RULES), inner(length(max = MAX_HOST_RULE_LEN)))]
    #[x_kube(validation = Rule::new(crate::egress_hosts::host_list_rule()).message("spec.network.egress.allowHosts: every entry must be a lowercase DNS name (punycode for non-ASCII), `*.` only as the first label, an optional :port from 1 to 65535, and no IP literal (allow-list addresses with allowCIDRs)"))]
    pub allow_hosts: Vec<String>,
    /// Hosts the browser may not reach, with any mode; a deny wins over an allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_HOST_RULES), inner(length(max = MAX_HOST_RULE_LEN)))]
    #[x_kube(validation = Rule::new(crate::egress_hosts::host_list_rule()).message("spec.network.egress.denyHosts: every entry must be a lowercase DNS name (punycode for non-ASCII), `*.` only as the first label, an optional :port from 1 to 65535, and no IP literal (deny addresses with the chart's network.denyCIDRs)"))]
    pub deny_hosts: Vec<String>,
}

/// In-cluster Pods the browser may reach.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EgressPeer {
    /// Namespace of the Pods (default: the BrowserSession's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')").message("spec.network.egress.allowPeers[].namespace must be a namespace name (lowercase letters, digits and '-')"))]
    pub namespace: Option<String>,
    /// Labels the Pods carry (all of them). Empty: every Pod of the namespace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = MAX_PEER_LABELS, "additionalProperties" = {"type": "string", "maxLength": 63}))]
    #[x_kube(validation = Rule::new("self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && self[k].matches('^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$'))").message("spec.network.egress.allowPeers[].podLabels must hold label keys ([prefix/]name) and values (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"))]
    pub pod_labels: BTreeMap<String, String>,
}

/// A BrowserSession's pool, in its namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PoolRef {
    /// The BrowserPool's name.
    #[x_kube(validation = Rule::new("size(self) > 0").message("spec.pool.name must name a BrowserPool in the session's namespace"))]
    pub name: String,
}
