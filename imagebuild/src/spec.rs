//! The declarative image spec (YAML). Unknown keys are refused with their name.
//! Cross-field rules live in [`crate::validate`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A browser image: base, pinned Node and `@playwright/cli`, a Chromium source,
/// the sandbox policy and the user it runs as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageSpec {
    /// The image to build on. Its /etc/os-release decides apt or rpm.
    pub base: BaseSpec,
    /// The Node.js interpreter the `playwright-cli` wrapper pins (20 or newer).
    pub node: NodeSpec,
    /// The `@playwright/cli` release (with its `playwright` and `playwright-core` dependencies).
    pub cli: CliSpec,
    /// Where Chromium comes from.
    pub chromium: ChromiumSpec,
    /// Chromium's sandbox: `Enforced` (default) or `Disabled` with a recorded reason.
    #[serde(default)]
    pub sandbox: SandboxSpec,
    /// The non-root user the image runs as.
    #[serde(default)]
    pub user: UserSpec,
    /// Extra OS packages, in the base family's names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Font packages, in the base family's names (for example `fonts-liberation` on apt).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fonts: Vec<String>,
    /// npm registry or mirror, extra CA bundle and where credentials come from.
    #[serde(default)]
    pub registry: RegistrySpec,
    /// The session runtime binary installed at /usr/local/bin/playpen-session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_runtime: Option<SessionRuntimeSpec>,
    /// Playwright's video recorder, for sessions with `spec.recording.video`: an
    /// ffmpeg with the VP8 encoder where Playwright runs it from. Absent: the image
    /// cannot record video (a session asking for it stops with `RecordingUnavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_recorder: Option<VideoRecorderSpec>,
}

/// The base image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BaseSpec {
    /// Image reference, for example `playpen/base:bookworm` or `debian:bookworm-slim`.
    pub image: String,
    /// Override of the OS family detected from the base's /etc/os-release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_family: Option<OsFamily>,
}

/// How a base installs OS packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OsFamily {
    /// Debian, Ubuntu and derivatives (apt-get).
    Apt,
    /// RHEL, Fedora, CentOS, Rocky, Alma, Oracle, Amazon Linux (dnf, microdnf or yum).
    Dnf,
    /// SUSE and openSUSE (zypper).
    Zypper,
}

impl OsFamily {
    /// The spec spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            OsFamily::Apt => "apt",
            OsFamily::Dnf => "dnf",
            OsFamily::Zypper => "zypper",
        }
    }
}

/// Node.js: version and where its Linux tarball comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSpec {
    /// Exact version, for example `22.12.0` (20 or newer).
    pub version: String,
    /// `npm` (the registry's `node-linux-<arch>` package, checked by its sha512 integrity),
    /// `dist` (a nodejs.org-style dist, checked against the release's SHASUMS256.txt) or
    /// `file` (a local tarball checked by `sha256`).
    #[serde(default)]
    pub source: NodeSource,
    /// CPU architecture.
    #[serde(default)]
    pub arch: Arch,
    /// C library of the base: `musl` selects the unofficial-builds variant on `dist`.
    #[serde(default)]
    pub libc: Libc,
    /// For `dist`: the dist root, default `https://nodejs.org/dist` (musl: unofficial-builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist_url: Option<String>,
    /// For `file`: path of the tarball (`.tar.gz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// For `file`: its sha256, 64 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Where Node comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeSource {
    /// The npm registry's `node-linux-<arch>` package.
    #[default]
    Npm,
    /// A nodejs.org-style dist with SHASUMS256.txt.
    Dist,
    /// A local tarball with a sha256.
    File,
}

/// CPU architecture of the image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// x86-64.
    #[default]
    X64,
    /// AArch64.
    Arm64,
}

impl Arch {
    /// Node's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Arch::X64 => "x64",
            Arch::Arm64 => "arm64",
        }
    }
}

