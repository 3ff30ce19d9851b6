//! The session runtime's configuration file (`runtime.json` in the runtime
//! ConfigMap) and the termination report it writes when it gives up. Both
//! sides of the contract live here so they cannot drift apart.

use serde::{Deserialize, Serialize};

use crate::cidr::{Cidr, CidrError};
use crate::egress_hosts::{Floor, HostListError, HostRules};
use crate::v1alpha1::{EgressMode, SandboxMode};

/// Everything `playpen-session` needs to run one session. The operator
/// writes it; the runtime re-reads it so the mutable policy fields
/// (retention, idle timeout, maximum lifetime) apply without a restart.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeConfig {
    /// The playwright-cli session name.
    pub session_name: String,
    /// `PWTEST_SOCKETS_DIR`, created 0700 by the runtime.
    pub sockets_dir: String,
    /// `PWTEST_DAEMON_SESSION_DIR`, created 0700 by the runtime.
    pub daemon_session_dir: String,
    /// `PLAYWRIGHT_MCP_CONFIG`: the mounted launch config.
    pub launch_config: String,
    /// The snapshot directory (`PLAYWRIGHT_MCP_OUTPUT_DIR`).
    pub output_dir: String,
    /// Chromium sandbox mode the session was created with.
    pub sandbox: SandboxMode,
    /// The viewer relay, when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer_port: Option<u16>,
    /// The CDP relay's pinned port, when enabled: the browser is then
    /// launched with a loopback debugging port the relay forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdp_port: Option<u16>,
    /// Retention by age (snapshots and recordings).
    pub snapshot_max_age_seconds: i64,
    /// Retention by count, per kind (snapshots; recordings).
    pub snapshot_max_count: i32,
    /// The snapshot volume's size as the spec states it (an emptyDir's size
    /// limit, a created claim's size); absent for an existing claim, whose
    /// filesystem the runtime measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_volume_bytes: Option<u64>,
    /// `spec.snapshots.retention.maxTotalSize` in bytes, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_max_total_bytes: Option<u64>,
    /// Close the session after this long without an agent command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<i64>,
    /// Close the session this long after it started (`sessionStartedAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lifetime_seconds: Option<i64>,
    /// When the session started (the BrowserSession's creation, RFC 3339):
    /// the maximum lifetime counts from here, not from this container's or
    /// this Pod's start, so a restart or a replacement Pod does not extend it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_started_at: Option<String>,
    /// A `state-save` file to `state-load` once the browser is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_state_file: Option<String>,
    /// A mounted [`crate::suspend::SuspendedState`] document (a resumed
    /// session's Secret) to reopen once the browser first runs: its storage
    /// state, then its tabs. The runtime's readiness waits for the reopen
    /// (bounded); a file that is not a document is logged and skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_state_file: Option<String>,
    /// Record a video of the session (`video-start` after each browser start).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_video: bool,
    /// Record a Playwright trace of the session (`tracing-start` after each browser start).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_trace: bool,
    /// With `record_video`, finish the video every this many seconds and
    /// start the next (`video-stop`, then `video-start` into a new
    /// `video-<ms>.webm`), so finished segments exist while the session runs;
    /// what happens between a stop and the next start (tens to a few hundred
    /// milliseconds) is not recorded. `None` (or 0): one video per browser
    /// start, finished at the graceful close. Read at the runtime's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_segment_seconds: Option<u32>,
    /// A warm Pod's browser, no session's yet: any use of it before a claim
    /// (which turns this off) makes the runtime start the container afresh.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm: bool,
    /// Host-name egress rules, the session's and the chart's: the runtime
    /// then runs its egress proxy and launches the browser through it.
    /// Re-read while running, so a rule change needs no browser restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_hosts: Option<EgressHostsConfig>,
    /// Where the Pod's exporter container uploads the recordings
    /// (`playpen-session export`, issue 33); absent: they stay on the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording_export: Option<RecordingExportConfig>,
}

/// The recordings destination the exporter reads (`spec.recording.export`
/// with the defaults filled in), and the session its prefix names. No
/// secret: the keys are files in [`crate::layout::EXPORT_CREDENTIALS_DIR`],
/// mounted into the exporter container only.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordingExportConfig {
    /// `scheme://host[:port]`.
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// The region signed into requests.
    pub region: String,
    /// The key prefix template.
    pub prefix: String,
    /// Path-style requests.
    pub path_style: bool,
    /// The BrowserSession's namespace, name and UID (the prefix's placeholders).
    pub namespace: String,
    /// See `namespace`.
    pub name: String,
    /// See `namespace`.
    pub uid: String,
}

