//! Cluster-wide egress settings (chart values `network.*`), read by the
//! NetworkPolicy builder and the host-rule builder alike.

use std::collections::BTreeMap;

use playpen_api::cidr::{Cidr, SPECIAL_RANGES};

/// Where the cluster's DNS resolver runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsPeer {
    /// Namespace of the resolver Pods.
    pub namespace: String,
    /// Labels of the resolver Pods.
    pub pod_labels: BTreeMap<String, String>,
    /// Resolvers outside the Pod network (node-local caches, the node's resolver).
    pub cidrs: Vec<Cidr>,
}

impl Default for DnsPeer {
    fn default() -> Self {
        Self {
            namespace: "kube-system".into(),
            pod_labels: BTreeMap::from([("k8s-app".to_owned(), "kube-dns".to_owned())]),
            cidrs: Vec::new(),
        }
    }
}

/// Cluster-wide egress settings (chart values `network.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressDefaults {
    /// The cluster's Pod and Service ranges, denied like the special ranges.
    pub cluster_cidrs: Vec<Cidr>,
    /// More ranges to deny to every session.
    pub deny_cidrs: Vec<Cidr>,
    /// Host rules every session narrowed by host rules may reach (chart
    /// `network.allowHosts`; see [`super::egress_hosts::effective_allow_hosts`]).
    pub allow_hosts: Vec<String>,
    /// Host rules no session reaches (chart `network.denyHosts`).
    pub deny_hosts: Vec<String>,
    /// The cluster's resolver.
    pub dns: DnsPeer,
    /// The operator's own Pods, which read the egress report of sessions
    /// with host rules (`None`: out of the cluster, nothing to admit).
    pub report_reader: Option<PodPeer>,
}

/// Pods by namespace and labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPeer {
    /// Their namespace.
    pub namespace: String,
    /// Their labels.
    pub pod_labels: BTreeMap<String, String>,
}

impl EgressDefaults {
    /// Every denied range of one family, minus those another one covers, sorted.
    pub fn denied(&self, v4: bool) -> Vec<Cidr> {
        let special = SPECIAL_RANGES.iter().map(|c| c.parse::<Cidr>().expect("constant CIDR"));
        let all: Vec<Cidr> = special
            .chain(self.cluster_cidrs.iter().copied())
            .chain(self.deny_cidrs.iter().copied())
            .filter(|c| c.is_ipv4() == v4)
            .collect();
        let mut kept: Vec<Cidr> =
            all.iter().copied().filter(|c| !all.iter().any(|o| o != c && o.contains(*c))).collect();
        kept.sort();
        kept.dedup();
        kept
    }
}
