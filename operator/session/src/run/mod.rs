//! `playpen-session run`: start-up checks in order (config, socket budget
//! and namespace, CLI attribution and hooks, browser readiness, pinned
//! port), then the supervised children, retention, and the wait for SIGTERM.

pub(crate) mod browser;
pub mod expose;
pub mod policy;
pub(crate) mod process;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use playpen_api::runtime_config::{RuntimeConfig, WARM_BROWSER_TOUCHED};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch};

use crate::cli_install::{self, CoreInstall, HooksError, VerdictCache, DASHBOARD_ENTRY};
use crate::config::{child_env, load, which, Options, ViewerDashboard};
use crate::error::{exit, Fatal};
use browser::daemon::{daemon_args, AuthLoad, DaemonPlan, DaemonState};
use browser::{auth, launch_defaults, namespace, profile, readiness, recording, shutdown};
use expose::relay::{self, Waits};
use expose::{cdp, dashboard, health};
use policy::retention::{self, Policy};
use policy::{idle, pristine};
use process::reaper::{self, Managed};
use process::report::Reporter;
use process::supervisor::ChildSpec;

/// How long a daemon or dashboard start may take before it is torn down.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a viewer connection waits for a dashboard to start or restart:
/// every start is given up on (and answered 503) after [`START_TIMEOUT`].
const VIEWER_WAITS: Waits = Waits { opening: Duration::from_secs(60), upstream: START_TIMEOUT };
/// How long a CDP connection waits for the browser to launch or restart.
const CDP_WAIT: Duration = Duration::from_secs(30);

/// Runs the session; returns the process exit code.
pub async fn run(opts: Options) -> i32 {
    let reporter = Reporter::new(&opts.termination_log);
    match run_session(&opts).await {
        Ok(Ended::Closed) => exit::ENDED,
        Ok(Ended::Discarded(found)) => {
            let message = format!(
                "the warm browser was used before any session claimed it ({found}): the container starts afresh so \
                 no session gets it"
            );
            tracing::warn!(reason = WARM_BROWSER_TOUCHED, "{message}");
            reporter.write(WARM_BROWSER_TOUCHED, &message);
            exit::FATAL
        }
        Err(fatal) => {
            tracing::error!(reason = fatal.reason(), "{fatal}");
            reporter.write(fatal.reason(), &fatal.to_string());
            exit::FATAL
        }
    }
}

/// How a session's runtime ends without a fatal error.
enum Ended {
    /// The session ended (SIGTERM, idle, lifetime): the Pod may complete.
    Closed,
    /// A warm browser was used before its claim ([`pristine`]): the
    /// container must start afresh.
    Discarded(String),
}

/// Everything verified before a child starts.
struct Prepared {
    config: RuntimeConfig,
    home: PathBuf,
    launcher: PathBuf,
    node: PathBuf,
    install: CoreInstall,
    user_data_dir: Option<PathBuf>,
}

fn prepare(opts: &Options) -> Result<Prepared, Fatal> {
    let config = load(Path::new(&opts.config))?;
    namespace::prepare(&config)?;
    let path_var = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()));
    std::fs::create_dir_all(&home)
        .map_err(|e| Fatal::Config { path: home.clone(), message: format!("cannot create HOME: {e}") })?;
    let launcher = which(&opts.cli, &path_var).ok_or_else(|| HooksError::NoPackage {
        launcher: opts.cli.clone().into(),
        why: format!("not found on PATH {path_var}"),
    })?;
    let package = match &opts.cli_package {
        Some(dir) => dir.clone(),
        None => cli_install::package_of_launcher(&launcher)?,
    };
    let install = cli_install::serving_core(&package)?;
    let cache_file = Path::new(&config.sockets_dir).parent().map(|ns| ns.join("hooks-verdict.json"));
    let mut cache = cache_file.map(VerdictCache::persisted).unwrap_or_default();
    cli_install::verify(&install, &mut cache)?;
    let user_data_dir = check_browser(&config, &install, &home)?.map(PathBuf::from);
    std::fs::create_dir_all(&config.output_dir).map_err(|e| Fatal::Config {
        path: config.output_dir.clone().into(),
        message: format!("cannot create the snapshot directory: {e}"),
    })?;
    let node = which(&opts.node, &path_var)
        .ok_or_else(|| Fatal::DaemonStart(format!("the Node.js interpreter {:?} is not on PATH", opts.node)))?;
    Ok(Prepared { config, home, launcher, node, install, user_data_dir })
}

