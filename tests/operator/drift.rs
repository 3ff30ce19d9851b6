//! Children exactly as the operator wants them: a hand edit that only adds
//! (a rule on a DenyAll session's policy, a narrower selector on the
//! namespace's baseline, a key in the viewer Service's selector or the
//! runtime ConfigMap) is reverted within seconds, and a deleted baseline
//! comes back, without anyone touching the session.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{create, session};

const BASELINE: &str = "playpen-browsers-baseline";
/// Within seconds: the watch wakes the owner at once; this leaves room for a busy node.
const REVERTED: Duration = Duration::from_secs(20);

/// A hand edit, as `kubectl edit` makes one: another field manager.
async fn edit<K>(api: &Api<K>, name: &str, patch: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams { field_manager: Some("kubectl-edit".into()), ..PatchParams::default() };
    api.patch(name, &params, &Patch::Merge(&patch)).await.with_context(|| format!("editing {name}"))?;
    Ok(())
}

#[tokio::test]
async fn hand_edits_to_children_are_reverted_within_seconds() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "drift").await?;
    let n = ns.name.as_str();
    let _operator = RunningOperator::start(&client, n, None).await?;
    create(
        &client,
        n,
        session("d", json!({"image": "playpen/browser:test", "network": {"egress": {"mode": "DenyAll"}}})),
    )
    .await?;
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    let services: Api<Service> = Api::namespaced(client.clone(), n);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(30), || async {
        policies.get("d-isolate").await?;
        policies.get(BASELINE).await?;
        services.get("d-view").await?;
        maps.get("d-runtime").await?;
        Ok(())
    })
    .await
    .context("the session's children")?;

    // A rule opening all egress, added to the DenyAll policy.
    edit(&policies, "d-isolate", json!({"spec": {"egress": [{}]}})).await?;
    eventually(REVERTED, || async {
        let spec = policies.get("d-isolate").await?.spec.unwrap_or_default();
        ensure!(spec.egress.as_ref().is_none_or(Vec::is_empty), "the added rule is still there: {:?}", spec.egress);
        Ok(())
    })
    .await
    .context("the session's policy")?;

    // The baseline's selector narrowed (it would stop isolating most Pods).
    edit(&policies, BASELINE, json!({"spec": {"podSelector": {"matchLabels": {"narrowed": "by-hand"}}}})).await?;
    eventually(REVERTED, || async {
        let selector = policies.get(BASELINE).await?.spec.unwrap_or_default().pod_selector.unwrap_or_default();
        let labels = selector.match_labels.unwrap_or_default();
        ensure!(!labels.contains_key("narrowed"), "the baseline is still narrowed: {labels:?}");
        Ok(())
    })
    .await
    .context("the baseline's selector")?;

    // The baseline deleted: back within seconds, not at the next periodic reconcile.
    policies.delete(BASELINE, &DeleteParams::default()).await?;
    eventually(REVERTED, || async { Ok(policies.get(BASELINE).await?) }).await.context("the deleted baseline")?;

    // A key added to the viewer Service's selector (it would send viewers elsewhere, or nowhere).
    edit(&services, "d-view", json!({"spec": {"selector": {"extra": "by-hand"}}})).await?;
    eventually(REVERTED, || async {
        let selector = services.get("d-view").await?.spec.unwrap_or_default().selector.unwrap_or_default();
        ensure!(!selector.contains_key("extra"), "the Service's selector kept the key: {selector:?}");
        Ok(())
    })
    .await
    .context("the viewer Service")?;

    // A key added to the runtime ConfigMap.
    edit(&maps, "d-runtime", json!({"data": {"extra.json": "{}"}})).await?;
    eventually(REVERTED, || async {
        let data = maps.get("d-runtime").await?.data.unwrap_or_default();
        ensure!(!data.contains_key("extra.json"), "the ConfigMap kept the key: {:?}", data.keys());
        Ok(())
    })
    .await
    .context("the runtime ConfigMap")
}