impl RecordingExportConfig {
    /// The destination of `bs`: `spec.recording.export` with its defaults
    /// filled in, when anything is recorded. What the operator writes for
    /// the exporter and what `kubectl playpen record` downloads from: one
    /// function, so the two never name different places.
    pub fn of(bs: &crate::BrowserSession) -> Option<Self> {
        let recording = &bs.spec.recording;
        let s3 = &recording.export.as_ref().filter(|_| recording.video || recording.trace)?.s3;
        Some(Self {
            endpoint: s3.endpoint.clone(),
            bucket: s3.bucket.clone(),
            region: s3.region.clone().unwrap_or_else(|| crate::v1alpha1::DEFAULT_EXPORT_REGION.to_owned()),
            prefix: s3.prefix.clone().unwrap_or_else(|| crate::v1alpha1::DEFAULT_EXPORT_PREFIX.to_owned()),
            path_style: s3.path_style,
            namespace: bs.metadata.namespace.clone().unwrap_or_default(),
            name: bs.metadata.name.clone().unwrap_or_default(),
            uid: bs.metadata.uid.clone().unwrap_or_default(),
        })
    }
}

/// What the runtime's egress proxy enforces (docs/egress-hosts.md).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EgressHostsConfig {
    /// What a host no rule names gets.
    pub mode: EgressMode,
    /// The effective `allowHosts`: the session's, then the chart's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// The effective `denyHosts`: the session's, then the chart's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_hosts: Vec<String>,
    /// `spec.network.egress.allowCIDRs`: addresses allowed even inside a denied range.
    #[serde(default, rename = "allowCIDRs", skip_serializing_if = "Vec::is_empty")]
    pub allow_cidrs: Vec<String>,
    /// Every range no resolved address may be in (the special ranges, the
    /// cluster's, the chart's `network.denyCIDRs`): the CIDR floor.
    #[serde(rename = "deniedCIDRs")]
    pub denied_cidrs: Vec<String>,
}

/// An [`EgressHostsConfig`] the runtime cannot enforce.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressConfigError {
    /// A host rule.
    #[error(transparent)]
    Host(#[from] HostListError),
    /// A CIDR of either list.
    #[error("egressHosts: {0}")]
    Cidr(#[from] CidrError),
}

impl EgressHostsConfig {
    /// The parsed host rules and CIDR floor.
    pub fn parse(&self) -> Result<(HostRules, Floor), EgressConfigError> {
        let rules = HostRules::parse(self.mode, &self.allow_hosts, &self.deny_hosts)?;
        let cidrs = |list: &[String]| list.iter().map(|c| c.parse::<Cidr>()).collect::<Result<Vec<_>, _>>();
        let floor = Floor { denied: cidrs(&self.denied_cidrs)?, allowed: cidrs(&self.allow_cidrs)? };
        Ok((rules, floor))
    }
}

/// The reason a warm Pod's runtime reports when it exits because its
/// browser was used before any session claimed it (not a failure of any
/// session: the kubelet starts the container afresh).
pub const WARM_BROWSER_TOUCHED: &str = "WarmBrowserTouched";

impl RuntimeConfig {
    /// `sessionStartedAt` as a time; `None` when absent or not RFC 3339.
    pub fn session_started(&self) -> Option<std::time::SystemTime> {
        let text = self.session_started_at.as_deref()?;
        text.parse::<k8s_openapi::jiff::Timestamp>().ok().map(std::time::SystemTime::from)
    }
}

/// What the runtime writes to its termination message when it exits with a
/// failure, so the operator can put reason and remedy in the status without
/// the Pod holding API credentials.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TerminationReport {
    /// CamelCase reason, e.g. `NoUsableSandbox`, `SocketBudgetExceeded`.
    pub reason: String,
    /// Human message including the remedy.
    pub message: String,
}

/// The reason the runtime reports when it exits because host rules now
/// apply to a browser launched without its egress proxy (the proxy is a
/// launch switch): not a failure of the session; the kubelet starts the
/// container afresh, behind the proxy.
pub const HOST_RULES_ADDED: &str = "HostRulesAdded";

/// The reasons the runtime reports when it gives up (`Fatal::reason` in
/// playpen-session). Each one is the session's own doing (its spec, its
/// image, its volume), never a slow node, which the runtime waits out: a
/// session that never became Ready and reports one of these has failed to
/// start; any other exit (killed, out of memory) leaves it Starting.
pub const RUNTIME_FAILURE_REASONS: &[&str] = &[
    "RuntimeConfigInvalid",
    "SocketBudgetExceeded",
    "SocketNamespaceUnsafe",
    "SocketHooksMissing",
    "PlaywrightCliNotFound",
    "BrowserRevisionAbsent",
    "NoUsableSandbox",
    "SandboxRequiresNonRoot",
    "ViewerPortTaken",
    "CdpPortTaken",
    "EgressProxyUnavailable",
    "ReadinessPortTaken",
    "RecordingUnavailable",
    "SnapshotVolumeFull",
    "DaemonStartFailed",
];