/// Checks the browser is installed; returns the persistent profile, if any.
fn check_browser(config: &RuntimeConfig, install: &CoreInstall, home: &Path) -> Result<Option<String>, Fatal> {
    let fail = |message: String| Fatal::Config { path: config.launch_config.clone().into(), message };
    let text = std::fs::read_to_string(&config.launch_config)
        .map_err(|e| fail(format!("cannot read the launch config: {e}")))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("the launch config is not JSON: {e}")))?;
    let facts = readiness::launch_facts(&json);
    let enforced = config.sandbox == playpen_api::v1alpha1::SandboxMode::Enforced;
    if facts.chromium_sandbox != Some(enforced) {
        tracing::warn!(sandbox = ?config.sandbox, chromium_sandbox = ?facts.chromium_sandbox,
            "the launch config's chromiumSandbox does not match the session's sandbox mode");
    }
    let browsers = readiness::read_browsers_json(&install.browsers_json());
    let revision = browsers.as_ref().and_then(readiness::chromium_revision);
    let cache = readiness::browsers_cache(std::env::var(playpen_api::layout::env::BROWSERS_PATH).ok().as_deref(), home);
    readiness::check(&facts, revision.as_deref(), &cache)?;
    if config.record_video {
        readiness::ffmpeg_for_video(browsers.as_ref(), &cache).map_err(|detail| Fatal::RecordingUnavailable {
            what: "video",
            verb: "the start-up check".into(),
            detail,
        })?;
    }
    Ok(facts.user_data_dir)
}

