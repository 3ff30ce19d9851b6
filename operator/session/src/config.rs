//! Command line, environment and the mounted `runtime.json`: everything the
//! runtime is told, and the scrubbed environment its children get.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use playpen_api::layout::{
    env, CONTROL_TOKEN_FILE, LAUNCH_CONFIG_DIR, READINESS_PORT, RUNTIME_CONFIG_DIR, RUNTIME_CONFIG_KEY,
    TERMINATION_MESSAGE_PATH,
};
use playpen_api::runtime_config::RuntimeConfig;

use crate::error::Fatal;

/// `playpen-session`: the browser container's PID 1.
#[derive(Debug, Parser)]
#[command(name = "playpen-session", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub options: Options,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the session (the container's entrypoint).
    Run,
    /// Readiness check: exit 0 when the daemon and, if enabled, the viewer
    /// answer (the kubelet asks the same over HTTP, `GET /readyz`).
    Probe,
    /// Relay stdin and stdout to 127.0.0.1:PORT in the Pod: the way
    /// `kubectl playpen view|cdp --via exec` reaches a pinned port where
    /// `kubectl port-forward` cannot (a gVisor sandbox's own network stack).
    Pipe {
        /// The loopback port.
        #[arg(value_parser = clap::value_parser!(u16).range(1..))]
        port: u16,
    },
    /// Upload the recordings to the session's object store while it runs
    /// (the exporter container: docs/recordings-export.md).
    Export,
    /// Ask the running runtime to finish the video segment in progress now
    /// and wait until it has (`kubectl playpen record --rotate`). Prints
    /// `finished video-<ms>.webm`; exits 3 when no video records, 4 when
    /// the session is closing.
    Rotate {
        /// The runtime's PID (PID 1 in the browser container).
        #[arg(long, default_value_t = 1)]
        pid: i32,
        /// How long to wait for the segment to be finished, in seconds.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=600))]
        within: u64,
    },
    /// Save the session's storage state and open tabs (URL, scroll, form
    /// values; never passwords) to FILE, owner-only, for `resume-state`
    /// (the State path of suspend: docs/suspend-resume.md).
    SuspendState {
        /// Where the document goes.
        #[arg(long)]
        out: PathBuf,
    },
    /// Load a `suspend-state` document into the session's browser: storage
    /// state, then every tab at once with its scroll and values. A tab that
    /// does not load is reported on its line, not fatal.
    ResumeState {
        /// The document.
        #[arg(long)]
        from: PathBuf,
    },
}

/// Options, each also settable through the environment.
#[derive(Debug, Clone, Args)]
pub struct Options {
    /// The runtime configuration (runtime.json).
    #[arg(long, global = true, env = env::RUNTIME_CONFIG, default_value_t = default_config_path())]
    pub config: String,
    /// The `playwright-cli` launcher (a path, or a name looked up on PATH).
    #[arg(long, global = true, env = "PLAYPEN_CLI", default_value = "playwright-cli")]
    pub cli: String,
    /// The Node.js interpreter that runs the CLI's daemon and dashboard.
    #[arg(long, global = true, env = playpen_api::layout::env::NODE, default_value = "node")]
    pub node: String,
    /// The installed `@playwright/cli` package directory; by default resolved
    /// from the launcher (the package its symlink points into).
    #[arg(long, global = true, env = playpen_api::layout::env::CLI_PACKAGE)]
    pub cli_package: Option<PathBuf>,
    /// Where the exporter reads the export credentials (the Secret's mount).
    #[arg(long, global = true, env = "PLAYPEN_EXPORT_CREDENTIALS_DIR", default_value = playpen_api::layout::EXPORT_CREDENTIALS_DIR)]
    pub export_credentials_dir: PathBuf,
    /// Where the termination message is written.
    #[arg(long, global = true, env = "PLAYPEN_TERMINATION_LOG", default_value = TERMINATION_MESSAGE_PATH)]
    pub termination_log: PathBuf,
    /// Time allowed for a graceful close on SIGTERM (keep it under the Pod's grace period).
    #[arg(long, global = true, env = "PLAYPEN_GRACE_SECONDS", default_value_t = 25)]
    pub grace_seconds: u64,
    /// How often snapshot retention runs.
    #[arg(long, global = true, env = "PLAYPEN_RETENTION_INTERVAL_SECONDS", default_value_t = 30)]
    pub retention_interval_seconds: u64,
    /// Snapshots younger than this are never pruned (the CLI may still write them).
    #[arg(long, global = true, env = "PLAYPEN_RETENTION_GRACE_SECONDS", default_value_t = 10)]
    pub retention_grace_seconds: u64,
    /// When the viewer's dashboard runs.
    #[arg(long, global = true, env = "PLAYPEN_VIEWER_DASHBOARD", value_enum, default_value_t = ViewerDashboard::OnDemand)]
    pub viewer_dashboard: ViewerDashboard,
    /// How long an on-demand dashboard stays up once no viewer connection is open.
    #[arg(long, global = true, env = "PLAYPEN_VIEWER_DASHBOARD_IDLE_SECONDS", default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub viewer_dashboard_idle_seconds: u64,
    /// The Pod's IP address (the downward API sets it): the readiness
    /// endpoint listens there, on the fixed readiness port.
    #[arg(long, global = true, env = env::POD_IP)]
    pub pod_ip: Option<IpAddr>,
    /// Where the readiness endpoint listens, overriding `--pod-ip` (runtimes
    /// run side by side outside a Pod, as the tests do, each take their own).
    #[arg(long, global = true, env = "PLAYPEN_READINESS_ADDR")]
    pub readiness_addr: Option<SocketAddr>,
    /// The bearer token `POST /suspend` must carry (the launch-config
    /// Secret's key); suspend is not offered while the file is absent.
    #[arg(long, global = true, env = "PLAYPEN_CONTROL_TOKEN", default_value_t = default_control_token_path())]
    pub control_token: String,
}

