//! A warm pool on the real kubelet: its Pods turn Ready with Chromium up; a
//! session claims one in place and is driven and viewed; the pool refills; a
//! template change replaces only unclaimed Pods; deleting the session deletes
//! its Pod; a burst larger than the pool gives every session its own Pod and
//! the extra ones a cold start that says so; per-session auth state reaches
//! a claimed browser without a restart.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL};
use playpen_api::v1alpha1::{condition, BrowserPool, BrowserPoolStatus};
use playpen_api::BrowserSession;
use playpen_tests::{eventually, http_get, pod_is_ready};
use serde_json::json;

use crate::kubectl::{exec, port_forward};
use crate::network::{authority, connect};
use crate::session::{pod_name, wait_ready, BROWSER, VIEWER_PORT};
use crate::setup::{start_fixture, tolerations, Installed, BROWSER_IMAGE};

const POOL: &str = "warm";
const MIN_READY: usize = 2;

fn pool_object(args: &[&str]) -> anyhow::Result<BrowserPool> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
        "metadata": {"name": POOL},
        "spec": {
            "minReady": MIN_READY, "maxSize": MIN_READY + 2,
            "template": {
                "image": BROWSER_IMAGE, "imagePullPolicy": "Never", "sandbox": "Enforced",
                "launchConfig": {"executablePath": "/usr/bin/chromium", "args": args},
                "pod": {"tolerations": tolerations(), "shmSize": "256Mi"}
            }
        }
    }))?)
}

/// The pool's live Pods in `state` (warm or claimed), by name.
async fn pool_pods(pods: &Api<Pod>, state: &str) -> anyhow::Result<BTreeSet<String>> {
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={POOL},{POOL_STATE_LABEL}={state}"));
    Ok(pods
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| p.name_any())
        .collect())
}

/// Waits until the pool has `MIN_READY` ready Pods of its current template and nothing warming,
/// both in its status and in the Pods a claim lists: the status is written by the pool's next
/// reconcile, so right after a claim it can still count the claimed Pod as ready.
async fn wait_full(pools: &Api<BrowserPool>) -> anyhow::Result<BrowserPoolStatus> {
    let pods: Api<Pod> = Api::namespaced(pools.clone().into_client(), pools.namespace().context("a namespaced Api")?);
    eventually(Duration::from_secs(240), || async {
        let pool = pools.get(POOL).await?;
        let params = ListParams::default().labels(&format!("{POOL_LABEL}={POOL},{POOL_STATE_LABEL}=warm"));
        let warm: Vec<Pod> =
            pods.list(&params).await?.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        let ready = warm.iter().filter(|p| pod_is_ready(p)).count();
        ensure!(
            warm.len() == MIN_READY && ready == MIN_READY,
            "pool {POOL} not full as listed: {} warm Pods, {ready} of them Ready",
            warm.len()
        );
        let status = pool.status.context("no pool status yet")?;
        ensure!(
            status.ready == MIN_READY as i32
                && status.warming == 0
                && status.observed_generation == pool.metadata.generation,
            "pool {POOL} not full: ready {} warming {} claimed {} {:?}",
            status.ready,
            status.warming,
            status.claimed,
            status.conditions.iter().map(|c| (&c.type_, &c.status, &c.message)).collect::<Vec<_>>()
        );
        Ok(status)
    })
    .await
}

async fn create_pooled(client: &Client, ns: &str, name: &str, extra: serde_json::Value) -> anyhow::Result<()> {
    let mut object = json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
        "metadata": {"name": name},
        "spec": {"pool": {"name": POOL}}
    });
    if let (Some(spec), Some(extra)) = (object["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let bs: BrowserSession = serde_json::from_value(object)?;
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &bs).await?;
    Ok(())
}