async fn run_session(opts: &Options) -> Result<Ended, Fatal> {
    reaper::become_subreaper();
    // Installed first: a SIGTERM must never meet the default action once a child may exist.
    let mut sigterm =
        signal(SignalKind::terminate()).map_err(|e| Fatal::DaemonStart(format!("SIGTERM handler: {e}")))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| Fatal::DaemonStart(format!("SIGINT handler: {e}")))?;
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "runtime started");
    // First: the kubelet's first probe is held, not refused, while the checks run.
    let (tell_readiness, readiness_config) = watch::channel(None);
    tokio::spawn(health::serve(health::bind_at(opts.readiness_addr())?, readiness_config));
    let prepared = prepare(opts)?;
    let config = &prepared.config;
    // A replacement Pod or a restarted container of a session whose lifetime
    // is over: the session ended; starting a browser to close it helps no one.
    if lifetime_left(config.session_started(), config.max_lifetime_seconds, SystemTime::now(), SystemTime::now())
        .is_some_and(|left| left.is_zero())
    {
        tracing::info!("maximum lifetime reached before this start: the session ended");
        return Ok(Ended::Closed);
    }
    if config.warm {
        // What an earlier container of this warm Pod left (it was used, and
        // exited for it) is no session's.
        pristine::empty_dir(Path::new(&config.output_dir));
    }
    tracing::info!(session = %config.session_name, "start-up checks passed");
    // Claimed before any child starts, and held until the process exits.
    let listener = config.viewer_port.map(relay::bind_pinned).transpose()?;
    let cdp_listener = config
        .cdp_port
        .map(|port| relay::bind_loopback(port).map_err(|source| Fatal::CdpPortTaken { port, source }))
        .transpose()?;
    let mut config = config.clone();
    let mut user_data_dir = prepared.user_data_dir.clone();
    let defaults = Path::new(playpen_api::layout::LAUNCH_DEFAULTS);
    if let Some(derived) = launch_defaults::write(Path::new(&config.launch_config), defaults, &std::env::temp_dir())
        .map_err(|message| Fatal::Config { path: config.launch_config.clone().into(), message })?
    {
        tracing::info!(config = %derived.display(), "the image's default browser arguments added to the launch config");
        config.launch_config = derived.display().to_string();
    }
    if config.cdp_port.is_some() {
        let derived = cdp::launch::write(Path::new(&config.launch_config), &std::env::temp_dir())
            .map_err(|message| Fatal::Config { path: config.launch_config.clone().into(), message })?;
        config.launch_config = derived.config.display().to_string();
        user_data_dir = Some(derived.user_data_dir);
    }
    let config = &config;
    let env = child_env(config, &prepared.home, |name| std::env::var(name).ok());
    let spec = |name, program: &Path, args| ChildSpec {
        name,
        program: program.to_owned(),
        args,
        env: env.clone(),
        cwd: prepared.home.clone(),
    };
    let entry = prepared.install.daemon_entry().display().to_string();
    // Always planned: a warm Pod's state file appears when a session with
    // auth state claims it, and a restarted daemon must load it again.
    let auth = {
        let copy = profile::auth_copy_path(Path::new(&config.sockets_dir));
        let command = spec("state-load", &prepared.launcher, profile::state_load_args(&config.session_name, &copy));
        let source = config.auth_state_file.clone().unwrap_or_else(auth::delivered_path);
        Some(AuthLoad { source: source.into(), required: config.auth_state_file.is_some(), copy, command })
    };
    let follower = auth.clone();
    let recorder = (config.record_video || config.record_trace).then(|| recording::Recorder {
        video: config.record_video,
        trace: config.record_trace,
        dir: recording::dir(Path::new(&config.output_dir)),
        session: config.session_name.clone(),
        cli: spec("recording", &prepared.launcher, Vec::new()),
    });
    if let Some(recorder) = &recorder {
        recorder.prepare(Path::new(&config.output_dir)).map_err(|e| Fatal::Config {
            path: config.output_dir.clone().into(),
            message: format!("cannot prepare the recordings directory: {e}"),
        })?;
    }
    let plan = DaemonPlan {
        recorder: recorder.clone(),
        spec: spec("daemon", &prepared.node, daemon_args(&entry, &config.session_name)),
        start_timeout: START_TIMEOUT,
        user_data_dir,
        auth,
        restart_record: crate::restarts::record_dir(&config.sockets_dir),
        session: config.session_name.clone(),
    };
    // The namespace is an emptyDir that outlives a container restart: a note
    // from the last container's agent must not let the probe pass before this
    // runtime's daemon is up.
    if let Some(dir) = &plan.restart_record {
        crate::agent_close::clear(dir);
    }
    let close_spec = spec("close", &prepared.launcher, shutdown::close_args(&config.session_name));

    let managed = Managed::default();
    tokio::spawn(reaper::run(managed.clone()));
    tell_readiness.send_replace(Some(config.clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (state_tx, state_rx) = watch::channel(DaemonState::Starting);
    let (exited_tx, _exited_rx) = mpsc::unbounded_channel();
    let mut daemon_task =
        tokio::spawn(browser::daemon::supervise(plan, managed.clone(), state_tx, stop_rx.clone(), exited_tx));
    if let Some(load) = follower {
        tokio::spawn(auth::follow(opts.config.clone().into(), load, managed.clone(), state_rx.clone()));
    }
    let mut dashboard_task = None;
    // Open viewer connections: someone watching or driving counts as use.
    let viewers = Arc::new(AtomicUsize::new(0));
    if let Some(listener) = listener {
        let (publisher, upstream) = relay::upstream::channel();
        tokio::spawn(relay::serve(listener, upstream, VIEWER_WAITS, viewers.clone()));
        let dashboard_entry = prepared.install.core.join(DASHBOARD_ENTRY).display().to_string();
        let show = spec("dashboard", &prepared.node, dashboard::dashboard_args(&dashboard_entry, &config.session_name));
        let mode = match opts.viewer_dashboard {
            ViewerDashboard::Eager => dashboard::Mode::Eager,
            ViewerDashboard::OnDemand => dashboard::Mode::OnDemand { idle: opts.viewer_dashboard_idle() },
        };
        tracing::info!(?mode, "viewer dashboard");
        dashboard_task = Some(tokio::spawn(dashboard::supervise(
            show,
            START_TIMEOUT,
            mode,
            managed.clone(),
            publisher,
            stop_rx.clone(),
        )));
    }
    if let Some(listener) = cdp_listener {
        let browser = Arc::new(cdp::SessionBrowser {
            runtime_pid: std::process::id(),
            open: spec("tab-list", &prepared.launcher, vec![format!("-s={}", config.session_name), "tab-list".into()]),
            managed: managed.clone(),
            launching: tokio::sync::Mutex::default(),
        });
        // A client may wait for a first launch: Chromium starts in 1.4–2.1 s on 2 cores.
        tokio::spawn(cdp::serve(listener, browser, CDP_WAIT, viewers.clone()));
    }
    let mut retention_task = tokio::spawn(retain(opts.config.clone().into(), config.clone(), opts.clone()));
    let guard = warm_guard(config, opts, &managed, state_rx.clone(), viewers.clone());
    let idle = idle_reached(config, opts, state_rx.clone(), viewers);

    let lifetime = lifetime_reached(opts.config.clone().into(), config.clone(), opts.retention_interval());
    let mut discarded = None;
    let fatal = tokio::select! {
        joined = &mut daemon_task => match joined {
            Ok(Ok(())) => { tracing::info!("the session ended"); None }
            Ok(Err(fatal)) => Some(fatal),
            Err(join) => Some(Fatal::DaemonStart(format!("the daemon supervisor failed: {join}"))),
        },
        _ = sigterm.recv() => { tracing::info!("SIGTERM: closing the session"); None }
        _ = sigint.recv() => { tracing::info!("SIGINT: closing the session"); None }
        () = lifetime => { tracing::info!("maximum lifetime reached: closing the session"); None }
        full = &mut retention_task => match full {
            Ok(full) => Some(full),
            Err(join) => Some(Fatal::DaemonStart(format!("snapshot retention failed: {join}"))),
        },
        timeout = idle => {
            tracing::info!(?timeout, "idle timeout: no client used the session for that long; the session ended, closing it");
            None
        }
        found = guard => { discarded = Some(found); None }
    };
    shutdown::graceful(&close_spec, recorder.as_ref(), opts.grace(), &managed, &stop_tx, state_rx).await;
    if let Some(task) = dashboard_task {
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    match (fatal, discarded) {
        (Some(fatal), _) => Err(fatal),
        (None, Some(found)) => Ok(Ended::Discarded(found)),
        (None, None) => Ok(Ended::Closed),
    }
}

/// Resolves when a warm browser was used before its claim, with what was
/// found ([`pristine`]); never for a session's own browser, nor once a
/// warm one was claimed untouched.
fn warm_guard(
    config: &RuntimeConfig,
    opts: &Options,
    managed: &Managed,
    daemon: watch::Receiver<DaemonState>,
    viewers: Arc<AtomicUsize>,
) -> impl std::future::Future<Output = String> {
    let (uses_tx, uses) = watch::channel(tokio::time::Instant::now());
    let watching = config.warm
        && idle::watch_uses(Path::new(&config.daemon_session_dir), &config.session_name, uses_tx)
            .inspect_err(
                |err| tracing::error!(%err, "cannot watch the session directory: a warm browser is not guarded"),
            )
            .is_ok();
    let guard = pristine::Guard {
        config_path: PathBuf::from(&opts.config),
        output_dir: PathBuf::from(&config.output_dir),
        managed: managed.clone(),
        viewers,
        daemon,
        uses,
    };
    async move {
        if !watching {
            return std::future::pending().await;
        }
        pristine::watch_until_claimed(guard).await
    }
}

/// Resolves once no client has used the session for `idleTimeoutSeconds`
/// (re-read from `runtime.json` every retention interval); never when the
/// use of the session cannot be watched.
fn idle_reached(
    config: &RuntimeConfig,
    opts: &Options,
    mut daemon: watch::Receiver<DaemonState>,
    viewers: Arc<AtomicUsize>,
) -> impl std::future::Future<Output = Duration> {
    let (uses_tx, uses_rx) = watch::channel(tokio::time::Instant::now());
    let watching = match idle::watch_uses(Path::new(&config.daemon_session_dir), &config.session_name, uses_tx.clone())
    {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(%err, dir = %config.daemon_session_dir, "cannot watch the session directory: the idle timeout is not enforced");
            false
        }
    };
    // A (re)started daemon counts as use: the clock runs from when the browser is there.
    tokio::spawn(async move {
        while daemon.changed().await.is_ok() {
            if matches!(*daemon.borrow_and_update(), DaemonState::Running { .. }) {
                let _ = uses_tx.send(tokio::time::Instant::now());
            }
        }
    });
    let config_path = PathBuf::from(&opts.config);
    let sockets_dir = PathBuf::from(&config.sockets_dir);
    let session = config.session_name.clone();
    let reload = move || match load(&config_path) {
        Ok(fresh) => Some(idle::timeout_of(fresh.idle_timeout_seconds)),
        Err(err) => {
            tracing::warn!(%err, "keeping the previous idle timeout");
            None
        }
    };
    let busy = move || {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        viewers.load(Ordering::Relaxed) > 0
            || idle::in_flight(&table, &namespace::daemon_sockets(&sockets_dir, &session)) > 0
    };
    let timeout = idle::timeout_of(config.idle_timeout_seconds);
    let every = opts.retention_interval();
    async move {
        if !watching {
            return std::future::pending().await;
        }
        idle::idle_reached(timeout, every, reload, busy, uses_rx).await
    }
}

/// How long the session may still run: `max_seconds` from `started` (this
/// process's own start when unknown), at `now`. `None` is no limit.
pub fn lifetime_left(
    started: Option<SystemTime>,
    max_seconds: Option<i64>,
    process_start: SystemTime,
    now: SystemTime,
) -> Option<Duration> {
    let max = Duration::from_secs(u64::try_from(max_seconds?).ok()?);
    let ran = now.duration_since(started.unwrap_or(process_start)).unwrap_or(Duration::ZERO);
    Some(max.saturating_sub(ran))
}

/// Resolves once the session has run for `maxLifetimeSeconds` since it
/// started (`sessionStartedAt`, so a restarted container or a replacement
/// Pod does not get a fresh lifetime), re-read from `runtime.json` every
/// `every` (a ConfigMap change applies while running).
async fn lifetime_reached(config_path: PathBuf, mut config: RuntimeConfig, every: Duration) {
    let process_start = SystemTime::now();
    loop {
        let left =
            lifetime_left(config.session_started(), config.max_lifetime_seconds, process_start, SystemTime::now());
        let wake = match left {
            Some(left) if left.is_zero() => return,
            Some(left) => left.min(every),
            None => every,
        };
        tokio::time::sleep(wake).await;
        if let Ok(fresh) = load(&config_path) {
            config = fresh;
        }
    }
}

/// How long after a write the size budget is checked (writes come in bursts).
const WRITE_SETTLE: Duration = Duration::from_millis(300);

/// Prunes the snapshot volume (snapshots and recordings) at start, on a
/// schedule and soon after each write in the output directory, re-reading
/// the policy from `runtime.json` each time (the kubelet refreshes the
/// ConfigMap in place). Returns only when the volume is full of what
/// retention may not delete.
async fn retain(config_path: PathBuf, mut config: RuntimeConfig, opts: Options) -> Fatal {
    let interval = opts.retention_interval();
    let grace = Duration::from_secs(opts.retention_grace_seconds);
    let written = Arc::new(tokio::sync::Notify::new());
    if let Err(err) = retention::watch_writes(Path::new(&config.output_dir), written.clone()) {
        tracing::warn!(%err, "cannot watch the snapshot directory: the size budget is checked on the schedule only");
    }
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = written.notified() => tokio::time::sleep(WRITE_SETTLE).await,
            }
            match load(&config_path) {
                Ok(fresh) => config = fresh,
                Err(err) => tracing::warn!(%err, "keeping the previous retention policy"),
            }
        }
        let dir = PathBuf::from(&config.output_dir);
        let size = retention::size_budget(
            config.snapshot_volume_bytes,
            retention::filesystem_bytes(&dir),
            config.snapshot_max_total_bytes,
        );
        let policy = Policy {
            max_age: Duration::from_secs(u64::try_from(config.snapshot_max_age_seconds).unwrap_or(u64::MAX)),
            max_count: usize::try_from(config.snapshot_max_count).unwrap_or(usize::MAX),
            grace,
            size,
        };
        let pass_dir = dir.clone();
        match tokio::task::spawn_blocking(move || retention::prune(&pass_dir, policy)).await {
            Ok(Ok(outcome)) => {
                if outcome.deleted > 0 {
                    tracing::info!(deleted = outcome.deleted, kept_bytes = outcome.kept_bytes, "snapshot retention");
                }
                for path in &outcome.young {
                    tracing::warn!(path = %path.display(), "deleted a file still being written: it would have filled the snapshot volume");
                }
                if let (true, Some(size)) = (outcome.full, size) {
                    return Fatal::SnapshotVolumeFull {
                        dir,
                        used: outcome.kept_bytes,
                        full_at: size.full_at,
                        capacity: size.capacity,
                    };
                }
            }
            Ok(Err(err)) => tracing::warn!(%err, "snapshot retention failed"),
            Err(err) => tracing::warn!(%err, "snapshot retention task failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lifetime_left;
    use std::time::{Duration, SystemTime};

    /// `minutes` past 08:00 on some day.
    fn at(minutes: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_112_000 + minutes * 60)
    }

    #[test]
    fn the_lifetime_counts_from_the_session_start_not_the_process_start() {
        // A container restarted 50 minutes into a one-hour session has 10 minutes left, not an hour.
        assert_eq!(lifetime_left(Some(at(0)), Some(3600), at(50), at(50)), Some(Duration::from_secs(600)));
        assert_eq!(lifetime_left(Some(at(0)), Some(3600), at(50), at(70)), Some(Duration::ZERO));
    }

    #[test]
    fn without_a_start_the_process_start_counts_and_without_a_limit_nothing() {
        let now = at(0) + Duration::from_secs(30);
        assert_eq!(lifetime_left(None, Some(60), at(0), now), Some(Duration::from_secs(30)));
        assert_eq!(lifetime_left(Some(at(0)), None, at(0), now), None);
        assert_eq!(lifetime_left(None, Some(-5), at(0), now), None, "admission refuses it; the runtime ignores it");
        // A start in the future (clock skew) leaves the whole lifetime.
        assert_eq!(lifetime_left(Some(at(60)), Some(60), at(0), now), Some(Duration::from_secs(60)));
    }
}
