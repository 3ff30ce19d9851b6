//! Docker Engine through bollard: API version negotiated (the engine here speaks
//! 1.41), build from a context tar made in Rust, run a command in an image and
//! capture its output, tag.

use crate::image_layout as il;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptions, CreateContainerOptions, LogsOptions, PushImageOptions, RemoveContainerOptions, TagImageOptions,
};
use bollard::Docker;
use futures::StreamExt as _;
use std::collections::HashMap;
use std::time::Duration;

/// How long a build may run before the watchdog stops it: generous for a slow but
/// live mirror and Chromium's packages; a dead mirror fails long before (the package
/// steps bound every fetch, see [`crate::mirror`]).
pub const DEFAULT_BUILD_TIMEOUT: Duration = Duration::from_secs(1800);
/// The build host's environment variable for `--build-timeout` (seconds).
pub const BUILD_TIMEOUT_ENV: &str = "PLAYPEN_BUILD_TIMEOUT";

/// Engine failures.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine is not reachable.
    #[error("Docker Engine is not reachable ({0}): start it (tests/imagebuild/setup.sh does) or set DOCKER_HOST")]
    Unreachable(String),
    /// The build failed.
    #[error("the image build failed: {0}")]
    Build(String),
    /// The browser step could not download.
    #[error("the browser download failed during the build: {0}")]
    BrowserDownload(String),
    /// The build found missing libraries.
    #[error("the build found missing host dependencies: {0}")]
    MissingDependencies(String),
    /// Any other API call failed.
    #[error("Docker Engine: {0}")]
    Api(String),
    /// A package step could not reach the base image's package mirror.
    #[error("the package mirror {mirror} could not be reached from the build: {detail}{stopped}")]
    MirrorUnreachable {
        /// The mirror's URL from the step's output (redacted, cleaned, bounded).
        mirror: String,
        /// The output line that shows it (cleaned, bounded).
        detail: String,
        /// Empty, or how the watchdog stopped the step.
        stopped: String,
    },
    /// The watchdog stopped a build that ran past its time.
    #[error(
        "the build did not finish within {secs} s and was stopped (raise --build-timeout or \
         {BUILD_TIMEOUT_ENV} for a slow mirror); the last step printed:\n{tail}"
    )]
    TimedOut {
        /// The limit.
        secs: u64,
        /// The end of the last step's output (cleaned, bounded).
        tail: String,
    },
}

impl crate::failure::Classify for EngineError {
    fn class(&self) -> crate::failure::FailureClass {
        use crate::failure::FailureClass as F;
        match self {
            EngineError::BrowserDownload(_) => F::BrowserDownloadBlocked,
            EngineError::MissingDependencies(_) => F::MissingHostDependencies,
            EngineError::MirrorUnreachable { .. } => F::PackageMirrorUnreachable,
            _ => F::Engine,
        }
    }
}

fn api(e: bollard::errors::Error) -> EngineError {
    EngineError::Api(e.to_string())
}

/// A connected engine.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
}

/// What a finished run printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// Exit code.
    pub exit_code: i64,
    /// stdout and stderr, interleaved.
    pub output: String,
}

/// How to run a container.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `uid:gid`, or `None` for the image's user.
    pub user: Option<String>,
    /// Seccomp profile JSON (`None`: the engine's default profile).
    pub seccomp_profile: Option<String>,
    /// Read-only root with tmpfs on /tmp and the data home.
    pub read_only_root: bool,
    /// No network at all.
    pub no_network: bool,
}

impl Engine {
    /// Connects (DOCKER_HOST or the local socket) and negotiates the API version.
    pub async fn connect() -> Result<Engine, EngineError> {
        let docker = Docker::connect_with_defaults().map_err(|e| EngineError::Unreachable(e.to_string()))?;
        let docker = docker.negotiate_version().await.map_err(|e| EngineError::Unreachable(e.to_string()))?;
        docker.ping().await.map_err(|e| EngineError::Unreachable(e.to_string()))?;
        Ok(Engine { docker })
    }

