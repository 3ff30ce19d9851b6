//! Attributes the playwright-core that serves the installed `@playwright/cli`
//! and checks that it still honours the `PWTEST_SOCKETS_DIR` and
//! `PWTEST_DAEMON_SESSION_DIR` hooks. Resolution is anchored on the CLI
//! package (its nested copy, then its hoisted sibling), never by walking up
//! parent directories: an unrelated `~/node_modules/playwright-core` must not
//! answer for it. The source verdict is cached by path, mtime and size, so an
//! upgrade in place invalidates it.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The socket-namespace hooks and the files of playwright-core 0.1.22-era
/// layouts whose execution paths must contain them: the daemon's bundle
/// (socket path and daemon dir) and the client's session registry.
pub const HOOKED_FILES: &[(&str, &[&str])] = &[
    ("lib/coreBundle.js", &["process.env.PWTEST_SOCKETS_DIR ||", "process.env.PWTEST_DAEMON_SESSION_DIR"]),
    ("lib/tools/cli-client/registry.js", &["process.env.PWTEST_DAEMON_SESSION_DIR"]),
];

/// The daemon entry point inside playwright-core (what `playwright-cli open` spawns).
pub const DAEMON_ENTRY: &str = "lib/entry/cliDaemon.js";
/// The dashboard entry point inside playwright-core (what `show` runs).
pub const DASHBOARD_ENTRY: &str = "lib/entry/dashboardApp.js";

/// Why the installed CLI cannot be used with a socket namespace.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// The launcher does not lead to an `@playwright/cli` package.
    #[error(
        "cannot attribute {launcher} to an @playwright/cli package ({why}); set PLAYPEN_CLI_PACKAGE to the package \
         directory (the one holding its package.json)"
    )]
    NoPackage {
        /// The launcher that was resolved.
        launcher: PathBuf,
        /// What was found instead.
        why: String,
    },
    /// Neither the nested nor the hoisted playwright-core exists.
    #[error("no playwright-core serves {package}: looked at {looked:?}; reinstall @playwright/cli")]
    NoCore {
        /// The CLI package.
        package: PathBuf,
        /// The candidates tried.
        looked: Vec<PathBuf>,
    },
    /// A hook is gone: sockets would silently land in the default locations.
    #[error(
        "the playwright-core at {core} no longer honours the socket-namespace hooks (missing: {missing:?}); \
         refusing to start rather than scatter the session's sockets outside its namespace. Pin an \
         @playwright/cli version that has them"
    )]
    Missing {
        /// The playwright-core directory.
        core: PathBuf,
        /// `file: needle` pairs not found.
        missing: Vec<String>,
    },
}

/// The attributed playwright-core install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreInstall {
    /// The `@playwright/cli` package directory.
    pub cli_package: PathBuf,
    /// The playwright-core directory serving it.
    pub core: PathBuf,
}

impl CoreInstall {
    /// The daemon entry script.
    pub fn daemon_entry(&self) -> PathBuf {
        self.core.join(DAEMON_ENTRY)
    }
    /// `browsers.json`, the browser revisions this core launches.
    pub fn browsers_json(&self) -> PathBuf {
        self.core.join("browsers.json")
    }
}

fn package_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("name")?.as_str().map(str::to_owned)
}

/// The `@playwright/cli` package of `launcher`: the directory its resolved
/// path (npm's bin symlink to `playwright-cli.js`) lives in.
pub fn package_of_launcher(launcher: &Path) -> Result<PathBuf, HooksError> {
    let fail = |why: String| HooksError::NoPackage { launcher: launcher.to_owned(), why };
    let real = std::fs::canonicalize(launcher).map_err(|e| fail(format!("cannot resolve it: {e}")))?;
    let dir = real.parent().ok_or_else(|| fail("it has no parent directory".into()))?;
    match package_name(dir) {
        Some(name) if name == "@playwright/cli" => Ok(dir.to_owned()),
        Some(name) => Err(fail(format!("{} belongs to package {name:?}", real.display()))),
        None => Err(fail(format!("{} has no package.json beside it (a wrapper script?)", real.display()))),
    }
}

/// Where Node would find playwright-core for `cli_package`, in order: a copy
/// nested under the package, then the hoisted sibling in the same
/// `node_modules` (two levels up for the scoped `@playwright/cli`).
pub fn core_candidates(cli_package: &Path) -> Vec<PathBuf> {
    let mut out = vec![cli_package.join("node_modules/playwright-core")];
    let parent = cli_package.parent();
    let scoped = parent.and_then(Path::file_name).is_some_and(|n| n.to_string_lossy().starts_with('@'));
    let node_modules = if scoped { parent.and_then(Path::parent) } else { parent };
    if let Some(node_modules) = node_modules {
        out.push(node_modules.join("playwright-core"));
    }
    out
}

