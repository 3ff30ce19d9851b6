//! The in-Pod filesystem and environment contract shared by the operator
//! (which builds the Pod) and the session runtime (which runs inside it).
//!
//! Everything here is a fixed, absolute path so that a plain
//! `playwright-cli <verb>` run through `kubectl exec` reaches the session no
//! matter which working directory it starts in.

/// Root of all per-session state inside the browser container (an emptyDir).
pub const DATA_HOME: &str = "/var/lib/playpen";
/// Where the launch-config Secret (generated or the user's) is mounted read-only.
pub const LAUNCH_CONFIG_DIR: &str = "/etc/playpen/launch";
/// File name of the generated launch config inside [`LAUNCH_CONFIG_DIR`].
pub const LAUNCH_CONFIG_KEY: &str = "config.json";
/// Where the runtime ConfigMap is mounted read-only.
pub const RUNTIME_CONFIG_DIR: &str = "/etc/playpen/runtime";
/// File name of the runtime configuration inside [`RUNTIME_CONFIG_DIR`].
pub const RUNTIME_CONFIG_KEY: &str = "runtime.json";
/// The snapshot volume: the CLI's output directory (`PLAYWRIGHT_MCP_OUTPUT_DIR`).
pub const SNAPSHOT_DIR: &str = "/var/lib/playpen/snapshots";
/// Session recordings (video, trace), on the snapshot volume under its retention.
pub const RECORDINGS_DIR: &str = "/var/lib/playpen/snapshots/recordings";
/// [`RECORDINGS_DIR`]'s name inside the CLI's output directory (wherever the runtime is told it is).
pub const RECORDINGS_SUBDIR: &str = "recordings";
/// The egress proxy's log in [`RECORDINGS_SUBDIR`] when host rules apply:
/// one JSON line per connection attempt (docs/egress-hosts.md). The runtime
/// writes it, retention keeps it apart from the recordings, `kubectl
/// playpen egress` reads it.
pub const EGRESS_LOG_FILE: &str = "egress.jsonl";
/// [`EGRESS_LOG_FILE`] once rotated: the proxy keeps this one, replaced at
/// each rotation, so the two bound the log.
pub const EGRESS_LOG_ROTATED_FILE: &str = "egress.jsonl.1";
/// Size past which [`EGRESS_LOG_FILE`] is rotated: each of the two files
/// holds at most this much, which is what a reader needs to expect.
pub const EGRESS_LOG_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// The optional persistent browser profile volume.
pub const PROFILE_DIR: &str = "/var/lib/playpen/profile";
/// Saved auth state (cookies, storage) from the user's Secret, mounted 0400.
pub const AUTH_STATE_DIR: &str = "/etc/playpen/auth";
/// File name of the auth state inside [`AUTH_STATE_DIR`].
pub const AUTH_STATE_FILE: &str = "state.json";
/// A resuming session's saved state (its `<session>-suspended` Secret),
/// mounted read-only; `runtime.json`'s `resumeStateFile` names the file.
pub const RESUME_STATE_DIR: &str = "/etc/playpen/resume";
/// Key of the saved state in that Secret, and its file name in [`RESUME_STATE_DIR`].
pub const RESUME_STATE_FILE: &str = "state.json";
/// The keys of a recording-export credentials Secret (the files of its
/// mounted directory): the S3 access key ID and secret access key, and an
/// optional session token for temporary credentials. The user writes the
/// Secret, the operator checks and mounts it, the uploader reads it.
pub const EXPORT_ACCESS_KEY_ID_KEY: &str = "accessKeyId";
/// Where the export credentials Secret is mounted, in the exporter container only.
pub const EXPORT_CREDENTIALS_DIR: &str = "/etc/playpen/export";
/// See [`EXPORT_ACCESS_KEY_ID_KEY`].
pub const EXPORT_SECRET_ACCESS_KEY_KEY: &str = "secretAccessKey";
/// See [`EXPORT_ACCESS_KEY_ID_KEY`].
pub const EXPORT_SESSION_TOKEN_KEY: &str = "sessionToken";
/// The session runtime binary, the browser container's PID 1.
pub const SESSION_RUNTIME_BIN: &str = "/usr/local/bin/playpen-session";
/// The browser container's readiness probe timeout. The probe waits for the
/// first success up to a little less than this (see the runtime's `probe`),
/// so a fresh session turns Ready as soon as it is, not a probe period later.
pub const READINESS_PROBE_TIMEOUT_SECONDS: i32 = 3;
/// The port of the runtime's readiness endpoint, on the Pod's own address
/// (where the kubelet's HTTP probe connects) and never on loopback, so it
/// takes no port a session may pin there. It answers ready or not ready and
/// nothing else: an HTTP probe costs the node no process start, where an
/// exec probe started one every period.
pub const READINESS_PORT: u16 = 9321;
/// The path the kubelet asks on [`READINESS_PORT`].
pub const READINESS_PATH: &str = "/readyz";
/// The path on [`READINESS_PORT`] where the runtime answers what its egress
/// proxy counted ([`crate::egress_report::EgressReport`] as JSON; 404
/// without host rules). The operator reads it; a NetworkPolicy admits the
/// operator's Pods to this port only for sessions with host rules.
pub const EGRESS_REPORT_PATH: &str = "/egress";
/// The path on [`READINESS_PORT`] where the runtime answers its exporter's
/// last status ([`crate::export_status::ExportStatus`] as JSON; 404 before
/// the first one or without an export). The operator reads it for
/// `status.recording.export`; the same NetworkPolicy rule admits it.
pub const EXPORT_STATUS_PATH: &str = "/export";
/// The path on [`READINESS_PORT`] where the operator asks the runtime for
/// the session's suspended state (`POST`, answered with a
/// [`crate::suspend::SuspendedState`] document). Offered only while
/// [`CONTROL_TOKEN_FILE`] exists, and only to a request bearing its token.
pub const SUSPEND_PATH: &str = "/suspend";
/// The path on [`READINESS_PORT`] where the operator hands a running
/// session a suspended state to reopen (`POST`, the
/// [`crate::suspend::SuspendedState`] document as the body, at most
/// [`crate::suspend::MAX_DOCUMENT_BYTES`]): a warm Pod it just claimed gets
/// its tabs back without a file delivered through a volume, and the answer
/// says when they are back. Guarded like [`SUSPEND_PATH`], and never run at
/// the same time as a capture.
pub const RESUME_PATH: &str = "/resume";
/// File name, inside [`LAUNCH_CONFIG_DIR`], of the bearer token a request to
/// [`SUSPEND_PATH`] or [`RESUME_PATH`] must carry (`Authorization: Bearer <token>`). The
/// operator writes it into the launch-config Secret; without it the runtime
/// does not offer suspend or resume at all.
pub const CONTROL_TOKEN_FILE: &str = "control-token";
/// Where the container writes its termination message.
pub const TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// `HOME` in the Pod: a directory under [`DATA_HOME`] (the root filesystem is
/// read-only, so it has to live on the data-home emptyDir).
pub const HOME_DIR: &str = "/var/lib/playpen/home";
/// The Pod's writable scratch directory (an emptyDir; `TMPDIR`).
pub const TMP_DIR: &str = "/tmp";

