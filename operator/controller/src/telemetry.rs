//! Structured JSON logs through tracing.

use tracing_subscriber::{fmt, EnvFilter};

/// Installs the global subscriber: JSON lines, level from `RUST_LOG`
/// (default `info`). `json = false` gives human-readable lines.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,kube=warn"));
    let builder = fmt().with_env_filter(filter).with_target(false);
    let result = if json { builder.json().flatten_event(true).try_init() } else { builder.try_init() };
    // A second init (tests) keeps the first subscriber.
    drop(result);
}
