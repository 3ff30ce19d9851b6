//! The viewer as a human meets it: Debian's headless Chromium on the host
//! opens the dashboard through `kubectl port-forward`, sees the page the
//! agent opened in the live screencast (one pixel of a known colour), and in
//! interactive mode clicks it; the page's changed state is read back with
//! `playwright-cli eval`. Screenshots stay in `<target>/e2e-artifacts`.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use kube::api::{Api, DeleteParams};
use kube::Client;
use playpen_api::BrowserSession;
use serde_json::json;

use crate::clients;
use crate::kubectl::{exec, tunnel, Pinned};
use crate::session::{create, pod_name, wait_ready, BROWSER, VIEWER_PORT};
use crate::setup::Installed;

/// The fixture's `/colour` page before and after its click.
const BEFORE: [i64; 3] = [255, 0, 170];
const AFTER: [i64; 3] = [0, 170, 255];

fn near(seen: &serde_json::Value, wanted: [i64; 3]) -> bool {
    let seen: Vec<i64> =
        seen.as_array().map(|a| a.iter().filter_map(serde_json::Value::as_i64).collect()).unwrap_or_default();
    // The screencast is JPEG: a few units off, never a different colour.
    seen.len() == 3 && seen.iter().zip(wanted).all(|(s, w)| (s - w).abs() <= 24)
}

/// A real browser watches and drives a session through the viewer.
pub async fn a_real_browser_watches_and_drives(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let (ns, name) = (installed.team_a.name.as_str(), "watched");
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "fixture"}}]}});
    create(client, ns, name, "Enforced", network).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    let pod = pod_name(&status)?;
    let colour = format!("{}colour", installed.fixture_url);
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &colour]).await?.ok("playwright-cli goto")?;
    ensure!(out.contains("Page Title: Colour fixture"), "goto printed:\n{out}");

    let forward = tunnel(ns, name, Pinned::Viewer(VIEWER_PORT), installed.runtime_class.as_deref()).await?;
    let artifacts = clients::artifacts_dir()?;
    let dashboard = format!("http://127.0.0.1:{}/", forward.local_port);
    let seen = clients::run(
        "viewer.js",
        &[&dashboard, "Colour fixture", &artifacts.display().to_string()],
        Duration::from_secs(180),
    )
    .await
    .context("the viewer in a real browser")?;
    ensure!(near(&seen["before"], BEFORE), "the screencast does not show the agent's page: {seen}");
    ensure!(near(&seen["after"], AFTER), "a click on the screencast did not reach the page: {seen}");
    let state =
        exec(ns, &pod, BROWSER, &["playwright-cli", "eval", "document.body.dataset.clicked"]).await?.ok("eval")?;
    ensure!(state.contains("\"yes\""), "the page's own state after the viewer's click:\n{state}");
    eprintln!("e2e: the viewer in a real browser showed and drove {ns}/{name}; screenshots in {}", artifacts.display());
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete(name, &DeleteParams::background()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_match_within_jpeg_noise_only() {
        assert!(near(&json!([250, 6, 168]), BEFORE));
        assert!(!near(&json!([0, 170, 255]), BEFORE));
        assert!(!near(&json!([255, 0]), BEFORE));
        assert!(!near(&json!(null), AFTER));
    }
}
