//! The image's default Chromium arguments on the session's launch config.
//!
//! The image builder writes the arguments every browser of the image should
//! get (no background networking, no spare renderer, no omnibox popups...:
//! `/etc/playpen/launch-defaults.json`), but the launch config the operator
//! generates carries only the session's own `args`. The runtime gives the
//! daemon a derived config: the image's arguments the session does not set
//! itself, then the session's. A flag the session names (by the part before
//! `=`) replaces the image's, so a tenant can still turn any of them off.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::run::browser::profile::write_owner_only;

/// Where the derived config is written, under the runtime's temp directory.
pub const DERIVED_FILE: &str = "launch-with-image-defaults.json";

/// `--flag` of `--flag=value`.
fn flag_name(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(name, _)| name)
}

/// The image's arguments the session does not name, then the session's.
pub fn merged_args(image: &[String], session: &[String]) -> Vec<String> {
    let named: std::collections::BTreeSet<&str> = session.iter().map(|a| flag_name(a)).collect();
    image.iter().filter(|a| !named.contains(flag_name(a))).chain(session).cloned().collect()
}

fn args_at(config: &Value) -> Vec<String> {
    config
        .pointer("/browser/launchOptions/args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `config` with the image's arguments merged in; `None` when that changes
/// nothing (no defaults, or the session names every one of them).
pub fn with_image_defaults(mut config: Value, defaults: &Value) -> Result<Option<Value>, String> {
    let image = args_at(defaults);
    let session = args_at(&config);
    let merged = merged_args(&image, &session);
    if merged == session {
        return Ok(None);
    }
    let browser = config
        .as_object_mut()
        .ok_or("the launch config is not a JSON object")?
        .entry("browser")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let options = browser
        .as_object_mut()
        .ok_or("browser in the launch config is not an object")?
        .entry("launchOptions")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    options
        .as_object_mut()
        .ok_or("browser.launchOptions in the launch config is not an object")?
        .insert("args".into(), Value::from(merged));
    Ok(Some(config))
}

/// Writes `<dir>/launch-with-image-defaults.json` (0600: a launch config
/// may carry proxy credentials) when the image's defaults add arguments;
/// returns its path. A missing or unreadable defaults file adds nothing.
pub fn write(source: &Path, defaults: &Path, dir: &Path) -> Result<Option<PathBuf>, String> {
    let Some(defaults) = std::fs::read(defaults).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", source.display()))?;
    let Some(derived) = with_image_defaults(config, &defaults)? else { return Ok(None) };
    let bytes = serde_json::to_vec_pretty(&derived).map_err(|e| e.to_string())?;
    let path = dir.join(DERIVED_FILE);
    write_owner_only(&path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_sessions_flags_come_last_and_replace_the_images_of_the_same_name() {
        let image = strings(&["--disable-quic", "--disable-features=A,B", "--no-pings"]);
        let session = strings(&["--disable-features=C", "--lang=de"]);
        assert_eq!(
            merged_args(&image, &session),
            strings(&["--disable-quic", "--no-pings", "--disable-features=C", "--lang=de"])
        );
        assert_eq!(merged_args(&image, &[]), image);
        assert_eq!(merged_args(&[], &session), session);
    }

    #[test]
    fn only_args_change_and_nothing_is_derived_when_nothing_is_added() {
        let defaults = json!({"browser": {"launchOptions": {"args": ["--disable-quic"], "chromiumSandbox": false,
            "executablePath": "/image/chromium"}}});
        let config = json!({"browser": {"browserName": "chromium", "launchOptions": {"chromiumSandbox": true,
            "args": ["--lang=de"]}}, "outputDir": "/o"});
        let derived = with_image_defaults(config.clone(), &defaults).unwrap().unwrap();
        assert_eq!(derived["browser"]["launchOptions"]["args"], json!(["--disable-quic", "--lang=de"]));
        assert_eq!(derived["browser"]["launchOptions"]["chromiumSandbox"], true, "the session's sandbox stays");
        assert!(derived["browser"]["launchOptions"].get("executablePath").is_none(), "only args come from the image");
        assert_eq!(derived["outputDir"], "/o");
        let both = json!({"browser": {"launchOptions": {"args": ["--disable-quic", "--lang=de"]}}});
        assert_eq!(with_image_defaults(both, &defaults).unwrap(), None);
        assert_eq!(with_image_defaults(config, &json!({})).unwrap(), None, "an image without default args");
        let bare = with_image_defaults(json!({}), &defaults).unwrap().unwrap();
        assert_eq!(bare["browser"]["launchOptions"]["args"], json!(["--disable-quic"]));
        assert!(with_image_defaults(json!({"browser": 1}), &defaults).is_err());
    }

    #[test]
    fn the_derived_file_is_owner_only_and_absent_defaults_add_nothing() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("config.json");
        std::fs::write(&source, r#"{"browser":{"launchOptions":{"args":["--lang=de"]}}}"#).unwrap();
        let defaults = dir.path().join("defaults.json");
        assert_eq!(write(&source, &defaults, dir.path()).unwrap(), None, "no defaults file");
        std::fs::write(&defaults, r#"{"browser":{"launchOptions":{"args":["--disable-quic"]}}}"#).unwrap();
        let path = write(&source, &defaults, dir.path()).unwrap().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let derived: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(derived["browser"]["launchOptions"]["args"], json!(["--disable-quic", "--lang=de"]));
    }
}