    /// The negotiated API version.
    pub fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    /// Whether an image exists locally.
    pub async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
            Err(e) => Err(api(e)),
        }
    }

    /// The image's ID (`sha256:…`).
    pub async fn image_id(&self, image: &str) -> Result<String, EngineError> {
        let i = self.docker.inspect_image(image).await.map_err(api)?;
        Ok(i.id.unwrap_or_default())
    }

    /// The image's layer digests (`RootFS.Layers`).
    pub async fn image_layers(&self, image: &str) -> Result<Vec<String>, EngineError> {
        let i = self.docker.inspect_image(image).await.map_err(api)?;
        Ok(i.root_fs.and_then(|r| r.layers).unwrap_or_default())
    }

    /// The image's labels.
    pub async fn image_labels(&self, image: &str) -> Result<HashMap<String, String>, EngineError> {
        let i = self.docker.inspect_image(image).await.map_err(api)?;
        Ok(i.config.and_then(|c| c.labels).unwrap_or_default())
    }

    /// Builds a context tar within [`DEFAULT_BUILD_TIMEOUT`]; see [`Engine::build_within`].
    pub async fn build(
        &self,
        context: Vec<u8>,
        no_cache: bool,
        on_line: impl FnMut(&str),
    ) -> Result<String, EngineError> {
        self.build_within(context, no_cache, DEFAULT_BUILD_TIMEOUT, on_line).await
    }

    /// Builds a context tar; returns the image ID. Each output line goes to `on_line`.
    /// A build still running after `timeout` is stopped: the stream is dropped, which
    /// closes the connection, and the engine cancels the build and kills its step.
    pub async fn build_within(
        &self,
        context: Vec<u8>,
        no_cache: bool,
        timeout: Duration,
        mut on_line: impl FnMut(&str),
    ) -> Result<String, EngineError> {
        let options = BuildImageOptions {
            dockerfile: "Dockerfile".into(),
            rm: true,
            forcerm: true,
            nocache: no_cache,
            ..Default::default()
        };
        let mut stream = self.docker.build_image(options, None, Some(bollard::body_full(context.into())));
        let mut id = None;
        let mut log = String::new();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let Ok(next) = tokio::time::timeout_at(deadline, stream.next()).await else {
                drop(stream);
                return Err(classify_stopped_build(&log, timeout));
            };
            let Some(item) = next else { break };
            let info = item.map_err(|e| classify_build_failure(&log, &e.to_string()))?;
            if let Some(text) = &info.stream {
                log.push_str(text);
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    on_line(line);
                }
            }
            if let Some(err) = info.error.or_else(|| info.error_detail.and_then(|d| d.message)) {
                return Err(classify_build_failure(&log, &err));
            }
            if let Some(image) = info.aux {
                id = image.id.or(id);
            }
        }
        id.ok_or_else(|| EngineError::Build(format!("the engine reported no image ID\n{}", tail(&log))))
    }

    /// Runs `cmd` (via /bin/sh -c) in `image` and captures its output; the container is removed.
    pub async fn run(&self, image: &str, script: &str, options: &RunOptions) -> Result<RunOutput, EngineError> {
        let mut tmpfs = HashMap::new();
        if options.read_only_root {
            tmpfs.insert(il::TMP_DIR.to_owned(), "rw,mode=1777".to_owned());
            tmpfs.insert(il::DATA_HOME.to_owned(), "rw,mode=1777".to_owned());
        }
        let host = HostConfig {
            readonly_rootfs: Some(options.read_only_root),
            tmpfs: Some(tmpfs),
            security_opt: options.seccomp_profile.as_ref().map(|p| vec![format!("seccomp={p}")]),
            shm_size: Some(256 * 1024 * 1024),
            network_mode: options.no_network.then(|| "none".to_owned()),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            user: options.user.clone(),
            entrypoint: Some(vec![il::SHELL.into(), "-c".into()]),
            cmd: Some(vec![script.to_owned()]),
            env: Some(vec![format!("{}={}", il::env::HOME, il::HOME_DIR)]),
            host_config: Some(host),
            ..Default::default()
        };
        let created = self.docker.create_container(None::<CreateContainerOptions>, body).await.map_err(api)?;
        let id = created.id;
        let result = self.run_created(&id).await;
        let _ =
            self.docker.remove_container(&id, Some(RemoveContainerOptions { force: true, ..Default::default() })).await;
        result
    }

    async fn run_created(&self, id: &str) -> Result<RunOutput, EngineError> {
        self.docker.start_container(id, None::<bollard::query_parameters::StartContainerOptions>).await.map_err(api)?;
        let mut wait = self.docker.wait_container(id, None::<bollard::query_parameters::WaitContainerOptions>);
        let exit_code = match wait.next().await {
            Some(Ok(r)) => r.status_code,
            // bollard reports a non-zero exit as an error carrying the code.
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
            Some(Err(e)) => return Err(api(e)),
            None => -1,
        };
        let mut logs = self.docker.logs(id, Some(LogsOptions { stdout: true, stderr: true, ..Default::default() }));
        let mut output = String::new();
        while let Some(chunk) = logs.next().await {
            output.push_str(&chunk.map_err(api)?.to_string());
        }
        Ok(RunOutput { exit_code, output })
    }

    /// Streams `docker save` of `image` into `path`.
    pub async fn save_to_file(&self, image: &str, path: &std::path::Path) -> Result<(), EngineError> {
        use std::io::Write as _;
        let mut file = std::fs::File::create(path).map_err(|e| EngineError::Api(format!("{}: {e}", path.display())))?;
        let mut stream = self.docker.export_image(image);
        while let Some(chunk) = stream.next().await {
            file.write_all(&chunk.map_err(api)?).map_err(|e| EngineError::Api(format!("{}: {e}", path.display())))?;
        }
        Ok(())
    }

    /// The image's `RepoDigests` (`repo@sha256:…`, set by the engine after a push or pull).
    pub async fn repo_digests(&self, image: &str) -> Result<Vec<String>, EngineError> {
        let i = self.docker.inspect_image(image).await.map_err(api)?;
        Ok(i.repo_digests.unwrap_or_default())
    }

    /// Pushes `reference` (`[host/]repo:tag`) with `credentials` sent to the engine as
    /// `X-Registry-Auth` (the engine presents them to that registry only). Each status
    /// change is passed to `on_line` (byte progress at most every 2 s). Returns the
    /// manifest digest the engine reported, or the engine's own message when it failed:
    /// the caller ([`crate::push`]) classifies it and redacts it.
    pub async fn push_raw(
        &self,
        reference: &str,
        credentials: Option<bollard::auth::DockerCredentials>,
        mut on_line: impl FnMut(&str),
    ) -> Result<Option<String>, String> {
        let (repo, tag) = split_reference(reference);
        let options = PushImageOptions { tag: Some(tag.clone()), platform: None };
        let mut stream = self.docker.push_image(&repo, Some(options), credentials);
        let mut digest = None;
        let mut last_status = String::new();
        let mut last_line = std::time::Instant::now();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| match e {
                bollard::errors::Error::DockerStreamError { error } => error,
                bollard::errors::Error::DockerResponseServerError { status_code, message } => {
                    format!("{message} (HTTP {status_code})")
                }
                e => e.to_string(),
            })?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err(err);
            }
            let Some(status) = info.status else { continue };
            // bollard 0.19's PushImageInfo has neither `id` nor `aux`, so the engine's
            // `{"aux":{"Tag","Digest","Size"}}` is dropped; the engine writes the same
            // digest in its status line `<tag>: digest: sha256:<hex> size: <n>`.
            if let Some(d) = push_status_digest(&status) {
                digest = Some(d);
            }
            // A line per status change, and byte progress at most every 2 s.
            let changed = status != last_status;
            if !changed && last_line.elapsed() < std::time::Duration::from_secs(2) {
                continue;
            }
            let line = match info.progress.filter(|p| !p.is_empty()) {
                Some(p) => format!("push: {status} {p}"),
                None => format!("push: {status}"),
            };
            on_line(&line);
            last_status = status;
            last_line = std::time::Instant::now();
        }
        Ok(digest)
    }

    /// Removes a tag (the image goes when it was its last reference).
    pub async fn remove_image(&self, reference: &str) -> Result<(), EngineError> {
        self.docker
            .remove_image(reference, None::<bollard::query_parameters::RemoveImageOptions>, None)
            .await
            .map(drop)
            .map_err(api)
    }

    /// Tags `image` as `reference` (`repo:tag`).
    pub async fn tag(&self, image: &str, reference: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_reference(reference);
        self.docker.tag_image(image, Some(TagImageOptions { repo: Some(repo), tag: Some(tag) })).await.map_err(api)
    }
}