/// Reason of a report whose own reason is missing or unusable.
pub const FALLBACK_REASON: &str = "BrowserContainerFailed";
/// The kubelet keeps at most 4096 bytes of a termination message; a report
/// never carries more, whatever the text claims.
pub const REPORT_MESSAGE_MAX_BYTES: usize = 4096;

impl TerminationReport {
    /// Parses a termination message: the JSON report, or any other text
    /// (for example the log tail the kubelet falls back to) as-is. The Pod
    /// writes it, so it is untrusted: the reason is replaced when the API
    /// server would refuse it in a condition, and the message is bounded.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        let report: Self = serde_json::from_str(text)
            .unwrap_or_else(|_| Self { reason: FALLBACK_REASON.to_owned(), message: text.to_owned() });
        Self {
            reason: crate::text::condition_reason(&report.reason, FALLBACK_REASON),
            message: crate::text::truncate(&report.message, REPORT_MESSAGE_MAX_BYTES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trips_and_falls_back_to_text() {
        let r = TerminationReport {
            reason: "NoUsableSandbox".into(),
            message: "No usable sandbox! Install the seccomp profile".into(),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(TerminationReport::parse(&text), r);
        let raw = TerminationReport::parse("  panic: boom\n");
        assert_eq!(raw.reason, "BrowserContainerFailed");
        assert_eq!(raw.message, "panic: boom");
    }

    #[test]
    fn hostile_reports_are_cleaned() {
        let text = serde_json::json!({"reason": "not a reason!", "message": "é".repeat(5000)}).to_string();
        let r = TerminationReport::parse(&text);
        assert_eq!(r.reason, FALLBACK_REASON);
        assert!(r.message.len() <= REPORT_MESSAGE_MAX_BYTES && r.message.ends_with('…'));
        let raw = TerminationReport::parse(&"\u{0}x".repeat(3000));
        assert!(raw.message.len() <= REPORT_MESSAGE_MAX_BYTES);
    }

    #[test]
    fn egress_hosts_parse_into_rules_and_a_floor_or_name_what_is_wrong() {
        let config = EgressHostsConfig {
            mode: EgressMode::AllowListOnly,
            allow_hosts: vec!["*.example.com".into()],
            deny_hosts: vec!["ads.example.com".into()],
            allow_cidrs: vec!["127.0.0.0/8".into()],
            denied_cidrs: vec!["10.0.0.0/8".into(), "127.0.0.0/8".into()],
        };
        let text = serde_json::to_value(&config).unwrap();
        assert_eq!(text["allowCIDRs"], serde_json::json!(["127.0.0.0/8"]));
        assert_eq!(text["deniedCIDRs"][0], "10.0.0.0/8");
        let (rules, floor) = config.parse().expect("parse");
        assert_eq!((rules.allow.len(), rules.deny.len(), floor.denied.len(), floor.allowed.len()), (1, 1, 2, 1));
        let bad_host = EgressHostsConfig { deny_hosts: vec!["10.0.0.1".into()], ..config.clone() };
        assert!(bad_host.parse().unwrap_err().to_string().starts_with("denyHosts[0]"));
        let bad_cidr = EgressHostsConfig { denied_cidrs: vec!["10.0.0.1/8".into()], ..config };
        assert!(matches!(bad_cidr.parse(), Err(EgressConfigError::Cidr(_))));
    }

    #[test]
    fn the_session_start_is_read_as_rfc_3339_or_not_at_all() {
        let doc = |started: serde_json::Value| -> RuntimeConfig {
            serde_json::from_value(serde_json::json!({"sessionName": "s", "socketsDir": "/a", "daemonSessionDir": "/b",
                "launchConfig": "/c", "outputDir": "/d", "sandbox": "Enforced", "snapshotMaxAgeSeconds": 1,
                "snapshotMaxCount": 1, "sessionStartedAt": started}))
            .unwrap()
        };
        let at = doc("2026-12-01T08:00:00Z".into()).session_started().unwrap();
        assert_eq!(at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(), 1_796_112_000);
        assert_eq!(doc("yesterday".into()).session_started(), None);
        assert_eq!(doc(serde_json::Value::Null).session_started(), None);
    }
}
