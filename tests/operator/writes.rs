//! What a session costs the API server in writes: every request the
//! operator sends goes through a client that records it, so a write for a
//! no-op (even one the API server would not store) fails these tests.

use std::time::Duration;

use anyhow::ensure;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_operator::burst;
use playpen_operator::controller::RECONCILE_CONCURRENCY;
use playpen_tests::{ensure_crd, eventually, logged_client, RunningOperator, TestNamespace, WriteLog};
use serde_json::json;

use crate::{after_scheduler_verdict, container, create, session, set_pod_status};

const WAIT: Duration = Duration::from_secs(30);

/// Waits until `log` has taken no write for `quiet`, then returns its writes.
/// (Not [`eventually`]: it waits for quiet, with no deadline of its own.)
async fn settled(log: &WriteLog, quiet: Duration) -> Vec<String> {
    let mut last = log.count();
    loop {
        tokio::time::sleep(quiet).await;
        let now = log.count();
        if now == last {
            return log.writes();
        }
        last = now;
    }
}

/// The writes in `log` after the first `from`, for a failure message.
fn since(log: &[String], from: usize) -> Vec<&String> {
    log.iter().skip(from).collect()
}

#[tokio::test]
async fn a_session_costs_seven_writes_to_ready_and_a_resync_costs_none() -> anyhow::Result<()> {
    let (client, log) = logged_client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "writes").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let before = log.count();
    create(&client, n, session("w", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(pods.get("w-browser").await?) }).await?;
    after_scheduler_verdict(&pods, "w-browser").await;
    // A scheduler (the node tier's, tainted for the e2e suite) says
    // Unschedulable: a status change of its own, worth one write.
    let conditions = pods.get("w-browser").await?.status.and_then(|s| s.conditions).unwrap_or_default();
    let verdict = usize::from(conditions.iter().any(|c| c.type_ == "PodScheduled"));
    set_pod_status(
        &pods,
        "w-browser",
        json!({"phase": "Running", "podIP": "10.0.0.9", "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [container(true, 0, json!({"running": {}}), json!({}))]}),
    )
    .await?;
    eventually(WAIT, || async {
        let phase = sessions.get("w").await?.status.and_then(|s| s.phase);
        ensure!(phase == Some(Phase::Ready), "phase {phase:?}");
        Ok(())
    })
    .await?;
    let all = settled(&log, Duration::from_secs(2)).await;
    // The test's own writes: the session and the Pod's status.
    let operator: Vec<&String> = all
        .iter()
        .skip(before)
        .filter(|w| !w.ends_with("/browsersessions") && !w.ends_with("/pods/w-browser/status"))
        .collect();
    let events = operator.iter().filter(|w| w.contains("/events")).count();
    let statuses = operator.iter().filter(|w| w.ends_with("/status")).count();
    let children: std::collections::BTreeSet<&String> =
        operator.iter().copied().filter(|w| !w.contains("/events") && !w.ends_with("/status")).collect();
    let objects = operator.len() - events;
    println!("operator writes, create to Ready ({objects} + {events} Events): {operator:#?}");
    // Five children, each once, and the namespace's baseline policy (a
    // second NetworkPolicy create: the first session of a namespace only);
    // the status when they are made, at the scheduler's verdict (if any)
    // and at Ready: 7 without a verdict, and the baseline.
    ensure!(children.len() == 5 && objects - statuses == 6, "each child once, and the baseline: {operator:#?}");
    ensure!(events == 0, "no Event for a session that needs no attention: {operator:#?}");
    ensure!(statuses <= 2 + verdict, "{statuses} status writes (target {}): {operator:#?}", 2 + verdict);

    // The next session of the namespace: its five children and one status
    // write (no Pod status here), no baseline again.
    let second = log.count();
    create(&client, n, session("w2", json!({"image": "i"}))).await?;
    eventually(WAIT, || async {
        let named = sessions.get("w2").await?.status.and_then(|s| s.pod_name);
        ensure!(named.is_some(), "w2's status does not name its Pod yet");
        Ok(())
    })
    .await?;
    after_scheduler_verdict(&pods, "w2-browser").await;
    let all = settled(&log, Duration::from_secs(2)).await;
    let operator: Vec<&String> = all.iter().skip(second).filter(|w| !w.ends_with("/browsersessions")).collect();
    let statuses = operator.iter().filter(|w| w.ends_with("/status")).count();
    let policies = operator.iter().filter(|w| w.ends_with("/networkpolicies")).count();
    ensure!(operator.len() - statuses == 5 && policies == 1, "w2: five children, no baseline: {operator:#?}");
    ensure!(statuses <= 2, "{statuses} status writes for w2 (Pending, and the scheduler's verdict): {operator:#?}");

    // A change that asks for nothing (an annotation) is reconciled with no write.
    let quiet = log.count();
    let reconciles = op.reconciles();
    sessions
        .patch("w", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"poke": "1"}}})))
        .await?;
    eventually(WAIT, || async {
        ensure!(op.reconciles() > reconciles, "the annotation did not trigger a reconcile");
        Ok(())
    })
    .await?;
    let after_poke = settled(&log, Duration::from_secs(2)).await;
    let test_writes = 1;
    ensure!(after_poke.len() == quiet + test_writes, "a no-op reconcile wrote: {:#?}", since(&after_poke, quiet + 1));

    // A new operator process reconciles everything it lists: a full resync.
    drop(op);
    let quiet = log.count();
    let op = RunningOperator::start(&client, n, None).await?;
    eventually(WAIT, || async {
        ensure!(op.reconciles() >= 1, "the new operator has not reconciled the session");
        Ok(())
    })
    .await?;
    let after_resync = settled(&log, Duration::from_secs(2)).await;
    ensure!(after_resync.len() == quiet, "a resync wrote: {:#?}", since(&after_resync, quiet));
    Ok(())
}

