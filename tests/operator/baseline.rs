//! The namespace's baseline NetworkPolicy, under which a session's first
//! reconcile creates its Pod at once with the rest of its children.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::ResourceExt;
use playpen_api::BrowserSession;
use playpen_operator::children::BASELINE_POLICY;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{create, session};

const WAIT: Duration = Duration::from_secs(30);

/// Whether `policy` selects a Pod labelled `labels` (matchLabels only, as built).
fn selects(policy: &NetworkPolicy, labels: &BTreeMap<String, String>) -> anyhow::Result<bool> {
    let selector = policy.spec.as_ref().and_then(|s| s.pod_selector.as_ref()).context("pod selector")?;
    ensure!(selector.match_expressions.is_none(), "only matchLabels expected: {selector:?}");
    let wanted = selector.match_labels.clone().unwrap_or_default();
    Ok(wanted.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

#[tokio::test]
async fn every_browser_pod_is_under_the_namespaces_baseline_policy_which_comes_back_when_deleted() -> anyhow::Result<()>
{
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "base").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    for name in ["a", "b"] {
        create(&client, n, session(name, json!({"image": "i"}))).await?;
    }
    let baseline = eventually(WAIT, || async { Ok(policies.get(BASELINE_POLICY).await?) }).await?;
    let spec = baseline.spec.as_ref().context("spec")?;
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned(), "Egress".to_owned()]));
    assert!(spec.ingress.as_ref().is_none_or(Vec::is_empty) && spec.egress.as_ref().is_none_or(Vec::is_empty));
    assert!(baseline.owner_references().is_empty(), "the namespace's, no session's");
    for name in ["a", "b"] {
        let pod = eventually(WAIT, || async { Ok(pods.get(&format!("{name}-browser")).await?) }).await?;
        let own = policies.get(&format!("{name}-isolate")).await?;
        assert!(selects(&baseline, pod.labels())?, "the baseline does not select {name}'s Pod");
        assert!(selects(&own, pod.labels())?, "{name}'s own policy does not select its Pod");
    }

    // Deleted by hand: a later reconcile in the namespace puts it back.
    let uid = baseline.uid().context("uid")?;
    policies.delete(BASELINE_POLICY, &DeleteParams::default()).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let mut poke = 0;
    eventually(WAIT, || {
        poke += 1;
        let (sessions, policies, uid) = (sessions.clone(), policies.clone(), uid.clone());
        let patch = Patch::Merge(json!({"metadata": {"annotations": {"poke": poke.to_string()}}}));
        async move {
            sessions.patch("a", &PatchParams::default(), &patch).await?;
            // A deliberate pause: the reconcile this poke starts has time to run.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let back = policies.get_opt(BASELINE_POLICY).await?;
            ensure!(back.as_ref().and_then(ResourceExt::uid).is_some_and(|u| u != uid), "not put back yet");
            Ok(())
        }
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_pod_created_beside_a_leftover_launch_secret_of_other_contents_is_replaced() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "leftover").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    // A first session: the operator's caches are filled and the baseline is
    // in place, so the next session's Pod goes at once with its mounts.
    create(&client, n, session("first", json!({"image": "i"}))).await?;
    eventually(WAIT, || async {
        let named = sessions.get("first").await?.status.and_then(|s| s.pod_name);
        ensure!(named.is_some(), "first's status names no Pod yet");
        Ok(())
    })
    .await?;
    // What a deleted session of the same name could leave for a moment.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), n);
    let leftover: Secret = serde_json::from_value(json!({"metadata": {"name": "demo-launch"}}))?;
    let leftover = Secret {
        data: Some(BTreeMap::from([("config.json".to_owned(), ByteString(br#"{"browser":{}}"#.to_vec()))])),
        ..leftover
    };
    secrets.create(&PostParams::default(), &leftover).await?;

    // Every Pod uid of demo's, and which were deleted.
    let seen: Arc<Mutex<(Vec<String>, BTreeSet<String>)>> = Arc::default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let cfg = watcher::Config::default().fields("metadata.name=demo-browser");
    let record = seen.clone();
    let watch = tokio::spawn(async move {
        let stream = watcher(pods, cfg);
        futures::pin_mut!(stream);
        while let Ok(Some(event)) = stream.try_next().await {
            let Ok(mut s) = record.lock() else { return };
            match event {
                watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                    let uid = p.uid().unwrap_or_default();
                    if !s.0.contains(&uid) {
                        s.0.push(uid);
                    }
                }
                watcher::Event::Delete(p) => {
                    s.1.insert(p.uid().unwrap_or_default());
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
    });
    // A deliberate pause: the watch is listening before the session exists.
    tokio::time::sleep(Duration::from_millis(500)).await;
    create(&client, n, session("demo", json!({"image": "i"}))).await?;

    // The Secret is the session's; the Pod created beside the leftover went,
    // and the one there now came after.
    eventually(WAIT, || async {
        let secret = secrets.get("demo-launch").await?;
        let config: serde_json::Value = serde_json::from_slice(&secret.data.context("data")?["config.json"].0)?;
        ensure!(config["browser"]["browserName"] == "chromium", "the leftover is not rewritten yet: {config}");
        let (uids, deleted) = seen.lock().map(|s| s.clone()).map_err(|_| anyhow::anyhow!("poisoned"))?;
        ensure!(uids.len() == 2, "Pods seen: {uids:?}, deleted {deleted:?}");
        ensure!(deleted.contains(&uids[0]) && !deleted.contains(&uids[1]), "seen {uids:?}, deleted {deleted:?}");
        Ok(())
    })
    .await?;
    watch.abort();
    Ok(())
}