/// `(claimed, reason of PoolClaimed)` of a Ready pooled session.
async fn claim_of(client: &Client, ns: &str, name: &str) -> anyhow::Result<(bool, String, String)> {
    let (status, took) = wait_ready(client, ns, name).await.with_context(|| format!("{name} becomes Ready"))?;
    eprintln!("e2e: pooled {ns}/{name} Ready after {took:?}");
    let pool = status.pool.clone().with_context(|| format!("{name}: no status.pool"))?;
    ensure!(pool.name == POOL, "{name}: status.pool.name {:?}", pool.name);
    let reason = status
        .conditions
        .iter()
        .find(|c| c.type_ == condition::POOL_CLAIMED)
        .map(|c| format!("{}: {}", c.reason, c.message))
        .with_context(|| format!("{name}: no PoolClaimed condition"))?;
    Ok((pool.claimed, reason, pod_name(&status)?))
}

pub async fn a_warm_pool_serves_sessions(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_b.name.as_str();
    // A fixture of its own: the other scenarios assert who reached theirs.
    let fixture_url = start_fixture(client, ns, "pool-fixture").await?;
    let fixture_url = fixture_url.as_str();
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let args = ["--disable-background-networking", "--disable-component-update"];
    pools.create(&PostParams::default(), &pool_object(&args)?).await?;
    wait_full(&pools).await.context("the pool's minReady Pods turn Ready on the kubelet")?;
    let warm = pool_pods(&pods, "warm").await?;
    ensure!(warm.len() == MIN_READY, "warm Pods: {warm:?}");
    // While warm, the pool's deny-all policy holds (a TCP connect, which leaves the browser unused).
    let (host, port) = authority(fixture_url)?;
    for pod in &warm {
        let out = connect(ns, pod, BROWSER, &host, port).await?;
        ensure!(out == "TIMEOUT", "a warm Pod connected to {fixture_url}: {out}");
    }

    // A session claims one in place, and an agent drives it.
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "pool-fixture"}}]}});
    let t0 = Instant::now();
    create_pooled(client, ns, "pooled", json!({"network": network})).await?;
    let (claimed, reason, pod) = claim_of(client, ns, "pooled").await?;
    eprintln!("e2e: the claim took {:?} to Ready", t0.elapsed());
    ensure!(claimed, "the session started cold with a warm pool: {reason}");
    ensure!(warm.contains(&pod), "the session's Pod {pod} is not one of the warm ones {warm:?}");
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", fixture_url]).await?.ok("playwright-cli goto")?;
    ensure!(out.contains("Page Title: Playpen fixture"), "goto on the claimed browser (the session's egress):\n{out}");
    let forward = port_forward(ns, "svc/pooled-view", VIEWER_PORT).await?;
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], forward.local_port));
    let (code, body) = http_get(local, "/index.html").await.context("the claimed session's viewer")?;
    ensure!(code == 200 && body.contains("<html"), "the viewer answered {code}: {body:.200}");
    drop(forward);

    // Out of the pool, and the pool back at minReady without it.
    ensure!(!pool_pods(&pods, "warm").await?.contains(&pod), "{pod} is still warm");
    ensure!(pool_pods(&pods, "claimed").await?.contains(&pod), "{pod} is not marked claimed");
    let full = wait_full(&pools).await.context("the pool refills after the claim")?;
    ensure!(full.claimed == 1, "the pool counts {} claimed", full.claimed);
    let claimed_uid = pods.get(&pod).await?.uid();

    // A template change replaces the unclaimed Pods only.
    let before = pool_pods(&pods, "warm").await?;
    let changed = ["--disable-background-networking", "--disable-component-update", "--disable-sync"];
    let patch = json!({"spec": {"template": {"launchConfig": {"args": changed}}}});
    pools.patch(POOL, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    eventually(Duration::from_secs(240), || async {
        wait_full(&pools).await?;
        let now = pool_pods(&pods, "warm").await?;
        ensure!(now.is_disjoint(&before), "old warm Pods remain: {now:?} (before: {before:?})");
        Ok(())
    })
    .await
    .context("a template change replaces the warm Pods")?;
    let kept = pods.get(&pod).await?;
    ensure!(kept.uid() == claimed_uid && kept.metadata.deletion_timestamp.is_none(), "the claimed Pod was replaced");

    // Deleting the session deletes its Pod; it never goes back to the pool.
    sessions.delete("pooled", &DeleteParams::default()).await?;
    eventually(Duration::from_secs(120), || async {
        match pods.get_opt(&pod).await? {
            Some(p) if p.uid() == claimed_uid => anyhow::bail!("{pod} still exists"),
            _ => Ok(()),
        }
    })
    .await
    .context("the claimed Pod goes with its session")?;

    // Per-session auth state: loaded into a claimed browser.
    auth_state_is_loaded(client, ns).await.context("a pooled session with auth state")?;

    // A burst larger than the pool: distinct Pods, the extra ones cold and saying so.
    wait_full(&pools).await?;
    let burst: Vec<String> = (0..MIN_READY + 1).map(|i| format!("burst-{i}")).collect();
    for name in &burst {
        create_pooled(client, ns, name, json!({})).await?;
    }
    let mut seen = BTreeSet::new();
    let (mut warm_claims, mut cold, mut outcomes) = (0, 0, Vec::new());
    for name in &burst {
        let (claimed, reason, pod) = claim_of(client, ns, name).await?;
        ensure!(seen.insert(pod.clone()), "{name} got {pod}, which another session has");
        outcomes.push(format!("{name}: {pod} ({reason})"));
        if claimed {
            warm_claims += 1;
        } else {
            ensure!(reason.starts_with("PoolEmpty"), "{name} started cold for another reason: {reason}");
            cold += 1;
        }
    }
    ensure!(warm_claims == MIN_READY && cold == 1, "burst: {warm_claims} claimed, {cold} cold: {outcomes:#?}");
    for name in &burst {
        sessions.delete(name, &DeleteParams::default()).await?;
    }
    pools.delete(POOL, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(120), || async {
        let left = pods.list(&ListParams::default().labels(&format!("{POOL_LABEL}={POOL}"))).await?.items;
        ensure!(left.is_empty(), "{} Pods of the pool remain", left.len());
        Ok(())
    })
    .await
    .context("the pool's Pods go with the pool and the sessions")
}