/// When the viewer's dashboard (a Node process of about 138 MB) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ViewerDashboard {
    /// From a viewer's first connection until none has been open for the idle period.
    OnDemand,
    /// From start-up on, whether or not anyone views (the earlier behaviour).
    Eager,
}

fn default_control_token_path() -> String {
    format!("{LAUNCH_CONFIG_DIR}/{CONTROL_TOKEN_FILE}")
}

fn default_config_path() -> String {
    format!("{RUNTIME_CONFIG_DIR}/{RUNTIME_CONFIG_KEY}")
}

impl Options {
    /// The SIGTERM budget.
    pub fn grace(&self) -> Duration {
        Duration::from_secs(self.grace_seconds)
    }

    /// How long an on-demand dashboard outlives its last viewer connection.
    pub fn viewer_dashboard_idle(&self) -> Duration {
        Duration::from_secs(self.viewer_dashboard_idle_seconds)
    }

    /// Where the readiness endpoint listens: `--readiness-addr`, else the
    /// Pod's address, else every address (a Pod built by an operator that
    /// does not pass the Pod's address).
    pub fn readiness_addr(&self) -> SocketAddr {
        self.readiness_addr.unwrap_or_else(|| {
            SocketAddr::new(self.pod_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), READINESS_PORT)
        })
    }

    /// How often the mutable policy (retention, lifetime) is re-read and applied.
    pub fn retention_interval(&self) -> Duration {
        Duration::from_secs(self.retention_interval_seconds.max(1))
    }
}

/// Reads and checks `runtime.json`.
pub fn load(path: &Path) -> Result<RuntimeConfig, Fatal> {
    let fail = |message: String| Fatal::Config { path: path.to_owned(), message };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let config: RuntimeConfig = serde_json::from_str(&text).map_err(|e| fail(format!("invalid JSON: {e}")))?;
    validate(&config).map_err(fail)?;
    Ok(config)
}

/// Checks what serde cannot: absolute paths and sane numbers. The session
/// name's length is left to the socket budget check, which names the limit.
pub fn validate(config: &RuntimeConfig) -> Result<(), String> {
    let name = &config.session_name;
    let name_ok = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'));
    if !name_ok {
        return Err(format!(
            "sessionName {name:?} must start with a lowercase letter or digit and hold only [a-z0-9._-]"
        ));
    }
    for (field, value) in [
        ("socketsDir", &config.sockets_dir),
        ("daemonSessionDir", &config.daemon_session_dir),
        ("launchConfig", &config.launch_config),
        ("outputDir", &config.output_dir),
    ] {
        if !Path::new(value).is_absolute() {
            return Err(format!("{field} must be an absolute path, got {value:?}"));
        }
    }
    if config.sockets_dir == config.daemon_session_dir {
        return Err("socketsDir and daemonSessionDir must differ".into());
    }
    if config.snapshot_max_count < 1 {
        return Err(format!("snapshotMaxCount must be at least 1, got {}", config.snapshot_max_count));
    }
    if config.snapshot_max_age_seconds < 1 {
        return Err(format!("snapshotMaxAgeSeconds must be at least 1, got {}", config.snapshot_max_age_seconds));
    }
    if config.viewer_port == Some(0) {
        return Err("viewerPort must be a fixed port, not 0".into());
    }
    Ok(())
}

