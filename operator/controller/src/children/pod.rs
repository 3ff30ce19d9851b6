//! The browser Pod: `playpen-session` as PID 1 of the browser container,
//! the session's environment, its volumes, and a restricted security context.

use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, HostAlias, KeyToPath, ObjectFieldSelector, PersistentVolumeClaimVolumeSource, Pod,
    PodSecurityContext, PodSpec, Probe, ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use playpen_api::layout::{
    daemon_session_dir, env, sockets_dir, AUTH_STATE_DIR, AUTH_STATE_FILE, DATA_HOME, HOME_DIR, LAUNCH_CONFIG_DIR,
    PROFILE_DIR, READINESS_PATH, READINESS_PORT, READINESS_PROBE_TIMEOUT_SECONDS, RUNTIME_CONFIG_DIR,
    RUNTIME_CONFIG_KEY, SESSION_RUNTIME_BIN, SNAPSHOT_DIR, TERMINATION_MESSAGE_PATH, TMP_DIR,
};
use playpen_api::v1alpha1::{self, SandboxMode, DEFAULT_SHM_SIZE, DEFAULT_SNAPSHOT_SIZE_LIMIT};
use playpen_api::BrowserSession;

use super::labels::{child_meta, COMPONENT_BROWSER};
use super::network::pinned_ports;
use super::resources::browser_resources;
use super::runtime::launch_config_path;
use super::Identity;
use super::Settings;

/// Localhost seccomp profile (relative to the kubelet's seccomp root) that
/// allows the namespace syscalls Chromium's sandbox needs. The chart's
/// optional DaemonSet installs it.
pub const DEFAULT_SECCOMP_PROFILE: &str = "playpen/chromium.json";
/// Name of the browser container.
pub const BROWSER_CONTAINER: &str = "browser";
/// Name of the agent sidecar container.
pub const AGENT_CONTAINER: &str = "agent";
/// Name of the browser container's readiness port.
pub const READINESS_PORT_NAME: &str = "readiness";

/// Which seccomp profile an Enforced-sandbox Pod gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeccompChoice {
    /// `Localhost` with this profile path (the recommended choice).
    Localhost(String),
    /// `Unconfined`: for nodes without the profile; weaker.
    Unconfined,
    /// `RuntimeDefault`: only where the runtime's default allows user namespaces.
    RuntimeDefault,
}

impl SeccompChoice {
    /// Parses `localhost/<path>`, `unconfined` or `runtime-default`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "unconfined" => Ok(Self::Unconfined),
            "runtime-default" => Ok(Self::RuntimeDefault),
            other => match other.strip_prefix("localhost/") {
                Some(path) if !path.is_empty() => Ok(Self::Localhost(path.to_owned())),
                _ => Err(format!(
                    "unknown seccomp choice {other:?}: use localhost/<path>, unconfined or runtime-default"
                )),
            },
        }
    }

    fn profile(&self) -> SeccompProfile {
        match self {
            Self::Localhost(path) => {
                SeccompProfile { type_: "Localhost".into(), localhost_profile: Some(path.clone()) }
            }
            Self::Unconfined => SeccompProfile { type_: "Unconfined".into(), localhost_profile: None },
            Self::RuntimeDefault => runtime_default(),
        }
    }
}

/// The seccomp choice of an Enforced session: its RuntimeClass's where the
/// settings name one, the operator's otherwise.
pub fn enforced_seccomp<'a>(bs: &'a BrowserSession, settings: &'a Settings) -> &'a SeccompChoice {
    runtime_class(bs, settings)
        .and_then(|name| settings.seccomp_by_runtime_class.get(name))
        .unwrap_or(&settings.enforced_seccomp)
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }
}

fn env_var(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.into(), value: Some(value.into()), ..EnvVar::default() }
}