/// A burst: while other sessions are in their first reconcile, the first
/// status of those already made waits for them (at most
/// `burst::MAX_DELAY`); every session still gets its status, once.
#[tokio::test]
async fn in_a_burst_the_pods_come_first_and_every_first_status_follows() -> anyhow::Result<()> {
    let n_sessions = 2 * usize::from(RECONCILE_CONCURRENCY);
    let (client, log) = logged_client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "burst").await?;
    let n = ns.name.as_str();
    // Made before the operator starts: every one waits for its first
    // reconcile at once, more than there are reconcile slots.
    futures::stream::iter(0..n_sessions)
        .map(|i| create(&client, n, session(&format!("b{i}"), json!({"image": "i"}))))
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let before = log.count();
    let _op = RunningOperator::start(&client, n, None).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(burst::MAX_DELAY + WAIT, || async {
        let listed = sessions.list(&Default::default()).await?;
        let without = listed.items.iter().filter(|s| s.status.as_ref().and_then(|s| s.pod_name.as_ref()).is_none());
        let without = without.count();
        ensure!(without == 0, "{without} of {n_sessions} sessions have no status naming their Pod yet");
        Ok(())
    })
    .await?;
    let all = settled(&log, Duration::from_secs(2)).await;
    let operator = &all[before..];
    let pods: Vec<usize> = (0..operator.len()).filter(|&i| operator[i].ends_with("/pods")).collect();
    ensure!(pods.len() == n_sessions, "{} Pod creates for {n_sessions} sessions", pods.len());
    let last_pod = pods.last().copied().unwrap_or_default();
    let statuses = operator.iter().filter(|w| w.ends_with("/status")).count();
    let early = operator[..last_pod].iter().filter(|w| w.ends_with("/status")).count();
    // Without the deferral each first reconcile writes its status with its
    // Pod: nearly all of them before the last Pod.
    ensure!(
        early < n_sessions / 4,
        "{early} of {statuses} status writes came before the last Pod create: the first statuses did not wait"
    );
    // One each, and one more for a scheduler's verdict where one runs.
    ensure!((n_sessions..=2 * n_sessions).contains(&statuses), "{statuses} status writes for {n_sessions} sessions");
    // Five children each and the namespace's baseline, each created once.
    // Under load a reconcile may run before the watch shows a child it
    // made: then the applied cache sends it again (a create the API server
    // refuses with 409, stored nothing, then perhaps the apply that the
    // compare asks for; seen on loaded CI machines). Harmless, but rare:
    // a few, never one per session.
    let objects: Vec<&String> = operator.iter().filter(|w| !w.ends_with("/status")).collect();
    let mut by_kind: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for write in &objects {
        let mut parts: Vec<&str> = write.split('/').collect();
        if !write.starts_with("POST ") {
            parts.pop();
        }
        *by_kind.entry(parts.join("/").replace(n, "NS")).or_default() += 1;
    }
    let expected = 5 * n_sessions + 1;
    for (collection, want) in [
        ("configmaps", n_sessions),
        ("secrets", n_sessions),
        ("services", n_sessions),
        ("pods", n_sessions),
        ("networkpolicies", n_sessions + 1),
    ] {
        let created: usize =
            by_kind.iter().filter(|(k, _)| k.starts_with("POST ") && k.ends_with(collection)).map(|(_, c)| *c).sum();
        ensure!(created >= want, "{created} creates of {collection} for {n_sessions} sessions: {by_kind:#?}");
    }
    let known = ["configmaps", "secrets", "services", "pods", "networkpolicies"];
    let strange: Vec<&String> = by_kind.keys().filter(|k| !known.iter().any(|c| k.ends_with(c))).collect();
    ensure!(strange.is_empty(), "writes of kinds a session does not have: {strange:?}");
    let again = objects.len().saturating_sub(expected);
    ensure!(
        objects.len() >= expected && again <= n_sessions / 8,
        "{} object writes for {n_sessions} sessions (5 each, and the baseline: {expected}), {again} sent again \
         (at most {}): {by_kind:#?}",
        objects.len(),
        n_sessions / 8
    );
    if again > 0 {
        eprintln!("writes: {again} children sent again under load: {by_kind:#?}");
    }
    Ok(())
}
