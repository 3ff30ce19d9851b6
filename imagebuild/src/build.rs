//! `build`: from the lock only. Fetch every artifact through the digest cache
//! (refusing mismatches), learn the base's family, lay out the deterministic
//! Node/CLI layer, render the Dockerfile, build through the engine, verify the
//! image by running it, and only then tag it (and push it, when asked).

use crate::digest::Integrity;
use crate::dockerfile::{launch_defaults, render, RenderInput};
use crate::engine::{Engine, RunOptions};
use crate::error::{Error, Result};
use crate::fetch::{check_digest, Fetcher};
use crate::image_layout as il;
use crate::layer::{layer_tree, write_tar, LayerError, LayerInput, NpmPackage, TarLimits};
use crate::lock::{Lock, LockedChromium};
use crate::os_release::{detect_family, parse_os_release};
use crate::spec::{OsFamily, SandboxMode};
use std::path::{Path, PathBuf};

/// Every artifact of a lock, verified.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// The Node tarball.
    pub node: Vec<u8>,
    /// Package tarballs, in the lock's order.
    pub packages: Vec<Vec<u8>>,
    /// The Chromium archive, for `archive`.
    pub chromium_archive: Option<Vec<u8>>,
    /// The session runtime binary.
    pub session_runtime: Option<Vec<u8>>,
}

/// Fetches (or reads from the cache) every artifact; any digest difference is refused.
pub async fn fetch_artifacts(f: &Fetcher, lock: &Lock) -> Result<Artifacts> {
    let node = f.fetch_verified(&lock.node.url, &lock.node.integrity).await?;
    let mut packages = Vec::new();
    for p in &lock.packages {
        let bytes = f.fetch_verified(&p.resolved, &p.integrity).await?;
        // A lock pinning a hostile tarball fails before Docker Engine is contacted.
        crate::layer::package_tree(&npm_package(p, &bytes), TarLimits::DEFAULT)?;
        packages.push(bytes);
    }
    let chromium_archive = match &lock.chromium {
        LockedChromium::Archive { url, integrity, .. } => {
            Some(f.fetch_verified(url, integrity).await.map_err(crate::resolve::ResolveError::BrowserDownload)?)
        }
        _ => None,
    };
    let session_runtime = match &lock.session_runtime {
        Some(s) => {
            let bytes = f.get(&s.path).await?;
            check_digest(&s.path, &s.integrity, &bytes)?;
            Some(bytes)
        }
        None => None,
    };
    Ok(Artifacts { node, packages, chromium_archive, session_runtime })
}

fn npm_package<'a>(p: &'a crate::lock::LockedPackage, tarball: &'a [u8]) -> NpmPackage<'a> {
    NpmPackage {
        name: &p.name,
        version: &p.version,
        resolved: &p.resolved,
        integrity: p.integrity.to_string(),
        tarball,
    }
}

/// The layer tar (pure).
pub fn layer_tar(lock: &Lock, family: OsFamily, a: &Artifacts, mtime: u64) -> Result<Vec<u8>> {
    let defaults = launch_defaults(lock, family);
    let packages = lock.packages.iter().zip(&a.packages).map(|(p, bytes)| npm_package(p, bytes)).collect();
    let input = LayerInput {
        node_tarball: &a.node,
        node_bin_path: &lock.node.bin_path,
        packages,
        launch_defaults: &defaults,
        session_runtime: a.session_runtime.as_deref(),
        limits: TarLimits::DEFAULT,
    };
    let tree = layer_tree(&input)?;
    Ok(write_tar(&tree, mtime).map_err(LayerError::Write)?)
}

/// The build context: Dockerfile, the layer, the Chromium archive (deterministic tar).
pub fn context_tar(dockerfile: &str, layer: &[u8], chromium_archive: Option<&[u8]>, mtime: u64) -> Result<Vec<u8>> {
    let mut tree = crate::layer::Tree::new();
    tree.insert("Dockerfile".into(), crate::layer::Entry::File { data: dockerfile.as_bytes().to_vec(), mode: 0o644 });
    tree.insert(il::LAYER_TAR.into(), crate::layer::Entry::File { data: layer.to_vec(), mode: 0o644 });
    if let Some(a) = chromium_archive {
        tree.insert(il::CHROMIUM_ARCHIVE.into(), crate::layer::Entry::File { data: a.to_vec(), mode: 0o644 });
    }
    Ok(write_tar(&tree, mtime).map_err(LayerError::Write)?)
}

