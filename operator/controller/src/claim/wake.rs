//! Which sessions a pool Pod becoming ready wakes (pure): those of its pool
//! in its namespace that have no browser yet. Without this a session waiting
//! on an empty pool (`whenEmpty: Wait`) would only notice the Pod at its
//! next periodic requeue.

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::ObjectRef;
use kube::ResourceExt;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM};
use playpen_api::BrowserSession;

use super::pick;

/// The sessions to reconcile because of `pod`: none unless it is a ready,
/// unclaimed Pod of a pool; then every session of that pool in its
/// namespace not yet placed (`status.pool` unset). Each of them lists the
/// pool's Pods and at most one wins the Pod; the others keep waiting.
pub fn sessions_to_wake<'a>(
    pod: &Pod,
    sessions: impl IntoIterator<Item = &'a BrowserSession>,
) -> Vec<ObjectRef<BrowserSession>> {
    let labels = pod.labels();
    let (Some(pool), Some(namespace)) = (labels.get(POOL_LABEL), pod.namespace()) else { return Vec::new() };
    let unclaimed = labels.get(POOL_STATE_LABEL).map(String::as_str) == Some(POOL_STATE_WARM);
    if !unclaimed || !pick::is_ready(pod) || pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    sessions
        .into_iter()
        .filter(|bs| bs.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|bs| bs.spec.pool.as_ref().is_some_and(|p| &p.name == pool))
        .filter(|bs| bs.status.as_ref().and_then(|s| s.pool.as_ref()).is_none())
        .filter(|bs| bs.metadata.deletion_timestamp.is_none())
        .map(ObjectRef::from_obj)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use playpen_api::v1alpha1::PoolClaimStatus;
    use playpen_api::BrowserSessionStatus;
    use std::collections::BTreeMap;

    fn pod(pool: &str, state: &str, ready: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.namespace = Some("ns".into());
        pod.metadata.labels = Some(BTreeMap::from([
            (POOL_LABEL.to_owned(), pool.to_owned()),
            (POOL_STATE_LABEL.to_owned(), state.to_owned()),
        ]));
        pod.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        pod
    }

    fn session(name: &str, ns: &str, pool: &str, placed: bool) -> BrowserSession {
        let spec = serde_json::from_value(serde_json::json!({"pool": {"name": pool}})).unwrap();
        let mut bs = BrowserSession::new(name, spec);
        bs.metadata.namespace = Some(ns.into());
        bs.status = placed.then(|| BrowserSessionStatus {
            pool: Some(PoolClaimStatus {
                name: pool.into(),
                claimed: true,
                time: Time(Timestamp::UNIX_EPOCH),
                template_hash: None,
                template: None,
            }),
            ..BrowserSessionStatus::default()
        });
        bs
    }

    fn names(refs: Vec<ObjectRef<BrowserSession>>) -> Vec<String> {
        refs.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn a_ready_pool_pod_wakes_the_unplaced_sessions_of_its_pool_only() {
        let sessions = [
            session("waiting", "ns", "agents", false),
            session("placed", "ns", "agents", true),
            session("other-pool", "ns", "shop", false),
            session("other-ns", "elsewhere", "agents", false),
        ];
        assert_eq!(names(sessions_to_wake(&pod("agents", "warm", true), &sessions)), ["waiting"]);
        assert!(sessions_to_wake(&pod("agents", "warm", false), &sessions).is_empty(), "still warming");
        assert!(sessions_to_wake(&pod("agents", "claimed", true), &sessions).is_empty(), "taken already");
        let mut leaving = pod("agents", "warm", true);
        leaving.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(sessions_to_wake(&leaving, &sessions).is_empty(), "on its way out");
        let mut unlabelled = pod("agents", "warm", true);
        unlabelled.metadata.labels = None;
        assert!(sessions_to_wake(&unlabelled, &sessions).is_empty());
    }
}
