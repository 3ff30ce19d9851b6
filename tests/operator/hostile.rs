//! One tenant's bad input never harms another: a panicking reconcile is
//! contained to its object, and what a browser Pod writes (any length, any
//! characters) reaches its own status without stopping the operator.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::ResourceExt;
use playpen_api::runtime_config::REPORT_MESSAGE_MAX_BYTES;
use playpen_api::BrowserSession;
use playpen_operator::controller::{self, Context};
use playpen_operator::runtime::metrics::Metrics;
use playpen_tests::{client, ensure_crd, eventually, settings, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{after_scheduler_verdict, container, create, events_for, session, set_pod_status};

const WAIT: Duration = Duration::from_secs(30);
/// Sessions carrying this label make the test's reconciler panic.
const PANIC_LABEL: &str = "playpen.dev/test-inject-panic";

async fn has_status(sessions: &Api<BrowserSession>, name: &str) -> anyhow::Result<()> {
    ensure!(sessions.get(name).await?.status.is_some(), "{name} not reconciled yet");
    Ok(())
}

#[tokio::test]
async fn a_panicking_reconcile_fails_only_its_object_and_the_operator_keeps_serving() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "panic").await?;
    let n = ns.name.as_str();
    let metrics = Arc::new(Metrics::default());
    let ctx = Arc::new(Context::new(client.clone(), settings(), metrics.clone(), "playpen-operator"));
    let namespaces = vec![n.to_owned()];
    // The production controller loop, with the real reconcile behind a fault injector.
    let operator = tokio::spawn(async move {
        controller::run_with(ctx, &namespaces, std::future::pending(), |bs: Arc<BrowserSession>, ctx| async move {
            if bs.labels().contains_key(PANIC_LABEL) {
                panic!("injected fault while reconciling {}", bs.name_any());
            }
            controller::reconcile(bs, ctx).await
        })
        .await;
    });
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    create(&client, n, session("before", json!({"image": "i"}))).await?;
    eventually(WAIT, || has_status(&sessions, "before")).await?;

    let mut boom = session("boom", json!({"image": "i"}));
    boom["metadata"]["labels"] = json!({PANIC_LABEL: "true"});
    create(&client, n, boom).await?;
    // Retried with backoff (1 s, 2 s, ...), each attempt caught.
    eventually(WAIT, || async {
        ensure!(metrics.panics.get() >= 2, "panics caught so far: {}", metrics.panics.get());
        Ok(())
    })
    .await?;
    eventually(WAIT, || async {
        let events = events_for(&client, n, "boom").await?;
        ensure!(
            events.iter().any(|(r, m)| r == "ReconcileFailed" && m.contains("injected fault while reconciling boom")),
            "no ReconcileFailed event with the panic message: {events:?}"
        );
        Ok(())
    })
    .await?;
    ensure!(!operator.is_finished(), "the controller loop ended after a panic");
    assert!(metrics.render().contains("playpen_reconcile_errors_total{error=\"panic\"}"), "{}", metrics.render());

    // Other sessions, old and new, are still served.
    create(&client, n, session("after", json!({"image": "i"}))).await?;
    eventually(WAIT, || has_status(&sessions, "after")).await?;
    ensure!(sessions.get("boom").await?.status.is_none(), "the panicking object cannot have a status");
    operator.abort();
    Ok(())
}

#[tokio::test]
async fn a_non_ascii_runtime_report_reaches_the_condition_and_the_operator_keeps_running() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "utf8").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    // The reported crash: a 1024-byte cut of this path lands inside an "é".
    let path = format!("/x{}", "é".repeat(600));
    create(&client, n, session("tenant-a", json!({"image": "i", "launchConfig": {"executablePath": path}}))).await?;
    create(&client, n, session("tenant-b", json!({"image": "i"}))).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(WAIT, || async { Ok(pods.get("tenant-a-browser").await?) }).await?;
    after_scheduler_verdict(&pods, "tenant-a-browser").await;

    // What the runtime writes when the executable is missing.
    let message = format!(
        "the launch config's executablePath {path} does not exist or is not executable: install the browser in \
         the image or fix executablePath"
    );
    let crash = |report: String| {
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [container(false, 1, json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                json!({"terminated": {"exitCode": 1, "message": report}}))]})
    };
    let report = json!({"reason": "BrowserRevisionAbsent", "message": message}).to_string();
    set_pod_status(&pods, "tenant-a-browser", crash(report)).await?;
    let browser_ready = |want_reason: &'static str| {
        let sessions = sessions.clone();
        async move {
            eventually(WAIT, || async {
                let status = sessions.get("tenant-a").await?.status.context("no status")?;
                let c = status.conditions.iter().find(|c| c.type_ == "BrowserReady").context("BrowserReady")?;
                ensure!(c.reason == want_reason, "BrowserReady reason {}: {}", c.reason, c.message);
                Ok(c.message.clone())
            })
            .await
        }
    };
    let shown = browser_ready("BrowserRevisionAbsent").await?;
    assert_eq!(shown, message, "the whole report (under the kubelet's 4096-byte cap) is shown, nothing lost");

    // A hostile report: an unusable reason and far more than the kubelet keeps.
    let hostile = json!({"reason": "not a reason\n", "message": "é".repeat(5000)}).to_string();
    set_pod_status(&pods, "tenant-a-browser", crash(hostile)).await?;
    let shown = browser_ready("BrowserContainerFailed").await?;
    assert!(shown.len() <= REPORT_MESSAGE_MAX_BYTES && shown.ends_with('…'), "{} bytes", shown.len());

    // The operator never stopped: no panic, and every tenant is still served.
    eventually(WAIT, || has_status(&sessions, "tenant-b")).await?;
    create(&client, n, session("tenant-c", json!({"image": "i"}))).await?;
    eventually(WAIT, || has_status(&sessions, "tenant-c")).await?;
    assert_eq!(op.handles.metrics.panics.get(), 0);
    Ok(())
}
