//! A warm pool on the real kubelet: its Pods turn Ready with Chromium up; a
//! session claims one in place and is driven and viewed; the pool refills; a
//! template change replaces only unclaimed Pods; deleting the session deletes
//! its Pod; a burst larger than the pool gives every session its own Pod and
//! the extra ones a cold start that says so; per-session auth state reaches
//! a claimed browser without a restart.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL};
use playpen_api::runtime_config::WARM_BROWSER_TOUCHED;
use playpen_api::v1alpha1::{condition, BrowserPool, BrowserPoolStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{eventually, http_get, pod_is_ready};
use serde_json::json;

use crate::kubectl::{exec, kubectl, sh, tunnel, Pinned};
use crate::network::{authority, connect_within};
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
    create_pooled_in(client, ns, POOL, name, extra).await
}

async fn create_pooled_in(
    client: &Client,
    ns: &str,
    pool: &str,
    name: &str,
    extra: serde_json::Value,
) -> anyhow::Result<()> {
    let mut spec = json!({"pool": {"name": pool}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let bs = playpen_tests::fixtures::session(name, spec)?;
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
    // Those execs use the warm browsers before any claim: each starts afresh.
    for pod in &warm {
        touched_and_discarded(&pods, ns, pod, &host, port, fixture_url)
            .await
            .context("a warm Pod someone exec'd into is discarded")?;
    }
    wait_full(&pools).await.context("the discarded warm Pods come back")?;

    // A session claims one in place, and an agent drives it.
    let pod = claim_and_drive(client, ns, fixture_url, &warm, installed.runtime_class.as_deref()).await?;

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

    // What anyone left in a warm browser before a claim never reaches the session.
    nothing_planted_reaches_a_claim(client, ns, &pools, &pods).await.context("a warm Pod tampered with")?;

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

/// Session `pooled` claims one of the `warm` Pods in place, allowed to reach
/// the `pool-fixture` of `ns` at `fixture_url`; an agent drives it there and a
/// human opens its viewer. Its Pod.
async fn claim_and_drive(
    client: &Client,
    ns: &str,
    fixture_url: &str,
    warm: &BTreeSet<String>,
    runtime_class: Option<&str>,
) -> anyhow::Result<String> {
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "pool-fixture"}}]}});
    let t0 = Instant::now();
    create_pooled(client, ns, "pooled", json!({"network": network})).await?;
    let (claimed, reason, pod) = claim_of(client, ns, "pooled").await?;
    eprintln!("e2e: the claim took {:?} to Ready", t0.elapsed());
    ensure!(claimed, "the session started cold with a warm pool: {reason}");
    ensure!(warm.contains(&pod), "the session's Pod {pod} is not one of the warm ones {warm:?}");
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", fixture_url]).await?.ok("playwright-cli goto")?;
    ensure!(out.contains("Page Title: Playpen fixture"), "goto on the claimed browser (the session's egress):\n{out}");
    let forward = tunnel(ns, "pooled", Pinned::Viewer(VIEWER_PORT), runtime_class).await?;
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], forward.local_port));
    let (code, body) = http_get(local, "/index.html").await.context("the claimed session's viewer")?;
    ensure!(code == 200 && body.contains("<html"), "the viewer answered {code}: {body:.200}");
    Ok(pod)
}

