//! Two operator instances: exactly one (the Lease holder) reconciles, and
//! the other takes over when it goes away.

use std::time::Duration;

use anyhow::ensure;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use playpen_api::BrowserSession;
use playpen_operator::leader::LeaseConfig;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{create, session};

fn lease(ns: &str, identity: &str) -> LeaseConfig {
    LeaseConfig {
        name: "playpen-operator".into(),
        namespace: ns.into(),
        identity: identity.into(),
        lease_duration: Duration::from_secs(4),
        retry_period: Duration::from_millis(500),
    }
}

#[tokio::test]
async fn only_the_lease_holder_reconciles() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "lead").await?;
    let n = ns.name.as_str();
    let a = RunningOperator::start(&client, n, Some(lease(n, "replica-a"))).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(20), || async {
        let l = leases.get("playpen-operator").await?;
        ensure!(l.spec.and_then(|s| s.holder_identity).as_deref() == Some("replica-a"), "not held by a yet");
        Ok(())
    })
    .await?;
    let b = RunningOperator::start(&client, n, Some(lease(n, "replica-b"))).await?;
    for i in 0..3 {
        create(&client, n, session(&format!("s{i}"), json!({"image": "i"}))).await?;
    }
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(30), || async {
        for i in 0..3 {
            ensure!(sessions.get(&format!("s{i}")).await?.status.is_some(), "s{i} not reconciled");
        }
        Ok(())
    })
    .await?;
    assert!(a.reconciles() >= 3, "leader reconciled {}", a.reconciles());
    assert_eq!(b.reconciles(), 0, "the standby must not reconcile");
    assert_eq!(b.handles.metrics.leader.get(), 0);

    // The leader goes away; the standby takes the Lease once it expires.
    a.stop();
    eventually(Duration::from_secs(30), || async {
        let spec = leases.get("playpen-operator").await?.spec;
        let holder = spec.as_ref().and_then(|s| s.holder_identity.as_deref());
        ensure!(holder == Some("replica-b"), "b has not taken over: {spec:?}");
        Ok(())
    })
    .await?;
    sessions.patch("s0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"idleTimeoutSeconds": 5}}))).await?;
    eventually(Duration::from_secs(30), || async {
        ensure!(b.reconciles() > 0, "b never reconciled");
        Ok(())
    })
    .await?;
    Ok(())
}