/// The playwright-core serving `cli_package`.
pub fn serving_core(cli_package: &Path) -> Result<CoreInstall, HooksError> {
    let looked = core_candidates(cli_package);
    looked
        .iter()
        .find(|dir| package_name(dir).as_deref() == Some("playwright-core"))
        .map(|core| CoreInstall { cli_package: cli_package.to_owned(), core: core.clone() })
        .ok_or_else(|| HooksError::NoCore { package: cli_package.to_owned(), looked: looked.clone() })
}

/// Identity of a file's content for caching purposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    mtime_ns: i128,
    size: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        size: meta.size(),
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    stamp: Stamp,
    missing: Vec<String>,
}

/// Verdicts per file, keyed by path and valid while mtime and size match.
/// Persisted as JSON when given a path; a corrupt cache is just a miss.
#[derive(Debug, Default)]
pub struct VerdictCache {
    file: Option<PathBuf>,
    entries: BTreeMap<PathBuf, Entry>,
    /// How many files were actually read (for tests and logs).
    pub scans: usize,
}

impl VerdictCache {
    /// A cache persisted at `file`.
    pub fn persisted(file: PathBuf) -> Self {
        let entries =
            std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        Self { file: Some(file), entries, scans: 0 }
    }

    fn missing_in(&mut self, path: &Path, needles: &[&str]) -> Vec<String> {
        let Some(stamp) = stamp(path) else {
            return vec![format!("{}: file absent", path.display())];
        };
        if let Some(entry) = self.entries.get(path).filter(|e| e.stamp == stamp) {
            return entry.missing.clone();
        }
        self.scans += 1;
        let missing = match std::fs::read_to_string(path) {
            Ok(text) => needles
                .iter()
                .filter(|needle| !text.contains(*needle))
                .map(|needle| format!("{}: {needle}", path.display()))
                .collect(),
            Err(e) => vec![format!("{}: unreadable ({e})", path.display())],
        };
        self.entries.insert(path.to_owned(), Entry { stamp, missing: missing.clone() });
        missing
    }

    fn save(&self) {
        if let Some(file) = &self.file {
            if let Ok(text) = serde_json::to_string(&self.entries) {
                if let Err(e) = std::fs::write(file, text) {
                    tracing::debug!(file = %file.display(), %e, "hook verdict cache not saved");
                }
            }
        }
    }
}