/// The environment that makes a plain `playwright-cli <verb>` reach this
/// session, shared by the browser container and the agent sidecar.
pub fn session_env(bs: &BrowserSession, id: &Identity) -> Vec<EnvVar> {
    vec![
        env_var(env::CLI_SESSION, &id.session_name),
        env_var(env::SOCKETS_DIR, sockets_dir(DATA_HOME, &id.socket_namespace)),
        env_var(env::DAEMON_SESSION_DIR, daemon_session_dir(DATA_HOME, &id.socket_namespace)),
        env_var(env::MCP_CONFIG, launch_config_path(bs)),
        env_var(env::MCP_OUTPUT_DIR, SNAPSHOT_DIR),
        env_var(env::RUNTIME_CONFIG, format!("{RUNTIME_CONFIG_DIR}/{RUNTIME_CONFIG_KEY}")),
        env_var(env::HOME, HOME_DIR),
        env_var(env::TMPDIR, TMP_DIR),
        // The Node CLI's daily npm check: no network to ask, and no notice
        // an agent has to parse around (the runtime's children set it too).
        env_var("NO_UPDATE_NOTIFIER", "1"),
    ]
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

fn empty_dir(name: &str, medium: Option<&str>, size: Option<Quantity>) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource { medium: medium.map(Into::into), size_limit: size }),
        ..Volume::default()
    }
}

fn claim(name: &str, claim_name: &str) -> Volume {
    Volume {
        name: name.into(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim_name.into(),
            read_only: None,
        }),
        ..Volume::default()
    }
}

fn secret_volume(name: &str, secret: &str, items: Option<Vec<KeyToPath>>, mode: i32) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.into()),
            items,
            default_mode: Some(mode),
            optional: Some(false),
        }),
        ..Volume::default()
    }
}

/// Volumes, the browser container's mounts and the agent's. The agent gets
/// the browser's mounts minus the launch config (a user's may carry proxy
/// credentials; a client of a running session never reads it), the auth
/// state and the profile (the browser owns those).
fn volumes(bs: &BrowserSession, id: &Identity) -> (Vec<Volume>, Vec<VolumeMount>, Vec<VolumeMount>) {
    let spec = &bs.spec;
    let shm =
        spec.browser.pod.as_ref().and_then(|p| p.shm_size.clone()).unwrap_or_else(|| Quantity(DEFAULT_SHM_SIZE.into()));
    let launch_secret =
        spec.browser.launch_config.secret_ref.as_ref().map_or(id.names.launch_secret.as_str(), |r| r.name.as_str());
    let mut vols = vec![
        empty_dir("data-home", None, None),
        empty_dir("tmp", None, None),
        empty_dir("dshm", Some("Memory"), Some(shm)),
        // 0440: the runtime reads it through its group; nothing else needs to.
        super::suspend::launch_config_volume("launch-config", launch_secret, id, 0o440),
        Volume {
            name: "runtime-config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: id.names.runtime_config.clone(),
                default_mode: Some(0o444),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    let snapshots = &spec.browser.snapshots.volume;
    vols.push(match &snapshots.persistent_volume_claim {
        Some(c) => claim("snapshots", c.claim_name.as_deref().unwrap_or(&id.names.snapshot_claim)),
        None => empty_dir(
            "snapshots",
            None,
            Some(
                snapshots
                    .empty_dir
                    .as_ref()
                    .and_then(|e| e.size_limit.clone())
                    .unwrap_or_else(|| Quantity(DEFAULT_SNAPSHOT_SIZE_LIMIT.into())),
            ),
        ),
    });
    let shared = vec![
        mount("data-home", DATA_HOME, false),
        mount("tmp", "/tmp", false),
        mount("runtime-config", RUNTIME_CONFIG_DIR, true),
        mount("snapshots", SNAPSHOT_DIR, false),
    ];
    let mut browser = shared.clone();
    browser.push(mount("launch-config", LAUNCH_CONFIG_DIR, true));
    browser.push(mount("dshm", "/dev/shm", false));
    if let Some(auth) = &spec.auth_state {
        let key = auth.secret_ref.key.clone().unwrap_or_else(|| AUTH_STATE_FILE.to_owned());
        // Group-readable through fsGroup only; the runtime copies it into its
        // 0700 namespace (0600) for `state-load` and removes the copy after.
        let items = vec![KeyToPath { key, path: AUTH_STATE_FILE.into(), mode: Some(0o440) }];
        vols.push(secret_volume("auth-state", &auth.secret_ref.name, Some(items), 0o440));
        browser.push(mount("auth-state", AUTH_STATE_DIR, true));
    }
    if let Some((volume, mount)) = super::suspend::resume_volume(bs, 0o440) {
        vols.push(volume);
        browser.push(mount);
    }
    if let Some(profile) = &spec.profile {
        vols.push(claim("profile", &profile.claim_name));
        browser.push(mount("profile", PROFILE_DIR, false));
    }
    (vols, browser, shared)
}

/// How often the kubelet asks while the browser starts.
const STARTUP_PROBE_PERIOD_SECONDS: i32 = 2;
/// Start-up probes failed before the kubelet would restart the container: an hour.
const STARTUP_PROBE_FAILURES: i32 = 1800;
/// How often the kubelet asks once the browser is up: an in-place restart
/// shows in the status within this.
const READINESS_PROBE_PERIOD_SECONDS: i32 = 10;

/// `GET /readyz` on the runtime's readiness port, every `period` seconds.
fn readiness_probe(period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(READINESS_PATH.into()),
            port: IntOrString::Int(i32::from(READINESS_PORT)),
            scheme: Some("HTTP".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        // The runtime holds a probe until the first success (within this), so a
        // fresh browser is Ready when it is, not at the next period.
        timeout_seconds: Some(READINESS_PROBE_TIMEOUT_SECONDS),
        ..Probe::default()
    }
}

fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        privileged: Some(false),
        capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), add: None }),
        ..SecurityContext::default()
    }
}

