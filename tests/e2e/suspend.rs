//! Suspend and resume on the State path, under the node's default runtime
//! (runc): a page with a filled field, a cookie and a counter in its
//! JavaScript memory; `spec.suspended: true` frees the Pod and keeps the
//! state in a Secret; `false` brings a browser back with the same URL,
//! cookie and field, and the counter restarted (the State path keeps no
//! JavaScript heap, and the test holds it to that). Once for a session with
//! its own browser (resumed into a new Pod), once for a pooled one (resumed
//! into a warm Pod it claims, the state reopened by `POST /resume`).

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams};
use kube::Client;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM};
use playpen_api::suspend::SuspendedState;
use playpen_api::v1alpha1::{condition, BrowserPool, BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{eventually, pod_is_ready};
use serde_json::json;

use crate::kubectl::{exec, playpen};
use crate::session::{create_with, pod_name, wait_ready, BROWSER};
use crate::setup::{start_fixture, tolerations, Installed, BROWSER_IMAGE};

/// The session, and its fixture.
const NAME: &str = "parked";
const FIXTURE: &str = "suspend-fixture";
/// What the agent types, and its cookie.
pub(crate) const NOTE: &str = "kept across a suspend";
pub(crate) const COOKIE: &str = "who=agent";

/// A session of its own, then a pooled one, one after the other (they
/// share the fixture and keep the node's load down).
pub async fn sessions_park_and_come_back(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let fixture = start_fixture(client, ns, FIXTURE).await?;
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": FIXTURE}}]}});
    create_with(client, ns, NAME, "Enforced", network.clone(), json!({})).await?;
    parks_and_comes_back(client, ns, NAME, &fixture).await.context("a session with its own browser")?;
    create_pool(client, ns).await?;
    wait_warm(client, ns).await.context("the pool's warm Pod")?;
    let pooled = json!({"pool": {"name": POOL}, "network": network});
    let bs = playpen_tests::fixtures::session(POOLED, pooled)?;
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&Default::default(), &bs).await?;
    let resumed = parks_and_comes_back(client, ns, POOLED, &fixture).await.context("a pooled session")?;
    let pool = resumed.pool.context("no status.pool")?;
    ensure!(pool.claimed, "the pooled session resumed cold, not into a warm claim: {pool:?}");
    Api::<BrowserPool>::namespaced(client.clone(), ns).delete(POOL, &DeleteParams::background()).await?;
    Ok(())
}

/// The pool the pooled session is placed from, and that session.
const POOL: &str = "parking";
const POOLED: &str = "parked-pooled";

async fn create_pool(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pool: BrowserPool = serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
        "metadata": {"name": POOL},
        "spec": {"minReady": 1, "maxSize": 3, "template": {
            "image": BROWSER_IMAGE, "imagePullPolicy": "Never", "sandbox": "Enforced",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "pod": {"tolerations": tolerations(), "shmSize": "256Mi"}}}
    }))?;
    Api::<BrowserPool>::namespaced(client.clone(), ns).create(&Default::default(), &pool).await?;
    Ok(())
}

/// Waits for a Ready warm Pod of the pool.
async fn wait_warm(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={POOL},{POOL_STATE_LABEL}={POOL_STATE_WARM}"));
    eventually(Duration::from_secs(240), || async {
        let warm = pods.list(&params).await?.items;
        ensure!(
            warm.iter().any(|p| p.metadata.deletion_timestamp.is_none() && pod_is_ready(p)),
            "no Ready warm Pod of {POOL} yet"
        );
        Ok(())
    })
    .await
}

