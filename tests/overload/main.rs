//! Overload on the real single node, with the chart installed: more
//! sessions than the node's CPU admits by their requests wait `Pending`
//! with the scheduler's reason and start, untouched, as room frees; a node
//! full of warm pool Pods makes room for a cold session by deleting an
//! unclaimed one (never a claimed one) and refills once room returns; a node
//! whose CPU another Pod holds for 90 s delays new sessions but fails none.
//! No scenario may show a session `Degraded` or `Failed` at any time.
//!
//! Its own test binary: cargo runs test binaries one after another, so no
//! other suite's Pods compete for the node while this one fills it.

#[path = "../e2e/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../e2e/setup.rs"]
#[allow(dead_code)]
mod setup;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::{condition, BrowserPool, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, eventually, fixtures};
use serde_json::json;

use crate::setup::{tolerations, Installed, BROWSER_IMAGE};

/// Sessions the node is made to fit, and how many more are asked for.
const FIT: usize = 3;
const EXTRA: usize = 2;
/// How long the busy Pod holds the node's CPU.
const STARVE_SECONDS: u64 = 90;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_sessions_than_fit_wait_and_a_starved_node_fails_none() -> anyhow::Result<()> {
    let client = client().await?;
    let installed = setup::install_release(&client, "overload", &[]).await.context("helm install")?;
    let outcome = async {
        more_than_fit_wait_pending_and_start_as_room_frees(&client, &installed).await.context("overload")?;
        warm_pods_yield_to_a_cold_session_and_refill_after(&client, &installed).await.context("warm Pods yield")?;
        a_starved_node_delays_sessions_and_fails_none(&client, &installed).await.context("CPU starvation")
    }
    .await;
    let uninstalled = setup::uninstall(&client, &installed).await;
    outcome?;
    uninstalled
}

/// Every phase any session of `ns` showed that it must never show, as it is polled.
#[derive(Clone, Default)]
struct BadPhases(Arc<Mutex<BTreeMap<String, String>>>);

