//! Sessions that name a BrowserPool, against a real kube-apiserver: a
//! ready warm Pod is claimed in place and the pool replenishes; a burst of
//! claims gives each ready Pod to one session (the extra sessions start cold
//! and say so), even from two replicas that both write; what a warm browser cannot take sends a session
//! cold; a missing pool or a template field set on the session fails it;
//! a pool with `whenEmpty: Wait` keeps a session Pending until a Pod is
//! ready, and the ready Pod wakes it. Each session's `Claimed` or
//! `ColdStart` Event comes once; the claim metrics are read from
//! `/metrics`.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use playpen_api::naming::{DELIVERED_ANNOTATION, POOL_LABEL, POOL_STATE_LABEL, SESSION_LABEL, WARM_NAME_ANNOTATION};
use playpen_api::runtime_config::RuntimeConfig;
use playpen_api::v1alpha1::{condition, BrowserPool};
use playpen_api::{BrowserSession, BrowserSessionStatus};
use playpen_operator::runtime::leader::LeaseConfig;
use playpen_tests::{client, ensure_crd, eventually, http_get, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{after_scheduler_verdict, container, create, lease, session, set_pod_status};

const WAIT: Duration = Duration::from_secs(60);

async fn create_pool(client: &Client, ns: &str, name: &str, min_ready: i32) -> anyhow::Result<()> {
    create_pool_when_empty(client, ns, name, min_ready, "ColdStart").await
}

async fn create_pool_when_empty(
    client: &Client,
    ns: &str,
    name: &str,
    min_ready: i32,
    when_empty: &str,
) -> anyhow::Result<()> {
    let pool: BrowserPool = serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": name},
        "spec": {"minReady": min_ready, "whenEmpty": when_empty,
            "template": {"image": "playpen/browser:pool", "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium"}}}
    }))?;
    Api::<BrowserPool>::namespaced(client.clone(), ns).create(&PostParams::default(), &pool).await?;
    Ok(())
}

/// The pool's Pods in `state` (`warm` or `claimed`).
async fn pool_pods(pods: &Api<Pod>, pool: &str, state: &str) -> anyhow::Result<Vec<Pod>> {
    let selector = format!("{POOL_LABEL}={pool},{POOL_STATE_LABEL}={state}");
    Ok(pods.list(&ListParams::default().labels(&selector)).await?.items)
}

/// Waits for `n` warm Pods of `pool` and marks them ready as a kubelet would.
async fn ready_warm_pods(pods: &Api<Pod>, pool: &str, n: usize) -> anyhow::Result<Vec<String>> {
    let warm = eventually(WAIT, || async {
        let warm = pool_pods(pods, pool, "warm").await?;
        ensure!(warm.len() == n, "{} warm Pods, waiting for {n}", warm.len());
        Ok(warm)
    })
    .await?;
    let mut names = Vec::new();
    for pod in warm.iter().take(n) {
        let name = pod.name_any();
        after_scheduler_verdict(pods, &name).await;
        set_pod_status(
            pods,
            &name,
            json!({"phase": "Running",
                "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
                "containerStatuses": [container(true, 0, json!({"running": {}}), json!({}))]}),
        )
        .await?;
        names.push(name);
    }
    Ok(names)
}

/// Waits until the pool itself counts `n` ready Pods (its plan has settled on them).
async fn pool_ready(client: &Client, ns: &str, pool: &str, n: i32) -> anyhow::Result<()> {
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), ns);
    eventually(WAIT, || async {
        let ready = pools.get(pool).await?.status.map(|s| s.ready).unwrap_or_default();
        ensure!(ready == n, "{pool}: {ready} of {n} ready");
        Ok(())
    })
    .await
}

async fn status_when(
    sessions: &Api<BrowserSession>,
    name: &str,
    what: &str,
    done: impl Fn(&BrowserSessionStatus) -> bool,
) -> anyhow::Result<BrowserSessionStatus> {
    eventually(WAIT, || async {
        let status = sessions.get(name).await?.status.context("no status yet")?;
        ensure!(done(&status), "{name}: not yet {what}: {:?}", status.conditions);
        Ok(status)
    })
    .await
}

