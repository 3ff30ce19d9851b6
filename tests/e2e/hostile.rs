//! One tenant's bad input on the real node: a session whose
//! `executablePath` is "/x" and 600 "é" (the report that once crashed the
//! operator while it cut the message inside a character). The runtime in the
//! real image reports the missing executable; the operator puts it in the
//! session's condition and keeps running (0 restarts) for every other
//! session.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::condition;
use playpen_api::BrowserSession;
use playpen_tests::eventually;
use serde_json::json;

use crate::setup::{tolerations, BROWSER_IMAGE};

const NAME: &str = "utf8-exe";

/// Restarts of the operator's container(s) in `system`.
async fn operator_restarts(client: &Client, system: &str) -> anyhow::Result<i32> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), system);
    let list = pods.list(&ListParams::default().labels("app.kubernetes.io/name=playpen-operator")).await?;
    ensure!(!list.items.is_empty(), "no operator Pod in {system}");
    Ok(list
        .items
        .iter()
        .flat_map(|p| p.status.iter().flat_map(|s| s.container_statuses.iter().flatten()))
        .map(|c| c.restart_count)
        .sum())
}

/// Runs the bad session in `ns` and checks the operator in `system` survives it.
pub async fn non_ascii_executable_is_reported_not_fatal(client: &Client, ns: &str, system: &str) -> anyhow::Result<()> {
    let path = format!("/x{}", "é".repeat(600));
    let bs = playpen_tests::fixtures::session(
        NAME,
        json!({"image": BROWSER_IMAGE, "imagePullPolicy": "Never", "viewer": {"enabled": false},
            "launchConfig": {"executablePath": path},
            "pod": {"tolerations": tolerations(), "shmSize": "64Mi"}}),
    )?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    sessions.create(&PostParams::default(), &bs).await?;
    let message = eventually(Duration::from_secs(180), || async {
        let status = sessions.get(NAME).await?.status.context("no status yet")?;
        let browser = status.conditions.iter().find(|c| c.type_ == condition::BROWSER_READY).context("BrowserReady")?;
        ensure!(browser.reason == "BrowserRevisionAbsent", "BrowserReady {}: {}", browser.reason, browser.message);
        Ok(browser.message.clone())
    })
    .await
    .context("the runtime's report of the missing executable in the session's condition")?;
    ensure!(message.contains(&path), "the whole path is reported, nothing cut: {message}");
    ensure!(operator_restarts(client, system).await? == 0, "the operator restarted");
    sessions.delete(NAME, &DeleteParams::background()).await?;
    Ok(())
}

/// After every scenario: the operator never restarted.
pub async fn operator_never_restarted(client: &Client, system: &str) -> anyhow::Result<()> {
    let restarts = operator_restarts(client, system).await?;
    ensure!(restarts == 0, "the operator restarted {restarts} time(s) during the suite");
    Ok(())
}
