//! `lock`: resolves every pin of a spec to a digest. Every artifact is also
//! downloaded and checked here (which fills the cache), so a tampered or
//! missing download fails at lock time, not halfway through a build.

use crate::digest::{sha256_from_shasums, Integrity};
use crate::fetch::{check_digest, FetchError, Fetcher};
use crate::layer::{LayerError, NpmPackage, TarLimits};
use crate::lock::{Lock, LockedChromium, LockedFile, LockedNode, LockedPackage, LockedVideoRecorder, LOCK_VERSION};
use crate::spec::{ChromiumSource, ImageSpec, Libc, NodeSource};
use crate::untrusted::{self, Origin, UnsafeInput, Violation};
use std::collections::{BTreeMap, VecDeque};

pub use crate::image_layout::CLI_PACKAGE;
/// Default nodejs.org-style dist roots.
pub const NODE_DIST: &str = "https://nodejs.org/dist";
/// Unofficial musl builds.
pub const NODE_DIST_MUSL: &str = "https://unofficial-builds.nodejs.org/download/release";

/// Resolution failures.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A download failed or did not match.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The registry has the package but not the version.
    #[error("{package}@{version} is not published on {registry}")]
    VersionAbsent {
        /// Package.
        package: String,
        /// Version.
        version: String,
        /// Registry (redacted).
        registry: String,
    },
    /// A dependency is not pinned to an exact version.
    #[error("{package}@{version} depends on {dependency}@{range}, which is not an exact version; the builder locks exact closures only")]
    RangeDependency {
        /// Dependent.
        package: String,
        /// Its version.
        version: String,
        /// The dependency.
        dependency: String,
        /// Its requirement.
        range: String,
    },
    /// The release's SHASUMS256.txt does not list the tarball.
    #[error("{shasums} does not list {file}: the tarball is not part of that release")]
    NotInShasums {
        /// SHASUMS256.txt URL.
        shasums: String,
        /// The file name.
        file: String,
    },
    /// browsers.json is missing or names no chromium.
    #[error("playwright-core {version}: {detail}")]
    BrowsersJson {
        /// playwright-core's version.
        version: String,
        /// What is wrong.
        detail: String,
    },
    /// The Chromium archive could not be downloaded.
    #[error("the Chromium archive could not be downloaded: {0}")]
    BrowserDownload(FetchError),
    /// A name, path or URL from the registry or a tarball is refused.
    #[error(transparent)]
    Unsafe(#[from] UnsafeInput),
    /// A tarball is unreadable, lacks a file, or holds a hostile entry.
    #[error(transparent)]
    Tarball(#[from] LayerError),
    /// A registry's metadata or a spec digest is unusable.
    #[error("{what}: {detail}")]
    Archive {
        /// Which archive.
        what: String,
        /// What went wrong.
        detail: String,
    },
}

impl crate::failure::Classify for ResolveError {
    fn class(&self) -> crate::failure::FailureClass {
        use crate::failure::FailureClass as F;
        match self {
            ResolveError::Fetch(e) => e.class(),
            ResolveError::Unsafe(e) => e.class(),
            ResolveError::Tarball(e) => e.class(),
            ResolveError::VersionAbsent { .. } | ResolveError::NotInShasums { .. } => F::PackageAbsent,
            ResolveError::RangeDependency { .. } | ResolveError::BrowsersJson { .. } | ResolveError::Archive { .. } => {
                F::InvalidSpec
            }
            ResolveError::BrowserDownload(FetchError::DigestMismatch { .. }) => F::DigestMismatch,
            ResolveError::BrowserDownload(FetchError::Io { .. }) => F::Io,
            ResolveError::BrowserDownload(_) => F::BrowserDownloadBlocked,
        }
    }
}

/// The packument URL of `name` on `registry` (scoped names keep `@`, encode `/`).
pub fn packument_url(registry: &str, name: &str) -> String {
    format!("{}/{}", registry.trim_end_matches('/'), name.replace('/', "%2f"))
}

/// `(tarball, integrity, dependencies)` of `version` in a packument.
pub fn version_entry(
    packument: &serde_json::Value,
    name: &str,
    version: &str,
    registry: &str,
) -> Result<(String, Integrity, BTreeMap<String, String>), ResolveError> {
    let absent = || ResolveError::VersionAbsent {
        package: name.to_owned(),
        version: version.to_owned(),
        registry: crate::redact::redact_url(registry),
    };
    let v = packument.get("versions").and_then(|vs| vs.get(version)).ok_or_else(absent)?;
    let tarball = v.pointer("/dist/tarball").and_then(|t| t.as_str()).ok_or_else(absent)?.to_owned();
    // A registry names where the tarball is; never a local file the builder would read into the image.
    untrusted::http_url(&tarball).map_err(|violation| {
        let shown = crate::redact::redact_url(&tarball);
        UnsafeInput::new(from_registry(registry), format!("{name}@{version} dist.tarball"), &shown, violation)
    })?;
    let integrity =
        v.pointer("/dist/integrity").and_then(|t| t.as_str()).and_then(|s| Integrity::parse(s).ok()).ok_or_else(
            || ResolveError::Archive {
                what: format!("{name}@{version}"),
                detail: "no sha512 integrity in the registry's metadata".into(),
            },
        )?;
    let deps = v
        .get("dependencies")
        .and_then(|d| d.as_object())
        .map(|d| d.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect())
        .unwrap_or_default();
    Ok((tarball, integrity, deps))
}

fn from_registry(registry: &str) -> Origin {
    Origin::Registry(crate::redact::redact_url(registry))
}

/// Whether an npm requirement is one exact version (`1.2.3`, `=1.2.3`, `1.2.3-alpha.1`).
pub fn exact_requirement(range: &str) -> Option<&str> {
    let v = range.trim().trim_start_matches('=');
    untrusted::exact_version(v).ok().map(|()| v)
}

/// Resolves `@playwright/cli@version` and its exact dependency closure, sorted by name.
pub async fn resolve_cli(f: &Fetcher, registry: &str, version: &str) -> Result<Vec<LockedPackage>, ResolveError> {
    let mut out: BTreeMap<String, LockedPackage> = BTreeMap::new();
    let mut queue = VecDeque::from([(CLI_PACKAGE.to_owned(), version.to_owned())]);
    while let Some((name, version)) = queue.pop_front() {
        if out.contains_key(&name) {
            continue;
        }
        let packument = f.get_json(&packument_url(registry, &name)).await?;
        let (tarball, integrity, deps) = version_entry(&packument, &name, &version, registry)?;
        let bytes = f.fetch_verified(&tarball, &integrity).await?;
        // A hostile tarball fails here, at lock time, not halfway through a build.
        let package = NpmPackage {
            name: &name,
            version: &version,
            resolved: &tarball,
            integrity: integrity.to_string(),
            tarball: &bytes,
        };
        crate::layer::package_tree(&package, TarLimits::DEFAULT)?;
        for (dep, range) in deps {
            // The name becomes a registry URL path and a directory under node_modules.
            untrusted::npm_package_name(&dep).map_err(|violation| {
                UnsafeInput::new(from_registry(registry), format!("dependencies of {name}@{version}"), &dep, violation)
            })?;
            let exact = exact_requirement(&range).ok_or_else(|| ResolveError::RangeDependency {
                package: name.clone(),
                version: version.clone(),
                dependency: dep.clone(),
                range: untrusted::shown(&range),
            })?;
            queue.push_back((dep, exact.to_owned()));
        }
        if out.len() + 1 + queue.len() > untrusted::MAX_CLOSURE {
            return Err(UnsafeInput::new(
                from_registry(registry),
                format!("dependency closure of {CLI_PACKAGE}"),
                &(out.len() + 1 + queue.len()).to_string(),
                Violation::TooManyPackages { max: untrusted::MAX_CLOSURE },
            )
            .into());
        }
        out.insert(name.clone(), LockedPackage { name, version, resolved: tarball, integrity });
    }
    Ok(out.into_values().collect())
}

/// The nodejs.org-style file name for a version, arch and libc.
pub fn node_dist_file(version: &str, arch: &str, libc: Libc) -> String {
    match libc {
        Libc::Glibc => format!("node-v{version}-linux-{arch}.tar.gz"),
        Libc::Musl => format!("node-v{version}-linux-{arch}-musl.tar.gz"),
    }
}

/// Resolves Node per the spec.
pub async fn resolve_node(f: &Fetcher, spec: &ImageSpec) -> Result<LockedNode, ResolveError> {
    let n = &spec.node;
    let arch = n.arch.as_str();
    let (url, integrity, bin_path) = match n.source {
        NodeSource::Npm => {
            let name = format!("node-linux-{arch}");
            let packument = f.get_json(&packument_url(&spec.registry.npm, &name)).await?;
            let (tarball, integrity, _) = version_entry(&packument, &name, &n.version, &spec.registry.npm)?;
            (tarball, integrity, "package/bin/node".to_owned())
        }
        NodeSource::Dist => {
            let default = if n.libc == Libc::Musl { NODE_DIST_MUSL } else { NODE_DIST };
            let root = n.dist_url.as_deref().unwrap_or(default).trim_end_matches('/');
            let file = node_dist_file(&n.version, arch, n.libc);
            let shasums_url = format!("{root}/v{}/SHASUMS256.txt", n.version);
            let shasums = f.get_text(&shasums_url).await?;
            let integrity = sha256_from_shasums(&shasums, &file).ok_or_else(|| ResolveError::NotInShasums {
                shasums: crate::redact::redact_url(&shasums_url),
                file: file.clone(),
            })?;
            let stem = file.trim_end_matches(".tar.gz").to_owned();
            (format!("{root}/v{}/{file}", n.version), integrity, format!("{stem}/bin/node"))
        }
        NodeSource::File => {
            let path = n.file.clone().unwrap_or_default();
            let integrity = Integrity::parse(n.sha256.as_deref().unwrap_or_default())
                .map_err(|e| ResolveError::Archive { what: "node.sha256".into(), detail: e.to_string() })?;
            let bytes = f.get(&path).await?;
            check_digest(&path, &integrity, &bytes)?;
            let bin = crate::layer::find_node_binary_path(&bytes, &path)?;
            (path, integrity, bin)
        }
    };
    let bytes = f.fetch_verified(&url, &integrity).await?;
    crate::layer::extract_file(&bytes, &crate::redact::redact_url(&url), &bin_path)?;
    Ok(LockedNode { version: n.version.clone(), source: n.source, url, integrity, bin_path })
}

/// The revision and browser version of `name` (`chromium`, `ffmpeg`) in browsers.json text.
pub fn browser_from_browsers_json(text: &str, name: &str) -> Result<(String, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("browsers.json: {e}"))?;
    let entry = v
        .get("browsers")
        .and_then(|b| b.as_array())
        .and_then(|b| b.iter().find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name)))
        .ok_or_else(|| format!("browsers.json names no {name}"))?;
    let revision =
        entry.get("revision").and_then(|r| r.as_str()).ok_or_else(|| format!("{name} has no revision"))?.to_owned();
    let version = entry.get("browserVersion").and_then(|r| r.as_str()).map(str::to_owned);
    Ok((revision, version))
}

