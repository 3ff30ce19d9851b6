//! Faults the operator recovers from, on the real API server (the tests
//! write the Pod status a kubelet would): an evicted or Failed browser Pod
//! is replaced with backoff until its budget is spent; a container that
//! crash-loops past its budget is stopped; an ended session is left alone.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_operator::recovery::RecoveryBudget;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{after_scheduler_verdict, container, create, events_for, session, set_pod_status};

const WAIT: Duration = Duration::from_secs(30);

fn budget() -> RecoveryBudget {
    RecoveryBudget {
        pod_replacements: 2,
        container_restarts: 3,
        backoff: Duration::from_secs(1),
        max_backoff: Duration::from_secs(2),
    }
}

async fn uid(pods: &Api<Pod>, name: &str) -> anyhow::Result<String> {
    pods.get(name).await?.metadata.uid.context("uid")
}

/// Waits for a Pod `name` whose uid is not `old`; returns its uid.
async fn replaced(pods: &Api<Pod>, name: &str, old: &str) -> anyhow::Result<String> {
    eventually(WAIT, || async {
        let new = uid(pods, name).await?;
        ensure!(new != old, "still the old Pod");
        Ok(new)
    })
    .await
}

async fn evict(pods: &Api<Pod>, name: &str) -> anyhow::Result<()> {
    after_scheduler_verdict(pods, name).await;
    let status = json!({"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: ephemeral-storage."});
    set_pod_status(pods, name, status).await
}

#[tokio::test]
async fn an_evicted_pod_is_replaced_until_the_budget_is_spent() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "evict").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start_with_recovery(&client, &[n], None, budget()).await?;
    create(&client, n, session("demo", json!({"image": "i"}))).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let mut current = eventually(WAIT, || uid(&pods, "demo-browser")).await?;
    for round in 1..=2 {
        evict(&pods, "demo-browser").await?;
        current = replaced(&pods, "demo-browser", &current).await?;
        let status = eventually(WAIT, || async {
            let s = sessions.get("demo").await?.status.context("status")?;
            let r = s.pod_replacements.clone().context("no podReplacements")?;
            ensure!(r.count == round, "count {} want {round}", r.count);
            Ok(r)
        })
        .await?;
        assert_eq!((status.last_reason.as_str(), status.gave_up), ("Evicted", false));
    }
    let events = events_for(&client, n, "demo").await?;
    let replacements = events.iter().filter(|(r, m)| r == "BrowserPodReplaced" && m.contains("Evicted")).count();
    assert!(replacements >= 1, "an Event says why the Pod was replaced: {events:?}");

    // The third failure is past the budget: Failed for good, with the reason.
    evict(&pods, "demo-browser").await?;
    eventually(WAIT, || async {
        let s = sessions.get("demo").await?.status.context("status")?;
        let browser = s.conditions.iter().find(|c| c.type_ == "BrowserReady").context("BrowserReady")?;
        ensure!(s.phase == Some(Phase::Failed), "phase {:?}", s.phase);
        ensure!(browser.reason == "RestartBudgetExhausted", "{}: {}", browser.reason, browser.message);
        ensure!(
            browser.message.contains("Evicted") && browser.message.contains("2 replacement(s)"),
            "{}",
            browser.message
        );
        Ok(())
    })
    .await?;
    // A deliberate pause, to prove nothing happens: time for a wrongful Pod.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(uid(&pods, "demo-browser").await?, current, "no Pod is created past the budget");
    Ok(())
}

#[tokio::test]
async fn a_crash_loop_past_its_budget_is_stopped_and_an_ended_session_is_left_alone() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "crash").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start_with_recovery(&client, &[n], None, budget()).await?;
    create(&client, n, session("loop", json!({"image": "i"}))).await?;
    create(&client, n, session("ended", json!({"image": "i"}))).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(WAIT, || uid(&pods, "loop-browser")).await?;
    let ended = eventually(WAIT, || uid(&pods, "ended-browser")).await?;
    after_scheduler_verdict(&pods, "loop-browser").await;
    after_scheduler_verdict(&pods, "ended-browser").await;

    let report = r#"{"reason":"NoUsableSandbox","message":"No usable sandbox!"}"#;
    let looping = json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [container(false, 3, json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            json!({"terminated": {"exitCode": 1, "message": report}}))]});
    set_pod_status(&pods, "loop-browser", looping).await?;
    eventually(WAIT, || async {
        ensure!(pods.get_opt("loop-browser").await?.is_none(), "the crash-looping Pod still runs");
        let s = sessions.get("loop").await?.status.context("status")?;
        let browser = s.conditions.iter().find(|c| c.type_ == "BrowserReady").context("BrowserReady")?;
        ensure!(
            s.phase == Some(Phase::Failed) && browser.reason == "RestartBudgetExhausted",
            "{:?} {}",
            s.phase,
            browser.reason
        );
        ensure!(s.pod_replacements.is_some_and(|r| r.gave_up), "gaveUp not recorded");
        Ok(())
    })
    .await?;
    // A deliberate pause, to prove nothing happens: time for a wrongful Pod.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(pods.get_opt("loop-browser").await?.is_none(), "a stopped session's Pod is not created again");
    let events = events_for(&client, n, "loop").await?;
    assert!(events.iter().any(|(r, _)| r == "RestartBudgetExhausted"), "{events:?}");

    set_pod_status(&pods, "ended-browser", json!({"phase": "Succeeded"})).await?;
    eventually(WAIT, || async {
        let s = sessions.get("ended").await?.status.context("status")?;
        ensure!(s.phase == Some(Phase::Completed), "phase {:?}", s.phase);
        Ok(())
    })
    .await?;
    // A deliberate pause, to prove nothing happens: time for a wrongful Pod.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(uid(&pods, "ended-browser").await?, ended, "an ended session's Pod is not replaced");
    Ok(())
}
