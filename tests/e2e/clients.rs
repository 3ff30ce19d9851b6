//! The host-side clients in `tests/e2e/clients/` (installed by
//! `tests/e2e/clients.sh`, found through `PLAYPEN_E2E_CLIENTS`): Node scripts
//! that print one JSON line.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use tokio::process::Command;

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/clients");

/// Where test artifacts (screenshots) go: `<target>/e2e-artifacts`.
pub fn artifacts_dir() -> anyhow::Result<PathBuf> {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    let dir = target.join("e2e-artifacts");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Runs `tests/e2e/clients/<script>` with `args`; returns its JSON line.
pub async fn run(script: &str, args: &[&str], timeout: Duration) -> anyhow::Result<serde_json::Value> {
    let prefix = std::env::var("PLAYPEN_E2E_CLIENTS").context(
        "PLAYPEN_E2E_CLIENTS is not set: run `export PLAYPEN_E2E_CLIENTS=$(tests/e2e/clients.sh | tail -n 1)` (tests/run.sh does)",
    )?;
    let output = tokio::time::timeout(
        timeout,
        Command::new("node")
            .arg(format!("{SCRIPTS}/{script}"))
            .args(args)
            .env("NODE_PATH", format!("{prefix}/node_modules"))
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("node {script} did not finish within {timeout:?}"))??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(line) = stdout.lines().rev().find(|l| l.starts_with('{')) else {
        bail!(
            "node {script} {args:?} printed no result (exit {:?}):\n{stdout}\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let result: serde_json::Value = serde_json::from_str(line).with_context(|| format!("node {script}: {line}"))?;
    if let Some(error) = result.get("error") {
        bail!("node {script} {args:?} failed: {}", error.as_str().unwrap_or_default());
    }
    Ok(result)
}