/// C library of the base image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Libc {
    /// glibc (Debian, Ubuntu, RHEL family, SUSE).
    #[default]
    Glibc,
    /// musl (Alpine).
    Musl,
}

/// The `@playwright/cli` release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CliSpec {
    /// Exact version of `@playwright/cli`, for example `0.1.22`.
    pub version: String,
}

/// Where Chromium comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChromiumSpec {
    /// `distribution` (the OS package), `playwright` (the revision in playwright-core's
    /// browsers.json, installed by `playwright-cli install-browser chromium`) or `archive`.
    pub source: ChromiumSource,
    /// For `distribution`: the package name (default `chromium`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// For `archive`: URL of a `.tar.gz` or `.tar` holding the browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// For `archive`: its sha256, 64 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Absolute path of the Chromium executable in the image. Defaults: `/usr/bin/chromium`
    /// (distribution on apt), `/usr/lib/chromium/chromium-headless-shell` (package
    /// `chromium-headless-shell` on apt), `/usr/bin/chromium-browser` (distribution on rpm);
    /// required for `archive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_path: Option<String>,
}

/// Chromium sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChromiumSource {
    /// The distribution's package (Debian `chromium`, Fedora `chromium`).
    Distribution,
    /// Playwright's own build at the revision playwright-core pins.
    Playwright,
    /// A local or remote archive with a sha256.
    Archive,
}

/// Chromium's sandbox policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSpec {
    /// `Enforced` (default): `chromiumSandbox: true` in the launch defaults, verified under the
    /// emitted seccomp profile. `Disabled` requires `reason`.
    #[serde(default)]
    pub mode: SandboxMode,
    /// Why the sandbox is off; recorded in the lock and the image labels. Required when `Disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Sandbox modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SandboxMode {
    /// The sandbox is on.
    #[default]
    Enforced,
    /// The sandbox is off (an explicit, recorded choice).
    Disabled,
}

impl SandboxMode {
    /// The spec spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Enforced => "Enforced",
            SandboxMode::Disabled => "Disabled",
        }
    }
}

/// The image's user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserSpec {
    /// Login name (default `playpen`).
    #[serde(default = "default_user_name")]
    pub name: String,
    /// UID (default 1000, what the operator's Pod runs as). 0 is refused.
    #[serde(default = "default_id")]
    pub uid: u32,
    /// GID (default 1000).
    #[serde(default = "default_id")]
    pub gid: u32,
}

impl Default for UserSpec {
    fn default() -> Self {
        UserSpec { name: default_user_name(), uid: default_id(), gid: default_id() }
    }
}

fn default_user_name() -> String {
    "playpen".to_owned()
}

const fn default_id() -> u32 {
    1000
}

/// Registry, mirror, CA and credential settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrySpec {
    /// npm registry or mirror URL (default `https://registry.npmjs.org`). Must not carry a credential.
    #[serde(default = "default_npm_registry")]
    pub npm: String,
    /// Extra PEM CA bundle trusted in addition to the system store (a TLS-intercepting proxy's CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// Name of the environment variable holding a bearer token for the registry. The token
    /// itself never appears in the spec, the lock, flags or logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
}

impl Default for RegistrySpec {
    fn default() -> Self {
        RegistrySpec { npm: default_npm_registry(), ca_bundle: None, token_env: None }
    }
}

fn default_npm_registry() -> String {
    "https://registry.npmjs.org".to_owned()
}

/// The session runtime binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRuntimeSpec {
    /// Host path of the `playpen-session` binary (built for the image's architecture and libc).
    pub path: String,
}

/// The video recorder: an OS package that puts `ffmpeg` (with the VP8 encoder and
/// the WebM muxer) on PATH. Playwright's own ffmpeg build comes from its CDN, which
/// `chromium.source: playwright` installs beside Chromium; a package works with every source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VideoRecorderSpec {
    /// The package. Defaults: `ffmpeg` on apt (Debian, Ubuntu), `ffmpeg-free` on dnf
    /// (Fedora; EPEL on the RHEL family), `ffmpeg` on zypper (a repository that has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
}