/// The locked playwright-core's browsers.json: its text and the package's name for errors.
async fn browsers_json(f: &Fetcher, packages: &[LockedPackage]) -> Result<(String, String), ResolveError> {
    let core = packages.iter().find(|p| p.name == "playwright-core").ok_or_else(|| ResolveError::BrowsersJson {
        version: "?".into(),
        detail: "the CLI's closure has no playwright-core".into(),
    })?;
    let bytes = f.fetch_verified(&core.resolved, &core.integrity).await?;
    let what = format!("playwright-core@{}", core.version);
    let text = crate::layer::extract_file(&bytes, &what, "package/browsers.json")?;
    Ok((String::from_utf8_lossy(&text).into_owned(), core.version.clone()))
}

/// Reads `name`'s entry from the locked playwright-core's browsers.json. The
/// revision and version become words in the Dockerfile, so each must be a token.
async fn locked_browser(
    f: &Fetcher,
    packages: &[LockedPackage],
    name: &str,
) -> Result<(String, Option<String>), ResolveError> {
    let (text, version) = browsers_json(f, packages).await?;
    let (revision, browser_version) = browser_from_browsers_json(&text, name)
        .map_err(|detail| ResolveError::BrowsersJson { version: version.clone(), detail })?;
    for (field, value) in [("revision", Some(&revision)), ("browserVersion", browser_version.as_ref())] {
        if let Some(value) = value {
            untrusted::token(value).map_err(|violation| {
                UnsafeInput::new(
                    Origin::Tarball(format!("playwright-core@{version}")),
                    format!("browsers.json {name}.{field}"),
                    value,
                    violation,
                )
            })?;
        }
    }
    Ok((revision, browser_version))
}

