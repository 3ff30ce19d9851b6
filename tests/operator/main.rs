//! The operator against a real kube-apiserver, etcd and
//! kube-controller-manager (no kubelet: Pod status is written by the tests).

mod admission;
mod baseline;
mod churn;
mod claims;
mod drift;
mod hostile;
mod leader;
mod live;
mod pool;
mod properties;
mod reconcile;
mod recovery;
mod refusals;
mod snapshot;
mod suspend;
mod writes;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use playpen_api::BrowserSession;
use serde_json::Value;

/// A quick Lease for replica `identity` in `ns` (4 s terms, 0.5 s retries).
pub fn lease(ns: &str, identity: &str) -> playpen_operator::runtime::leader::LeaseConfig {
    playpen_operator::runtime::leader::LeaseConfig {
        name: "playpen-operator".into(),
        namespace: ns.into(),
        identity: identity.into(),
        lease_duration: std::time::Duration::from_secs(4),
        retry_period: std::time::Duration::from_millis(500),
    }
}

/// A condition of `s` as (status, reason, message).
pub fn condition(s: &playpen_api::BrowserSessionStatus, t: &str) -> Option<(String, String, String)> {
    s.conditions.iter().find(|c| c.type_ == t).map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

pub use playpen_tests::one_network_policy_quota;

/// Creates a BrowserSession from JSON in `ns`.
pub async fn create(client: &Client, ns: &str, body: Value) -> Result<BrowserSession, kube::Error> {
    let bs: BrowserSession = serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &bs).await
}

/// A session object with `name` and `spec`.
pub use playpen_tests::fixtures::session_json as session;

/// Writes Pod `name`'s status as a kubelet would (there is none in this tier).
pub async fn set_pod_status(pods: &Api<Pod>, name: &str, status: Value) -> anyhow::Result<()> {
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(serde_json::json!({"status": status}))).await?;
    Ok(())
}

/// The browser container's status as a kubelet reports it.
pub fn container(ready: bool, restarts: i32, state: Value, last: Value) -> Value {
    serde_json::json!({"name": "browser", "ready": ready, "restartCount": restarts, "image": "i", "imageID": "",
        "state": state, "lastState": last})
}

/// Waits (up to 10 s) for the scheduler's verdict on Pod `name`. The node is
/// tainted for the e2e suite only, so the real kube-scheduler marks this
/// suite's Pods unschedulable once; a status written before that would have
/// its PodScheduled overwritten. Without a scheduler (control plane only)
/// nothing comes, and that is fine.
pub async fn after_scheduler_verdict(pods: &Api<Pod>, name: &str) {
    let _ = playpen_tests::eventually(std::time::Duration::from_secs(10), || async {
        let conditions = pods.get(name).await?.status.and_then(|s| s.conditions).unwrap_or_default();
        anyhow::ensure!(conditions.iter().any(|c| c.type_ == "PodScheduled"), "no scheduling verdict yet");
        Ok(())
    })
    .await;
}

/// (reason, message) of every Event about object `name` in `ns`, once one
/// of them has `reason`: Events are published beside or after the writes a
/// test waits for, so an Event may arrive a moment after them.
pub async fn events_once(client: &Client, ns: &str, name: &str, reason: &str) -> anyhow::Result<Vec<(String, String)>> {
    playpen_tests::eventually(std::time::Duration::from_secs(10), || async {
        let events = events_for(client, ns, name).await?;
        anyhow::ensure!(events.iter().any(|(r, _)| r == reason), "no {reason} Event about {name} yet: {events:?}");
        Ok(events)
    })
    .await
}

/// (reason, message) of every Event about object `name` in `ns`.
pub async fn events_for(client: &Client, ns: &str, name: &str) -> anyhow::Result<Vec<(String, String)>> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns);
    let list = events.list(&kube::api::ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect())
}
