//! Which warm Pods a claim tries, in order (pure).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use playpen_api::naming::{POOL_STATE_LABEL, POOL_STATE_WARM, POOL_TEMPLATE_LABEL};

/// Whether `pod` is an unclaimed Pod of the pool with UID `pool_uid` (its
/// controller: labels alone anyone who may create Pods can forge), of
/// template `hash`, whose browser is ready, and not on its way out.
pub fn claimable(pod: &Pod, pool_uid: &str, hash: &str) -> bool {
    unclaimed(pod, pool_uid, hash) && is_ready(pod)
}

/// How many unclaimed Pods of the pool's current template are still
/// starting: what a session waiting on an empty pool can expect.
pub fn warming(pods: &[Pod], pool_uid: &str, hash: &str) -> usize {
    pods.iter().filter(|p| unclaimed(p, pool_uid, hash) && !is_ready(p)).count()
}

/// The Pod's condition Ready is True.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The pool's own (its controller), unclaimed, of template `hash`, not leaving.
fn unclaimed(pod: &Pod, pool_uid: &str, hash: &str) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
    let owned = pod.metadata.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == pool_uid);
    owned
        && label(POOL_STATE_LABEL) == Some(POOL_STATE_WARM)
        && label(POOL_TEMPLATE_LABEL) == Some(hash)
        && pod.metadata.deletion_timestamp.is_none()
}

/// The claimable Pods in the order to try them: from the node that holds
/// the most (so the pool stays spread over nodes as it shrinks), the oldest
/// first within a node (it has waited longest); a session's `salt` rotates
/// the order within a node, so a burst of claims mostly tries different
/// Pods instead of all racing for the same one.
pub fn order<'a>(pods: &'a [Pod], pool_uid: &str, hash: &str, salt: u64) -> Vec<&'a Pod> {
    let mut by_node: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in pods.iter().filter(|p| claimable(p, pool_uid, hash)) {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
        by_node.entry(node).or_default().push(pod);
    }
    let mut nodes: Vec<Vec<&Pod>> = by_node.into_values().collect();
    // Fullest node first; ties keep the node names' order.
    nodes.sort_by_key(|pods| std::cmp::Reverse(pods.len()));
    let mut out = Vec::new();
    for mut pods in nodes {
        pods.sort_by(|a, b| {
            let created = |p: &Pod| p.metadata.creation_timestamp.clone();
            created(a).cmp(&created(b)).then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        let shift = usize::try_from(salt % pods.len().max(1) as u64).unwrap_or(0);
        pods.rotate_left(shift);
        out.extend(pods);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

    const POOL_UID: &str = "pool-uid";

    fn pod(name: &str, node: &str, hash: &str, state: &str, ready: bool, age: i64) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                owner_references: Some(vec![OwnerReference {
                    controller: Some(true),
                    uid: POOL_UID.into(),
                    ..OwnerReference::default()
                }]),
                labels: Some(BTreeMap::from([
                    (POOL_STATE_LABEL.to_owned(), state.to_owned()),
                    (POOL_TEMPLATE_LABEL.to_owned(), hash.to_owned()),
                ])),
                creation_timestamp: Some(Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 - age).unwrap())),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec { node_name: Some(node.into()), ..PodSpec::default() }),
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        }
    }

    fn names(pods: Vec<&Pod>) -> Vec<&str> {
        pods.into_iter().filter_map(|p| p.metadata.name.as_deref()).collect()
    }

    #[test]
    fn only_ready_unclaimed_pods_of_the_current_template_are_tried() {
        let pods = [
            pod("ok", "n1", "abc", "warm", true, 10),
            pod("warming", "n1", "abc", "warm", false, 10),
            pod("stale", "n1", "old", "warm", true, 10),
            pod("taken", "n1", "abc", "claimed", true, 10),
        ];
        assert_eq!(names(order(&pods, POOL_UID, "abc", 0)), ["ok"]);
        let mut leaving = pod("leaving", "n1", "abc", "warm", true, 10);
        leaving.metadata.deletion_timestamp = leaving.metadata.creation_timestamp.clone();
        assert!(!claimable(&leaving, POOL_UID, "abc"));
        // Labels alone do not make a Pod the pool's: a forged one is never handed out.
        let mut forged = pod("forged", "n1", "abc", "warm", true, 10);
        forged.metadata.owner_references = None;
        assert!(!claimable(&forged, POOL_UID, "abc"));
        assert!(!claimable(&pod("other", "n1", "abc", "warm", true, 10), "another-pool", "abc"));
    }

    #[test]
    fn only_unclaimed_pods_of_the_current_template_still_starting_count_as_warming() {
        let mut leaving = pod("leaving", "n1", "abc", "warm", false, 10);
        leaving.metadata.deletion_timestamp = leaving.metadata.creation_timestamp.clone();
        let mut forged = pod("forged", "n1", "abc", "warm", false, 10);
        forged.metadata.owner_references = None;
        let pods = [
            pod("w1", "n1", "abc", "warm", false, 10),
            pod("w2", "n2", "abc", "warm", false, 1),
            pod("ready", "n1", "abc", "warm", true, 10),
            pod("stale", "n1", "old", "warm", false, 10),
            pod("taken", "n1", "abc", "claimed", false, 10),
            leaving,
            forged,
        ];
        assert_eq!(warming(&pods, POOL_UID, "abc"), 2);
        assert_eq!(warming(&pods, "another-pool", "abc"), 0);
        assert_eq!(warming(&[], POOL_UID, "abc"), 0);
    }

    #[test]
    fn the_fullest_node_gives_first_and_its_oldest_pod_leads() {
        let pods = [
            pod("a1", "a", "h", "warm", true, 5),
            pod("b1", "b", "h", "warm", true, 1),
            pod("b2", "b", "h", "warm", true, 9),
            pod("b3", "b", "h", "warm", true, 3),
        ];
        assert_eq!(names(order(&pods, POOL_UID, "h", 0)), ["b2", "b3", "b1", "a1"]);
        // Another session starts elsewhere in the node's list; every Pod is still tried.
        let mut rotated = names(order(&pods, POOL_UID, "h", 1));
        assert_eq!(rotated[..3], ["b3", "b1", "b2"]);
        rotated.sort_unstable();
        assert_eq!(rotated, ["a1", "b1", "b2", "b3"]);
    }
}
