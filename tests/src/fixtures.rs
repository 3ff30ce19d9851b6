//! The objects many tests create, built in one place.

use serde_json::{json, Value};

/// A BrowserSession `name` with `spec`, as JSON (tests that send it raw or
/// look at what the schema makes of it).
pub fn session_json(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession", "metadata": {"name": name}, "spec": spec})
}

/// A BrowserSession `name` with `spec`, ready to create.
pub fn session(name: &str, spec: Value) -> anyhow::Result<playpen_api::BrowserSession> {
    Ok(serde_json::from_value(session_json(name, spec))?)
}
