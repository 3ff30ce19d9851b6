//! The NetworkPolicy that admits the operator to a snapshot's source
//! runtime while the snapshot is taken (pure). NetworkPolicies add up: the
//! session's own policy admits the operator only while it reads something
//! of its own (`crate::children::operator_reads`), and this one adds the
//! readiness port for the take, then goes.

use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use playpen_api::naming::{SnapshotNames, SNAPSHOT_LABEL};

use crate::children::{managed_labels, operator_ingress, pod_selector, EgressDefaults};

/// `app.kubernetes.io/component` of a snapshot's read policy.
pub const COMPONENT_SNAPSHOT_READ: &str = "snapshot-read";

/// The policy for snapshot `name` (owned by `owner`) of `session`'s Pod;
/// `None` when the operator runs outside the cluster (no policy applies to it).
pub fn read_policy(
    name: &str,
    namespace: &str,
    owner: OwnerReference,
    session: &str,
    defaults: &EgressDefaults,
) -> Option<NetworkPolicy> {
    let rule = operator_ingress(defaults)?;
    let mut labels = managed_labels(COMPONENT_SNAPSHOT_READ);
    labels.insert(SNAPSHOT_LABEL.to_owned(), name.to_owned());
    Some(NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(SnapshotNames::for_snapshot(name).read_policy),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector { match_labels: Some(pod_selector(session)), ..LabelSelector::default() }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![rule]),
            egress: None,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::children::PodPeer;
    use playpen_api::layout::READINESS_PORT;
    use std::collections::BTreeMap;

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "playpen.dev/v1alpha1".into(),
            kind: "BrowserSnapshot".into(),
            name: "snap".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    #[test]
    fn the_policy_admits_only_the_operator_to_the_readiness_port_of_the_source() {
        let outside = EgressDefaults::default();
        assert!(read_policy("snap", "team-a", owner(), "s", &outside).is_none(), "an operator outside needs none");
        let reader = PodPeer {
            namespace: "playpen-system".into(),
            pod_labels: BTreeMap::from([("app.kubernetes.io/name".into(), "playpen-operator".into())]),
        };
        let inside = EgressDefaults { report_reader: Some(reader), ..EgressDefaults::default() };
        let policy = read_policy("snap", "team-a", owner(), "s", &inside).expect("a policy");
        assert_eq!(policy.metadata.name.as_deref(), Some("snap-read"));
        assert_eq!(policy.metadata.owner_references.as_deref(), Some(&[owner()][..]));
        let spec = policy.spec.expect("spec");
        assert_eq!(spec.pod_selector.and_then(|s| s.match_labels), Some(pod_selector("s")));
        assert_eq!(spec.policy_types.as_deref(), Some(&["Ingress".to_owned()][..]), "egress stays the session's");
        let rules = spec.ingress.expect("ingress");
        assert_eq!(rules.len(), 1);
        let ports = rules[0].ports.as_ref().expect("ports");
        assert_eq!(ports.len(), 1);
        assert_eq!(
            ports[0].port,
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i32::from(READINESS_PORT)))
        );
        let from = rules[0].from.as_ref().expect("from");
        assert_eq!(from.len(), 1);
        assert!(from[0].namespace_selector.is_some() && from[0].pod_selector.is_some(), "the operator's Pods only");
    }
}
