//! The live suspend path's protocol against the real API server. There is
//! no node: the test writes the Pods' status as a kubelet would, and plays
//! the node agent, answering on the Pods as the agent does. What the
//! operator must do: build a Pod under a checkpointable RuntimeClass
//! live-ready, ask the agent for a checkpoint instead of the runtime for its
//! state, park with the checkpoint named, create the resumed Pod gated and
//! pinned to the agent's node, finish the resume once the restored browser
//! is Ready, and give up a restore the agent refuses for a fresh browser.

use std::net::IpAddr;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::ResourceExt as _;
use playpen_api::live::{
    CheckpointResult, RestoreResult, CHECKPOINT_REQUEST, CHECKPOINT_RESULT, GVISOR_RESTORE_IMAGE, RESTORE_FROM,
    RESTORE_GATE, RESTORE_NODE_LABEL, RESTORE_RESULT,
};
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_operator::children::Settings;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::suspend::{phase_is, ready_at, status, Answer, StandIn, WAIT};
use crate::{create, session};

const NODE: &str = "node-a";

async fn annotate(pods: &Api<Pod>, name: &str, key: &str, value: &str) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"annotations": {key: value}}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

async fn set_suspended(sessions: &Api<BrowserSession>, suspended: bool) -> anyhow::Result<()> {
    let patch = json!({"spec": {"suspended": suspended}});
    sessions.patch("live", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Plays the agent's checkpoint: waits for the request on the Pod and
/// answers it; returns the checkpointed Pod's UID.
async fn checkpoint_as_the_agent(pods: &Api<Pod>) -> anyhow::Result<String> {
    let (uid, request) = eventually(WAIT, || async {
        let pod = pods.get("live-browser").await?;
        let request = pod.annotations().get(CHECKPOINT_REQUEST).cloned().context("no checkpoint request yet")?;
        Ok((pod.uid().unwrap_or_default(), request))
    })
    .await?;
    ensure!(request.starts_with("suspend-"), "request {request:?}");
    let answer =
        CheckpointResult { request, ok: true, node: NODE.into(), bytes: 230 << 20, millis: 1900, error: String::new() };
    annotate(pods, "live-browser", CHECKPOINT_RESULT, &serde_json::to_string(&answer)?).await?;
    Ok(uid)
}

/// The resumed Pod, once created (not the checkpointed one, `old`).
async fn resumed_pod(pods: &Api<Pod>, old: &str) -> anyhow::Result<Pod> {
    eventually(WAIT, || async {
        let pod = pods.get("live-browser").await?;
        ensure!(pod.uid().as_deref() != Some(old), "still the checkpointed Pod");
        Ok(pod)
    })
    .await
}

#[tokio::test]
async fn a_live_ready_session_is_checkpointed_by_the_agent_restored_gated_and_started_afresh_when_refused(
) -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "live").await?;
    let n = ns.name.as_str();
    // A RuntimeClass the operator checkpoints (its handler never runs: there is no node).
    let classes: Api<RuntimeClass> = Api::all(client.clone());
    let class = format!("{n}-gvisor");
    let runtime_class: RuntimeClass = serde_json::from_value(json!({"metadata": {"name": class}, "handler": "runsc"}))?;
    classes.create(&PostParams::default(), &runtime_class).await?;
    let settings = Settings { live_runtime_classes: vec![class.clone()], ..playpen_tests::settings() };
    let _op = RunningOperator::start_with_settings(&client, &[n], settings).await?;
    let (pods, sessions): (Api<Pod>, Api<BrowserSession>) =
        (Api::namespaced(client.clone(), n), Api::namespaced(client.clone(), n));
    let result = scenario(&client, n, &pods, &sessions).await;
    classes.delete(&class, &DeleteParams::default()).await?;
    result
}