impl BadPhases {
    /// Polls the namespace's sessions every second until dropped.
    fn watch(client: &Client, ns: &str) -> (Self, tokio::task::JoinHandle<()>) {
        let seen = Self::default();
        let (api, record) = (Api::<BrowserSession>::namespaced(client.clone(), ns), seen.clone());
        let task = tokio::spawn(async move {
            loop {
                for bs in api.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default() {
                    let status = bs.status.unwrap_or_default();
                    if matches!(status.phase, Some(Phase::Degraded | Phase::Failed)) {
                        let ready = status.conditions.iter().find(|c| c.type_ == condition::READY);
                        let why = ready.map(|c| format!("{:?}: {}: {}", status.phase, c.reason, c.message));
                        if let Ok(mut seen) = record.0.lock() {
                            seen.entry(bs.metadata.name.unwrap_or_default()).or_insert(why.unwrap_or_default());
                        }
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        (seen, task)
    }

    fn check(&self) -> anyhow::Result<()> {
        let seen = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        ensure!(seen.is_empty(), "sessions were Degraded or Failed: {seen:#?}");
        Ok(())
    }
}

/// A session with its own CPU request (its other resources are the chart's defaults).
fn session(name: &str, cpu: &str) -> anyhow::Result<BrowserSession> {
    fixtures::session(
        name,
        json!({"image": BROWSER_IMAGE, "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "pod": {"tolerations": tolerations(), "shmSize": "256Mi", "resources": {"requests": {"cpu": cpu}}}}),
    )
}

/// Millicores of CPU the node can still give to requests, once nothing on it is terminating.
async fn free_cpu(client: &Client) -> anyhow::Result<u128> {
    let nodes = Api::<Node>::all(client.clone()).list(&ListParams::default()).await?;
    let node = nodes.items.into_iter().next().context("no node")?;
    let name = node.metadata.name.clone().unwrap_or_default();
    let allocatable = node.status.and_then(|s| s.allocatable).and_then(|a| a.get("cpu").cloned()).context("cpu")?;
    let allocatable = playpen_api::quantity::millis(&allocatable.0).context("allocatable cpu")?;
    let on_node = ListParams::default().fields(&format!("spec.nodeName={name}"));
    let pods: Api<Pod> = Api::all(client.clone());
    // An earlier suite's Pods still going would free room in the middle of the count.
    eventually(Duration::from_secs(300), || async {
        let going: Vec<String> = pods
            .list(&on_node)
            .await?
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .filter_map(|p| p.metadata.name)
            .collect();
        ensure!(going.is_empty(), "Pods still terminating on the node: {going:?}");
        Ok(())
    })
    .await?;
    let mut requested = 0;
    for pod in pods.list(&on_node).await?.items {
        if matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")) {
            continue;
        }
        for c in pod.spec.map(|s| s.containers).unwrap_or_default() {
            let cpu = c.resources.and_then(|r| r.requests).and_then(|r| r.get("cpu").cloned());
            requested += cpu.and_then(|q| playpen_api::quantity::millis(&q.0)).unwrap_or(0);
        }
    }
    Ok(allocatable.saturating_sub(requested))
}

async fn phase_of(api: &Api<BrowserSession>, name: &str) -> anyhow::Result<(Option<Phase>, String)> {
    let status = api.get(name).await?.status.unwrap_or_default();
    let scheduled = status.conditions.iter().find(|c| c.type_ == condition::POD_SCHEDULED);
    Ok((status.phase, scheduled.map(|c| format!("{}: {}", c.reason, c.message)).unwrap_or_default()))
}

async fn more_than_fit_wait_pending_and_start_as_room_frees(
    client: &Client,
    installed: &Installed,
) -> anyhow::Result<()> {
    let ns = &installed.team_a.name;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let free = free_cpu(client).await?;
    // FIT sessions fit exactly: what is left after them is less than one more.
    let each = free / FIT as u128;
    ensure!(each >= 100, "only {free}m of CPU requests free on the node: too little to fill it with {FIT} sessions");
    let cpu = format!("{each}m");
    eprintln!("overload: {free}m free, {FIT} sessions of {cpu} fit; asking for {}", FIT + EXTRA);
    let (bad, watcher) = BadPhases::watch(client, ns);
    let names: Vec<String> = (0..FIT + EXTRA).map(|i| format!("load-{i}")).collect();
    for name in &names {
        api.create(&PostParams::default(), &session(name, &cpu)?).await?;
    }
    // FIT Ready, EXTRA Pending saying why.
    let (ready, waiting) = eventually(Duration::from_secs(240), || async {
        let mut ready = Vec::new();
        let mut waiting = Vec::new();
        for name in &names {
            match phase_of(&api, name).await? {
                (Some(Phase::Ready), _) => ready.push(name.clone()),
                (Some(Phase::Pending), why) if why.starts_with("Unschedulable") => waiting.push((name.clone(), why)),
                other => bail!("{name} is {other:?}"),
            }
        }
        ensure!(ready.len() == FIT && waiting.len() == EXTRA, "ready {ready:?}, waiting {waiting:?}");
        Ok((ready, waiting))
    })
    .await
    .context("the node's share: some Ready, the rest Pending with the scheduler's reason")?;
    for (name, why) in &waiting {
        ensure!(why.contains("Insufficient cpu"), "{name} waits without the scheduler's reason: {why}");
    }
    // The defaults fill in what the session left out.
    let pod = Api::<Pod>::namespaced(client.clone(), ns).get(&format!("{}-browser", ready[0])).await?;
    let requests =
        pod.spec.and_then(|s| s.containers.into_iter().next()).and_then(|c| c.resources).and_then(|r| r.requests);
    let requests = requests.context("the browser container has no requests")?;
    ensure!(requests.get("cpu").map(|q| q.0.as_str()) == Some(cpu.as_str()), "{requests:?}");
    ensure!(requests.contains_key("memory"), "the chart's default memory request is missing: {requests:?}");
    // Room frees: the waiting ones start without anyone touching them.
    for name in ready.iter().take(EXTRA) {
        api.delete(name, &DeleteParams::default()).await?;
    }
    eventually(Duration::from_secs(240), || async {
        for (name, _) in &waiting {
            let (phase, why) = phase_of(&api, name).await?;
            ensure!(phase == Some(Phase::Ready), "{name} is {phase:?} ({why})");
        }
        Ok(())
    })
    .await
    .context("the waiting sessions once room freed")?;
    watcher.abort();
    bad.check()?;
    for name in &names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    // Their Pods go before the next scenario counts the node's room.
    browsers_gone(client, ns, &names).await.context("the first scenario's Pods go")
}

/// Waits until the browser Pods of the deleted sessions `names` are gone: a
/// deleted session's Pod is not yet terminating the moment the delete
/// returns, so counting the node's room at once saw it still full (CI, stop 39).
async fn browsers_gone(client: &Client, ns: &str, names: &[String]) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let browsers: Vec<String> = names.iter().map(|s| format!("{s}-browser")).collect();
    eventually(Duration::from_secs(180), || async {
        let left: Vec<String> = pods
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .filter(|n| browsers.contains(n))
            .collect();
        ensure!(left.is_empty(), "Pods of deleted sessions left: {left:?}");
        Ok(())
    })
    .await
}

const POOL: &str = "yielding";

/// A pool of `FIT` browsers of `cpu` each, which fill the node.
fn filling_pool(cpu: &str) -> anyhow::Result<BrowserPool> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": POOL},
        "spec": {"minReady": FIT, "maxSize": FIT + 2, "template": {
            "image": BROWSER_IMAGE, "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "pod": {"tolerations": tolerations(), "shmSize": "256Mi", "resources": {"requests": {"cpu": cpu}}}}}
    }))?)
}

/// The pool's `(ready, warming, condition reason)` as its status says.
async fn pool_counts(pools: &Api<BrowserPool>) -> anyhow::Result<(i32, i32, String)> {
    let status = pools.get(POOL).await?.status.unwrap_or_default();
    let reason = status.conditions.first().map(|c| c.reason.clone()).unwrap_or_default();
    Ok((status.ready, status.warming, reason))
}

async fn warm_pods_yield_to_a_cold_session_and_refill_after(
    client: &Client,
    installed: &Installed,
) -> anyhow::Result<()> {
    let ns = &installed.team_a.name;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let free = free_cpu(client).await?;
    let each = free / FIT as u128;
    ensure!(each >= 100, "only {free}m of CPU requests free on the node: too little to fill it with {FIT} warm Pods");
    let cpu = format!("{each}m");
    let (bad, watcher) = BadPhases::watch(client, ns);
    pools.create(&PostParams::default(), &filling_pool(&cpu)?).await?;
    eventually(Duration::from_secs(240), || async {
        let (ready, warming, reason) = pool_counts(&pools).await?;
        ensure!(ready == FIT as i32 && warming == 0, "pool: {ready} ready, {warming} warming ({reason})");
        Ok(())
    })
    .await
    .context("the pool fills the node")?;
    eprintln!("yield: {FIT} warm Pods of {cpu} fill the node ({free}m free before)");

    // One is claimed: the pool's refill then finds no room and waits unscheduled.
    let pooled = fixtures::session("kept", json!({"pool": {"name": POOL}}))?;
    api.create(&PostParams::default(), &pooled).await?;
    let kept_pod = eventually(Duration::from_secs(120), || async {
        let status = api.get("kept").await?.status.unwrap_or_default();
        ensure!(status.phase == Some(Phase::Ready), "kept is {:?}", status.phase);
        status.pod_name.context("kept has no podName")
    })
    .await
    .context("a pooled session claims a warm Pod")?;
    let kept_uid = pods.get(&kept_pod).await?.metadata.uid;

    // A cold session that fits only where a warm Pod is: one yields for it.
    api.create(&PostParams::default(), &session("cold", &cpu)?).await?;
    eventually(Duration::from_secs(180), || async {
        let (phase, why) = phase_of(&api, "cold").await?;
        ensure!(phase == Some(Phase::Ready), "cold is {phase:?} ({why})");
        Ok(())
    })
    .await
    .context("the cold session starts in a warm Pod's room")?;
    let events = Api::<Event>::namespaced(client.clone(), ns).list(&ListParams::default()).await?.items;
    let yielded: Vec<String> = events
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(POOL) && e.reason.as_deref() == Some("WarmPodYielded"))
        .filter_map(|e| e.message)
        .collect();
    ensure!(!yielded.is_empty(), "no WarmPodYielded Event on the pool");
    eprintln!("yield: {yielded:#?}");
    ensure!(
        yielded.iter().any(|m| m.contains("make room for the session Pod cold-browser")),
        "no warm Pod was deleted for the cold session: {yielded:?}"
    );
    // The claimed Pod is the session's: untouched.
    let (phase, why) = phase_of(&api, "kept").await?;
    ensure!(phase == Some(Phase::Ready), "kept is {phase:?} ({why})");
    let now_uid = pods.get(&kept_pod).await?.metadata.uid;
    ensure!(now_uid == kept_uid, "the claimed Pod {kept_pod} was replaced");

    // Room returns: the pool refills.
    for name in ["cold", "kept"] {
        api.delete(name, &DeleteParams::default()).await?;
    }
    eventually(Duration::from_secs(240), || async {
        let (ready, warming, reason) = pool_counts(&pools).await?;
        ensure!(ready == FIT as i32, "pool: {ready} ready, {warming} warming ({reason})");
        Ok(())
    })
    .await
    .context("the pool refills once room returns")?;
    watcher.abort();
    bad.check()?;
    pools.delete(POOL, &DeleteParams::default()).await?;
    // Its Pods and the sessions' go before the next scenario counts the node's room.
    browsers_gone(client, ns, &["cold".to_string()]).await?;
    eventually(Duration::from_secs(120), || async {
        let left = pods.list(&ListParams::default().labels(&format!("playpen.dev/pool={POOL}"))).await?.items;
        ensure!(left.is_empty(), "{} Pods of the pool left", left.len());
        Ok(())
    })
    .await
}

async fn a_starved_node_delays_sessions_and_fails_none(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = &installed.team_a.name;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let sessions = 3;
    let session_cpu = 50;
    let free = free_cpu(client).await?;
    // The hog's request takes all the room the sessions leave: the kernel
    // then gives it nearly all the CPU while it spins (CPU shares follow requests).
    let hog_cpu =
        free.checked_sub(sessions * session_cpu).filter(|c| *c >= 500).context("too little room to starve")?;
    let script = format!("for i in 1 2 3 4; do (while :; do :; done) & done; sleep {STARVE_SECONDS}; kill 0");
    let hog: Pod = serde_json::from_value(json!({
        "metadata": {"name": "cpu-hog"},
        "spec": {"tolerations": tolerations(), "restartPolicy": "Never", "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "spin", "image": BROWSER_IMAGE, "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c", script],
                "resources": {"requests": {"cpu": format!("{hog_cpu}m")}},
                "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}}}]}
    }))?;
    pods.create(&PostParams::default(), &hog).await?;
    eventually(Duration::from_secs(60), || async {
        let phase = pods.get("cpu-hog").await?.status.and_then(|s| s.phase);
        ensure!(phase.as_deref() == Some("Running"), "the busy Pod is {phase:?}");
        Ok(())
    })
    .await?;
    eprintln!("starvation: {hog_cpu}m of CPU spinning for {STARVE_SECONDS} s; starting {sessions} sessions beside it");
    let (bad, watcher) = BadPhases::watch(client, ns);
    let names: Vec<String> = (0..sessions).map(|i| format!("starved-{i}")).collect();
    for name in &names {
        api.create(&PostParams::default(), &session(name, &format!("{session_cpu}m"))?).await?;
    }
    eventually(Duration::from_secs(STARVE_SECONDS + 300), || async {
        for name in &names {
            let (phase, why) = phase_of(&api, name).await?;
            ensure!(phase == Some(Phase::Ready), "{name} is {phase:?} ({why})");
        }
        Ok(())
    })
    .await
    .context("the sessions started on a starved node")?;
    watcher.abort();
    bad.check()?;
    let _ = pods.delete("cpu-hog", &DeleteParams::default()).await;
    for name in &names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    Ok(())
}