/// (type, reason, message) of the Events about session `name` with one of `reasons`.
async fn claim_events(client: &Client, ns: &str, name: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .filter(|e| matches!(e.reason.as_deref(), Some("Claimed" | "ColdStart")))
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect())
}

/// The claim Events of session `name` once there is at least one: the
/// operator publishes them after it writes the status a test waits for.
async fn announced(client: &Client, ns: &str, name: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    eventually(Duration::from_secs(10), || async {
        let events = claim_events(client, ns, name).await?;
        ensure!(!events.is_empty(), "no Claimed or ColdStart Event for {name} yet");
        Ok(events)
    })
    .await
}

/// The value of the sample `series` (name and labels) on `/metrics`.
async fn sample(op: &RunningOperator, series: &str) -> anyhow::Result<f64> {
    let (code, text) = http_get(op.handles.http_addr, "/metrics").await?;
    ensure!(code == 200, "/metrics answered {code}");
    let line = text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')).with_context(|| {
        format!(
            "no {series} on /metrics:\n{}",
            text.lines().filter(|l| l.contains("pool_")).collect::<Vec<_>>().join("\n")
        )
    })?;
    Ok(line.trim().parse()?)
}

fn pool_claimed(status: &BrowserSessionStatus) -> Option<(String, String, String)> {
    let c = status.conditions.iter().find(|c| c.type_ == condition::POOL_CLAIMED)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_session_claims_a_ready_warm_pod_in_place_and_the_pool_replenishes() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "claim").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "agents", 2).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let ready = ready_warm_pods(&pods, "agents", 2).await?;

    create(&client, n, session("task", json!({"pool": {"name": "agents"}, "idleTimeoutSeconds": 77}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let status = status_when(&sessions, "task", "claimed", |s| s.pool.as_ref().is_some_and(|p| p.claimed)).await?;
    let pod_name = status.pod_name.clone().context("status.podName")?;
    ensure!(ready.contains(&pod_name), "{pod_name} is not one of the ready warm Pods {ready:?}");
    let claimed = pool_claimed(&status).context("PoolClaimed")?;
    ensure!(claimed.0 == "True" && claimed.1 == "Claimed" && claimed.2.contains(&pod_name), "{claimed:?}");

    // The Pod is the session's now: labels, one owner, nothing restarted.
    let pod = pods.get(&pod_name).await?;
    let uid = sessions.get("task").await?.uid().context("uid")?;
    ensure!(pod.labels().get(SESSION_LABEL).map(String::as_str) == Some("task"), "{:?}", pod.labels());
    ensure!(pod.labels().get(POOL_STATE_LABEL).map(String::as_str) == Some("claimed"), "{:?}", pod.labels());
    let owners = pod.owner_references();
    ensure!(owners.len() == 1 && owners[0].uid == uid, "owners of the claimed Pod: {owners:?}");
    // Its ConfigMap is the session's, with the session's own policy.
    let warm = pod.annotations().get(playpen_api::naming::WARM_NAME_ANNOTATION).context("warm name")?.clone();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    let map = maps.get(&format!("{warm}-runtime")).await?;
    ensure!(map.owner_references().iter().all(|o| o.uid == uid), "{:?}", map.owner_references());
    let runtime: RuntimeConfig =
        serde_json::from_str(map.data.as_ref().and_then(|d| d.get("runtime.json")).context("runtime.json")?)?;
    ensure!(runtime.idle_timeout_seconds == Some(77), "runtime.json: {runtime:?}");
    ensure!(status.session_name.as_deref() == Some(runtime.session_name.as_str()), "the warm Pod's CLI session");
    // The session's Service and NetworkPolicy select it by the session's labels.
    let service = Api::<Service>::namespaced(client.clone(), n).get("task-view").await?;
    let selector = service.spec.and_then(|s| s.selector).unwrap_or_default();
    ensure!(selector.iter().all(|(k, v)| pod.labels().get(k) == Some(v)), "{selector:?} vs {:?}", pod.labels());
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    let own = policies.get("task-isolate").await?.spec.and_then(|s| s.pod_selector).and_then(|s| s.match_labels);
    ensure!(own.unwrap_or_default().iter().all(|(k, v)| pod.labels().get(k) == Some(v)), "task-isolate");
    // And the pool's deny-all policy still selects it (the claim need not
    // wait for the session's policy: until it exists the Pod has no network).
    let pool_policy = policies.get("agents-warm").await?.spec.and_then(|s| s.pod_selector).and_then(|s| s.match_labels);
    let pool_policy = pool_policy.context("agents-warm selects by labels")?;
    ensure!(pool_policy.iter().all(|(k, v)| pod.labels().get(k) == Some(v)), "{pool_policy:?} vs {:?}", pod.labels());

    // The pool makes up for it: two unclaimed Pods again, one claimed counted.
    eventually(WAIT, || async {
        let warm = pool_pods(&pods, "agents", "warm").await?;
        let pool = Api::<BrowserPool>::namespaced(client.clone(), n).get("agents").await?;
        let claimed = pool.status.map(|s| s.claimed).unwrap_or_default();
        ensure!(warm.len() == 2 && claimed == 1, "{} warm, {claimed} claimed", warm.len());
        ensure!(warm.iter().all(|p| p.name_any() != pod_name), "the claimed Pod is back in the pool");
        Ok(())
    })
    .await?;

    // Said once, though the session was reconciled again since (its Pod, the pool's refill).
    let events = announced(&client, n, "task").await?;
    ensure!(events.len() == 1, "one Claimed Event: {events:?}");
    ensure!(events[0].0 == "Normal" && events[0].1 == "Claimed" && events[0].2.contains(&pod_name), "{events:?}");
    ensure!(events[0].2.contains("BrowserPool agents"), "{events:?}");
    ensure!(sample(&op, "playpen_pool_claim_duration_seconds_count{result=\"claimed\"}").await? == 1.0, "one claim");
    ensure!(sample(&op, "playpen_pool_wait_seconds_count{result=\"claimed\"}").await? == 1.0, "one wait");

    // Deleting the session deletes its Pod (never returned to the pool).
    sessions.delete("task", &DeleteParams::foreground()).await?;
    eventually(WAIT, || async {
        if pods.get_opt(&pod_name).await?.is_some() {
            bail!("{pod_name} outlives its session");
        }
        Ok(())
    })
    .await?;
    Ok(())
}

/// A pool of three ready Pods in a fresh namespace, and eight sessions created at once.
async fn burst(client: &Client, n: &str, replicas: &[Option<LeaseConfig>]) -> anyhow::Result<Vec<RunningOperator>> {
    let mut operators = vec![RunningOperator::start(client, n, replicas[0].clone()).await?];
    create_pool(client, n, "burst", 3).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    ready_warm_pods(&pods, "burst", 3).await?;
    pool_ready(client, n, "burst", 3).await?;
    for lease in &replicas[1..] {
        operators.push(RunningOperator::start(client, n, lease.clone()).await?);
    }
    let creates = (0..8).map(|i| create(client, n, session(&format!("s{i}"), json!({"pool": {"name": "burst"}}))));
    for created in futures::future::join_all(creates).await {
        created?;
    }
    Ok(operators)
}

/// Every session's status once it names a Pod.
async fn placed(client: &Client, n: &str) -> anyhow::Result<Vec<(String, BrowserSessionStatus)>> {
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let mut out = Vec::new();
    for i in 0..8 {
        let name = format!("s{i}");
        let status = status_when(&sessions, &name, "placed", |s| s.pool.is_some() && s.pod_name.is_some()).await?;
        out.push((name, status));
    }
    Ok(out)
}

#[tokio::test]
async fn a_burst_of_claims_gives_each_ready_pod_to_one_session_and_the_rest_start_cold() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "burst").await?;
    let n = ns.name.as_str();
    // Two replicas electing a leader, as the chart runs them.
    let _operators = burst(&client, n, &[Some(lease(n, "a")), Some(lease(n, "b"))]).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let mut claimed = Vec::new();
    let mut cold = Vec::new();
    for (name, status) in placed(&client, n).await? {
        let pod = status.pod_name.clone().context("podName")?;
        if status.pool.as_ref().is_some_and(|p| p.claimed) {
            claimed.push(pod);
        } else {
            let reason = pool_claimed(&status).context("PoolClaimed")?;
            ensure!(reason.1 == "PoolEmpty", "{name} started cold for {reason:?}");
            ensure!(pod == format!("{name}-browser"), "a cold start's Pod is the session's own: {pod}");
            cold.push(pod);
        }
    }
    let distinct: BTreeSet<&String> = claimed.iter().collect();
    ensure!(distinct.len() == claimed.len(), "one Pod claimed twice: {claimed:?}");
    // Replacements never become ready here (no kubelet): exactly the three ready ones are taken.
    ensure!(claimed.len() == 3 && cold.len() == 5, "claimed {claimed:?}, cold {cold:?}");
    for pod in &claimed {
        let owners = pods.get(pod).await?.owner_references().to_vec();
        ensure!(owners.len() == 1, "{pod} has owners {owners:?}");
    }
    Ok(())
}