/// Checks every hook of `core`, through the cache.
pub fn verify(install: &CoreInstall, cache: &mut VerdictCache) -> Result<(), HooksError> {
    let mut missing = vec![];
    for (file, needles) in HOOKED_FILES {
        missing.extend(cache.missing_in(&install.core.join(file), needles));
    }
    for entry in [install.daemon_entry(), install.core.join(DASHBOARD_ENTRY)] {
        if !entry.is_file() {
            missing.push(format!("{}: file absent", entry.display()));
        }
    }
    cache.save();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(HooksError::Missing { core: install.core.clone(), missing })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;

    /// Lays out `node_modules` as npm does: `@playwright/cli` with a hoisted
    /// `playwright-core` that has both hooks. Returns the `.bin` launcher.
    pub(crate) fn fake_install(root: &Path) -> PathBuf {
        let nm = root.join("node_modules");
        let cli = nm.join("@playwright/cli");
        fs::create_dir_all(&cli).unwrap();
        fs::write(cli.join("package.json"), r#"{"name":"@playwright/cli","version":"0.1.22"}"#).unwrap();
        fs::write(cli.join("playwright-cli.js"), "#!/usr/bin/env node\n").unwrap();
        write_core(&nm.join("playwright-core"), true);
        fs::create_dir_all(nm.join(".bin")).unwrap();
        let launcher = nm.join(".bin/playwright-cli");
        std::os::unix::fs::symlink("../@playwright/cli/playwright-cli.js", &launcher).unwrap();
        launcher
    }

    pub(crate) fn write_core(core: &Path, hooks: bool) {
        fs::create_dir_all(core.join("lib/tools/cli-client")).unwrap();
        fs::create_dir_all(core.join("lib/entry")).unwrap();
        fs::write(core.join("package.json"), r#"{"name":"playwright-core"}"#).unwrap();
        fs::write(core.join(DAEMON_ENTRY), "").unwrap();
        fs::write(core.join(DASHBOARD_ENTRY), "").unwrap();
        let bundle = if hooks {
            "const a = process.env.PWTEST_SOCKETS_DIR || tmp; if (process.env.PWTEST_DAEMON_SESSION_DIR) {}"
        } else {
            "const a = tmp; if (process.env.PWTEST_DAEMON_SESSION_DIR) {}"
        };
        fs::write(core.join("lib/coreBundle.js"), bundle).unwrap();
        fs::write(core.join("lib/tools/cli-client/registry.js"), "if (process.env.PWTEST_DAEMON_SESSION_DIR) {}")
            .unwrap();
    }

    #[test]
    fn launcher_symlink_leads_to_the_package_and_its_hoisted_core() {
        let tmp = tempfile::tempdir().unwrap();
        let launcher = fake_install(tmp.path());
        let pkg = package_of_launcher(&launcher).unwrap();
        assert!(pkg.ends_with("node_modules/@playwright/cli"));
        let install = serving_core(&pkg).unwrap();
        assert!(install.core.ends_with("node_modules/playwright-core"));
        let mut cache = VerdictCache::default();
        verify(&install, &mut cache).unwrap();
    }

    #[test]
    fn a_nested_copy_wins_over_the_hoisted_one() {
        let tmp = tempfile::tempdir().unwrap();
        let launcher = fake_install(tmp.path());
        let pkg = package_of_launcher(&launcher).unwrap();
        let nested = pkg.join("node_modules/playwright-core");
        write_core(&nested, false);
        let install = serving_core(&pkg).unwrap();
        assert_eq!(install.core, nested);
        let err = verify(&install, &mut VerdictCache::default()).unwrap_err();
        assert!(
            matches!(&err, HooksError::Missing { missing, .. } if missing.len() == 1
            && missing[0].ends_with("coreBundle.js: process.env.PWTEST_SOCKETS_DIR ||")),
            "{err}"
        );
    }

    #[test]
    fn an_ancestor_core_is_never_used() {
        // ~/node_modules/playwright-core above an install that has none.
        let tmp = tempfile::tempdir().unwrap();
        write_core(&tmp.path().join("node_modules/playwright-core"), true);
        let pkg = tmp.path().join("app/node_modules/@playwright/cli");
        fs::create_dir_all(&pkg).unwrap();
        let err = serving_core(&pkg).unwrap_err();
        assert!(matches!(err, HooksError::NoCore { ref looked, .. } if looked.len() == 2), "{err}");
    }

    #[test]
    fn unscoped_package_looks_one_level_up() {
        let c = core_candidates(Path::new("/x/node_modules/cli"));
        assert_eq!(
            c,
            vec![
                PathBuf::from("/x/node_modules/cli/node_modules/playwright-core"),
                "/x/node_modules/playwright-core".into()
            ]
        );
    }

    #[test]
    fn a_wrapper_script_cannot_be_attributed() {
        let tmp = tempfile::tempdir().unwrap();
        let wrapper = tmp.path().join("playwright-cli");
        fs::write(&wrapper, "#!/bin/sh\nexec node /opt/cli.js \"$@\"\n").unwrap();
        let err = package_of_launcher(&wrapper).unwrap_err();
        assert!(err.to_string().contains("PLAYPEN_CLI_PACKAGE"), "{err}");
        let other = tmp.path().join("other");
        fs::create_dir_all(&other).unwrap();
        fs::write(other.join("package.json"), r#"{"name":"left-pad"}"#).unwrap();
        fs::write(other.join("bin.js"), "").unwrap();
        assert!(package_of_launcher(&other.join("bin.js")).unwrap_err().to_string().contains("left-pad"));
    }

    #[test]
    fn missing_files_and_the_daemon_entry_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let core = tmp.path().join("core");
        write_core(&core, true);
        fs::remove_file(core.join(DAEMON_ENTRY)).unwrap();
        fs::remove_file(core.join("lib/tools/cli-client/registry.js")).unwrap();
        let install = CoreInstall { cli_package: tmp.path().into(), core };
        let HooksError::Missing { missing, .. } = verify(&install, &mut VerdictCache::default()).unwrap_err() else {
            panic!("expected Missing");
        };
        assert_eq!(missing.len(), 2, "{missing:?}");
    }

    #[test]
    fn the_verdict_is_cached_by_mtime_and_size_and_persisted() {
        let tmp = tempfile::tempdir().unwrap();
        let core = tmp.path().join("core");
        write_core(&core, true);
        let install = CoreInstall { cli_package: tmp.path().into(), core: core.clone() };
        let cache_file = tmp.path().join("verdict.json");
        let mut cache = VerdictCache::persisted(cache_file.clone());
        verify(&install, &mut cache).unwrap();
        assert_eq!(cache.scans, 2);
        verify(&install, &mut cache).unwrap();
        assert_eq!(cache.scans, 2, "unchanged files are not read again");

        let mut reloaded = VerdictCache::persisted(cache_file.clone());
        verify(&install, &mut reloaded).unwrap();
        assert_eq!(reloaded.scans, 0, "the persisted verdict is reused");

        // An upgrade in place changes size (and mtime): the verdict is redone.
        fs::write(core.join("lib/coreBundle.js"), "if (process.env.PWTEST_DAEMON_SESSION_DIR) {}").unwrap();
        let err = verify(&install, &mut reloaded).unwrap_err();
        assert!(matches!(err, HooksError::Missing { .. }));
        assert_eq!(reloaded.scans, 1);

        fs::write(&cache_file, "not json").unwrap();
        let mut corrupt = VerdictCache::persisted(cache_file);
        assert!(verify(&install, &mut corrupt).is_err());
    }
}
