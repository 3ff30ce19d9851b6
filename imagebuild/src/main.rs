//! `playpen-imagebuild`: lock, build, schema, seccomp-profile.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use playpen_imagebuild::failure::Classify as _;
use playpen_imagebuild::push::RegistryAuth;
use playpen_imagebuild::{build, error::Error, fetch, lock::Lock, resolve, seccomp, spec, validate};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Builds a browser image from a declarative spec, with every download pinned in a lock.
#[derive(Debug, Parser)]
#[command(name = "playpen-imagebuild", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 ok, 10 invalid spec or lock, 11 local file, 13 registry rejected auth, \
14 registry unreachable, 15 package or version absent, 16 browser download blocked, 17 digest mismatch, \
18 unknown OS family, 19 missing host dependencies, 20 Docker Engine, 21 verification failed, \
22 push: the image registry refused or needs credentials, 23 push: the image registry unreachable or refused the push, \
24 unsafe input: a registry, lock or tarball name that would escape the layer or inject into the build, \
25 the base image's package mirror unreachable from the build.";

#[derive(Debug, Subcommand)]
enum Command {
    /// Resolve every pin of a spec to a digest and write the lock (downloads are checked and cached).
    Lock {
        /// The spec (YAML).
        #[arg(long, short)]
        spec: PathBuf,
        /// The lock to write (default: beside the spec, `<name>.lock.json`).
        #[arg(long, short)]
        lock: Option<PathBuf>,
        /// Download cache (default: ~/.cache/playpen-imagebuild).
        #[arg(long, env = playpen_imagebuild::fetch::CACHE_ENV)]
        cache_dir: Option<PathBuf>,
    },
    /// Build, verify and tag an image from a lock only.
    Build {
        /// The lock.
        #[arg(long, short)]
        lock: PathBuf,
        /// The tag applied once verification passes.
        #[arg(long, short)]
        tag: String,
        /// Where the seccomp profile, Dockerfile, layer tar and build report are written.
        #[arg(long, default_value = "imagebuild-out")]
        out_dir: PathBuf,
        /// Download cache.
        #[arg(long, env = playpen_imagebuild::fetch::CACHE_ENV)]
        cache_dir: Option<PathBuf>,
        /// Tag without running the image first (not recommended).
        #[arg(long)]
        skip_verify: bool,
        /// Build every step again, ignoring the engine's build cache.
        #[arg(long)]
        no_cache: bool,
        /// Also write the image as an OCI image layout (index.json, blobs/sha256/…) in this directory.
        #[arg(long)]
        oci_layout: Option<PathBuf>,
        /// Push the verified tag through Docker Engine. Credentials come from the environment only:
        /// PLAYPEN_REGISTRY_USERNAME + PLAYPEN_REGISTRY_PASSWORD, or PLAYPEN_REGISTRY_TOKEN; sent only
        /// for the tag's registry host (and only when it is PLAYPEN_REGISTRY_HOST, if set).
        /// Only a verified image is pushed: not with --skip-verify.
        #[arg(long, conflicts_with = "skip_verify")]
        push: bool,
        /// Stop the engine build after this many seconds (a watchdog: package fetches have
        /// their own 10 s timeouts, so a dead mirror fails long before).
        #[arg(long, env = playpen_imagebuild::engine::BUILD_TIMEOUT_ENV, default_value_t = playpen_imagebuild::engine::DEFAULT_BUILD_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
        build_timeout: u64,
    },
    /// Print (or write) the spec's JSON Schema.
    Schema {
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Print (or write) the seccomp profile that lets Chromium's sandbox run in a container.
    SeccompProfile {
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let class = err.downcast_ref::<Error>().map(|e| e.class());
            eprintln!("error: {err:#}");
            match class {
                Some(class) => {
                    eprintln!("failure: {} (exit {})\nremedy: {}", class.name(), class.exit_code(), class.remedy());
                    ExitCode::from(class.exit_code())
                }
                None => ExitCode::FAILURE,
            }
        }
    }
}

fn write_or_print(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("writing {}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn fetcher(spec: &spec::ImageSpec, cache_dir: Option<PathBuf>) -> Result<fetch::Fetcher, Error> {
    Ok(fetch::Fetcher::new(&fetch::FetchConfig {
        registry: spec.registry.npm.clone(),
        ca_bundle: spec.registry.ca_bundle.as_ref().map(PathBuf::from),
        token_env: spec.registry.token_env.clone(),
        cache_dir: cache_dir.unwrap_or_else(fetch::default_cache_dir),
    })?)
}

fn default_lock_path(spec: &Path) -> PathBuf {
    let stem = spec.file_stem().and_then(|s| s.to_str()).unwrap_or("image");
    spec.with_file_name(format!("{stem}.lock.json"))
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Schema { output } => write_or_print(output.as_deref(), &spec::json_schema()),
        Command::SeccompProfile { output } => write_or_print(output.as_deref(), seccomp::CHROMIUM_PROFILE),
        Command::Lock { spec: spec_path, lock, cache_dir } => {
            let spec = spec::read_spec(&spec_path).map_err(Error::from)?;
            validate::validate(&spec).map_err(Error::from)?;
            let f = fetcher(&spec, cache_dir)?;
            let resolved = resolve::resolve(&f, &spec).await.map_err(Error::from)?;
            let path = lock.unwrap_or_else(|| default_lock_path(&spec_path));
            std::fs::write(&path, resolved.to_canonical_json())
                .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
            tracing::info!(lock = %path.display(), digest = %build::lock_digest(&resolved), "lock written");
            Ok(())
        }
        Command::Build { lock, tag, out_dir, cache_dir, skip_verify, oci_layout, no_cache, push, build_timeout } => {
            // Read the push credentials first: a contradiction fails before anything is built.
            let push = if push { Some(RegistryAuth::from_env().map_err(Error::from)?) } else { None };
            let lock = Lock::read(&lock).map_err(Error::from)?;
            validate::validate(&lock.spec).map_err(Error::from)?;
            let f = fetcher(&lock.spec, cache_dir)?;
            let artifacts = build::fetch_artifacts(&f, &lock).await?;
            let engine = playpen_imagebuild::engine::Engine::connect().await.map_err(Error::from)?;
            tracing::info!(api = %engine.api_version(), "connected to Docker Engine");
            let opts = build::BuildOptions {
                tag,
                out_dir,
                skip_verify,
                source_date_epoch: playpen_imagebuild::layer::source_date_epoch(),
                oci_layout,
                no_cache,
                push,
                build_timeout: std::time::Duration::from_secs(build_timeout),
            };
            let report = if std::io::stderr().is_terminal() {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.enable_steady_tick(std::time::Duration::from_millis(120));
                let report = build::build(&lock, &artifacts, &engine, &opts, |line| {
                    let milestone = ["Step ", "verify: step", "base ", "push: "].iter().any(|p| line.starts_with(p));
                    if milestone && !line.starts_with("push: Pushing") {
                        bar.println(line);
                    }
                    bar.set_message(line.chars().take(100).collect::<String>());
                })
                .await;
                bar.finish_and_clear();
                report?
            } else {
                build::build(&lock, &artifacts, &engine, &opts, |line| {
                    // Chromium's own log lines during verification ("[pid:tid:time:LEVEL:file] …",
                    // mostly dbus noise in a container): debug; a failure's verdict quotes what matters.
                    if line.starts_with("verify: [") {
                        tracing::debug!("{line}");
                    } else {
                        tracing::info!("{line}");
                    }
                })
                .await?
            };
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
    }
}