#[tokio::test]
async fn replicas_without_a_leader_still_never_give_one_pod_to_two_sessions() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "race").await?;
    let n = ns.name.as_str();
    // The worst case: two replicas that both write (no Lease), racing for three Pods.
    let _operators = burst(&client, n, &[None, None]).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let mut by_pod: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for (name, status) in placed(&client, n).await? {
        let pod = status.pod_name.clone().context("podName")?;
        if let Some(other) = by_pod.insert(pod.clone(), name.clone()) {
            bail!("{pod} is the browser of both {other} and {name}");
        }
    }
    for pod in pool_pods(&pods, "burst", "claimed").await? {
        let owners = pod.owner_references();
        ensure!(owners.len() == 1, "{} has owners {owners:?}", pod.name_any());
        let owner = &owners[0].name;
        ensure!(pod.labels().get(SESSION_LABEL) == Some(owner), "{} is labelled for another session", pod.name_any());
    }
    Ok(())
}

#[tokio::test]
async fn what_a_warm_browser_cannot_take_goes_cold_and_contradictions_fail_by_field() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "cold").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "warm", 1).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    ready_warm_pods(&pods, "warm", 1).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);

    create(&client, n, session("traced", json!({"pool": {"name": "warm"}, "recording": {"trace": true}}))).await?;
    let status = status_when(&sessions, "traced", "placed", |s| s.pool.is_some()).await?;
    let reason = pool_claimed(&status).context("PoolClaimed")?;
    ensure!(reason.0 == "False" && reason.1 == "NeedsColdStart", "{reason:?}");
    ensure!(reason.2.starts_with("spec.recording"), "{reason:?}");
    let cold = pods.get("traced-browser").await?;
    let image = cold.spec.and_then(|s| s.containers.into_iter().next()).and_then(|c| c.image);
    ensure!(image.as_deref() == Some("playpen/browser:pool"), "the cold start runs the template: {image:?}");
    ensure!(pool_pods(&pods, "warm", "claimed").await?.is_empty(), "no warm Pod was taken");
    let events = announced(&client, n, "traced").await?;
    ensure!(events.len() == 1 && events[0].0 == "Normal", "a cold start by design is Normal, once: {events:?}");
    ensure!(events[0].2.starts_with("NeedsColdStart: spec.recording"), "{events:?}");

    create(&client, n, session("clash", json!({"pool": {"name": "warm"}, "viewer": {"port": 9400}}))).await?;
    let status = status_when(&sessions, "clash", "refused", |s| {
        s.conditions.iter().any(|c| c.type_ == condition::CONFIG_RESOLVED && c.status == "False")
    })
    .await?;
    let resolved = status.conditions.iter().find(|c| c.type_ == condition::CONFIG_RESOLVED).context("cond")?;
    ensure!(resolved.reason == "PoolTemplateConflict" && resolved.message.starts_with("spec.viewer"), "{resolved:?}");
    ensure!(pods.get_opt("clash-browser").await?.is_none(), "a refused session gets no Pod");

    create(&client, n, session("lost", json!({"pool": {"name": "nowhere"}}))).await?;
    let status = status_when(&sessions, "lost", "refused", |s| {
        s.conditions.iter().any(|c| c.type_ == condition::CONFIG_RESOLVED && c.reason == "PoolNotFound")
    })
    .await?;
    ensure!(status.phase == Some(playpen_api::v1alpha1::Phase::Failed), "{:?}", status.phase);

    // Exactly one of image and pool, at admission.
    let both = create(&client, n, session("both", json!({"image": "i", "pool": {"name": "warm"}}))).await;
    let err = both.err().context("a session with image and pool was admitted")?.to_string();
    ensure!(err.contains("set exactly one of spec.image"), "{err}");
    let neither = create(&client, n, session("neither", json!({}))).await;
    ensure!(neither.is_err(), "a session with neither image nor pool was admitted");
    Ok(())
}

