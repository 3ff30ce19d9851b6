//! Suspend and resume on the live path, under gVisor (the gvisor suite
//! installs the chart with `suspend.live.enabled` and the node agent): the
//! same page as the State path's test (a filled field, a cookie, a counter
//! in the page's JavaScript memory and a second tab); `kubectl playpen
//! suspend` has the node agent checkpoint the Pod's sandbox and frees the
//! Pod, with nothing in a Secret; `resume` restores the checkpoint into a
//! new Pod on the same node, and the counter goes on from where it was (the
//! State path would have restarted it).

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams};
use kube::Client;
use playpen_api::live::{GVISOR_RESTORE_IMAGE, RESTORE_RESULT};
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_tests::eventually;

use crate::kubectl::{exec, playpen};
use crate::session::{pod_name, wait_ready, BROWSER};
use crate::setup::Installed;
use crate::suspend::{fill_in, pod_deleted, read_page, ready_beside_fixture, COOKIE, NOTE};

const NAME: &str = "live";
const FIXTURE: &str = "live-fixture";

/// The `--set` values that install the node agent for the test node: its
/// runsc and state root come from tests/run.sh (`PLAYPEN_RUNSC`,
/// `PLAYPEN_RUNSC_ROOT`).
pub fn agent_values() -> anyhow::Result<Vec<String>> {
    let var = |name: &str| {
        std::env::var(name).with_context(|| format!("{name} is not set: tests/run.sh sets it (the node's runsc)"))
    };
    Ok(vec![
        "suspend.live.enabled=true".into(),
        "suspend.live.agent.image.repository=playpen/node-agent,suspend.live.agent.image.tag=dev".into(),
        "suspend.live.agent.image.pullPolicy=Never".into(),
        format!("suspend.live.agent.runscPath={}", var("PLAYPEN_RUNSC")?),
        format!("suspend.live.agent.runscRoot={}", var("PLAYPEN_RUNSC_ROOT")?),
        format!("suspend.live.agent.tolerations[0].key={}", crate::setup::NODE_TAINT_KEY),
        "suspend.live.agent.tolerations[0].operator=Exists".into(),
    ])
}

/// The scenario; the session is deleted at its end.
pub async fn a_session_is_checkpointed_and_restored(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let (fixture, pod) = ready_beside_fixture(client, ns, NAME, FIXTURE).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before = pods.get(&pod).await?;
    let (uid, node) = (before.metadata.uid.clone(), before.spec.as_ref().and_then(|s| s.node_name.clone()));
    let form = fill_in(ns, &pod, &fixture).await?;
    let counted = read_page(ns, &pod).await?["counter"].as_i64().context("no counter")?;

    // Suspend: the node agent checkpoints the sandbox; the Pod goes.
    let asked = Instant::now();
    let out = playpen(&["suspend", NAME, "-n", ns, "--wait=2m"]).await?.ok("kubectl playpen suspend --wait")?;
    ensure!(out.contains("is Suspended"), "kubectl playpen suspend said:\n{out}");
    let suspend_took = asked.elapsed();
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let parked = sessions.get(NAME).await?.status.context("no status")?;
    let said = parked.suspend.clone().context("no status.suspend")?;
    ensure!(parked.phase == Some(Phase::Suspended), "phase {:?}", parked.phase);
    ensure!(said.path == "Live", "the live path was not taken: {said:?}");
    ensure!(said.checkpoint == uid && said.node == node, "the checkpoint is not named: {said:?}");
    ensure!(said.bytes.is_some_and(|b| b > 1 << 20), "a sandbox checkpoint of {:?} bytes", said.bytes);
    ensure!(said.state_secret.is_none(), "the live path keeps nothing in a Secret: {said:?}");
    pod_deleted(&pods, &pod).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    ensure!(secrets.get_opt(&format!("{NAME}-suspended")).await?.is_none(), "a state Secret was written");

    // Resume: the checkpoint restored into a new Pod on the same node.
    let asked = Instant::now();
    let out = playpen(&["resume", NAME, "-n", ns, "--wait=3m"]).await?.ok("kubectl playpen resume --wait")?;
    ensure!(out.contains("is Ready"), "kubectl playpen resume said:\n{out}");
    let (resumed, _) = wait_ready(client, ns, NAME).await.context("the resumed session turns Ready")?;
    let resume_took = asked.elapsed();
    let new_pod = pods.get(&pod_name(&resumed)?).await?;
    let annotations = new_pod.metadata.annotations.clone().unwrap_or_default();
    ensure!(
        annotations.contains_key(GVISOR_RESTORE_IMAGE) && !annotations.contains_key(RESTORE_RESULT),
        "the new Pod was not restored by the node agent: {annotations:?}"
    );
    ensure!(new_pod.metadata.uid != uid, "the same Pod?");
    ensure!(new_pod.spec.as_ref().and_then(|s| s.node_name.clone()) == node, "restored on another node");
    let new_name = new_pod.metadata.name.clone().unwrap_or_default();
    let tabs = exec(ns, &new_name, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("tab-list")?;
    ensure!(tabs.contains(&form) && tabs.contains(fixture.as_str()), "the tabs did not come back:\n{tabs}");
    let page = read_page(ns, &new_name).await?;
    ensure!(page["url"] == form.as_str(), "the active tab is not the form: {page}");
    ensure!(page["note"] == NOTE, "the note was not kept: {page}");
    ensure!(page["cookie"].as_str().is_some_and(|c| c.contains(COOKIE)), "the cookie was not kept: {page}");
    ensure!(
        page["counter"].as_i64().is_some_and(|n| n >= counted),
        "the JavaScript heap did not come back: the counter was {counted} before the suspend, now {page}"
    );
    let after = eventually(Duration::from_secs(60), || async {
        let suspend = sessions.get(NAME).await?.status.and_then(|s| s.suspend).context("no status.suspend")?;
        ensure!(suspend.checkpoint.is_none() && suspend.last_resume_millis.is_some(), "{suspend:?}");
        Ok(suspend)
    })
    .await
    .context("the checkpoint is spent once the resume is Ready")?;
    eprintln!(
        "e2e: live suspend of {ns}/{NAME} took {suspend_took:?} (checkpoint {:?} ms, {} bytes); resume to Ready \
         {resume_took:?} (operator's count {:?} ms); counter {counted} -> {}",
        said.suspend_millis,
        said.bytes.unwrap_or_default(),
        after.last_resume_millis,
        page["counter"]
    );
    sessions.delete(NAME, &DeleteParams::background()).await?;
    Ok(())
}