/// `sha256:<hex>` of the lock's canonical text.
pub fn lock_digest(lock: &Lock) -> String {
    format!("sha256:{}", Integrity::sha256_of(lock.to_canonical_json().as_bytes()).hex())
}

/// The base's family: the spec's override, else its /etc/os-release read through the engine.
pub async fn base_family(engine: &Engine, lock: &Lock) -> Result<OsFamily> {
    if let Some(f) = lock.spec.base.os_family {
        return Ok(f);
    }
    let out = engine
        .run(
            &lock.spec.base.image,
            "cat /etc/os-release || cat /usr/lib/os-release",
            &RunOptions { no_network: true, ..Default::default() },
        )
        .await?;
    Ok(detect_family(&parse_os_release(&out.output), None)?)
}

/// What `build` made.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildReport {
    /// The tag applied after verification.
    pub tag: String,
    /// The image ID.
    pub image_id: String,
    /// The base's family.
    pub os_family: OsFamily,
    /// sha256 of the Node/CLI layer tar.
    pub layer_digest: String,
    /// sha256 of the lock's canonical text.
    pub lock_digest: String,
    /// Seconds spent building (engine).
    pub build_seconds: f64,
    /// Seconds spent verifying.
    pub verify_seconds: f64,
    /// The manifest digest of the OCI layout, when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oci_manifest: Option<String>,
    /// What `--push` pushed: registry, tag and the manifest digest the registry received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push: Option<crate::push::PushReport>,
    /// The files written beside the image.
    pub outputs: Vec<PathBuf>,
}

/// Options of `build`.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Tag to apply after verification.
    pub tag: String,
    /// Where the seccomp profile, Dockerfile, layer tar and report go.
    pub out_dir: PathBuf,
    /// Skip running the image (not recommended).
    pub skip_verify: bool,
    /// mtime of every layer entry.
    pub source_date_epoch: u64,
    /// Also write the image as an OCI image layout here.
    pub oci_layout: Option<PathBuf>,
    /// Build every step again (no engine build cache).
    pub no_cache: bool,
    /// Push the tag after verification, with these credentials (`--push`; `None`: no push).
    pub push: Option<crate::push::RegistryAuth>,
    /// The watchdog on the engine build ([`crate::engine::DEFAULT_BUILD_TIMEOUT`] by default).
    pub build_timeout: std::time::Duration,
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
    }
    std::fs::write(path, bytes).map_err(|source| Error::Io { path: path.display().to_string(), source })
}

