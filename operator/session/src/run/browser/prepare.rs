//! The start-up checks before any child starts, in order: the runtime
//! config, the socket budget and namespace, the CLI's attribution and
//! hooks, the browser the launch config names, the snapshot directory and
//! Node. Each failure is a [`Fatal`] that names what is wrong.

use std::path::{Path, PathBuf};

use playpen_api::runtime_config::RuntimeConfig;

use crate::cli_install::{self, CoreInstall, HooksError, VerdictCache};
use crate::config::{load, which, Options};
use crate::error::Fatal;
use crate::run::browser::{namespace, readiness};

/// Everything verified before a child starts.
pub(crate) struct Prepared {
    pub(crate) config: RuntimeConfig,
    pub(crate) home: PathBuf,
    pub(crate) launcher: PathBuf,
    pub(crate) node: PathBuf,
    pub(crate) install: CoreInstall,
    pub(crate) user_data_dir: Option<PathBuf>,
}

pub(crate) fn prepare(opts: &Options) -> Result<Prepared, Fatal> {
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