async fn scenario(
    client: &kube::Client,
    n: &str,
    pods: &Api<Pod>,
    sessions: &Api<BrowserSession>,
) -> anyhow::Result<()> {
    let class = format!("{n}-gvisor");
    create(client, n, session("live", json!({"image": "i", "pod": {"runtimeClassName": class}}))).await?;

    // Built live-ready: the emptyDirs inside the sandbox, readiness on every address.
    let pod = eventually(WAIT, || async { Ok(pods.get("live-browser").await?) }).await?;
    let annotations = pod.annotations();
    assert_eq!(annotations.get("playpen.dev/live-suspend").map(String::as_str), Some("true"));
    for (key, want) in [
        ("dev.gvisor.spec.mount.data-home.type", "bind"),
        ("dev.gvisor.spec.mount.snapshots.share", "pod"),
        ("dev.gvisor.spec.mount.dshm.type", "tmpfs"),
    ] {
        assert_eq!(annotations.get(key).map(String::as_str), Some(want), "{key}");
    }
    let env = pod.spec.as_ref().map(|s| s.containers[0].env.clone().unwrap_or_default()).unwrap_or_default();
    assert!(!env.iter().any(|e| e.name == "PLAYPEN_POD_IP"), "a live-ready runtime must not bind the Pod's address");

    // Ready; a stand-in runtime refuses any capture: the State path is not to be taken.
    let ip = IpAddr::from([127, 0, 36, 1]);
    let secrets = Api::namespaced(client.clone(), n);
    let runtime = StandIn::start(ip, secrets, "live-control", Answer::Failed).await?;
    ready_at(pods, "live-browser", ip).await?;
    phase_is(sessions, "live", Phase::Ready).await?;

    // Suspend: the agent is asked, the session Suspending until it answers, then parked.
    set_suspended(sessions, true).await?;
    let checkpointed = checkpoint_as_the_agent(pods).await?;
    let parked = phase_is(sessions, "live", Phase::Suspended).await?;
    let said = parked.suspend.context("status.suspend")?;
    assert_eq!(
        (said.path.as_str(), said.node.as_deref(), said.checkpoint.as_deref(), said.bytes, said.suspend_millis),
        ("Live", Some(NODE), Some(checkpointed.as_str()), Some(230 << 20), Some(1900))
    );
    assert_eq!(said.state_secret, None);
    assert!(runtime.presented.lock().expect("the stand-in's record").is_empty(), "the runtime was asked for its state");
    eventually(WAIT, || async {
        ensure!(pods.get_opt("live-browser").await?.is_none_or(|p| p.uid().as_deref() != Some(&checkpointed)));
        Ok(())
    })
    .await
    .context("the checkpointed Pod is deleted")?;

    // Resume: gated, labelled for the agent of the node, pinned there.
    set_suspended(sessions, false).await?;
    let gated = resumed_pod(pods, &checkpointed).await?;
    assert_eq!(gated.labels().get(RESTORE_NODE_LABEL).map(String::as_str), Some(NODE));
    assert_eq!(gated.annotations().get(RESTORE_FROM), Some(&checkpointed));
    let spec = gated.spec.clone().context("spec")?;
    assert!(spec.scheduling_gates.iter().flatten().any(|g| g.name == RESTORE_GATE), "not gated");
    let terms =
        spec.affinity.and_then(|a| a.node_affinity).and_then(|a| a.required_during_scheduling_ignored_during_execution);
    let pinned = terms.iter().flat_map(|t| &t.node_selector_terms).all(|t| {
        t.match_fields
            .iter()
            .flatten()
            .any(|f| f.key == "metadata.name" && f.values.as_deref() == Some(&[NODE.to_owned()][..]))
    });
    assert!(pinned, "not pinned to {NODE}");
    phase_is(sessions, "live", Phase::Resuming).await?;
    // The agent stages it and lifts the gate; the restored browser turns Ready.
    let restored = gated.name_any();
    let staged = json!({"metadata": {"annotations": {GVISOR_RESTORE_IMAGE: format!("/var/lib/playpen/restore/{}", gated.uid().unwrap_or_default())}},
                        "spec": {"schedulingGates": []}});
    pods.patch(&restored, &PatchParams::default(), &Patch::Merge(&staged)).await?;
    ready_at(pods, &restored, ip).await?;
    phase_is(sessions, "live", Phase::Ready).await?;
    let back = eventually(WAIT, || async {
        let suspend = status(sessions, "live").await?.suspend.context("status.suspend")?;
        ensure!(suspend.checkpoint.is_none() && suspend.last_resume_millis.is_some(), "{suspend:?}");
        Ok(suspend)
    })
    .await
    .context("the checkpoint is spent once the restored browser is Ready")?;
    assert_eq!(back.node, None);

    // Again, and this time the agent refuses the restore: a fresh browser.
    set_suspended(sessions, true).await?;
    let checkpointed = checkpoint_as_the_agent(pods).await?;
    phase_is(sessions, "live", Phase::Suspended).await?;
    set_suspended(sessions, false).await?;
    let gated = resumed_pod(pods, &checkpointed).await?;
    let refused = RestoreResult { from: checkpointed.clone(), error: "checkpoint is not on this node".into() };
    annotate(pods, &gated.name_any(), RESTORE_RESULT, &serde_json::to_string(&refused)?).await?;
    let fresh = eventually(WAIT, || async {
        let pod = pods.get("live-browser").await?;
        ensure!(pod.uid() != gated.uid(), "still the refused Pod");
        Ok(pod)
    })
    .await
    .context("the refused Pod gives way to a fresh one")?;
    let spec = fresh.spec.context("spec")?;
    assert!(spec.scheduling_gates.unwrap_or_default().is_empty(), "a fresh browser is not gated");
    assert!(!fresh.metadata.annotations.unwrap_or_default().contains_key(RESTORE_FROM));
    let said = status(sessions, "live").await?.suspend.context("status.suspend")?;
    assert_eq!((said.checkpoint, said.node), (None, None));
    assert!(
        said.reason.contains("could not be restored") && said.reason.contains("not on this node"),
        "{}",
        said.reason
    );
    Ok(())
}