#[tokio::test]
async fn auth_state_reaches_a_claimed_pod_through_its_own_secret_and_a_kubelet_nudge() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "authclaim").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "logins", 1).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let ready = ready_warm_pods(&pods, "logins", 1).await?;
    let warm_pod = pods.get(&ready[0]).await?;
    let warm = warm_pod.annotations().get(WARM_NAME_ANNOTATION).context("warm name")?.clone();
    let slot = warm_pod.spec.as_ref().and_then(|s| s.volumes.clone()).unwrap_or_default();
    let slot = slot.iter().find(|v| v.name == "auth-state").and_then(|v| v.secret.clone()).context("no slot")?;
    ensure!(slot.secret_name == Some(format!("{warm}-auth")) && slot.optional == Some(true), "{slot:?}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), n);
    ensure!(secrets.get_opt(&format!("{warm}-auth")).await?.is_none(), "a warm Pod holds no one's state");

    let state = r#"{"cookies":[],"origins":[]}"#;
    let login: Secret =
        serde_json::from_value(json!({"metadata": {"name": "login"}, "stringData": {"s.json": state}}))?;
    secrets.create(&PostParams::default(), &login).await?;
    let spec = json!({"pool": {"name": "logins"}, "authState": {"secretRef": {"name": "login", "key": "s.json"}}});
    create(&client, n, session("authed", spec)).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let status = status_when(&sessions, "authed", "claimed", |s| s.pool.as_ref().is_some_and(|p| p.claimed)).await?;
    ensure!(status.pod_name.as_deref() == Some(ready[0].as_str()), "claimed {:?}", status.pod_name);

    // The copy: the state alone, under the Pod's key, the session's to delete.
    let uid = sessions.get("authed").await?.uid().context("uid")?;
    let copy = eventually(WAIT, || async { Ok(secrets.get(&format!("{warm}-auth")).await?) }).await?;
    let data = copy.data.clone().unwrap_or_default();
    ensure!(data.keys().collect::<Vec<_>>() == ["state.json"], "{:?}", data.keys());
    ensure!(data["state.json"].0 == state.as_bytes(), "the copy holds another state");
    ensure!(copy.owner_references().iter().all(|o| o.uid == uid), "{:?}", copy.owner_references());
    // runtime.json names it, and the Pod is annotated so the kubelet syncs now.
    let map = Api::<ConfigMap>::namespaced(client.clone(), n).get(&format!("{warm}-runtime")).await?;
    let runtime: RuntimeConfig =
        serde_json::from_str(map.data.as_ref().and_then(|d| d.get("runtime.json")).context("runtime.json")?)?;
    ensure!(runtime.auth_state_file.as_deref() == Some("/etc/playpen/auth/state.json"), "{runtime:?}");
    let pod = eventually(WAIT, || async {
        let pod = pods.get(&ready[0]).await?;
        ensure!(pod.annotations().contains_key(DELIVERED_ANNOTATION), "not annotated: {:?}", pod.annotations());
        Ok(pod)
    })
    .await?;
    // A no-op reconcile writes nothing to the Pod.
    let version = pod.resource_version();
    sessions
        .patch("authed", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"poke": "1"}}})))
        .await?;
    // A deliberate pause, to prove nothing happens: time for a wrongful patch.
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(pods.get(&ready[0]).await?.resource_version() == version, "a no-op reconcile patched the Pod");

    // The tenant's Secret loses the key: the status says which field names it.
    let renamed = json!({"data": null, "stringData": {"other.json": state}});
    secrets.patch("login", &PatchParams::default(), &Patch::Merge(renamed)).await?;
    sessions
        .patch("authed", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"poke": "2"}}})))
        .await?;
    eventually(WAIT, || async {
        let status = sessions.get("authed").await?.status.context("status")?;
        let resolved = status.conditions.iter().find(|c| c.type_ == "ConfigResolved").context("ConfigResolved")?;
        ensure!(resolved.status == "False" && resolved.reason == "SecretKeyNotFound", "{resolved:?}");
        ensure!(resolved.message.starts_with("spec.authState.secretRef.key: Secret"), "{}", resolved.message);
        ensure!(resolved.message.contains("\"s.json\""), "{}", resolved.message);
        Ok(())
    })
    .await?;

    sessions.delete("authed", &DeleteParams::foreground()).await?;
    eventually(WAIT, || async {
        ensure!(secrets.get_opt(&format!("{warm}-auth")).await?.is_none(), "the state copy outlives its session");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_session_on_an_empty_waiting_pool_stays_pending_until_a_ready_pod_wakes_it() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "wait").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    create_pool_when_empty(&client, n, "patient", 1, "Wait").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    eventually(WAIT, || async {
        let warm = pool_pods(&pods, "patient", "warm").await?;
        ensure!(warm.len() == 1, "{} warm Pods, waiting for 1", warm.len());
        Ok(())
    })
    .await?;

    let created = tokio::time::Instant::now();
    create(&client, n, session("waiter", json!({"pool": {"name": "patient"}}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let status =
        status_when(&sessions, "waiter", "waiting", |s| pool_claimed(s).is_some_and(|c| c.1 == "PoolWaiting")).await?;
    let (ok, _, message) = pool_claimed(&status).context("PoolClaimed")?;
    ensure!(ok == "False", "{message}");
    ensure!(message.contains("BrowserPool \"patient\"") && message.contains("1 is warming"), "{message}");
    ensure!(status.phase == Some(playpen_api::v1alpha1::Phase::Pending), "{:?}", status.phase);
    ensure!(status.pool.is_none() && status.pod_name.is_none(), "no browser yet: {status:?}");
    ensure!(pods.get_opt("waiter-browser").await?.is_none(), "a waiting session starts nothing cold");
    // What a warm browser can never serve still starts cold at once.
    create(&client, n, session("traced", json!({"pool": {"name": "patient"}, "recording": {"trace": true}}))).await?;
    let traced = status_when(&sessions, "traced", "placed", |s| s.pool.is_some()).await?;
    ensure!(pool_claimed(&traced).is_some_and(|c| c.1 == "NeedsColdStart"), "{:?}", traced.conditions);
    ensure!(sample(&op, "playpen_pool_claim_duration_seconds_count{result=\"waiting\"}").await? >= 1.0, "waits");
    ensure!(claim_events(&client, n, "waiter").await?.is_empty(), "no Event while it waits");

    // The Pod becomes ready: the session is woken by it, well before its
    // 30 s fallback requeue, and takes it. (A deliberate pause first: the
    // session is surely parked waiting when the Pod turns ready.)
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ready = ready_warm_pods(&pods, "patient", 1).await?;
    let marked = tokio::time::Instant::now();
    // 8 s: the fallback requeue comes 30 s after the session's last
    // reconcile (its creation), at least 12 s after the Pod is ready here.
    let status = eventually(Duration::from_secs(8), || async {
        let status = sessions.get("waiter").await?.status.context("no status")?;
        ensure!(status.pool.as_ref().is_some_and(|p| p.claimed), "not claimed yet: {:?}", status.conditions);
        Ok(status)
    })
    .await?;
    let woken_after = marked.elapsed();
    ensure!(woken_after < Duration::from_secs(8), "woken after {woken_after:?}");
    ensure!(status.pod_name.as_deref() == Some(ready[0].as_str()), "{:?} vs {ready:?}", status.pod_name);
    let events = announced(&client, n, "waiter").await?;
    ensure!(events.len() == 1 && events[0].1 == "Claimed" && events[0].2.contains(&ready[0]), "{events:?}");
    let waited = created.elapsed().as_secs_f64() - woken_after.as_secs_f64();
    ensure!(sample(&op, "playpen_pool_wait_seconds_count{result=\"claimed\"}").await? == 1.0, "one wait");
    let sum = sample(&op, "playpen_pool_wait_seconds_sum{result=\"claimed\"}").await?;
    ensure!(sum >= waited - 1.0, "the wait counts from creation: {sum} s, waited at least {waited} s");
    ensure!(sample(&op, "playpen_pool_wait_seconds_count{result=\"cold\"}").await? == 1.0, "traced's cold start");
    Ok(())
}

/// `runtime.json` of the claimed Pod whose warm name is `warm`.
async fn runtime_of(maps: &Api<ConfigMap>, warm: &str) -> anyhow::Result<RuntimeConfig> {
    let map = maps.get(&format!("{warm}-runtime")).await?;
    Ok(serde_json::from_str(map.data.as_ref().and_then(|d| d.get("runtime.json")).context("runtime.json")?)?)
}

/// Sets the session's idle timeout and waits until its runtime ConfigMap
/// says it: proof that a reconcile after the change below ran to its end.
async fn reconciled_since(
    sessions: &Api<BrowserSession>,
    maps: &Api<ConfigMap>,
    warm: &str,
    idle: i64,
) -> anyhow::Result<RuntimeConfig> {
    let patch = json!({"spec": {"idleTimeoutSeconds": idle}});
    sessions.patch("task", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    eventually(WAIT, || async {
        let runtime = runtime_of(maps, warm).await?;
        ensure!(runtime.idle_timeout_seconds == Some(idle), "runtime.json not reconciled yet: {runtime:?}");
        Ok(runtime)
    })
    .await
}

#[tokio::test]
async fn a_placed_session_keeps_its_template_when_the_pool_is_edited_or_deleted() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "keep").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "agents", 1).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    ready_warm_pods(&pods, "agents", 1).await?;
    create(&client, n, session("task", json!({"pool": {"name": "agents"}}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let status = status_when(&sessions, "task", "claimed", |s| s.pool.as_ref().is_some_and(|p| p.claimed)).await?;
    let pod_name = status.pod_name.clone().context("status.podName")?;
    let pod = pods.get(&pod_name).await?;
    let placed = status.pool.clone().context("status.pool")?;
    let hash = pod.labels().get(playpen_api::naming::POOL_TEMPLATE_LABEL).cloned();
    ensure!(placed.template_hash == hash, "recorded {:?}, the Pod runs {hash:?}", placed.template_hash);
    let recorded = placed.template.clone().context("status.pool.template")?;
    ensure!(recorded.image == "playpen/browser:pool", "{recorded:?}");
    let warm = pod.annotations().get(WARM_NAME_ANNOTATION).context("warm name")?.clone();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), n);
    let services: Api<Service> = Api::namespaced(client.clone(), n);
    let before = reconciled_since(&sessions, &maps, &warm, 600).await?;
    let launch_before = secrets.get(&format!("{warm}-launch")).await?.data;
    let ports_before = services.get("task-view").await?.spec.and_then(|s| s.ports);

    // A pool edit of what a running browser cannot change: the claimed
    // session's children stay as they were built at the claim.
    let edit = json!({"spec": {"template": {"viewer": {"port": 9400}, "sandbox": "Disabled",
        "snapshots": {"volume": {"emptyDir": {"sizeLimit": "2Gi"}}}}}});
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), n);
    pools.patch("agents", &PatchParams::default(), &Patch::Merge(&edit)).await?;
    eventually(WAIT, || async {
        let now = pools.get("agents").await?.status.and_then(|s| s.template_hash);
        ensure!(now.is_some() && now != hash, "the pool has not taken its new template: {now:?}");
        Ok(())
    })
    .await?;
    let after = reconciled_since(&sessions, &maps, &warm, 601).await?;
    let unchanged = RuntimeConfig { idle_timeout_seconds: before.idle_timeout_seconds, ..after.clone() };
    ensure!(unchanged == before, "a pool edit changed the claimed session's runtime.json:\n{before:?}\n{after:?}");
    ensure!(after.viewer_port == Some(9323), "{after:?}");
    ensure!(secrets.get(&format!("{warm}-launch")).await?.data == launch_before, "the launch Secret changed");
    ensure!(services.get("task-view").await?.spec.and_then(|s| s.ports) == ports_before, "the Service changed");
    let status = sessions.get("task").await?.status.context("status")?;
    ensure!(status.pool.as_ref() == Some(&placed), "the record changed: {:?}\nwas {placed:?}", status.pool);
    ensure!(!status.conditions.iter().any(|c| c.type_ == "SandboxEnforced" && c.status == "False"), "sandbox");

    // The pool deleted: the claimed session keeps its Pod, its status and its children.
    pools.delete("agents", &DeleteParams::foreground()).await?;
    eventually(WAIT, || async {
        ensure!(pools.get_opt("agents").await?.is_none(), "the pool is still there");
        Ok(())
    })
    .await?;
    reconciled_since(&sessions, &maps, &warm, 602).await?;
    let status = sessions.get("task").await?.status.context("status")?;
    ensure!(status.pod_name.as_deref() == Some(pod_name.as_str()), "status.podName: {:?}", status.pod_name);
    ensure!(status.phase != Some(playpen_api::v1alpha1::Phase::Failed), "{:?}: {:?}", status.phase, status.conditions);
    ensure!(
        !status.conditions.iter().any(|c| c.reason == "PoolNotFound"),
        "a deleted pool failed a placed session: {:?}",
        status.conditions
    );
    ensure!(pods.get(&pod_name).await?.metadata.deletion_timestamp.is_none(), "the claimed Pod is going");

    // Its Pod lost (an eviction): the replacement starts cold from the record.
    pods.delete(&pod_name, &DeleteParams::default().grace_period(0)).await?;
    let status = status_when(&sessions, "task", "restarted cold", |s| {
        s.pod_name.as_deref() == Some("task-browser") && s.pool.as_ref().is_some_and(|p| !p.claimed)
    })
    .await?;
    let reason = pool_claimed(&status).context("PoolClaimed")?;
    ensure!(reason.1 == "PoolEmpty" && reason.2.contains("recorded in status.pool"), "{reason:?}");
    ensure!(status.pool.as_ref().and_then(|p| p.template.as_ref()) == Some(&recorded), "{:?}", status.pool);
    let cold = pods.get("task-browser").await?;
    let image = cold.spec.and_then(|s| s.containers.into_iter().next()).and_then(|c| c.image);
    ensure!(image.as_deref() == Some("playpen/browser:pool"), "the replacement runs the record: {image:?}");
    Ok(())
}