/// A pooled session with `authState` claims a warm Pod too: the state
/// reaches the running browser (its cookie shows) without a restart.
async fn auth_state_is_loaded(client: &Client, ns: &str) -> anyhow::Result<()> {
    let state = json!({"cookies": [{"name": "playpen-e2e", "value": "signed-in", "domain": "fixture.invalid",
        "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}], "origins": []});
    let secret: Secret = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "pool-auth"}, "stringData": {"state.json": state.to_string()}}))?;
    Api::<Secret>::namespaced(client.clone(), ns).create(&PostParams::default(), &secret).await?;
    let t0 = Instant::now();
    create_pooled(client, ns, "authed", json!({"authState": {"secretRef": {"name": "pool-auth"}}})).await?;
    let (claimed, reason, pod) = claim_of(client, ns, "authed").await?;
    ensure!(claimed, "a session with auth state started cold: {reason}");
    let ready = t0.elapsed();
    let restarts = || async {
        let pod = Api::<Pod>::namespaced(client.clone(), ns).get(&pod).await?;
        let statuses = pod.status.and_then(|s| s.container_statuses).unwrap_or_default();
        Ok::<i32, anyhow::Error>(statuses.iter().map(|c| c.restart_count).sum())
    };
    let before = restarts().await?;
    eventually(Duration::from_secs(120), || async {
        let cookies =
            exec(ns, &pod, BROWSER, &["playwright-cli", "cookie-list"]).await?.ok("playwright-cli cookie-list")?;
        ensure!(
            cookies.contains("playpen-e2e") && cookies.contains("signed-in"),
            "no auth state cookie yet:\n{cookies}"
        );
        Ok(())
    })
    .await
    .context("the auth state reaches the claimed browser")?;
    eprintln!("e2e: auth state on a claimed Pod: Ready after {ready:?}, loaded after {:?}", t0.elapsed());
    ensure!(restarts().await? == before, "the claimed browser restarted to take the auth state");
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete("authed", &DeleteParams::default()).await?;
    Ok(())
}