// What the image builder (playpen-imagebuild) installs and the Pod relies on.

/// Root of everything the image builder adds under `/opt`.
pub const IMAGE_ROOT: &str = "/opt/playpen";
/// The verified Node interpreter the image carries ([`env::NODE`]).
pub const NODE_BIN: &str = "/opt/playpen/node/bin/node";
/// The npm-style project holding `node_modules/{@playwright/cli,playwright,playwright-core}`.
pub const CLI_PREFIX: &str = "/opt/playpen/cli";
/// The `@playwright/cli` package directory inside [`CLI_PREFIX`] ([`env::CLI_PACKAGE`]).
pub const CLI_PACKAGE_DIR: &str = "/opt/playpen/cli/node_modules/@playwright/cli";
/// `playwright-cli` on `PATH`: a wrapper pinning [`NODE_BIN`] (and, with the
/// session runtime in the image, handing over to `playpen-session cli`).
pub const CLI_WRAPPER: &str = "/usr/local/bin/playwright-cli";
/// Playwright's browser cache ([`env::BROWSERS_PATH`]) for Chromium installed by Playwright.
pub const BROWSERS_DIR: &str = "/opt/playpen/browsers";
/// Where a Chromium release archive is unpacked.
pub const CHROMIUM_ARCHIVE_DIR: &str = "/opt/playpen/chromium";
/// Launch-config defaults the image carries; the launch config mounted at
/// [`LAUNCH_CONFIG_DIR`] overrides them.
pub const LAUNCH_DEFAULTS: &str = "/etc/playpen/launch-defaults.json";

