//! The CDP endpoint from the host, through `kubectl port-forward` (which
//! RBAC authorises as `pods/portforward`): Playwright's `connectOverCDP` and
//! Puppeteer's `connect` each open a page in the session's browser, and the
//! agent's `playwright-cli tab-list` lists both beside its own. A request
//! with a foreign Host header (DNS rebinding) is refused through the tunnel.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use kube::api::{Api, DeleteParams};
use kube::Client;
use playpen_api::BrowserSession;
use playpen_tests::http_get_as;
use serde_json::json;

use crate::clients;
use crate::kubectl::{exec, tunnel, Pinned};
use crate::session::{create_with, pod_name, wait_ready, BROWSER};
use crate::setup::Installed;

/// Playwright and Puppeteer drive the agent's browser over CDP.
pub async fn playwright_and_puppeteer_drive_the_session(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let (ns, name) = (installed.team_a.name.as_str(), "shared");
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "fixture"}}]}});
    create_with(client, ns, name, "Enforced", network, json!({"cdp": {"enabled": true}})).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    let cdp = status.cdp.clone().context("status.cdp is empty for a session with spec.cdp.enabled")?;
    ensure!(cdp.command.contains(&format!("svc/{name}-view {0}:{0}", cdp.port)), "status.cdp: {cdp:?}");
    let pod = pod_name(&status)?;
    let fixture = installed.fixture_url.as_str();
    exec(ns, &pod, BROWSER, &["playwright-cli", "goto", fixture]).await?.ok("the agent's goto")?;

    let pinned = Pinned::Cdp { service: &cdp.service, port: u16::try_from(cdp.port)? };
    let forward = tunnel(ns, name, pinned, installed.runtime_class.as_deref()).await?;
    let endpoint = format!("http://127.0.0.1:{}", forward.local_port);
    let tunnel = std::net::SocketAddr::from(([127, 0, 0, 1], forward.local_port));
    let (status, body) = http_get_as(tunnel, "/json/version", "attacker.example").await?;
    ensure!(status == 403, "a foreign Host through the tunnel got {status}:\n{body}");

    let seen =
        clients::run("cdp.js", &[&endpoint, fixture], Duration::from_secs(120)).await.context("the CDP clients")?;
    let saw_agent = |key: &str| seen[key].as_array().is_some_and(|pages| pages.iter().any(|p| p == fixture));
    ensure!(saw_agent("playwrightSaw"), "Playwright did not see the agent's page: {seen}");
    ensure!(saw_agent("puppeteerSaw"), "Puppeteer did not see the agent's page: {seen}");
    ensure!(seen["playwrightTitle"] == "Playpen fixture" && seen["puppeteerTitle"] == "Playpen fixture", "{seen}");

    // The agent sees both clients' pages (the CLI learns of them from the browser's events).
    let tabs = playpen_tests::eventually(Duration::from_secs(20), || async {
        let tabs = exec(ns, &pod, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("tab-list")?;
        for client in ["playwright", "puppeteer"] {
            ensure!(tabs.contains(&format!("{fixture}#{client}")), "no {client} page in the agent's tab-list:\n{tabs}");
        }
        Ok(tabs)
    })
    .await?;
    eprintln!("e2e: Playwright and Puppeteer drove {ns}/{name} over CDP; the agent sees:\n{tabs}");
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete(name, &DeleteParams::background()).await?;
    Ok(())
}