/// Errors reading a spec.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The YAML does not match the spec's shape (serde names the unknown or missing key).
    #[error("spec {path}: {message}")]
    Parse {
        /// Where the spec came from.
        path: String,
        /// serde's message, which names the offending key and its location.
        message: String,
    },
    /// The spec could not be read.
    #[error("spec {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl crate::failure::Classify for SpecError {
    fn class(&self) -> crate::failure::FailureClass {
        match self {
            SpecError::Parse { .. } => crate::failure::FailureClass::InvalidSpec,
            SpecError::Read { .. } => crate::failure::FailureClass::Io,
        }
    }
}

/// Parses YAML text; `origin` names it in errors.
pub fn parse_spec(yaml: &str, origin: &str) -> Result<ImageSpec, SpecError> {
    serde_yaml::from_str(yaml).map_err(|e| SpecError::Parse {
        path: origin.to_owned(),
        message: crate::untrusted::printable(&e.to_string(), crate::untrusted::MAX_MESSAGE),
    })
}

/// Reads and parses a spec file.
pub fn read_spec(path: &std::path::Path) -> Result<ImageSpec, SpecError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| SpecError::Read { path: path.display().to_string(), source })?;
    parse_spec(&text, &path.display().to_string())
}

/// The JSON Schema of the spec, pretty-printed with a trailing newline.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ImageSpec);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const MINIMAL: &str = "base: {image: playpen/base:bookworm}\nnode: {version: 22.12.0}\ncli: {version: 0.1.22}\nchromium: {source: distribution}\n";

    #[test]
    fn minimal_spec_gets_safe_defaults() {
        let spec = parse_spec(MINIMAL, "t").unwrap();
        assert_eq!(spec.sandbox.mode, SandboxMode::Enforced);
        assert_eq!(spec.user, UserSpec { name: "playpen".into(), uid: 1000, gid: 1000 });
        assert_eq!(spec.node.source, NodeSource::Npm);
        assert_eq!(spec.registry.npm, "https://registry.npmjs.org");
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let err = parse_spec(&format!("{MINIMAL}nodeVersion: 20\n"), "t").unwrap_err();
        assert!(err.to_string().contains("unknown field `nodeVersion`"), "{err}");
        let nested = MINIMAL.replace("{version: 0.1.22}", "{version: 0.1.22, tag: latest}");
        let err = parse_spec(&nested, "t").unwrap_err();
        assert!(err.to_string().contains("unknown field `tag`"), "{err}");
    }

    #[test]
    fn parse_errors_quote_hostile_keys_escaped_and_bounded() {
        let key = format!("\"\\e[2J{}\"", "k".repeat(1000));
        let err = parse_spec(&format!("{MINIMAL}{key}: 1\n"), "t").unwrap_err().to_string();
        assert!(err.contains("unknown field `\\u{1b}[2Jkkk") && err.ends_with('…'), "{err}");
        assert!(!err.chars().any(char::is_control) && err.chars().count() < 700, "{err}");
    }

    #[test]
    fn bad_enum_value_names_the_choices() {
        let err = parse_spec(&MINIMAL.replace("distribution", "snap"), "t").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("snap") && text.contains("distribution"), "{text}");
    }

    #[test]
    fn published_schema_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/image-spec.schema.json");
        let published = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            published == json_schema(),
            "docs/image-spec.schema.json is stale: run `cargo run -p playpen-imagebuild -- schema --output docs/image-spec.schema.json`"
        );
    }

    #[test]
    fn schema_refuses_unknown_keys() {
        let schema = json_schema();
        assert!(schema.contains("\"additionalProperties\": false"));
        assert!(schema.contains("\"sessionRuntime\""));
    }
}