/// The scenario on session `name`: returns its status once resumed.
async fn parks_and_comes_back(
    client: &Client,
    ns: &str,
    name: &str,
    fixture: &str,
) -> anyhow::Result<BrowserSessionStatus> {
    let (status, _) = wait_ready(client, ns, name).await?;
    let pod = pod_name(&status)?;
    let form = fill_in(ns, &pod, fixture).await?;

    // Suspend: the Pod goes, the state stays in a Secret.
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let asked = Instant::now();
    // Through the plugin, as a human or an agent would.
    let out = playpen(&["suspend", name, "-n", ns, "--wait=2m"]).await?.ok("kubectl playpen suspend --wait")?;
    ensure!(out.contains("is Suspended"), "kubectl playpen suspend said:\n{out}");
    let parked = wait_phase(&sessions, name, Phase::Suspended, Duration::from_secs(10)).await?;
    let suspend_took = asked.elapsed();
    let said = parked.suspend.clone().context("no status.suspend")?;
    ensure!(said.path == "State" && said.tabs == Some(2), "status.suspend: {said:?}");
    ensure!(parked.pod_name.is_none(), "a parked session names a Pod: {parked:?}");
    ensure!(
        parked.conditions.iter().any(|c| c.type_ == condition::SUSPENDED && c.status == "True"),
        "{:?}",
        parked.conditions
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pod_deleted(&pods, &pod).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let state_secret = said.state_secret.clone().context("no status.suspend.stateSecret")?;
    let saved = secrets.get(&state_secret).await?;
    ensure!(saved.type_.as_deref() == Some("playpen.dev/suspended-state"), "type {:?}", saved.type_);
    let owner = saved.metadata.owner_references.unwrap_or_default();
    ensure!(owner.iter().any(|o| o.kind == "BrowserSession" && o.name == name), "not owned by the session: {owner:?}");
    let bytes = saved.data.and_then(|d| d.get("state.json").cloned()).context("no state.json")?;
    let doc: SuspendedState = serde_json::from_slice(&bytes.0)?;
    ensure!(
        doc.tabs.len() == 2 && doc.tabs[0].url == form,
        "tabs: {:?}",
        doc.tabs.iter().map(|t| &t.url).collect::<Vec<_>>()
    );
    ensure!(doc.storage.cookies.iter().any(|c| c["name"] == "who"), "no cookie saved");

    // Resume: a new browser with the pages back.
    let asked = Instant::now();
    let out = playpen(&["resume", name, "-n", ns, "--wait=3m"]).await?.ok("kubectl playpen resume --wait")?;
    ensure!(out.contains("is Ready"), "kubectl playpen resume said:\n{out}");
    let (resumed, _) = wait_ready(client, ns, name).await.context("the resumed session turns Ready")?;
    let resume_took = asked.elapsed();
    let new_pod = pod_name(&resumed)?;
    let tabs = exec(ns, &new_pod, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("tab-list")?;
    ensure!(tabs.contains(&form) && tabs.contains(fixture), "the tabs did not come back:\n{tabs}");
    let page = read_page(ns, &new_pod).await?;
    ensure!(page["url"] == form.as_str(), "the active tab is not the form: {page}");
    ensure!(page["note"] == NOTE, "the note was not restored: {page}");
    ensure!(page["cookie"].as_str().is_some_and(|c| c.contains(COOKIE)), "the cookie was not restored: {page}");
    ensure!(page["counter"].as_i64().is_some_and(|n| n < 1000), "the JavaScript heap came back?: {page}");
    let after = eventually(Duration::from_secs(60), || async {
        let status = sessions.get(name).await?.status.context("no status")?;
        let suspend = status.suspend.clone().context("no status.suspend")?;
        ensure!(suspend.state_secret.is_none() && suspend.last_resume_millis.is_some(), "{suspend:?}");
        ensure!(secrets.get_opt(&state_secret).await?.is_none(), "{state_secret} is still there");
        Ok(suspend)
    })
    .await
    .context("the saved state goes once the resume is Ready")?;
    eprintln!(
        "e2e: suspend of {ns}/{name} took {suspend_took:?} (capture {:?} ms, {} bytes); resume to Ready {resume_took:?} \
         (operator's count {:?} ms)",
        said.suspend_millis, said.bytes.unwrap_or_default(), after.last_resume_millis
    );
    sessions.delete(name, &DeleteParams::background()).await?;
    Ok(resumed)
}

/// Waits for a suspended session's Pod `pod` to be deleted.
pub(crate) async fn pod_deleted(pods: &Api<Pod>, pod: &str) -> anyhow::Result<()> {
    eventually(Duration::from_secs(120), || async {
        ensure!(pods.get_opt(pod).await?.is_none(), "{pod} still exists");
        Ok(())
    })
    .await
    .context("the suspended session's Pod is deleted")
}

/// Session `name` with its own browser, its egress allowed to a fixture
/// `fixture` of its namespace, once Ready: the fixture's URL and the Pod.
pub(crate) async fn ready_beside_fixture(
    client: &Client,
    ns: &str,
    name: &str,
    fixture: &str,
) -> anyhow::Result<(String, String)> {
    let url = start_fixture(client, ns, fixture).await?;
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": fixture}}]}});
    create_with(client, ns, name, "Enforced", network, json!({})).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    Ok((url, pod_name(&status)?))
}

async fn wait_phase(
    sessions: &Api<BrowserSession>,
    name: &str,
    phase: Phase,
    within: Duration,
) -> anyhow::Result<BrowserSessionStatus> {
    eventually(within, || async {
        let status = sessions.get(name).await?.status.context("no status")?;
        ensure!(status.phase == Some(phase), "phase {:?}, conditions {:?}", status.phase, status.conditions);
        Ok(status)
    })
    .await
}

/// The agent's work on a fresh session's `pod`: the fixture's form page
/// with a note typed, a cookie set and a counter in the page's memory, and
/// a second tab on the fixture's front page (the form's tab selected).
/// Returns the form's URL.
pub(crate) async fn fill_in(ns: &str, pod: &str, fixture: &str) -> anyhow::Result<String> {
    let form = format!("{}/form", fixture.trim_end_matches('/'));
    exec(ns, pod, BROWSER, &["playwright-cli", "goto", &form]).await?.ok("goto the form")?;
    let typed = format!(
        "() => {{ const note = document.querySelector('#note'); note.value = {NOTE:?}; \
         note.dispatchEvent(new Event('input', {{bubbles: true}})); document.cookie = '{COOKIE}; max-age=3600; path=/'; \
         window.counter = 1000; return document.cookie; }}"
    );
    let out = eval(ns, pod, &typed).await?;
    ensure!(out.contains(COOKIE), "the cookie was not set: {out}");
    exec(ns, pod, BROWSER, &["playwright-cli", "tab-new", fixture]).await?.ok("a second tab")?;
    exec(ns, pod, BROWSER, &["playwright-cli", "tab-select", "0"]).await?.ok("back to the form")?;
    Ok(form)
}

/// The selected tab's URL, note, cookies and counter, as the page says them.
pub(crate) async fn read_page(ns: &str, pod: &str) -> anyhow::Result<serde_json::Value> {
    let read = "() => JSON.stringify({url: location.href, note: document.querySelector('#note').value, \
                cookie: document.cookie, counter: window.counter})";
    let page = eval(ns, pod, read).await?;
    json_of(&page).with_context(|| format!("the page's answer: {page}"))
}

/// A JSON answer, or a JSON string holding one (`--raw` prints a string result as JSON).
fn json_of(out: &str) -> anyhow::Result<serde_json::Value> {
    match serde_json::from_str(out.trim())? {
        serde_json::Value::String(inner) => Ok(serde_json::from_str(&inner)?),
        other => Ok(other),
    }
}

/// `playwright-cli --raw eval <function>`: its result only.
pub(crate) async fn eval(ns: &str, pod: &str, function: &str) -> anyhow::Result<String> {
    exec(ns, pod, BROWSER, &["playwright-cli", "--raw", "eval", function]).await?.ok("eval")
}
