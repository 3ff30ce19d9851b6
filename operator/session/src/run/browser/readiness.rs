//! Is the browser the launch config names installed? A distribution or
//! archive Chromium (`executablePath`) must exist; otherwise the exact
//! `chromium-<revision>` that the attributed playwright-core's
//! `browsers.json` requires must be in the browser cache (a stale revision is
//! not ready). No attributable manifest means an unknown revision, answered
//! by presence alone: an unknown is not a failure.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What the launch config says about the browser.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchFacts {
    /// `browser.launchOptions.executablePath`.
    pub executable_path: Option<String>,
    /// `browser.launchOptions.channel` (a branded browser we do not check).
    pub channel: Option<String>,
    /// `browser.launchOptions.chromiumSandbox`.
    pub chromium_sandbox: Option<bool>,
    /// `browser.userDataDir`: a persistent profile.
    pub user_data_dir: Option<String>,
}

/// Reads the nested `{"browser":{"launchOptions":{...}}}` form.
pub fn launch_facts(config: &Value) -> LaunchFacts {
    let options = config.pointer("/browser/launchOptions");
    let text = |key: &str| options.and_then(|o| o.get(key)).and_then(Value::as_str).map(str::to_owned);
    LaunchFacts {
        executable_path: text("executablePath"),
        channel: text("channel"),
        chromium_sandbox: options.and_then(|o| o.get("chromiumSandbox")).and_then(Value::as_bool),
        user_data_dir: config.pointer("/browser/userDataDir").and_then(Value::as_str).map(str::to_owned),
    }
}

/// The chromium revision in a `browsers.json` document.
pub fn chromium_revision(browsers_json: &Value) -> Option<String> {
    revision_of(browsers_json, "chromium")
}

/// The revision of `name` (chromium, ffmpeg, ...) in a `browsers.json` document.
pub fn revision_of(browsers_json: &Value, name: &str) -> Option<String> {
    browsers_json
        .get("browsers")?
        .as_array()?
        .iter()
        .find(|b| b.get("name").and_then(Value::as_str) == Some(name))?
        .get("revision")?
        .as_str()
        .map(str::to_owned)
}

/// Where Playwright's video recorder runs ffmpeg from, if it is there:
/// `<browsers cache>/ffmpeg-<revision>/ffmpeg-linux`. Playwright swallows a
/// missing ffmpeg (`video-start` answers "started" and nothing is written),
/// so the runtime looks before it starts.
pub fn ffmpeg_for_video(browsers_json: Option<&Value>, browsers_cache: &Path) -> Result<PathBuf, String> {
    let revision = browsers_json
        .and_then(|json| revision_of(json, "ffmpeg"))
        .ok_or("the CLI's playwright-core browsers.json is unreadable or names no ffmpeg")?;
    let path = browsers_cache.join(format!("ffmpeg-{revision}")).join("ffmpeg-linux");
    if is_executable(&path) {
        Ok(path)
    } else {
        Err(format!("no ffmpeg at {} (Playwright's video recorder runs it)", path.display()))
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
}

/// The browser is not installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserMissing {
    /// The configured executable does not exist.
    #[error("the launch config's executablePath {0} does not exist or is not executable: install the browser in the image or fix executablePath")]
    Executable(String),
    /// The exact revision is absent (maybe others are present).
    #[error("chromium-{revision} (required by the installed playwright-core) is not in {cache}; present: {present:?}. Rebuild the image with the browser revision the CLI pins")]
    Revision {
        /// Required revision.
        revision: String,
        /// The browser cache searched.
        cache: String,
        /// The chromium directories that are there.
        present: Vec<String>,
    },
    /// No revision known and no chromium at all.
    #[error("no chromium build in {0} and no executablePath in the launch config")]
    Nothing(String),
}

/// The verdict over what is on disk. `revision` is `None` when no manifest
/// could be attributed.
pub fn check(facts: &LaunchFacts, revision: Option<&str>, browsers_cache: &Path) -> Result<(), BrowserMissing> {
    if let Some(path) = &facts.executable_path {
        return if is_executable(Path::new(path)) { Ok(()) } else { Err(BrowserMissing::Executable(path.clone())) };
    }
    if facts.channel.is_some() {
        return Ok(());
    }
    let present: Vec<String> = std::fs::read_dir(browsers_cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.strip_prefix("chromium-").is_some_and(|rev| rev.bytes().all(|b| b.is_ascii_digit())))
        .collect();
    match revision {
        Some(rev) if present.iter().any(|p| p == &format!("chromium-{rev}")) => Ok(()),
        Some(rev) => Err(BrowserMissing::Revision {
            revision: rev.to_owned(),
            cache: browsers_cache.display().to_string(),
            present,
        }),
        None if present.is_empty() => Err(BrowserMissing::Nothing(browsers_cache.display().to_string())),
        None => Ok(()),
    }
}

