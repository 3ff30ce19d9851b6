//! A child the API server refuses for good (here a ResourceQuota on
//! NetworkPolicies) is in the session's status, naming the child and the
//! server's message; once the quota lifts, the operator's retries apply it
//! without anyone touching the session.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams};
use playpen_api::v1alpha1::condition;
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{condition, create, one_network_policy_quota, session};

#[tokio::test]
async fn a_child_refused_by_a_quota_is_in_the_status_until_the_quota_lifts() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "quota").await?;
    let n = ns.name.as_str();
    let quotas = one_network_policy_quota(&client, n).await?;
    let _operator = RunningOperator::start(&client, n, None).await?;
    create(&client, n, session("q", json!({"image": "playpen/browser:test", "imagePullPolicy": "Never"}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let refused = eventually(Duration::from_secs(60), || async {
        let status = sessions.get("q").await?.status.context("no status yet")?;
        let applied = condition(&status, condition::CHILDREN_APPLIED).context("no ChildrenApplied")?;
        ensure!(applied.0 == "False" && applied.1 == "ChildRefused", "ChildrenApplied: {applied:?}");
        let ready = condition(&status, condition::READY).context("no Ready")?;
        ensure!(ready.0 == "False" && ready.1 == "ChildRefused", "Ready: {ready:?}");
        Ok(applied.2)
    })
    .await
    .context("the refusal in the status")?;
    ensure!(refused.contains("NetworkPolicy q-isolate") && refused.contains("exceeded quota"), "{refused}");

    // The quota lifts: applied on a retry, nobody touching the session.
    quotas.delete("one-policy", &DeleteParams::default()).await?;
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(120), || async {
        let status = sessions.get("q").await?.status.context("no status")?;
        let applied = condition(&status, condition::CHILDREN_APPLIED).context("no ChildrenApplied")?;
        ensure!(applied.0 == "True", "ChildrenApplied: {applied:?}");
        policies.get("q-isolate").await.context("the session's NetworkPolicy")?;
        Ok(())
    })
    .await
    .context("applied once the quota lifted")
}
