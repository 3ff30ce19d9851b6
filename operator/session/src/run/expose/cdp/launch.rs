//! The launch config the daemon gets when CDP is on: the session's own
//! (generated or the user's Secret), with the debugging port argument added.
//! Written to the container's private `/tmp` (an agent sidecar never mounts
//! it; the config may hold proxy credentials), owner-only.
//!
//! Without a profile the CLI runs "isolated": its pages live in a separate
//! (incognito) browser context, and pages a CDP client opens land in
//! Chromium's default context, which the CLI never sees (measured: neither a
//! `connectOverCDP` page nor `/json/new` appeared in `tab-list`). So with CDP
//! on, a session without a profile gets a fresh throwaway one in `/tmp`: the
//! CLI then drives Chromium's default context, the one CDP clients share.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::discover::PORT_ARG;

/// Arguments the runtime owns while CDP is on: a debugging port or address
/// the launch config names would move the endpoint off loopback or off the
/// port the relay finds.
const OWNED_PREFIXES: [&str; 2] = ["--remote-debugging-port", "--remote-debugging-address"];

/// `config` with [`PORT_ARG`] in `browser.launchOptions.args` (and any
/// debugging port or address of its own removed), and `throwaway_profile` as
/// its user data directory when it names none. Refuses a config whose shape
/// would make the argument be ignored.
pub fn with_debugging_port(mut config: Value, throwaway_profile: &Path) -> Result<Value, String> {
    let browser = config
        .as_object_mut()
        .ok_or("the launch config is not a JSON object")?
        .entry("browser")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("browser in the launch config is not an object")?;
    if !browser.contains_key("userDataDir") {
        browser.insert("userDataDir".into(), Value::String(throwaway_profile.display().to_string()));
    }
    // The CLI refuses a profile in isolated mode, and isolated pages are invisible to CDP clients.
    browser.insert("isolated".into(), Value::Bool(false));
    let options = browser
        .entry("launchOptions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("browser.launchOptions in the launch config is not an object")?;
    let args = options
        .entry("args")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("browser.launchOptions.args in the launch config is not an array")?;
    args.retain(|arg| !arg.as_str().is_some_and(|a| OWNED_PREFIXES.iter().any(|p| a.starts_with(p))));
    args.push(Value::String(PORT_ARG.into()));
    Ok(config)
}

/// What the daemon is started with when CDP is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// The derived launch config (`PLAYWRIGHT_MCP_CONFIG`).
    pub config: PathBuf,
    /// The browser's profile: the session's own, or the throwaway one.
    pub user_data_dir: PathBuf,
}

/// Reads `source`, derives the config, writes `<dir>/launch-cdp.json`
/// (0600). A throwaway profile left by an earlier container is removed: each
/// start begins as clean as an isolated browser would.
pub fn write(source: &Path, dir: &Path) -> Result<Derived, String> {
    let text = std::fs::read_to_string(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", source.display()))?;
    let throwaway = dir.join("playpen-cdp-profile");
    let derived = with_debugging_port(config, &throwaway)?;
    let user_data_dir = derived
        .pointer("/browser/userDataDir")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or("browser.userDataDir in the launch config is not a string")?;
    if user_data_dir == throwaway {
        match std::fs::remove_dir_all(&throwaway) {
            Ok(()) => tracing::info!(profile = %throwaway.display(), "removed the last container's throwaway profile"),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(format!("cannot remove the stale profile {}: {err}", throwaway.display())),
        }
    }
    let bytes = serde_json::to_vec_pretty(&derived).map_err(|e| e.to_string())?;
    let path = dir.join("launch-cdp.json");
    crate::run::browser::profile::write_owner_only(&path, &bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Derived { config: path, user_data_dir })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const THROWAWAY: &str = "/tmp/playpen-cdp-profile";

    #[test]
    fn the_port_is_added_and_the_users_own_debugging_flags_go() {
        let config = json!({"browser": {"browserName": "chromium", "userDataDir": "/var/lib/playpen/profile", "launchOptions": {
            "headless": true,
            "args": ["--disable-gpu", "--remote-debugging-port=9222", "--remote-debugging-address=0.0.0.0"]
        }}});
        let derived = with_debugging_port(config, Path::new(THROWAWAY)).unwrap();
        assert_eq!(derived["browser"]["launchOptions"]["args"], json!(["--disable-gpu", PORT_ARG]));
        assert_eq!(derived["browser"]["launchOptions"]["headless"], json!(true), "the rest is kept");
        assert_eq!(derived["browser"]["browserName"], json!("chromium"));
        assert_eq!(
            derived["browser"]["userDataDir"],
            json!("/var/lib/playpen/profile"),
            "the session's profile is kept"
        );
    }

    #[test]
    fn without_a_profile_the_browser_gets_the_throwaway_one_and_is_not_isolated() {
        let derived = with_debugging_port(json!({"browser": {"isolated": true}}), Path::new(THROWAWAY)).unwrap();
        assert_eq!(
            derived,
            json!({"browser": {"isolated": false, "userDataDir": THROWAWAY, "launchOptions": {"args": [PORT_ARG]}}})
        );
    }

    #[test]
    fn a_shape_the_cli_would_not_read_is_refused_by_name() {
        let fail = |config: Value| with_debugging_port(config, Path::new(THROWAWAY)).unwrap_err();
        assert!(fail(json!([])).contains("not a JSON object"));
        assert!(fail(json!({"browser": 1})).contains("browser in"));
        assert!(fail(json!({"browser": {"launchOptions": {"args": "x"}}})).contains("browser.launchOptions.args"));
    }

    #[test]
    fn the_written_copy_is_owner_only_and_a_stale_throwaway_profile_goes() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("config.json");
        std::fs::write(&source, r#"{"browser":{"launchOptions":{"args":["--x"]}}}"#).unwrap();
        let stale = dir.path().join("playpen-cdp-profile/Default/Cookies");
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, "last container's cookies").unwrap();
        let derived = write(&source, dir.path()).unwrap();
        assert!(!stale.exists(), "each start begins without the last one's state");
        assert_eq!(derived.user_data_dir, dir.path().join("playpen-cdp-profile"));
        assert_eq!(std::fs::metadata(&derived.config).unwrap().permissions().mode() & 0o777, 0o600);
        let written: Value = serde_json::from_slice(&std::fs::read(&derived.config).unwrap()).unwrap();
        assert_eq!(written["browser"]["launchOptions"]["args"], json!(["--x", PORT_ARG]));
        // Again (a restarted container): replaced, not refused.
        write(&source, dir.path()).unwrap();
    }
}