#[tokio::test]
async fn a_claim_whose_policy_a_quota_refuses_says_so_and_completes_when_the_quota_lifts() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "claim-quota").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "agents", 1).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    ready_warm_pods(&pods, "agents", 1).await?;
    pool_ready(&client, n, "agents", 1).await?;
    // Room for the pool's policy and the namespace's baseline, not for the session's own.
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> = Api::namespaced(client.clone(), n);
    let quota = json!({"metadata": {"name": "two-policies"},
        "spec": {"hard": {"count/networkpolicies.networking.k8s.io": "2"}}});
    quotas.create(&PostParams::default(), &serde_json::from_value(quota)?).await?;
    eventually(WAIT, || async {
        let used = quotas.get("two-policies").await?.status.and_then(|s| s.used).unwrap_or_default();
        ensure!(!used.is_empty(), "the quota is not counted yet");
        Ok(())
    })
    .await?;
    create(&client, n, session("task", json!({"pool": {"name": "agents"}}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let refused = status_when(&sessions, "task", "refused a child", |s| {
        s.conditions.iter().any(|c| c.type_ == condition::CHILDREN_APPLIED && c.reason == "ChildRefused")
    })
    .await?;
    let applied = refused.conditions.iter().find(|c| c.type_ == condition::CHILDREN_APPLIED).context("cond")?;
    ensure!(applied.message.contains("NetworkPolicy task-isolate"), "{applied:?}");
    ensure!(refused.phase != Some(playpen_api::v1alpha1::Phase::Ready), "Ready without its policy: {refused:?}");

    // The quota lifts: the claim completes without anyone touching the session.
    quotas.delete("two-policies", &DeleteParams::default()).await?;
    let status = status_when(&sessions, "task", "claimed with its children", |s| {
        s.pool.as_ref().is_some_and(|p| p.claimed)
            && s.conditions.iter().any(|c| c.type_ == condition::CHILDREN_APPLIED && c.status == "True")
    })
    .await?;
    let pod = status.pod_name.context("status.podName")?;
    ensure!(pool_pods(&pods, "agents", "claimed").await?.iter().any(|p| p.name_any() == pod), "{pod} not claimed");
    Api::<NetworkPolicy>::namespaced(client.clone(), n).get("task-isolate").await?;
    Ok(())
}