/// Variables passed through from the runtime's own environment to its
/// children when set. Everything else (tokens, the runtime's own settings)
/// stays out of their processes.
const PASS_THROUGH: &[&str] =
    &["PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "PLAYWRIGHT_BROWSERS_PATH", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"];

/// The environment of every child (daemon, dashboard, `close`): the session's
/// own variables from `config`, `HOME`, and the pass-through list.
pub fn child_env(
    config: &RuntimeConfig,
    home: &Path,
    inherited: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> =
        PASS_THROUGH.iter().filter_map(|name| inherited(name).map(|value| ((*name).to_owned(), value))).collect();
    if !vars.iter().any(|(name, _)| name == "PATH") {
        vars.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    vars.extend([
        ("HOME".to_owned(), home.display().to_string()),
        (env::CLI_SESSION.to_owned(), config.session_name.clone()),
        (env::SOCKETS_DIR.to_owned(), config.sockets_dir.clone()),
        (env::DAEMON_SESSION_DIR.to_owned(), config.daemon_session_dir.clone()),
        (env::MCP_CONFIG.to_owned(), config.launch_config.clone()),
        (env::MCP_OUTPUT_DIR.to_owned(), config.output_dir.clone()),
        // The CLI otherwise asks the npm registry for a newer version.
        ("NO_UPDATE_NOTIFIER".to_owned(), "1".to_owned()),
    ]);
    vars
}

/// Resolves a program name on `path_var` the way `execvp` would; a name with
/// a slash is taken as a path.
pub fn which(program: &str, path_var: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    path_var.split(':').filter(|dir| !dir.is_empty()).map(|dir| Path::new(dir).join(program)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use playpen_api::v1alpha1::SandboxMode;

    pub(crate) fn sample() -> RuntimeConfig {
        RuntimeConfig {
            session_name: "demo".into(),
            sockets_dir: "/var/lib/playpen/pw/1a2b3c4d/s".into(),
            daemon_session_dir: "/var/lib/playpen/pw/1a2b3c4d/d".into(),
            launch_config: "/etc/playpen/launch/config.json".into(),
            output_dir: "/var/lib/playpen/snapshots".into(),
            sandbox: SandboxMode::Enforced,
            viewer_port: Some(9323),
            cdp_port: None,
            snapshot_max_age_seconds: 3600,
            snapshot_max_count: 500,
            snapshot_volume_bytes: Some(1 << 30),
            snapshot_max_total_bytes: None,
            idle_timeout_seconds: None,
            max_lifetime_seconds: None,
            session_started_at: None,
            auth_state_file: None,
            resume_state_file: None,
            record_video: false,
            record_trace: false,
            video_segment_seconds: None,
            warm: false,
            egress_hosts: None,
            recording_export: None,
        }
    }

    #[test]
    fn the_example_in_the_session_contract_loads_with_its_egress_hosts() {
        let doc = include_str!("../../../docs/session-contract.md");
        let example = doc.split("## runtime.json\n\n```json\n").nth(1).and_then(|rest| rest.split("```").next());
        let config: RuntimeConfig = serde_json::from_str(example.expect("the example")).expect("the example parses");
        assert_eq!(validate(&config), Ok(()));
        let (rules, floor) = config.egress_hosts.expect("egressHosts").parse().expect("enforceable");
        assert_eq!((rules.allow.len(), rules.deny.len(), floor.allowed.len(), floor.denied.len()), (2, 1, 1, 9));
    }

    #[test]
    fn the_suspend_subcommands_are_the_names_playpen_api_gives_them() {
        use clap::CommandFactory;
        let cli = Cli::command();
        for name in [playpen_api::suspend::SUSPEND_SUBCOMMAND, playpen_api::suspend::RESUME_SUBCOMMAND] {
            assert!(cli.find_subcommand(name).is_some(), "no subcommand {name}");
        }
    }

    #[test]
    fn the_documented_example_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime.json");
        let doc = r#"{"sessionName":"demo","socketsDir":"/var/lib/playpen/pw/1a2b3c4d/s",
            "daemonSessionDir":"/var/lib/playpen/pw/1a2b3c4d/d","launchConfig":"/etc/playpen/launch/config.json",
            "outputDir":"/var/lib/playpen/snapshots","sandbox":"Enforced","viewerPort":9323,
            "snapshotMaxAgeSeconds":3600,"snapshotMaxCount":500,"idleTimeoutSeconds":900,
            "maxLifetimeSeconds":14400,"authStateFile":"/etc/playpen/auth/state.json"}"#;
        std::fs::write(&path, doc).unwrap();
        let config = load(&path).unwrap();
        assert_eq!(config.session_name, "demo");
        assert_eq!(config.viewer_port, Some(9323));
    }

    #[test]
    fn unreadable_unknown_and_relative_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = load(&dir.path().join("nope.json")).unwrap_err();
        assert_eq!(missing.reason(), "RuntimeConfigInvalid");
        assert!(missing.to_string().contains("cannot read it"));

        let path = dir.path().join("runtime.json");
        let mut value = serde_json::to_value(sample()).unwrap();
        value["surprise"] = serde_json::json!(1);
        std::fs::write(&path, value.to_string()).unwrap();
        assert!(load(&path).unwrap_err().to_string().contains("unknown field `surprise`"));

        let mut relative = sample();
        relative.output_dir = "snapshots".into();
        assert!(validate(&relative).unwrap_err().contains("outputDir must be an absolute path"));
    }

    #[test]
    fn bad_names_and_numbers_are_refused() {
        for name in ["", "Demo", "-x", "a b", "a/b"] {
            let mut c = sample();
            c.session_name = name.into();
            assert!(validate(&c).unwrap_err().contains("sessionName"), "{name:?}");
        }
        let mut c = sample();
        c.snapshot_max_count = 0;
        assert!(validate(&c).is_err());
        let mut c = sample();
        c.snapshot_max_age_seconds = 0;
        assert!(validate(&c).is_err());
        let mut c = sample();
        c.viewer_port = Some(0);
        assert!(validate(&c).is_err());
        let mut c = sample();
        c.daemon_session_dir = c.sockets_dir.clone();
        assert!(validate(&c).is_err());
        // Length is the budget check's business, not the name rule's.
        let mut c = sample();
        c.session_name = "a".repeat(80);
        assert!(validate(&c).is_ok());
    }

    #[test]
    fn children_get_the_session_env_and_nothing_secret() {
        let inherited = |name: &str| match name {
            "PATH" => Some("/opt/bin:/usr/bin".to_owned()),
            "AWS_SECRET_ACCESS_KEY" | "KUBERNETES_SERVICE_HOST" => Some("secret".to_owned()),
            _ => None,
        };
        let vars = child_env(&sample(), Path::new("/var/lib/playpen/home"), inherited);
        let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some("/opt/bin:/usr/bin"));
        assert_eq!(get("HOME"), Some("/var/lib/playpen/home"));
        assert_eq!(get("PLAYWRIGHT_CLI_SESSION"), Some("demo"));
        assert_eq!(get("PWTEST_SOCKETS_DIR"), Some("/var/lib/playpen/pw/1a2b3c4d/s"));
        assert_eq!(get("PWTEST_DAEMON_SESSION_DIR"), Some("/var/lib/playpen/pw/1a2b3c4d/d"));
        assert_eq!(get("PLAYWRIGHT_MCP_CONFIG"), Some("/etc/playpen/launch/config.json"));
        assert_eq!(get("PLAYWRIGHT_MCP_OUTPUT_DIR"), Some("/var/lib/playpen/snapshots"));
        assert_eq!(get("AWS_SECRET_ACCESS_KEY"), None);
        assert_eq!(get("KUBERNETES_SERVICE_HOST"), None);
        assert_eq!(get(env::RUNTIME_CONFIG), None);
    }

    #[test]
    fn the_dashboard_runs_on_demand_unless_told_otherwise() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["playpen-session", "run"], args].concat());
        let defaults = parse(&[]).unwrap().options;
        assert_eq!(defaults.viewer_dashboard, ViewerDashboard::OnDemand);
        assert_eq!(defaults.viewer_dashboard_idle(), Duration::from_secs(300));
        let eager = parse(&["--viewer-dashboard", "eager", "--viewer-dashboard-idle-seconds", "5"]).unwrap().options;
        assert_eq!(eager.viewer_dashboard, ViewerDashboard::Eager);
        assert_eq!(eager.viewer_dashboard_idle(), Duration::from_secs(5));
        assert!(parse(&["--viewer-dashboard", "never"]).is_err());
        assert!(
            parse(&["--viewer-dashboard-idle-seconds", "0"]).is_err(),
            "0 would stop it between a page's request and its WebSocket"
        );
    }

    #[test]
    fn path_gets_a_default_when_unset() {
        let vars = child_env(&sample(), Path::new("/h"), |_| None);
        assert!(vars.iter().any(|(k, v)| k == "PATH" && v.contains("/usr/bin")));
    }

    #[test]
    fn which_finds_executables_only() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::write(dir.path().join("plain"), "").unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let path_var = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(which("tool", &path_var), Some(exe));
        assert_eq!(which("plain", &path_var), None);
        assert_eq!(which("/abs/x", ""), Some(PathBuf::from("/abs/x")));
    }
}
