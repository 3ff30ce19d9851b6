//! [`BrowserSpec`]: the browser-defining fields, declared once. A
//! BrowserSession's spec holds them flattened (`spec.image`, `spec.viewer`,
//! …), a BrowserPool's `spec.template` is one, and so is the template a
//! placed session records in `status.pool.template`: one set of fields,
//! docs and rules for all three.

use k8s_openapi::api::core::v1::LocalObjectReference;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use super::browser::{Cdp, LaunchConfig, PodSettings, PullPolicy, SandboxMode, Snapshots, Viewer};

/// The browser: its image, sandbox, launch config, viewer, CDP endpoint,
/// snapshot volume and Pod settings. What a session brings of its own (auth
/// state, a profile, recording, an agent sidecar, its network and
/// timeouts) is not part of it.
///
/// Rules that involve only the browser sit here or on its fields, so a
/// session and a pool's template share them. A rule on this struct reaches
/// a session's spec through `#[serde(flatten)]` (schemars copies a flattened
/// schema's `x-kubernetes-validations` into the parent, before the parent's
/// own rules are added): the CRDs' tests check that it does.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!self.cdp.enabled || !self.viewer.enabled || self.cdp.port != self.viewer.port").message("spec.cdp.port must differ from spec.viewer.port: both are pinned on the Pod's loopback"),
)]
pub struct BrowserSpec {
    /// Browser image built by playpen-imagebuild (it contains Chromium, the
    /// pinned Node.js and playwright-cli, and /usr/local/bin/playpen-session).
    /// A BrowserSession that names a BrowserPool (`spec.pool`) leaves it
    /// empty: the pool's template names it.
    #[serde(default)]
    pub image: String,

    /// Image pull policy of the browser container (and of a session's agent sidecar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,

    /// Secrets used to pull the images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,

    /// playwright-cli session name (`PLAYWRIGHT_CLI_SESSION`). When omitted:
    /// generated from a BrowserSession's metadata.name, or a BrowserPool's
    /// name in every Pod of the pool. Lowercase letters, digits, '-', '_'
    /// and '.', at most 45 characters: the longest name whose socket path
    /// `/var/lib/playpen/pw/<8hex>/s/cli/<16hex>-<name>.sock` stays under the
    /// 103-byte AF_UNIX limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// (Its maxLength comes from the socket budget, in `bounds`.)
    #[x_kube(
        validation = Rule::new("self.matches('^[a-z0-9][a-z0-9_.-]*$')").message("spec.sessionName must start with a lowercase letter or digit and contain only lowercase letters, digits, '-', '_' and '.'"),
    )]
    pub session_name: Option<String>,

    /// Chromium sandbox mode. `Enforced` (default) keeps Chromium's sandbox
    /// on and gives the Pod a seccomp profile that lets it work. `Disabled`
    /// turns it off; this is recorded in an Event and a condition.
    #[serde(default)]
    pub sandbox: SandboxMode,

    /// The playwright-cli launch config: generated from these fields, or the
    /// user's own config Secret (`secretRef`), to which nothing is added.
    #[serde(default)]
    pub launch_config: LaunchConfig,

    /// The human takeover viewer (`playwright-cli show`) on a pinned port.
    #[serde(default)]
    pub viewer: Viewer,

    /// An opt-in Chrome DevTools Protocol endpoint on a pinned loopback port,
    /// for Playwright `connectOverCDP`, Puppeteer and browser-use clients.
    #[serde(default)]
    pub cdp: Cdp,

    /// Where snapshots go and how long they are kept. A BrowserPool's Pods
    /// use an emptyDir; a session that takes one keeps its own retention.
    #[serde(default)]
    pub snapshots: Snapshots,

    /// Pod-level settings: resources, scheduling, `/dev/shm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodSettings>,
}
