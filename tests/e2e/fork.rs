//! Fork on the State path, under the node's default runtime (runc): a
//! session with a filled form, a cookie and a second tab; `kubectl playpen
//! fork --count 3` takes a BrowserSnapshot while the source keeps running
//! and starts three sessions from it. Each fork has the page back (URL,
//! field, cookie, both tabs), its own NetworkPolicy and its own browser
//! (typing into one changes no other); the source lost nothing, its
//! JavaScript heap included. Deleting the snapshot deletes its bytes.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams};
use kube::Client;
use playpen_api::suspend::SuspendedState;
use playpen_api::v1alpha1::{BrowserSnapshot, SnapshotPhase};
use playpen_api::BrowserSession;
use playpen_tests::eventually;

use crate::kubectl::{exec, playpen};
use crate::session::{pod_name, wait_ready, BROWSER};
use crate::setup::Installed;
use crate::suspend::{eval, fill_in, read_page, ready_beside_fixture, COOKIE, NOTE};

const SOURCE: &str = "forked-from";
const SNAPSHOT: &str = "forked";
const FIXTURE: &str = "fork-fixture";
const FORKS: [&str; 3] = ["forked-1", "forked-2", "forked-3"];

/// The scenario, in team A's namespace.
pub async fn three_forks_start_from_a_snapshot(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let (fixture, source_pod) = ready_beside_fixture(client, ns, SOURCE, FIXTURE).await?;
    let form = fill_in(ns, &source_pod, &fixture).await?;

    // Fork: a snapshot, then three sessions from it, through the plugin.
    let asked = Instant::now();
    let out = playpen(&["fork", SOURCE, "-n", ns, "--count", "3", "--snapshot", SNAPSHOT])
        .await?
        .ok("kubectl playpen fork")?;
    for fork in FORKS {
        ensure!(out.contains(fork), "kubectl playpen fork did not name {fork}:\n{out}");
    }
    let snapshots: Api<BrowserSnapshot> = Api::namespaced(client.clone(), ns);
    let taken = snapshots.get(SNAPSHOT).await?.status.context("the snapshot has no status")?;
    ensure!(taken.phase == Some(SnapshotPhase::Ready) && taken.tabs == Some(2), "the snapshot: {taken:?}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let bytes_secret = taken.state_secret.clone().context("no status.stateSecret")?;
    let stored = secrets.get(&bytes_secret).await?;
    let owners = stored.metadata.owner_references.clone().unwrap_or_default();
    ensure!(owners.iter().any(|o| o.kind == "BrowserSnapshot" && o.name == SNAPSHOT), "owners {owners:?}");
    let doc = stored.data.and_then(|d| d.get("state.json").cloned()).context("no state.json")?;
    let doc: SuspendedState = serde_json::from_slice(&doc.0)?;
    ensure!(doc.storage.cookies.iter().any(|c| c["name"] == "who"), "the snapshot has no cookie");

    // Each fork: Ready with the page back, under its own policy.
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
    let mut pods = Vec::new();
    for fork in FORKS {
        let (status, _) = wait_ready(client, ns, fork).await.with_context(|| format!("{fork} turns Ready"))?;
        let pod = pod_name(&status)?;
        let tabs = exec(ns, &pod, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("tab-list")?;
        ensure!(tabs.contains(&form) && tabs.contains(&fixture), "{fork}'s tabs:\n{tabs}");
        let page = read_page(ns, &pod).await?;
        ensure!(page["url"] == form.as_str() && page["note"] == NOTE, "{fork}'s page: {page}");
        ensure!(page["cookie"].as_str().is_some_and(|c| c.contains(COOKIE)), "{fork}'s cookie: {page}");
        let policy = policies.get(&format!("{fork}-isolate")).await.with_context(|| format!("{fork}'s policy"))?;
        let selects = policy.spec.and_then(|s| s.pod_selector).and_then(|s| s.match_labels).unwrap_or_default();
        ensure!(
            selects.get("playpen.dev/session").map(String::as_str) == Some(fork),
            "{fork}'s policy selects {selects:?}"
        );
        pods.push(pod);
    }
    let forked_in = asked.elapsed();

    // Each its own browser: typing into the first changes neither the others nor the source.
    let retype = "() => { const note = document.querySelector('#note'); note.value = 'only in the first fork'; return note.value; }";
    eval(ns, &pods[0], retype).await?;
    for (pod, who) in [(&pods[1], FORKS[1]), (&source_pod, SOURCE)] {
        let page = read_page(ns, pod).await?;
        ensure!(page["note"] == NOTE, "typing into {} reached {who}: {page}", FORKS[0]);
    }
    let source = read_page(ns, &source_pod).await?;
    // The fixture's counter ticks on from the 1000 the agent set: a restarted page would be below it.
    let counter = source["counter"].as_i64().unwrap_or_default();
    ensure!(counter >= 1000, "the source's JavaScript heap was lost under the snapshot: {source}");

    // Deleting the snapshot deletes its bytes; the forks keep running.
    snapshots.delete(SNAPSHOT, &DeleteParams::background()).await?;
    eventually(Duration::from_secs(60), || async {
        ensure!(secrets.get_opt(&bytes_secret).await?.is_none(), "{bytes_secret} outlived its snapshot");
        Ok(())
    })
    .await
    .context("a deleted snapshot's bytes go")?;
    for fork in FORKS {
        ensure!(secrets.get_opt(&format!("{fork}-suspended")).await?.is_none(), "{fork} kept its copy after Ready");
    }
    eprintln!(
        "e2e: fork ×3 of {ns}/{SOURCE}: snapshot {} bytes taken in {:?} ms; all three Ready {forked_in:?} after the command",
        taken.bytes.unwrap_or_default(),
        taken.take_millis
    );
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    for name in FORKS.iter().chain([&SOURCE]) {
        sessions.delete(name, &DeleteParams::background()).await?;
    }
    Ok(())
}