/// Playwright's browser cache: `PLAYWRIGHT_BROWSERS_PATH`, else `~/.cache/ms-playwright`.
pub fn browsers_cache(browsers_path: Option<&str>, home: &Path) -> PathBuf {
    browsers_path
        .filter(|p| !p.is_empty() && *p != "0")
        .map_or_else(|| home.join(".cache/ms-playwright"), PathBuf::from)
}

/// The attributed `browsers.json`, if it can be read (once, at start-up: the
/// chromium and the ffmpeg revision both come from it).
pub fn read_browsers_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ffmpeg_is_looked_for_where_playwright_runs_it() {
        let tmp = tempfile::tempdir().unwrap();
        let browsers = json!({"browsers":[{"name":"chromium","revision":"1"},{"name":"ffmpeg","revision":"1011"}]});
        let browsers_json = Some(&browsers);
        let cache = tmp.path().join("cache");
        let missing = ffmpeg_for_video(browsers_json, &cache).unwrap_err();
        assert!(missing.contains("ffmpeg-1011/ffmpeg-linux"), "{missing}");
        let path = cache.join("ffmpeg-1011/ffmpeg-linux");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        assert!(ffmpeg_for_video(browsers_json, &cache).is_err(), "not executable");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(ffmpeg_for_video(browsers_json, &cache).unwrap(), path);
        assert!(ffmpeg_for_video(Some(&json!({"browsers": []})), &cache).unwrap_err().contains("names no ffmpeg"));
        assert!(ffmpeg_for_video(None, &cache).unwrap_err().contains("names no ffmpeg"));
    }

    #[test]
    fn launch_facts_come_from_the_nested_form_only() {
        let nested = json!({"browser":{"browserName":"chromium","userDataDir":"/var/lib/playpen/profile",
            "launchOptions":{"executablePath":"/usr/bin/chromium","chromiumSandbox":true}}});
        let f = launch_facts(&nested);
        assert_eq!(f.user_data_dir.as_deref(), Some("/var/lib/playpen/profile"));
        assert_eq!(f.executable_path.as_deref(), Some("/usr/bin/chromium"));
        assert_eq!(f.chromium_sandbox, Some(true));
        let flat = json!({"browserName":"chromium","executablePath":"/usr/bin/chromium"});
        assert_eq!(launch_facts(&flat), LaunchFacts::default());
    }

    #[test]
    fn revision_is_read_from_browsers_json() {
        let doc = json!({"browsers":[{"name":"chromium-headless-shell","revision":"9"},{"name":"chromium","revision":"1247"}]});
        assert_eq!(chromium_revision(&doc).as_deref(), Some("1247"));
        assert_eq!(chromium_revision(&json!({"browsers":[]})), None);
        assert_eq!(chromium_revision(&json!({})), None);
    }

    fn cache_with(dirs: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        tmp
    }

    #[test]
    fn the_exact_revision_is_ready_and_a_stale_one_is_not() {
        let cache = cache_with(&["chromium-1208", "chromium_headless_shell-1247"]);
        let facts = LaunchFacts::default();
        let err = check(&facts, Some("1247"), cache.path()).unwrap_err();
        assert!(
            matches!(&err, BrowserMissing::Revision { present, .. } if present == &vec!["chromium-1208".to_owned()])
        );
        std::fs::create_dir_all(cache.path().join("chromium-1247")).unwrap();
        assert!(check(&facts, Some("1247"), cache.path()).is_ok());
    }

    #[test]
    fn an_unknown_revision_is_answered_by_presence() {
        let facts = LaunchFacts::default();
        assert!(check(&facts, None, cache_with(&["chromium-1208"]).path()).is_ok());
        assert!(matches!(check(&facts, None, cache_with(&[]).path()), Err(BrowserMissing::Nothing(_))));
        // The headless shell is a different artifact.
        assert!(check(&facts, None, cache_with(&["chromium_headless_shell-1"]).path()).is_err());
    }

    #[test]
    fn an_executable_path_must_exist_and_be_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = tmp.path().join("chromium");
        std::fs::write(&exe, "").unwrap();
        let facts = LaunchFacts { executable_path: Some(exe.display().to_string()), ..LaunchFacts::default() };
        assert!(matches!(check(&facts, Some("1247"), tmp.path()), Err(BrowserMissing::Executable(_))));
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert!(check(&facts, Some("1247"), tmp.path()).is_ok(), "a distribution chromium ignores the revision");
    }

    #[test]
    fn a_branded_channel_is_not_checked() {
        let facts = LaunchFacts { channel: Some("chrome".into()), ..LaunchFacts::default() };
        assert!(check(&facts, Some("1"), Path::new("/nonexistent")).is_ok());
    }

    #[test]
    fn browsers_cache_honours_the_env() {
        assert_eq!(browsers_cache(Some("/ms"), Path::new("/h")), PathBuf::from("/ms"));
        assert_eq!(browsers_cache(None, Path::new("/h")), PathBuf::from("/h/.cache/ms-playwright"));
        assert_eq!(browsers_cache(Some("0"), Path::new("/h")), PathBuf::from("/h/.cache/ms-playwright"));
    }
}
