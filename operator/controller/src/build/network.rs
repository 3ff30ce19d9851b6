//! The viewer Service and the NetworkPolicy that keeps in-cluster traffic out.
//!
//! The runtime binds the pinned port on 127.0.0.1 only, so the Service is
//! useful solely as a `kubectl port-forward svc/<name>-view` target: the
//! API server authorises the tunnel (RBAC on `pods/portforward`), the kubelet
//! connects to loopback inside the Pod. It is therefore headless (type
//! ClusterIP, `clusterIP: None`): no virtual IP is taken from the cluster's
//! range and no kube-proxy rules are written for a port nothing in the
//! cluster may reach (measured: allocating 1,000 virtual IPs at once stalled
//! the API server's allocator). The NetworkPolicy denies all ingress so
//! nothing else in the cluster reaches the Pod.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use playpen_api::BrowserSession;

use super::labels::{child_meta, pod_selector};
use super::Identity;

/// Port name of the viewer on the container and the Service.
pub const VIEWER_PORT_NAME: &str = "viewer";

/// `<name>-view`, or `None` when the viewer is disabled.
pub fn viewer_service(bs: &BrowserSession, id: &Identity) -> Option<Service> {
    let viewer = &bs.spec.viewer;
    viewer.enabled.then(|| Service {
        metadata: child_meta(id, &id.names.viewer_service, "viewer"),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: Some("None".into()),
            selector: Some(pod_selector(&id.name)),
            ports: Some(vec![ServicePort {
                name: Some(VIEWER_PORT_NAME.into()),
                protocol: Some("TCP".into()),
                port: viewer.port,
                target_port: Some(IntOrString::Int(viewer.port)),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

/// Denies all ingress to the session's Pod.
pub fn network_policy(id: &Identity) -> NetworkPolicy {
    NetworkPolicy {
        metadata: child_meta(id, &id.names.network_policy, "network-policy"),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(pod_selector(&id.name)),
                ..LabelSelector::default()
            }),
            // No ingress rule at all (not an empty list, which the API
            // server drops, making every apply a change and a watch event).
            policy_types: Some(vec!["Ingress".into()]),
            ingress: None,
            ..NetworkPolicySpec::default()
        }),
    }
}