/// The short form of [`a_warm_pool_serves_sessions`] (the gVisor tier): a
/// pool fills, a session claims a warm Pod, is driven and viewed, and goes
/// with its Pod; the pool's Pods go with the pool.
#[allow(dead_code)] // the gvisor suite's (tests/gvisor includes this file)
pub async fn a_session_claims_a_warm_pod(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_b.name.as_str();
    let fixture_url = start_fixture(client, ns, "pool-fixture").await?;
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let args = ["--disable-background-networking", "--disable-component-update"];
    pools.create(&PostParams::default(), &pool_object(&args)?).await?;
    wait_full(&pools).await.context("the pool's minReady Pods turn Ready on the kubelet")?;
    let warm = pool_pods(&pods, "warm").await?;
    let pod = claim_and_drive(client, ns, &fixture_url, &warm, installed.runtime_class.as_deref()).await?;
    let claimed_uid = pods.get(&pod).await?.uid();
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete("pooled", &DeleteParams::default()).await?;
    pools.delete(POOL, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(120), || async {
        let left = pods.list(&ListParams::default().labels(&format!("{POOL_LABEL}={POOL}"))).await?.items;
        ensure!(left.iter().all(|p| p.uid() != claimed_uid), "the claimed Pod {pod} remains");
        ensure!(left.is_empty(), "{} Pods of the pool remain", left.len());
        Ok(())
    })
    .await
    .context("the claimed Pod goes with its session, the warm ones with the pool")
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

/// The browser container's restarts in `pod`.
fn browser_restarts(pod: &Pod) -> i32 {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    statuses.and_then(|cs| cs.iter().find(|c| c.name == BROWSER)).map_or(0, |c| c.restart_count)
}

/// A TCP connect from a warm Pod, which the runtime discards (killing the
/// probe too) 5 s after it sees it: the probe gives up after 1 s, and a
/// probe killed first on a loaded machine (exit 137) is repeated once the
/// Pod is back. Returns what the probe printed and the browser's restarts
/// before the probe that printed it.
async fn warm_connect(pods: &Api<Pod>, ns: &str, pod: &str, host: &str, port: u16) -> anyhow::Result<(String, i32)> {
    for _ in 0..3 {
        let before = browser_restarts(&pods.get(pod).await?);
        let out = connect_within(ns, pod, BROWSER, host, port, 1000).await?;
        if out.code != 137 {
            return Ok((out.ok("connect probe")?.trim().to_owned(), before));
        }
        eprintln!("e2e: the connect probe in warm Pod {pod} was killed with it; probing again once it is back");
        eventually(Duration::from_secs(120), || async {
            let now = pods.get(pod).await?;
            ensure!(browser_restarts(&now) > before && pod_is_ready(&now), "{pod} has not restarted and turned Ready");
            Ok(())
        })
        .await?;
    }
    anyhow::bail!("the connect probe in warm Pod {pod} was killed three times")
}

/// Touches the warm Pod `pod` with a connect probe (which must time out:
/// the pool's deny-all policy) and requires its runtime to discard the
/// browser for it. A restart the runtime does not explain (seen once on a
/// loaded CI machine: exit 0, no termination message) is printed with the
/// container's last log lines, and the Pod, fresh again, is touched once
/// more: the discard itself must still be seen.
async fn touched_and_discarded(
    pods: &Api<Pod>,
    ns: &str,
    pod: &str,
    host: &str,
    port: u16,
    fixture_url: &str,
) -> anyhow::Result<()> {
    for attempt in 1..=2 {
        let (out, before) = warm_connect(pods, ns, pod, host, port).await?;
        ensure!(out == "TIMEOUT", "a warm Pod connected to {fixture_url}: {out}");
        match discarded_since(pods, pod, before).await? {
            None => return Ok(()),
            Some(other) if attempt == 1 => {
                eprintln!("e2e: warm Pod {pod} restarted for something else; touching it again: {other}");
                eventually(Duration::from_secs(120), || async {
                    ensure!(pod_is_ready(&pods.get(pod).await?), "{pod} is not Ready again");
                    Ok(())
                })
                .await?;
            }
            Some(other) => anyhow::bail!("{pod} was touched twice and never discarded for it: {other}"),
        }
    }
    unreachable!("the second attempt returns")
}

/// Waits until the browser of `pod` restarted after `before` restarts;
/// `None` when its runtime said it discarded a touched warm browser, else
/// what the last termination said, with the container's last log lines.
async fn discarded_since(pods: &Api<Pod>, pod: &str, before: i32) -> anyhow::Result<Option<String>> {
    let last = eventually(Duration::from_secs(120), || async {
        let now = pods.get(pod).await?;
        let count = browser_restarts(&now);
        ensure!(count > before, "{pod}: still {count} restarts");
        let statuses = now.status.and_then(|s| s.container_statuses).unwrap_or_default();
        let browser = statuses.into_iter().find(|c| c.name == BROWSER).context("no browser container status")?;
        Ok(browser.last_state.and_then(|s| s.terminated))
    })
    .await?;
    let said = last.as_ref().and_then(|t| t.message.clone()).unwrap_or_default();
    if said.contains(WARM_BROWSER_TOUCHED) {
        return Ok(None);
    }
    Ok(Some(format!("{}\n{}", termination(last.as_ref()), previous_log(pods, pod).await)))
}

/// A container's last termination, for a failure message.
fn termination(last: Option<&ContainerStateTerminated>) -> String {
    last.map_or_else(
        || "no last termination".to_owned(),
        |t| {
            format!(
                "exit {} signal {:?} reason {:?} from {:?} to {:?}, message {:?}",
                t.exit_code,
                t.signal,
                t.reason,
                t.started_at,
                t.finished_at,
                t.message.as_deref().unwrap_or_default()
            )
        },
    )
}

/// The last lines the previous browser container of `pod` logged.
async fn previous_log(pods: &Api<Pod>, pod: &str) -> String {
    let params =
        LogParams { container: Some(BROWSER.into()), previous: true, tail_lines: Some(30), ..LogParams::default() };
    match pods.logs(pod, &params).await {
        Ok(log) => format!("--- {pod}, previous browser container, last 30 lines:\n{log}"),
        Err(err) => format!("--- {pod}: no previous log: {err}"),
    }
}

/// Someone with exec on every warm Pod loads a cookie with `state-load`,
/// leaves a process behind and drops a snapshot with a future modification
/// time; each warm browser is discarded for it and comes back, and the
/// session that claims one sees none of the three.
async fn nothing_planted_reaches_a_claim(
    client: &Client,
    ns: &str,
    pools: &Api<BrowserPool>,
    pods: &Api<Pod>,
) -> anyhow::Result<()> {
    wait_full(pools).await?;
    let warm = pool_pods(pods, "warm").await?;
    let state = json!({"cookies": [{"name": "planted", "value": "by-someone-else", "domain": "fixture.invalid",
        "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}], "origins": []});
    let plant = format!(
        "touch -d 2030-01-01 {dir}/zz-planted.yml; setsid sleep 600 >/dev/null 2>&1 </dev/null & \
         echo '{state}' > /tmp/planted.json; playwright-cli state-load /tmp/planted.json",
        dir = playpen_api::layout::SNAPSHOT_DIR
    );
    for pod in &warm {
        let before = browser_restarts(&pods.get(pod).await?);
        let planted = exec(ns, pod, BROWSER, &["sh", "-c", &plant]).await?;
        eprintln!("e2e: planted in warm Pod {pod}: {planted:?}");
        if let Some(other) = discarded_since(pods, pod, before).await? {
            anyhow::bail!("the tampered warm Pod {pod} restarted, but not for what was planted: {other}");
        }
    }
    wait_full(pools).await.context("and come back Ready")?;
    create_pooled(client, ns, "after-tamper", json!({})).await?;
    let (claimed, reason, pod) = claim_of(client, ns, "after-tamper").await?;
    ensure!(claimed, "the session started cold: {reason}");
    ensure!(warm.contains(&pod), "{pod} is not one of the tampered Pods {warm:?}");
    // The agent drives only once the runtime has taken the claim (a use
    // before it would count as a warm Pod's, within its grace).
    eventually(Duration::from_secs(60), || async {
        let logs = kubectl(&["logs", "-n", ns, &pod, "-c", BROWSER]).await?.ok("kubectl logs")?;
        ensure!(logs.contains("claimed by a session"), "the runtime has not seen the claim yet");
        Ok(())
    })
    .await?;
    let cookies = exec(ns, &pod, BROWSER, &["playwright-cli", "cookie-list"]).await?.ok("cookie-list")?;
    ensure!(!cookies.contains("planted"), "the planted cookie reached the session:\n{cookies}");
    let listing = sh(ns, &pod, BROWSER, &format!("ls -la {}", playpen_api::layout::SNAPSHOT_DIR)).await?;
    ensure!(!listing.contains("zz-planted"), "the planted snapshot reached the session:\n{listing}");
    let processes = sh(ns, &pod, BROWSER, "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done").await?;
    ensure!(!processes.contains("sleep 600"), "the planted process runs in the session:\n{processes}");
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete("after-tamper", &DeleteParams::default()).await?;
    Ok(())
}

/// A claimed session runs on its own settings: its idle clock starts at the
/// claim, not when its browser warmed up (warm for over 100 s here, with a
/// 90 s timeout), and editing the pool's viewer port, volume size and
/// sandbox, then deleting the pool, leaves it Ready and unchanged until its
/// own idle timeout closes it.
pub async fn a_claimed_session_keeps_its_settings(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    const KEEP: &str = "keep";
    const IDLE: u64 = 90;
    let ns = installed.team_a.name.as_str();
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pool: BrowserPool = serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": KEEP},
        "spec": {"minReady": 1, "template": {"image": BROWSER_IMAGE, "imagePullPolicy": "Never", "sandbox": "Enforced",
            "launchConfig": {"executablePath": "/usr/bin/chromium"},
            "pod": {"tolerations": tolerations(), "shmSize": "256Mi"}}}
    }))?;
    pools.create(&PostParams::default(), &pool).await?;
    let warm_selector = ListParams::default().labels(&format!("{POOL_LABEL}={KEEP},{POOL_STATE_LABEL}=warm"));
    let warm = eventually(Duration::from_secs(240), || async {
        let ready: Vec<Pod> = pods.list(&warm_selector).await?.items.into_iter().filter(pod_is_ready).collect();
        ready.into_iter().next().context("no ready warm Pod yet")
    })
    .await?;
    // Warm for longer than the session's idle timeout before anyone claims it.
    let started = warm.status.as_ref().and_then(|s| s.start_time.clone()).context("the warm Pod's start time")?;
    let warm_for = || {
        let since = k8s_openapi::jiff::Timestamp::now().duration_since(started.0);
        Duration::try_from(since).unwrap_or_default()
    };
    let wait = Duration::from_secs(IDLE + 15).saturating_sub(warm_for());
    tokio::time::sleep(wait).await;
    create_pooled_in(client, ns, KEEP, "idle-claim", json!({"idleTimeoutSeconds": IDLE})).await?;
    let (status, _) = wait_ready(client, ns, "idle-claim").await?;
    let claimed_at = Instant::now();
    let placed = status.pool.clone().context("status.pool")?;
    ensure!(placed.claimed, "the session started cold: {:?}", status.conditions);
    let pod = pod_name(&status)?;
    ensure!(pod == warm.name_any(), "claimed {pod}, not the Pod warm for {:?}", warm_for());
    eprintln!("e2e: claimed {pod}, warm for {:?}, with idleTimeoutSeconds {IDLE}", warm_for());
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let runtime_map = format!("{}-runtime", pod.trim_end_matches("-browser"));
    let runtime = maps.get(&runtime_map).await?.data;

    // The pool edited, then deleted: nothing of the claimed session changes.
    let edit = json!({"spec": {"template": {"viewer": {"port": 9400}, "sandbox": "Disabled",
        "snapshots": {"volume": {"emptyDir": {"sizeLimit": "2Gi"}}}}}});
    pools.patch(KEEP, &PatchParams::default(), &Patch::Merge(&edit)).await?;
    // A deliberate pause, to prove nothing happens: time for a wrongful change.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let unchanged = |when: &'static str| {
        let (sessions, maps, runtime, runtime_map, pod, placed) =
            (&sessions, &maps, &runtime, &runtime_map, &pod, &placed);
        async move {
            let status = sessions.get("idle-claim").await?.status.context("status")?;
            ensure!(
                status.phase == Some(Phase::Ready) && status.pod_name.as_deref() == Some(pod.as_str()),
                "{when}: {:?} {:?} {:?}",
                status.phase,
                status.pod_name,
                status.conditions.iter().map(|c| (&c.type_, &c.status, &c.message)).collect::<Vec<_>>()
            );
            ensure!(status.pool.as_ref() == Some(placed), "{when}: status.pool changed: {:?}", status.pool);
            ensure!(&maps.get(runtime_map).await?.data == runtime, "{when}: the runtime ConfigMap changed");
            Ok::<(), anyhow::Error>(())
        }
    };
    unchanged("after the pool edit").await?;
    pools.delete(KEEP, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(120), || async {
        ensure!(pools.get_opt(KEEP).await?.is_none(), "the pool is still there");
        ensure!(pods.list(&warm_selector).await?.items.is_empty(), "its unclaimed Pods are still there");
        Ok(())
    })
    .await?;
    unchanged("after the pool's deletion").await?;

    // Idle for most of its timeout, counted from the claim: still Ready.
    tokio::time::sleep(Duration::from_secs(IDLE - 10).saturating_sub(claimed_at.elapsed())).await;
    unchanged("idle for less than its timeout since the claim").await?;
    // And closed by its own idle timeout.
    let closed = eventually(Duration::from_secs(120), || async {
        let status = sessions.get("idle-claim").await?.status.context("status")?;
        ensure!(status.phase == Some(Phase::Completed), "not closed yet: {:?}", status.phase);
        Ok(claimed_at.elapsed())
    })
    .await
    .context("the idle timeout closes the claimed session")?;
    eprintln!("e2e: the claimed session closed {closed:?} after its claim (idleTimeoutSeconds {IDLE})");
    ensure!(closed >= Duration::from_secs(IDLE), "closed {closed:?} after the claim, before its idle timeout");
    sessions.delete("idle-claim", &DeleteParams::default()).await?;
    Ok(())
}
