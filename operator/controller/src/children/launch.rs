//! The launch-config Secret: the nested `{"browser":{...}}` form the CLI
//! reads through `PLAYWRIGHT_MCP_CONFIG` (a flat `browserName` is silently
//! ignored by the CLI, so the nesting matters).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;
use playpen_api::layout::{LAUNCH_CONFIG_KEY, PROFILE_DIR};
use playpen_api::v1alpha1::SandboxMode;
use playpen_api::{BrowserSession, BrowserSessionSpec};
use serde_json::{json, Map, Value};

use super::{labels::child_meta, Identity};
use crate::error::{Error, Result};

/// The generated launch config for `spec`.
pub fn launch_config_json(spec: &BrowserSessionSpec) -> Value {
    let launch = &spec.browser.launch_config;
    let mut options = Map::new();
    options.insert("chromiumSandbox".into(), Value::Bool(spec.browser.sandbox == SandboxMode::Enforced));
    options.insert("headless".into(), Value::Bool(launch.headless.unwrap_or(true)));
    if let Some(path) = &launch.executable_path {
        options.insert("executablePath".into(), Value::String(path.clone()));
    }
    if let Some(args) = launch.args.as_ref().filter(|a| !a.is_empty()) {
        options.insert("args".into(), json!(args));
    }
    let mut browser = Map::new();
    browser.insert("browserName".into(), Value::String("chromium".into()));
    if spec.profile.is_some() {
        browser.insert("userDataDir".into(), Value::String(PROFILE_DIR.into()));
    }
    browser.insert("launchOptions".into(), Value::Object(options));
    json!({ "browser": browser })
}

/// The generated Secret, or `None` when the user names their own config.
pub fn launch_secret(bs: &BrowserSession, id: &Identity) -> Result<Option<Secret>> {
    if bs.spec.browser.launch_config.secret_ref.is_some() {
        return Ok(None);
    }
    let config = serde_json::to_string_pretty(&launch_config_json(&bs.spec))
        .map_err(|source| Error::Serialize { what: "launch config", source })?;
    Ok(Some(Secret {
        metadata: child_meta(id, &id.names.launch_secret, "launch-config"),
        type_: Some("Opaque".into()),
        // `data`, not `stringData`: the API server never stores stringData,
        // so applying it would look like a change on every reconcile.
        data: Some(BTreeMap::from([(LAUNCH_CONFIG_KEY.to_owned(), ByteString(config.into_bytes()))])),
        immutable: Some(false),
        ..Secret::default()
    }))
}