/// `repo[:tag]` → `(repo, tag)`, with `latest` as the default and registry ports kept.
pub fn split_reference(reference: &str) -> (String, String) {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo.to_owned(), tag.to_owned()),
        _ => (reference.to_owned(), "latest".to_owned()),
    }
}

/// The digest in the engine's final push status, `<tag>: digest: sha256:<hex> size: <n>`.
pub fn push_status_digest(status: &str) -> Option<String> {
    let rest = status.split_once("digest: ")?.1;
    let digest = rest.split_whitespace().next()?;
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| digest.to_owned())
}

/// Classifies a failed build step from its log: the exit codes the rendered steps use,
/// then the last step's output for a package mirror it could not reach.
pub fn classify_build_failure(log: &str, error: &str) -> EngineError {
    let text = format!("{error}\n{}", tail(log));
    if error.contains("code: 16") || error.contains("returned a non-zero code: 16") {
        EngineError::BrowserDownload(text)
    } else if error.contains("non-zero code: 19") || crate::dockerfile::says_missing_dependencies(log) {
        EngineError::MissingDependencies(text)
    } else if let Some(f) = crate::mirror::classify(crate::mirror::last_step(log), false) {
        mirror_unreachable(f, String::new())
    } else {
        EngineError::Build(text)
    }
}