/// The browser Pod of `bs`.
/// The RuntimeClass `bs`'s browser Pod runs under: the session's (or its
/// pool template's) own, else the operator's default (chart value
/// `sessions.runtimeClassName`), else none (the cluster's default runtime).
pub fn runtime_class<'a>(bs: &'a BrowserSession, settings: &'a Settings) -> Option<&'a str> {
    own_runtime_class(bs).or(settings.runtime_class.as_deref().filter(|name| !name.is_empty()))
}

/// The RuntimeClass `bs`'s spec names itself (`spec.pod.runtimeClassName`).
pub fn own_runtime_class(bs: &BrowserSession) -> Option<&str> {
    let pod = bs.spec.browser.pod.as_ref()?;
    pod.runtime_class_name.as_deref().filter(|name| !name.is_empty())
}

pub fn pod(bs: &BrowserSession, id: &Identity, settings: &Settings) -> Pod {
    let spec = &bs.spec;
    let pod_settings = spec.browser.pod.clone().unwrap_or_default();
    let (volumes, browser_mounts, agent_mounts) = volumes(bs, id);
    let env = session_env(bs, id);
    // The readiness endpoint listens on the Pod's address; the agent does
    // not need it. A live-ready Pod's listens on every address: restored
    // into a new Pod, it must answer on that Pod's.
    let live_ready = super::live::not_live_ready(bs, runtime_class(bs, settings), settings).is_none();
    let mut browser_env = env.clone();
    if !live_ready {
        browser_env.push(EnvVar {
            name: env::POD_IP.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector { field_path: "status.podIP".into(), api_version: None }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        });
    }
    let pull_policy = spec.browser.image_pull_policy.map(|p| p.as_str().to_owned());
    let seccomp = match spec.browser.sandbox {
        SandboxMode::Enforced => enforced_seccomp(bs, settings).profile(),
        SandboxMode::Disabled => runtime_default(),
    };
    let browser = Container {
        name: BROWSER_CONTAINER.into(),
        image: Some(spec.browser.image.clone()),
        image_pull_policy: pull_policy.clone(),
        command: Some(vec![SESSION_RUNTIME_BIN.into()]),
        args: Some(vec!["run".into()]),
        env: Some(browser_env),
        ports: Some(
            pinned_ports(spec)
                .into_iter()
                .chain([(READINESS_PORT_NAME, i32::from(READINESS_PORT))])
                .map(|(name, port)| ContainerPort {
                    name: Some(name.into()),
                    container_port: port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                })
                .collect::<Vec<_>>(),
        ),
        // HTTP, not exec: the kubelet asks the runtime itself, where an exec
        // probe started a process in the container every period. Often while
        // the browser starts, seldom once it is up (the kubelet probes
        // readiness at once when the start-up probe first passes).
        startup_probe: Some(Probe {
            // The runtime waits out a slow node itself: the kubelet never
            // restarts a container for starting slowly.
            failure_threshold: Some(STARTUP_PROBE_FAILURES),
            ..readiness_probe(STARTUP_PROBE_PERIOD_SECONDS)
        }),
        readiness_probe: Some(Probe {
            // One failure flips readiness: the runtime fails exactly one probe per
            // in-place browser restart, which is how the status learns of it.
            failure_threshold: Some(1),
            ..readiness_probe(READINESS_PROBE_PERIOD_SECONDS)
        }),
        resources: Some(browser_resources(&settings.browser_resources, pod_settings.resources.as_ref()))
            .filter(|r| *r != ResourceRequirements::default()),
        security_context: Some(container_security()),
        termination_message_path: Some(TERMINATION_MESSAGE_PATH.into()),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: Some(browser_mounts),
        ..Container::default()
    };
    let mut containers = vec![browser];
    if let Some(agent) = &spec.agent {
        // The session's variables win over the agent's own; the launch
        // config's path points at nothing the agent mounts, so it is not set.
        let session_vars = env.iter().filter(|e| e.name != env::MCP_CONFIG);
        let mut agent_env: Vec<EnvVar> =
            agent.env.iter().flatten().filter(|e| !env.iter().any(|s| s.name == e.name)).cloned().collect();
        agent_env.extend(session_vars.cloned());
        containers.push(Container {
            name: AGENT_CONTAINER.into(),
            image: Some(agent.image.clone()),
            image_pull_policy: pull_policy,
            command: agent.command.clone(),
            args: agent.args.clone(),
            env: Some(agent_env),
            resources: agent.resources.clone(),
            security_context: Some(container_security()),
            volume_mounts: Some(agent_mounts),
            ..Container::default()
        });
    }
    let mut volumes = volumes;
    let exporter = super::exporter::exporter(
        bs,
        spec.browser.image_pull_policy.map(|p| p.as_str().to_owned()),
        container_security(),
    );
    let init_containers = exporter.map(|(volume, container)| {
        volumes.push(volume);
        vec![container]
    });
    let service_account = pod_settings.service_account_name.clone();
    let mut pod = Pod {
        metadata: child_meta(id, &id.names.pod, COMPONENT_BROWSER),
        spec: Some(PodSpec {
            containers,
            init_containers,
            volumes: Some(volumes),
            // A finished session (idle timeout, lifetime) exits 0 and stays
            // finished; a crashed runtime is restarted by the kubelet.
            restart_policy: Some("OnFailure".into()),
            automount_service_account_token: Some(service_account.is_some()),
            service_account_name: service_account,
            enable_service_links: Some(false),
            termination_grace_period_seconds: Some(super::exporter::grace_seconds(bs)),
            image_pull_secrets: (!spec.browser.image_pull_secrets.is_empty())
                .then(|| spec.browser.image_pull_secrets.clone()),
            node_selector: pod_settings.node_selector,
            tolerations: pod_settings.tolerations,
            affinity: pod_settings.affinity,
            priority_class_name: pod_settings.priority_class_name,
            runtime_class_name: runtime_class(bs, settings).map(str::to_owned),
            host_aliases: host_aliases(&pod_settings.host_aliases),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(settings.run_as_user),
                run_as_group: Some(settings.run_as_user),
                fs_group: Some(settings.run_as_user),
                seccomp_profile: Some(seccomp),
                ..PodSecurityContext::default()
            }),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    if live_ready {
        super::live::make_live_ready(&mut pod, &["data-home", "tmp", "snapshots"], &["dshm"]);
    }
    if let Some((node, from)) = super::live::restore_from(bs) {
        super::live::restore_into(&mut pod, node, from);
    }
    pod
}

/// `spec.pod.hostAliases` as the Pod's (none: the field unset, as before).
fn host_aliases(aliases: &[v1alpha1::HostAlias]) -> Option<Vec<HostAlias>> {
    (!aliases.is_empty())
        .then(|| aliases.iter().map(|a| HostAlias { ip: a.ip.clone(), hostnames: Some(a.hostnames.clone()) }).collect())
}