/// Environment variable names the Pod sets for the runtime and for every
/// `playwright-cli` process started in the container.
pub mod env {
    /// Selects the session for `playwright-cli` without `-s=`.
    pub const CLI_SESSION: &str = "PLAYWRIGHT_CLI_SESSION";
    /// Directory of the CLI's AF_UNIX sockets.
    pub const SOCKETS_DIR: &str = "PWTEST_SOCKETS_DIR";
    /// Directory of the CLI daemon's session files.
    pub const DAEMON_SESSION_DIR: &str = "PWTEST_DAEMON_SESSION_DIR";
    /// Path of the launch config JSON.
    pub const MCP_CONFIG: &str = "PLAYWRIGHT_MCP_CONFIG";
    /// Where snapshots, console logs and screenshots are written.
    pub const MCP_OUTPUT_DIR: &str = "PLAYWRIGHT_MCP_OUTPUT_DIR";
    /// Path of the runtime configuration JSON.
    pub const RUNTIME_CONFIG: &str = "PLAYPEN_RUNTIME_CONFIG";
    /// The Node interpreter the session runtime starts the CLI daemon with
    /// (the image sets it to [`super::NODE_BIN`]).
    pub const NODE: &str = "PLAYPEN_NODE";
    /// The `@playwright/cli` package directory the session runtime runs
    /// (the image sets it to [`super::CLI_PACKAGE_DIR`]).
    pub const CLI_PACKAGE: &str = "PLAYPEN_CLI_PACKAGE";
    /// Playwright's browser cache (the image sets it to [`super::BROWSERS_DIR`]).
    pub const BROWSERS_PATH: &str = "PLAYWRIGHT_BROWSERS_PATH";
    /// The home directory ([`super::HOME_DIR`] in the Pod and the image).
    pub const HOME: &str = "HOME";
    /// The scratch directory ([`super::TMP_DIR`] in the Pod).
    pub const TMPDIR: &str = "TMPDIR";
    /// The Pod's IP address (the downward API's `status.podIP`): where the
    /// runtime binds its readiness endpoint ([`super::READINESS_PORT`]).
    pub const POD_IP: &str = "PLAYPEN_POD_IP";
}

/// AF_UNIX `sun_path` budget the CLI enforces (bytes, excluding the NUL).
/// We keep the worst-case path strictly below it.
pub const SOCKET_PATH_BUDGET: usize = 103;

/// Length of the per-session socket namespace (hex characters).
pub const SOCKET_NAMESPACE_HEX: usize = 8;

/// The CLI names its session socket `<sockets>/cli/<16 hex>-<session>.sock`.
const CLI_SOCKET_OVERHEAD: usize = "/cli/".len() + 16 + "-".len() + ".sock".len();

/// `<data-home>/pw/<8hex>`: the per-session socket namespace root.
pub fn namespace_root(data_home: &str, namespace_hex: &str) -> String {
    format!("{data_home}/pw/{namespace_hex}")
}

/// `PWTEST_SOCKETS_DIR` for a session namespace.
pub fn sockets_dir(data_home: &str, namespace_hex: &str) -> String {
    format!("{}/s", namespace_root(data_home, namespace_hex))
}

/// `PWTEST_DAEMON_SESSION_DIR` for a session namespace.
pub fn daemon_session_dir(data_home: &str, namespace_hex: &str) -> String {
    format!("{}/d", namespace_root(data_home, namespace_hex))
}