/// Resolves the Chromium source (the packages are needed for `playwright`).
pub async fn resolve_chromium(
    f: &Fetcher,
    spec: &ImageSpec,
    packages: &[LockedPackage],
) -> Result<LockedChromium, ResolveError> {
    let c = &spec.chromium;
    Ok(match c.source {
        ChromiumSource::Distribution => LockedChromium::Distribution {
            package: c.package.clone().unwrap_or_else(|| "chromium".to_owned()),
            executable_path: c.executable_path.clone(),
        },
        ChromiumSource::Playwright => {
            let (revision, browser_version) = locked_browser(f, packages, "chromium").await?;
            LockedChromium::Playwright { revision, browser_version }
        }
        ChromiumSource::Archive => {
            let url = c.url.clone().unwrap_or_default();
            let integrity = Integrity::parse(c.sha256.as_deref().unwrap_or_default())
                .map_err(|e| ResolveError::Archive { what: "chromium.sha256".into(), detail: e.to_string() })?;
            f.fetch_verified(&url, &integrity).await.map_err(ResolveError::BrowserDownload)?;
            LockedChromium::Archive { url, integrity, executable_path: c.executable_path.clone().unwrap_or_default() }
        }
    })
}

/// Resolves a whole spec into a lock.
pub async fn resolve(f: &Fetcher, spec: &ImageSpec) -> Result<Lock, ResolveError> {
    let node = resolve_node(f, spec).await?;
    let packages = resolve_cli(f, &spec.registry.npm, &spec.cli.version).await?;
    let chromium = resolve_chromium(f, spec, &packages).await?;
    let session_runtime = match &spec.session_runtime {
        None => None,
        Some(s) => {
            let bytes = f.get(&s.path).await?;
            Some(LockedFile { path: s.path.clone(), integrity: Integrity::sha256_of(&bytes) })
        }
    };
    let video_recorder = match &spec.video_recorder {
        None => None,
        Some(_) => {
            let (ffmpeg_revision, _) = locked_browser(f, &packages, "ffmpeg").await?;
            Some(LockedVideoRecorder { ffmpeg_revision })
        }
    };
    Ok(Lock {
        lock_version: LOCK_VERSION,
        spec: spec.clone(),
        node,
        packages,
        chromium,
        session_runtime,
        video_recorder,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_packuments_encode_the_slash() {
        assert_eq!(
            packument_url("https://registry.npmjs.org/", "@playwright/cli"),
            "https://registry.npmjs.org/@playwright%2fcli"
        );
        assert_eq!(packument_url("https://m/npm", "playwright"), "https://m/npm/playwright");
    }

    #[test]
    fn only_exact_requirements_are_followed() {
        assert_eq!(exact_requirement("1.58.0-alpha-2026-01-01"), Some("1.58.0-alpha-2026-01-01"));
        assert_eq!(exact_requirement("=1.2.3"), Some("1.2.3"));
        assert_eq!(exact_requirement("^1.2.3"), None);
        assert_eq!(exact_requirement("*"), None);
    }

    #[test]
    fn missing_versions_are_package_absent() {
        let p = serde_json::json!({"versions": {"1.0.0": {"dist": {"tarball": "https://r/x.tgz", "integrity": Integrity::sha512_of(b"x").to_string()}}}});
        let err = version_entry(&p, "x", "2.0.0", "https://r").unwrap_err();
        assert_eq!(crate::failure::Classify::class(&err), crate::failure::FailureClass::PackageAbsent);
        assert!(err.to_string().contains("x@2.0.0"));
        let (t, i, d) = version_entry(&p, "x", "1.0.0", "https://r").unwrap();
        assert_eq!((t.as_str(), i.algorithm(), d.len()), ("https://r/x.tgz", "sha512", 0));
    }

    #[test]
    fn a_registry_cannot_point_a_tarball_at_a_local_file() {
        for tarball in ["/etc/shadow", "file:///etc/shadow", "../x.tgz", "https://r/x.tgz\nRUN id", "ftp://bob:pw@h/x"]
        {
            let p = serde_json::json!({"versions": {"1.0.0": {"dist": {"tarball": tarball, "integrity": Integrity::sha512_of(b"x").to_string()}}}});
            let err = version_entry(&p, "x", "1.0.0", "https://bob:pw@r").unwrap_err();
            assert_eq!(crate::failure::Classify::class(&err).exit_code(), 24, "{err}");
            let text = err.to_string();
            assert!(text.contains("`x@1.0.0 dist.tarball`") && text.contains("registry.npm"), "{text}");
            assert!(!text.contains("pw@") && !text.contains('\n'), "{text}");
        }
    }

    #[test]
    fn hostile_requirements_are_not_exact() {
        assert_eq!(exact_requirement("1.2.3-$(id)"), None);
        assert_eq!(exact_requirement("1.2.3\nRUN id"), None);
        assert_eq!(exact_requirement("1.2.3 || 2.0.0"), None);
    }

    #[test]
    fn dist_file_names_are_libc_aware() {
        assert_eq!(node_dist_file("22.12.0", "x64", Libc::Glibc), "node-v22.12.0-linux-x64.tar.gz");
        assert_eq!(node_dist_file("22.12.0", "x64", Libc::Musl), "node-v22.12.0-linux-x64-musl.tar.gz");
    }

    #[test]
    fn browsers_json_gives_the_chromium_revision() {
        let text = r#"{"comment":"x","browsers":[{"name":"chromium","revision":"1247","installByDefault":true,"browserVersion":"147.0.1"},{"name":"firefox","revision":"1"}]}"#;
        assert_eq!(browser_from_browsers_json(text, "chromium"), Ok(("1247".into(), Some("147.0.1".into()))));
        assert_eq!(browser_from_browsers_json(text, "firefox"), Ok(("1".into(), None)));
        assert_eq!(browser_from_browsers_json(text, "ffmpeg"), Err("browsers.json names no ffmpeg".into()));
        assert!(browser_from_browsers_json(r#"{"browsers":[]}"#, "chromium").is_err());
    }
}
