//! The requests each plan sends, against a mock API server
//! ([`crate::fixtures::mock_api`]): what tests/operator/writes.rs counts
//! on a real API server, in milliseconds. Events are published in the
//! background and left out; empty caches stand for a store that holds
//! nothing yet (a miss is answered with a write or a read).

use std::sync::Arc;

use kube::runtime::controller::Action;
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use serde_json::json;

use super::plan::STALE_REQUEUE;
use super::reconcile;
use crate::context::Context;
use crate::fixtures::mock_api::MockApi;
use crate::fixtures::SessionBuilder;
use crate::runtime::metrics::Metrics;

/// A mock API server holding `bs`, and a context on it.
fn world(bs: &BrowserSession) -> (MockApi, Arc<Context>) {
    let mock = MockApi::default();
    mock.seed(bs);
    let ctx = Context::new(mock.client(), Default::default(), Arc::new(Metrics::default()), "playpen-test");
    (mock, Arc::new(ctx))
}

/// The session as the mock holds it now.
fn stored(mock: &MockApi) -> BrowserSession {
    serde_json::from_value(mock.get("ns", "browsersessions/demo").expect("the session")).expect("a session")
}

fn cold() -> BrowserSession {
    SessionBuilder::new(json!({"image": "playpen/browser:1"})).build()
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| (*l).to_owned()).collect()
}

/// The children every running session has, created by its first reconcile.
const CHILDREN: [&str; 4] = [
    "POST secrets/demo-launch",
    "POST configmaps/demo-runtime",
    "POST services/demo-view",
    "POST networkpolicies/demo-isolate",
];

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test]
async fn a_new_session_makes_its_children_its_pod_and_its_status_in_one_go() {
    let bs = cold();
    let (mock, ctx) = world(&bs);
    let action = reconcile(Arc::new(bs), ctx).await.expect("reconciled");
    let writes = mock.writes();
    // The namespace's baseline first: it isolates the Pod made beside its own policy.
    assert_eq!(
        writes.first().map(String::as_str),
        Some("POST networkpolicies/playpen-browsers-baseline"),
        "{writes:#?}"
    );
    let mut want = strings(&CHILDREN);
    want.extend(strings(&[
        "POST networkpolicies/playpen-browsers-baseline",
        "POST pods/demo-browser",
        "JSONPATCH browsersessions/demo/status",
    ]));
    assert_eq!(sorted(writes), sorted(want));
    let status = stored(&mock).status.expect("a status");
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(status.pod_name.as_deref(), Some("demo-browser"));
    assert!(mock.get("ns", "pods/demo-browser").is_some());
    assert_ne!(action, Action::await_change(), "a Pending session is looked at again");
}

#[tokio::test]
async fn a_later_reconcile_reads_the_pod_it_recorded_and_creates_none() {
    let bs = cold();
    let (mock, ctx) = world(&bs);
    reconcile(Arc::new(bs), ctx.clone()).await.expect("first");
    mock.clear_requests();
    reconcile(Arc::new(stored(&mock)), ctx).await.expect("second");
    let requests = mock.requests();
    assert!(requests.contains(&"GET pods/demo-browser".to_owned()), "{requests:#?}");
    assert!(!requests.iter().any(|r| r.starts_with("POST pods")), "a second Pod: {requests:#?}");
    assert!(!requests.iter().any(|r| r.contains("baseline")), "the baseline is ensured once: {requests:#?}");
}

#[tokio::test]
async fn a_missing_reference_applies_the_children_but_no_pod() {
    let bs = SessionBuilder::new(json!({"image": "playpen/browser:1", "authState": {"secretRef": {"name": "login"}}}))
        .build();
    let (mock, ctx) = world(&bs);
    reconcile(Arc::new(bs), ctx).await.expect("reconciled");
    let requests = mock.requests();
    assert!(requests.contains(&"GET secrets/login".to_owned()), "the reference is read: {requests:#?}");
    let writes = mock.writes();
    assert!(!writes.iter().any(|w| w.starts_with("POST pods")), "a Pod without its auth state: {writes:#?}");
    for child in CHILDREN {
        assert!(writes.contains(&child.to_owned()), "{child} missing: {writes:#?}");
    }
    let status = stored(&mock).status.expect("a status");
    assert_eq!(status.phase, Some(Phase::Failed), "a missing Secret is the user's to fix");
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert!(ready.message.contains("login"), "the status names the missing Secret: {ready:?}");
    assert_eq!(status.pod_name, None);
}