/// Writes the context's parts into `out_dir` (Dockerfile, layer, seccomp profile); returns the paths.
pub fn write_outputs(out_dir: &Path, dockerfile: &str, layer: &[u8]) -> Result<Vec<PathBuf>> {
    let files = [
        (out_dir.join("Dockerfile"), dockerfile.as_bytes()),
        (out_dir.join(il::LAYER_TAR), layer),
        (out_dir.join(crate::seccomp::FILE_NAME), crate::seccomp::CHROMIUM_PROFILE.as_bytes()),
    ];
    for (path, bytes) in &files {
        write(path, bytes)?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// The whole `build`, from verified artifacts ([`fetch_artifacts`] runs first, before
/// the engine is contacted, so a digest mismatch is reported as such).
pub async fn build(
    lock: &Lock,
    artifacts: &Artifacts,
    engine: &Engine,
    opts: &BuildOptions,
    mut on_line: impl FnMut(&str),
) -> Result<BuildReport> {
    crate::validate::validate(&lock.spec)?;
    let family = base_family(engine, lock).await?;
    on_line(&format!("base {} is in the {} family", lock.spec.base.image, family.as_str()));
    let layer = layer_tar(lock, family, artifacts, opts.source_date_epoch)?;
    let layer_digest = format!("sha256:{}", Integrity::sha256_of(&layer).hex());
    let lock_digest = lock_digest(lock);
    let labels = crate::labels::labels(lock, family, &lock_digest);
    let dockerfile = render(&RenderInput { lock, family, labels: &labels });
    let mut outputs = write_outputs(&opts.out_dir, &dockerfile, &layer)?;
    let context = context_tar(&dockerfile, &layer, artifacts.chromium_archive.as_deref(), opts.source_date_epoch)?;

    let started = std::time::Instant::now();
    let image_id = engine.build_within(context, opts.no_cache, opts.build_timeout, &mut on_line).await?;
    let build_seconds = started.elapsed().as_secs_f64();

    let started = std::time::Instant::now();
    if !opts.skip_verify {
        let enforced = lock.spec.sandbox.mode == SandboxMode::Enforced;
        let run = RunOptions {
            user: Some(format!("{}:{}", lock.spec.user.uid, lock.spec.user.gid)),
            seccomp_profile: enforced.then(|| crate::seccomp::CHROMIUM_PROFILE.to_owned()),
            read_only_root: true,
            no_network: true,
        };
        let out = engine.run(&image_id, &crate::verify::script(lock, family), &run).await?;
        for line in out.output.lines() {
            on_line(&format!("verify: {line}"));
        }
        crate::verify::judge(family, out.exit_code, &out.output)?;
    }
    let verify_seconds = started.elapsed().as_secs_f64();
    engine.tag(&image_id, &opts.tag).await?;
    let mut oci_manifest = None;
    if let Some(dir) = &opts.oci_layout {
        let archive = opts.out_dir.join("docker-save.tar");
        engine.save_to_file(&opts.tag, &archive).await?;
        let converted = crate::oci_layout::from_docker_archive(&archive, &opts.tag, dir);
        let _ = std::fs::remove_file(&archive);
        oci_manifest = Some(converted?);
    }
    let push = match &opts.push {
        Some(auth) => Some(crate::push::push(engine, &opts.tag, auth, &mut on_line).await?),
        None => None,
    };

    let report = BuildReport {
        tag: opts.tag.clone(),
        image_id,
        os_family: family,
        layer_digest,
        lock_digest,
        build_seconds,
        verify_seconds,
        oci_manifest,
        push,
        outputs: vec![],
    };
    let report_path = opts.out_dir.join("build-report.json");
    outputs.push(report_path.clone());
    let report = BuildReport { outputs, ..report };
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    write(&report_path, text.as_bytes())?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::testdata::fake_artifacts;

    fn fixture() -> (Lock, Artifacts) {
        let (node, cli, pw, core) = fake_artifacts();
        let lock = crate::lock::fixtures::lock_with(&node, &cli, &pw, &core);
        // fixture order: playwright-core, @playwright/cli, playwright
        let a = Artifacts { node, packages: vec![core, cli, pw], chromium_archive: None, session_runtime: None };
        (lock, a)
    }

    #[test]
    fn two_layers_from_one_lock_have_one_digest() {
        let (lock, a) = fixture();
        let one = layer_tar(&lock, OsFamily::Apt, &a, 0).unwrap();
        let two = layer_tar(&lock, OsFamily::Apt, &a, 0).unwrap();
        assert_eq!(Integrity::sha256_of(&one), Integrity::sha256_of(&two));
        let c1 = context_tar("FROM x\n", &one, None, 0).unwrap();
        let c2 = context_tar("FROM x\n", &two, None, 0).unwrap();
        assert_eq!(c1, c2);
    }

    #[tokio::test]
    async fn build_refuses_a_tampered_cached_or_served_artifact() {
        let (lock, a) = fixture();
        let dir = tempfile::tempdir().unwrap();
        let node_path = dir.path().join("node.tgz");
        std::fs::write(&node_path, b"tampered").unwrap();
        let mut lock = lock;
        lock.node.url = node_path.display().to_string();
        let cfg = crate::fetch::FetchConfig {
            registry: "https://r".into(),
            ca_bundle: None,
            token_env: None,
            cache_dir: dir.path().join("cache"),
        };
        let f = Fetcher::new(&cfg).unwrap();
        let err = fetch_artifacts(&f, &lock).await.unwrap_err();
        assert_eq!(crate::failure::Classify::class(&err), crate::failure::FailureClass::DigestMismatch);
        assert!(err.to_string().contains("digest mismatch"), "{err}");
        drop(a);
    }

    #[test]
    fn outputs_include_the_chart_seccomp_profile() {
        let dir = tempfile::tempdir().unwrap();
        let paths = write_outputs(dir.path(), "FROM x\n", b"layer").unwrap();
        let profile = std::fs::read_to_string(dir.path().join("chromium.json")).unwrap();
        let chart = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../charts/playpen/files/seccomp/chromium.json"
        ))
        .unwrap();
        assert_eq!(profile, chart);
        assert_eq!(paths.len(), 3);
    }
}
