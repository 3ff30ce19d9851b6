//! `playpen-session run`: the container's entrypoint, wiring four rooms.
//! [`process`] is PID 1's plumbing (children, orphans, output, the
//! termination message); [`browser`] the browser itself (start-up checks,
//! the supervised daemon, its launch config, profile, recordings and close);
//! [`expose`] what the Pod serves (the viewer relay and its dashboard, the
//! CDP endpoint, `/readyz`); [`policy`] what ends the session (idle
//! timeout, lifetime, retention's full volume, a warm browser used before
//! its claim). [`run`] checks in order (config, socket budget and namespace,
//! CLI attribution and hooks, browser readiness, pinned ports), starts the
//! children, and waits for the first of SIGTERM, a policy's end or a fatal
//! error, then closes gracefully.

pub(crate) mod browser;
pub mod expose;
pub mod policy;
pub(crate) mod process;
pub mod suspend;

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use playpen_api::runtime_config::{HOST_RULES_ADDED, WARM_BROWSER_TOUCHED};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch};

use crate::cli_install::DASHBOARD_ENTRY;
use crate::config::{child_env, Options, ViewerDashboard};
use crate::error::{exit, Fatal};
use browser::daemon::{daemon_args, AuthLoad, DaemonPlan, DaemonState};
use browser::{auth, launch_defaults, prepare, profile, recording, shutdown};
use expose::relay::{self, Waits};
use expose::{cdp, dashboard, egress_proxy, health};
use policy::retention;
use policy::{host_rules_added, idle, lifetime, pristine};
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
        Ok(Ended::Relaunch) => {
            let message = "host rules now apply to this session's egress, and the browser was launched without \
                           its egress proxy: the container starts afresh, behind the proxy";
            tracing::warn!(reason = HOST_RULES_ADDED, "{message}");
            reporter.write(HOST_RULES_ADDED, message);
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
    /// Host rules were added to a browser launched without the egress
    /// proxy ([`policy::host_rules_added`]): the container must start afresh.
    Relaunch,
}

async fn run_session(opts: &Options) -> Result<Ended, Fatal> {
    reaper::become_subreaper();
    // Installed first: a SIGTERM must never meet the default action once a child may exist.
    let mut sigterm =
        signal(SignalKind::terminate()).map_err(|e| Fatal::DaemonStart(format!("SIGTERM handler: {e}")))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| Fatal::DaemonStart(format!("SIGINT handler: {e}")))?;
    // `playpen-session rotate` asks for a video rotation now with SIGUSR1.
    let rotate_now = Arc::new(tokio::sync::Notify::new());
    browser::segments::rotate_on_sigusr1(rotate_now.clone())
        .map_err(|e| Fatal::DaemonStart(format!("SIGUSR1 handler: {e}")))?;
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "runtime started");
    // First: the kubelet's first probe is held, not refused, while the checks run.
    let (tell_readiness, readiness_config) = watch::channel(None);
    let tally = Arc::new(egress_proxy::Tally::default());
    // A reopen through POST /resume is a use of the session for the idle clock.
    let (resumed, resumes) = watch::channel(tokio::time::Instant::now());
    let control = Arc::new(expose::control::Control::new(&opts.control_token, resumed).with_config_path(&opts.config));
    tokio::spawn(health::serve(health::bind_at(opts.readiness_addr())?, readiness_config, tally.clone(), control));
    let prepared = prepare::prepare(opts)?;
    let config = &prepared.config;
    // A replacement Pod or a restarted container of a session whose lifetime
    // is over: the session ended; starting a browser to close it helps no one.
    if lifetime::lifetime_left(
        config.session_started(),
        config.max_lifetime_seconds,
        SystemTime::now(),
        SystemTime::now(),
    )
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
    // Host rules: the proxy is bound before the browser starts (after the
    // pinned viewer and CDP ports, so it never takes theirs) and the browser
    // is launched through it; without them nothing changes.
    let egress = match egress_proxy::live_of(&config) {
        Some(live) => {
            let live = live.map_err(|e| Fatal::Config { path: opts.config.clone().into(), message: e.to_string() })?;
            // Bound once: a restarted browser is launched with the same switch, so the same listener.
            let bound = egress_proxy::bind_loopback().map_err(|source| Fatal::EgressProxyUnavailable { source })?;
            let port = bound.local_addr().map_err(|source| Fatal::EgressProxyUnavailable { source })?.port();
            let derived = egress_proxy::launch::write(Path::new(&config.launch_config), &std::env::temp_dir(), port)
                .map_err(|message| Fatal::Config { path: config.launch_config.clone().into(), message })?;
            tracing::info!(port, "host rules apply: the browser goes through the egress proxy");
            config.launch_config = derived.display().to_string();
            Some((bound, live))
        }
        None => None,
    };
    let proxied = egress.is_some();
    if let Some((bound, live)) = egress {
        let (tell, live) = watch::channel(Arc::new(live));
        let log = Arc::new(egress_proxy::log_for(Path::new(&config.output_dir), tally));
        tokio::spawn(egress_proxy::serve(bound, live, log, egress_proxy::LIMITS));
        tokio::spawn(egress_proxy::follow(opts.config.clone().into(), tell, opts.retention_interval()));
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
        segments: config.record_video.then(|| browser::segments::length(config.video_segment_seconds)).flatten(),
        verbs: Arc::default(),
        on_demand: rotate_now,
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

    // Marked before the probe can pass, so a resumed session never shows
    // Ready without its tabs.
    let resume_held =
        suspend::at_start::Pending::mark(plan.restart_record.as_deref(), config.resume_state_file.as_deref());

    let managed = Managed::default();
    tokio::spawn(reaper::run(managed.clone()));
    tell_readiness.send_replace(Some(config.clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (state_tx, state_rx) = watch::channel(DaemonState::Starting);
    let (exited_tx, _exited_rx) = mpsc::unbounded_channel();
    let mut daemon_task =
        tokio::spawn(browser::daemon::supervise(plan, managed.clone(), state_tx, stop_rx.clone(), exited_tx));
    if let Some(file) = &config.resume_state_file {
        let reopen = suspend::at_start::reopen_once(config.clone(), file.into(), resume_held, state_rx.clone());
        tokio::spawn(reopen);
    }
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
    let mut retention_task = tokio::spawn(retention::retain(opts.config.clone().into(), config.clone(), opts.clone()));
    let guard = pristine::warm_guard(config, opts, &managed, state_rx.clone(), viewers.clone());
    let idle = idle::session_idle_reached(config, opts, state_rx.clone(), viewers, resumes);

    let lifetime = lifetime::lifetime_reached(opts.config.clone().into(), config.clone(), opts.retention_interval());
    let rules_added = async {
        match proxied {
            true => std::future::pending().await,
            false => host_rules_added::host_rules_added(opts.config.clone().into(), opts.retention_interval()).await,
        }
    };
    let mut discarded = None;
    let mut relaunch = false;
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
        () = rules_added => { relaunch = true; None }
    };
    shutdown::graceful(&close_spec, recorder.as_ref(), opts.grace(), &managed, &stop_tx, state_rx).await;
    if let Some(task) = dashboard_task {
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    match (fatal, discarded) {
        (Some(fatal), _) => Err(fatal),
        (None, Some(found)) => Ok(Ended::Discarded(found)),
        (None, None) if relaunch => Ok(Ended::Relaunch),
        (None, None) => Ok(Ended::Closed),
    }
}