#[tokio::test]
async fn a_session_whose_pool_is_gone_gets_a_status_and_no_children() {
    let bs = SessionBuilder::new(json!({"pool": {"name": "gone"}})).build();
    let (mock, ctx) = world(&bs);
    let result = reconcile(Arc::new(bs), ctx).await;
    let writes = mock.writes();
    assert!(
        writes.iter().all(|w| w.contains("baseline") || w == "JSONPATCH browsersessions/demo/status"),
        "only the baseline and the status: {writes:#?} ({result:?})"
    );
    let status = stored(&mock).status.expect("a status");
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert_eq!(ready.reason, "PoolNotFound", "{ready:?}");
}

#[tokio::test]
async fn a_stale_or_deleted_session_sends_nothing() {
    let mut bs = cold();
    bs.metadata.resource_version = Some("5".into());
    let (mock, ctx) = world(&bs);
    ctx.own.wrote(&crate::own_writes::Key::status_of(&bs), Some("100"));
    let action = reconcile(Arc::new(bs.clone()), ctx.clone()).await.expect("stale");
    assert_eq!(action, Action::requeue(STALE_REQUEUE));
    let mut deleting = bs;
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
    let action = reconcile(Arc::new(deleting), ctx).await.expect("deleting");
    assert_eq!(action, Action::await_change());
    assert_eq!(mock.requests(), Vec::<String>::new());
}

/// A pool in `ns` with no browser, whose sessions `when_empty` (`Wait`, `ColdStart`).
fn empty_pool(when_empty: &str) -> serde_json::Value {
    json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
        "metadata": {"name": "p", "namespace": "ns", "uid": "pool-uid"},
        "spec": {"minReady": 1, "whenEmpty": when_empty,
            "template": {"image": "playpen/browser:pool", "launchConfig": {"executablePath": "/usr/bin/chromium"}}}})
}

#[tokio::test]
async fn a_session_waiting_on_an_empty_pool_writes_only_its_status() {
    let bs = SessionBuilder::new(json!({"pool": {"name": "p"}})).build();
    let (mock, ctx) = world(&bs);
    mock.seed(&empty_pool("Wait"));
    reconcile(Arc::new(bs), ctx).await.expect("reconciled");
    let writes = mock.writes();
    assert_eq!(
        sorted(writes.clone()),
        strings(&["JSONPATCH browsersessions/demo/status", "POST networkpolicies/playpen-browsers-baseline"]),
        "{writes:#?}"
    );
    let status = stored(&mock).status.expect("a status");
    assert_eq!(status.phase, Some(Phase::Pending));
    let claimed = status.conditions.iter().find(|c| c.type_ == "PoolClaimed").expect("PoolClaimed");
    assert_eq!(claimed.reason, "PoolWaiting", "{claimed:?}");
}

#[tokio::test]
async fn an_empty_pool_starts_its_session_cold_from_the_template() {
    let bs = SessionBuilder::new(json!({"pool": {"name": "p"}})).build();
    let (mock, ctx) = world(&bs);
    mock.seed(&empty_pool("ColdStart"));
    reconcile(Arc::new(bs), ctx).await.expect("reconciled");
    let writes = mock.writes();
    for child in CHILDREN.iter().chain(&["POST pods/demo-browser", "JSONPATCH browsersessions/demo/status"]) {
        assert!(writes.contains(&(*child).to_owned()), "{child} missing: {writes:#?}");
    }
    let pod = mock.get("ns", "pods/demo-browser").expect("the Pod");
    let image = pod.pointer("/spec/containers/0/image").and_then(|v| v.as_str());
    assert_eq!(image, Some("playpen/browser:pool"), "the pool's template, not a default");
    let status = stored(&mock).status.expect("a status");
    let claimed = status.conditions.iter().find(|c| c.type_ == "PoolClaimed").expect("PoolClaimed");
    assert_eq!(claimed.reason, "PoolEmpty", "{claimed:?}");
}