/// Classifies a build the watchdog stopped: a step still waiting on its mirror is
/// the mirror's failure; anything else is a timeout.
pub fn classify_stopped_build(log: &str, timeout: Duration) -> EngineError {
    let step = crate::mirror::last_step(log);
    let secs = timeout.as_secs();
    match crate::mirror::classify(step, true) {
        Some(f) => mirror_unreachable(f, format!(" (the build watchdog stopped the step after {secs} s)")),
        None => EngineError::TimedOut { secs, tail: crate::untrusted::printable(&tail(step), STOPPED_TAIL) },
    }
}

/// Most characters of a stopped step's output quoted in the error.
const STOPPED_TAIL: usize = 2000;

fn mirror_unreachable(f: crate::mirror::MirrorFailure, stopped: String) -> EngineError {
    let mirror = f.mirror.unwrap_or_else(|| "named in the base image's sources".to_owned());
    EngineError::MirrorUnreachable { mirror, detail: f.detail, stopped }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::{Classify, FailureClass};

    #[test]
    fn references_split_like_docker() {
        assert_eq!(split_reference("playpen/browser:1"), ("playpen/browser".into(), "1".into()));
        assert_eq!(split_reference("reg:5000/playpen/browser"), ("reg:5000/playpen/browser".into(), "latest".into()));
    }

    #[test]
    fn the_push_digest_is_read_from_the_engines_status_line() {
        let d = "sha256:103344e6587b6449979a732678afc51bdff3a3381a8ca1e26c748d6093ed360b";
        assert_eq!(push_status_digest(&format!("1: digest: {d} size: 528")), Some(d.to_owned()));
        assert_eq!(push_status_digest("Pushed"), None);
        assert_eq!(push_status_digest("1: digest: sha256:abc size: 1"), None);
    }

    #[test]
    fn build_failures_are_classified_by_step_code() {
        let e = classify_build_failure("", "The command '/bin/sh -eu -c x' returned a non-zero code: 16");
        assert_eq!(e.class(), FailureClass::BrowserDownloadBlocked);
        let e = classify_build_failure("", "The command '/bin/sh -eu -c x' returned a non-zero code: 19");
        assert_eq!(e.class(), FailureClass::MissingHostDependencies);
        let e = classify_build_failure("E: Unable to locate package nope", "returned a non-zero code: 100");
        assert_eq!(e.class(), FailureClass::Engine);
        assert!(e.to_string().contains("Unable to locate package nope"));
    }

    const REFUSED: &str = "Step 1/3 : FROM base\nStep 2/3 : RUN apt-get update\n\
        Err:1 http://172.17.0.1:9/debian bookworm InRelease\n\
        \x20 Could not connect to 172.17.0.1:9 (172.17.0.1). - connect (111: Connection refused)\n\
        E: Unable to locate package chromium\n";

    #[test]
    fn an_unreachable_package_mirror_is_its_own_class_naming_the_mirror() {
        let e = classify_build_failure(REFUSED, "The command '/bin/sh -eu -c x' returned a non-zero code: 100");
        assert_eq!(e.class(), FailureClass::PackageMirrorUnreachable);
        assert_eq!(e.class().exit_code(), 25);
        let text = e.to_string();
        assert!(text.contains("package mirror http://172.17.0.1:9/debian could not be reached"), "{text}");
        assert!(text.contains("Connection refused") && !text.contains("watchdog"), "{text}");
        // A step's own code wins: the browser step's blocked download stays 16.
        let e = classify_build_failure(REFUSED, "returned a non-zero code: 16");
        assert_eq!(e.class(), FailureClass::BrowserDownloadBlocked);
        // A mirror failure in an earlier step that succeeded does not colour a later failure.
        let later = format!("{REFUSED}Step 3/3 : RUN false\n");
        assert_eq!(classify_build_failure(&later, "non-zero code: 1").class(), FailureClass::Engine);
    }

    #[test]
    fn a_stopped_build_is_the_mirrors_failure_only_when_the_step_waited_on_it() {
        let waiting = "Step 2/3 : RUN apt-get update\nIgn:1 http://172.17.0.1:9/debian bookworm InRelease\n";
        let e = classify_stopped_build(waiting, Duration::from_secs(30));
        assert_eq!(e.class(), FailureClass::PackageMirrorUnreachable);
        let text = e.to_string();
        assert!(text.contains("http://172.17.0.1:9/debian") && text.contains("stopped the step after 30 s"), "{text}");
        let e = classify_stopped_build("Step 2/3 : RUN sleep 600\n\u{1b}[2Jstill here\n", Duration::from_secs(5));
        assert_eq!(e.class(), FailureClass::Engine);
        let text = e.to_string();
        assert!(text.contains("within 5 s") && text.contains("--build-timeout"), "{text}");
        assert!(text.contains("\\u{1b}[2Jstill here") && !text.contains('\u{1b}'), "{text}");
    }
}