/// The longest socket path the CLI can create for `session` under `sockets_dir`.
pub fn worst_case_socket_path_len(sockets_dir: &str, session: &str) -> usize {
    sockets_dir.len() + CLI_SOCKET_OVERHEAD + session.len()
}

/// Longest session name whose worst-case socket path stays below the budget
/// under the fixed [`DATA_HOME`]. This is the limit the CRD enforces.
pub const fn max_session_name_len() -> usize {
    // "<DATA_HOME>/pw/<8hex>/s"
    let sockets_dir = DATA_HOME.len() + "/pw/".len() + SOCKET_NAMESPACE_HEX + "/s".len();
    SOCKET_PATH_BUDGET - 1 - sockets_dir - CLI_SOCKET_OVERHEAD
}

/// Checks the worst-case socket path of `session` under `sockets_dir`.
pub fn check_socket_budget(sockets_dir: &str, session: &str) -> Result<(), SocketBudgetExceeded> {
    let len = worst_case_socket_path_len(sockets_dir, session);
    if len < SOCKET_PATH_BUDGET {
        Ok(())
    } else {
        Err(SocketBudgetExceeded { len, sockets_dir: sockets_dir.to_owned(), session: session.to_owned() })
    }
}

/// The worst-case AF_UNIX socket path would not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "worst-case socket path {sockets_dir}/cli/<16hex>-{session}.sock is {len} bytes, \
     over the {SOCKET_PATH_BUDGET}-byte AF_UNIX budget: shorten the session name \
     (at most {} characters under {DATA_HOME}) or the data home",
    max_session_name_len()
)]
pub struct SocketBudgetExceeded {
    /// Worst-case length in bytes.
    pub len: usize,
    /// The sockets directory that was checked.
    pub sockets_dir: String,
    /// The session name that was checked.
    pub session: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_session_name_is_computed_from_the_layout() {
        // /var/lib/playpen (16) + /pw/ (4) + 8 hex + /s (2) = 30;
        // /cli/ + 16 hex + - + .sock = 27; 30 + 27 + name < 103.
        assert_eq!(max_session_name_len(), 45);
    }

    #[test]
    fn longest_allowed_name_fits_and_one_more_does_not() {
        let dir = sockets_dir(DATA_HOME, "0123abcd");
        let ok = "a".repeat(max_session_name_len());
        assert_eq!(worst_case_socket_path_len(&dir, &ok), SOCKET_PATH_BUDGET - 1);
        assert!(check_socket_budget(&dir, &ok).is_ok());
        let too_long = "a".repeat(max_session_name_len() + 1);
        let err = check_socket_budget(&dir, &too_long).unwrap_err();
        assert_eq!(err.len, SOCKET_PATH_BUDGET);
        assert!(err.to_string().contains("at most 45 characters"));
    }

    #[test]
    fn contract_paths_nest_as_documented() {
        assert_eq!(HOME_DIR, format!("{DATA_HOME}/home"));
        assert!(SNAPSHOT_DIR.starts_with(&format!("{DATA_HOME}/")));
        assert_eq!(RECORDINGS_DIR, format!("{SNAPSHOT_DIR}/{RECORDINGS_SUBDIR}"));
        assert!(PROFILE_DIR.starts_with(&format!("{DATA_HOME}/")));
        for path in [NODE_BIN, CLI_PREFIX, BROWSERS_DIR, CHROMIUM_ARCHIVE_DIR] {
            assert!(path.starts_with(&format!("{IMAGE_ROOT}/")), "{path}");
        }
        assert_eq!(CLI_PACKAGE_DIR, format!("{CLI_PREFIX}/node_modules/@playwright/cli"));
    }

    #[test]
    fn namespace_dirs_are_siblings() {
        assert_eq!(sockets_dir("/d", "ab12cd34"), "/d/pw/ab12cd34/s");
        assert_eq!(daemon_session_dir("/d", "ab12cd34"), "/d/pw/ab12cd34/d");
    }
}
