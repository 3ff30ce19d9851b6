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
//! nothing else in the cluster reaches the Pod (but the operator's Pods to
//! the readiness port, for the egress report of a session with host
//! rules), and limits egress to what `spec.network.egress` allows: a page
//! in the browser reaches whatever the browser reaches.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
pub use playpen_api::cidr::{Cidr, CidrError, SPECIAL_RANGES};

pub use super::egress_defaults::{DnsPeer, EgressDefaults, PodPeer};
use playpen_api::layout::READINESS_PORT;
use playpen_api::naming::MANAGER;
use playpen_api::v1alpha1::{Egress, EgressMode, EgressPeer};
use playpen_api::{BrowserSession, BrowserSessionSpec};

use super::labels::{child_meta, managed_labels, pod_selector, COMPONENT_BROWSER, MANAGED_BY_LABEL};
use super::Identity;

/// Port name of the viewer on the container and the Service.
pub const VIEWER_PORT_NAME: &str = "viewer";
/// Port name of the CDP endpoint on the container and the Service.
pub const CDP_PORT_NAME: &str = "cdp";

/// The enabled pinned ports (name, port): the viewer's and the CDP endpoint's.
/// Both are bound on 127.0.0.1 in the Pod; they are declared on the container
/// and the Service so `kubectl port-forward svc/<name>-view` finds them.
pub fn pinned_ports(spec: &BrowserSessionSpec) -> Vec<(&'static str, i32)> {
    let viewer = spec.browser.viewer.enabled.then_some((VIEWER_PORT_NAME, spec.browser.viewer.port));
    let cdp = spec.browser.cdp.enabled.then_some((CDP_PORT_NAME, spec.browser.cdp.port));
    viewer.into_iter().chain(cdp).collect()
}

/// `<name>-view`, carrying every pinned port; `None` when none is enabled.
pub fn viewer_service(bs: &BrowserSession, id: &Identity) -> Option<Service> {
    let ports = pinned_ports(&bs.spec);
    (!ports.is_empty()).then(|| Service {
        metadata: child_meta(id, &id.names.viewer_service, "viewer"),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: Some("None".into()),
            selector: Some(pod_selector(&id.name)),
            ports: Some(
                ports
                    .into_iter()
                    .map(|(name, port)| ServicePort {
                        name: Some(name.into()),
                        protocol: Some("TCP".into()),
                        port,
                        target_port: Some(IntOrString::Int(port)),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

/// The label every namespace carries with its own name (Kubernetes ≥ 1.22).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The egress rules of `egress`; `None` denies all egress.
pub fn egress_rules(
    egress: &Egress,
    defaults: &EgressDefaults,
) -> Result<Option<Vec<NetworkPolicyEgressRule>>, CidrError> {
    let mut rules = Vec::new();
    if egress.mode == EgressMode::DenyAll {
        return Ok(None);
    }
    rules.push(dns_rule(&defaults.dns));
    // The hosts of `allowHosts` live at public addresses no CIDR list can
    // name: with them the Pod may reach the internet minus the denied
    // ranges, and the runtime's proxy narrows the browser to those hosts.
    let proxied_hosts = !super::egress_hosts::effective_allow_hosts(egress, defaults).is_empty();
    // With host rules the browser's traffic leaves through the proxy, which
    // carries TCP only: the internet is opened for TCP alone, so UDP a
    // browser should not send (WebRTC, QUIC, a compromised process) meets
    // the NetworkPolicy too. DNS has its own rule.
    let internet_ports = super::egress_hosts::egress_hosts_config(egress, defaults)
        .map(|_| vec![NetworkPolicyPort { protocol: Some("TCP".into()), port: None, end_port: None }]);
    if egress.mode == EgressMode::Internet || proxied_hosts {
        for v4 in [true, false] {
            let except = defaults.denied(v4);
            let everything = Cidr::everything(v4);
            // A deny list that covers the whole family leaves nothing to allow.
            if except.contains(&everything) {
                continue;
            }
            rules.push(NetworkPolicyEgressRule {
                to: Some(vec![ip_block(everything, &except)]),
                ports: internet_ports.clone(),
            });
        }
    }
    let mut to: Vec<NetworkPolicyPeer> = Vec::new();
    for text in &egress.allow_cidrs {
        to.push(ip_block(text.parse()?, &[]));
    }
    to.extend(egress.allow_peers.iter().map(peer));
    if !to.is_empty() {
        rules.push(NetworkPolicyEgressRule { to: Some(to), ports: None });
    }
    Ok(Some(rules))
}

fn ip_block(cidr: Cidr, except: &[Cidr]) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.to_string(),
            except: (!except.is_empty()).then(|| except.iter().map(Cidr::to_string).collect()),
        }),
        ..NetworkPolicyPeer::default()
    }
}

fn selector(labels: &BTreeMap<String, String>) -> LabelSelector {
    LabelSelector { match_labels: (!labels.is_empty()).then(|| labels.clone()), ..LabelSelector::default() }
}

fn namespace_selector(namespace: &str) -> LabelSelector {
    selector(&BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned())]))
}

/// Without a namespace the peer is in the session's own namespace, which a
/// bare podSelector means.
fn peer(p: &EgressPeer) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: p.namespace.as_deref().map(namespace_selector),
        pod_selector: Some(selector(&p.pod_labels)),
        ..NetworkPolicyPeer::default()
    }
}

fn dns_rule(dns: &DnsPeer) -> NetworkPolicyEgressRule {
    let mut to = vec![NetworkPolicyPeer {
        namespace_selector: Some(namespace_selector(&dns.namespace)),
        pod_selector: Some(selector(&dns.pod_labels)),
        ..NetworkPolicyPeer::default()
    }];
    to.extend(dns.cidrs.iter().map(|c| ip_block(*c, &[])));
    let port = |protocol: &str| NetworkPolicyPort {
        protocol: Some(protocol.into()),
        port: Some(IntOrString::Int(53)),
        end_port: None,
    };
    NetworkPolicyEgressRule { to: Some(to), ports: Some(vec![port("UDP"), port("TCP")]) }
}

/// What the browser may reach, in one line for the EgressPolicy condition.
pub fn egress_summary(egress: &Egress, operator_reads: bool, defaults: &EgressDefaults) -> String {
    let ingress = match &defaults.report_reader {
        Some(reader) if report_reader_rule(egress, operator_reads, defaults).is_some() => {
            format!("ingress only from the operator (namespace {}) to port {READINESS_PORT}", reader.namespace)
        }
        _ => "ingress denied".to_owned(),
    };
    if egress.mode == EgressMode::DenyAll {
        return format!("no egress at all; {ingress}");
    }
    let dns = &defaults.dns;
    let labels: Vec<String> = dns.pod_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut parts = vec![format!("DNS (port 53) to Pods {} in namespace {}", labels.join(","), dns.namespace)];
    if !dns.cidrs.is_empty() {
        parts.push(format!("DNS to {}", join(&dns.cidrs)));
    }
    let proxied_hosts = !super::egress_hosts::effective_allow_hosts(egress, defaults).is_empty();
    if egress.mode == EgressMode::Internet || proxied_hosts {
        let denied: Vec<Cidr> = defaults.denied(true).into_iter().chain(defaults.denied(false)).collect();
        let tcp = if super::egress_hosts::egress_hosts_config(egress, defaults).is_some() { " (TCP only)" } else { "" };
        parts.push(format!("the internet{tcp} except {}", join(&denied)));
    }
    if !egress.allow_cidrs.is_empty() {
        parts.push(format!("allowed CIDRs {}", egress.allow_cidrs.join(", ")));
    }
    for p in &egress.allow_peers {
        let labels: Vec<String> = p.pod_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let pods = if labels.is_empty() { "all Pods".to_owned() } else { format!("Pods {}", labels.join(",")) };
        let ns = p.namespace.as_deref().map_or("the session's namespace".to_owned(), |n| format!("namespace {n}"));
        parts.push(format!("{pods} in {ns}"));
    }
    parts.extend(super::egress_hosts::host_rules_summary(egress, defaults));
    format!("egress to {}; {ingress}", parts.join("; "))
}

fn join(cidrs: &[Cidr]) -> String {
    cidrs.iter().map(Cidr::to_string).collect::<Vec<_>>().join(", ")
}

/// Denies all ingress to the session's Pod and limits its egress.
pub fn network_policy(
    bs: &BrowserSession,
    id: &Identity,
    defaults: &EgressDefaults,
) -> Result<NetworkPolicy, CidrError> {
    // `None`, not an empty list, for "no rule": the API server drops empty
    // lists, which would make every apply a change and a watch event.
    let egress = egress_rules(&bs.spec.network.egress, defaults)?;
    let ingress = report_reader_rule(&bs.spec.network.egress, operator_reads(bs), defaults).map(|rule| vec![rule]);
    Ok(NetworkPolicy {
        metadata: child_meta(id, &id.names.network_policy, "network-policy"),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(pod_selector(&id.name)),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress,
            egress,
        }),
    })
}

/// Makes the session's Pod (`pod_name`, `pod_uid`) a second owner of its
/// `policy`: the garbage collector deletes a dependent only once every
/// owner is gone, so a deleted session's policy stays until its Pod has
/// stopped. Without it the policy went with the session at once, and the
/// stopping Pod met the namespace's deny-all baseline: its exporter's final
/// pass could not reach the store and the last segment was lost.
pub fn outlive_pod(policy: &mut NetworkPolicy, pod_name: &str, pod_uid: &str) {
    let owners = policy.metadata.owner_references.get_or_insert_with(Vec::new);
    owners.retain(|o| o.kind != "Pod");
    owners.push(OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod_name.to_owned(),
        uid: pod_uid.to_owned(),
        controller: None,
        block_owner_deletion: None,
    });
}

/// Whether the operator reads more than the egress report from the
/// session's runtime: its exporter's status (recordings exported), its
/// state (`spec.suspended`: the suspend request) or writes a saved state
/// back (a resume: into a claimed warm browser, `POST /resume`).
pub fn operator_reads(bs: &BrowserSession) -> bool {
    bs.spec.recording.export.is_some() || bs.spec.suspended || super::suspend::resume_state_secret(bs).is_some()
}

/// The one ingress a session's Pod admits: the operator's Pods to the
/// runtime's readiness port, where it reads the egress report
/// ([`playpen_api::layout::EGRESS_REPORT_PATH`]), the exporter's status
/// ([`playpen_api::layout::EXPORT_STATUS_PATH`]) and a suspended session's
/// state ([`playpen_api::layout::SUSPEND_PATH`]) — only while host rules
/// apply or [`operator_reads`] (without either there is nothing to read)
/// and the operator runs in the cluster.
fn report_reader_rule(
    egress: &Egress,
    operator_reads: bool,
    defaults: &EgressDefaults,
) -> Option<NetworkPolicyIngressRule> {
    if !operator_reads {
        super::egress_hosts::egress_hosts_config(egress, defaults)?;
    }
    operator_ingress(defaults)
}

/// The rule that admits the operator's Pods to a runtime's readiness port;
/// `None` when the operator runs outside the cluster.
pub fn operator_ingress(defaults: &EgressDefaults) -> Option<NetworkPolicyIngressRule> {
    let reader = defaults.report_reader.as_ref()?;
    Some(NetworkPolicyIngressRule {
        from: Some(vec![NetworkPolicyPeer {
            namespace_selector: Some(namespace_selector(&reader.namespace)),
            pod_selector: Some(selector(&reader.pod_labels)),
            ..NetworkPolicyPeer::default()
        }]),
        ports: Some(vec![NetworkPolicyPort {
            port: Some(IntOrString::Int(i32::from(READINESS_PORT))),
            protocol: Some("TCP".into()),
            end_port: None,
        }]),
    })
}

/// Name of the namespace's [`baseline_policy`].
pub const BASELINE_POLICY: &str = "playpen-browsers-baseline";
/// `app.kubernetes.io/component` of the [`baseline_policy`].
pub const COMPONENT_BASELINE: &str = "browser-baseline";

/// The namespace's baseline: every browser Pod the operator makes there
/// (sessions', pools') is denied all traffic, in and out, unless a policy of
/// its own allows it. NetworkPolicies add up, so beside a session's own
/// policy it changes nothing; it makes a browser Pod isolated from the
/// moment it exists, so the Pod need not wait for its session's policy
/// (they are created at once), and a session policy deleted by hand leaves
/// the browser without network until it is put back, not with all of it.
/// Owned by no session: it serves every one in the namespace.
pub fn baseline_policy(namespace: &str) -> NetworkPolicy {
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(BASELINE_POLICY.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(managed_labels(COMPONENT_BASELINE)),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([
                    ("app.kubernetes.io/component".to_owned(), COMPONENT_BROWSER.to_owned()),
                    (MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned()),
                ])),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: None,
            egress: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cidr(text: &str) -> Cidr {
        text.parse().expect(text)
    }

    fn egress(value: serde_json::Value) -> Egress {
        serde_json::from_value(value).expect("egress")
    }

    fn rules(value: serde_json::Value, defaults: &EgressDefaults) -> Option<Vec<NetworkPolicyEgressRule>> {
        egress_rules(&egress(value), defaults).expect("rules")
    }

    fn blocks(rule: &NetworkPolicyEgressRule) -> Vec<(String, Vec<String>)> {
        rule.to
            .iter()
            .flatten()
            .filter_map(|p| p.ip_block.clone())
            .map(|b| (b.cidr, b.except.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn cidrs_parse_canonical_forms_only() {
        assert_eq!(cidr("10.96.0.0/12").to_string(), "10.96.0.0/12");
        assert_eq!(cidr("2001:db8::/32").to_string(), "2001:db8::/32");
        assert_eq!(cidr("0.0.0.0/0"), Cidr::everything(true));
        assert_eq!(cidr("::/0"), Cidr::everything(false));
        assert_eq!(cidr("10.0.0.1/32").to_string(), "10.0.0.1/32");
        assert_eq!(
            "10.96.0.1/12".parse::<Cidr>(),
            Err(CidrError::NotCanonical { given: "10.96.0.1/12".into(), canonical: "10.96.0.0/12".into() })
        );
        assert_eq!("10.0.0.0/33".parse::<Cidr>(), Err(CidrError::Prefix("10.0.0.0/33".into())));
        assert_eq!("fe80::/129".parse::<Cidr>(), Err(CidrError::Prefix("fe80::/129".into())));
        for bad in ["10.0.0.0", "10.0.0/8", "x/8", "10.0.0.0/-1", "10.0.0.0/8/1", ""] {
            assert_eq!(bad.parse::<Cidr>(), Err(CidrError::Syntax(bad.into())), "{bad}");
        }
        // Non-canonical IPv6 spellings are refused with the spelling to use.
        let err = "2001:DB8::/32".parse::<Cidr>().expect_err("upper case");
        assert_eq!(err.to_string(), "\"2001:DB8::/32\" has address bits beyond its prefix: write 2001:db8::/32");
    }

    #[test]
    fn containment_respects_family_and_prefix() {
        assert!(cidr("10.0.0.0/8").contains(cidr("10.96.0.0/12")));
        assert!(cidr("10.0.0.0/8").contains(cidr("10.0.0.0/8")));
        assert!(!cidr("10.96.0.0/12").contains(cidr("10.0.0.0/8")));
        assert!(!cidr("10.0.0.0/8").contains(cidr("11.0.0.0/8")));
        assert!(Cidr::everything(true).contains(cidr("1.2.3.4/32")));
        assert!(!Cidr::everything(true).contains(cidr("::1/128")));
        assert!(cidr("fc00::/7").contains(cidr("fd12:3456::/32")));
        assert!(!cidr("fc00::/7").contains(cidr("fe80::/10")));
    }

    #[test]
    fn the_default_denies_every_special_range_and_the_cluster() {
        let defaults = EgressDefaults {
            cluster_cidrs: vec![cidr("10.244.0.0/16"), cidr("192.0.2.0/24"), cidr("fd00:10::/64")],
            deny_cidrs: vec![cidr("198.51.100.0/24"), cidr("2001:db8::/32")],
            dns: DnsPeer::default(),
            ..EgressDefaults::default()
        };
        let r = rules(json!({}), &defaults).expect("some egress");
        assert_eq!(r.len(), 3);
        // 1: DNS to the cluster resolver only, UDP and TCP 53.
        let dns = &r[0];
        let ports: Vec<(Option<String>, Option<IntOrString>)> =
            dns.ports.iter().flatten().map(|p| (p.protocol.clone(), p.port.clone())).collect();
        assert_eq!(
            ports,
            [(Some("UDP".into()), Some(IntOrString::Int(53))), (Some("TCP".into()), Some(IntOrString::Int(53)))]
        );
        let to = dns.to.as_ref().expect("to");
        assert_eq!(to.len(), 1);
        let ns = to[0].namespace_selector.as_ref().and_then(|s| s.match_labels.clone()).expect("ns");
        assert_eq!(ns, BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), "kube-system".to_owned())]));
        let pods = to[0].pod_selector.as_ref().and_then(|s| s.match_labels.clone()).expect("pods");
        assert_eq!(pods, BTreeMap::from([("k8s-app".to_owned(), "kube-dns".to_owned())]));
        // 2, 3: the internet of each family, without the denied ranges.
        // 10.244.0.0/16 is inside 10.0.0.0/8, so it is not listed twice.
        assert_eq!(
            blocks(&r[1]),
            [(
                "0.0.0.0/0".to_owned(),
                [
                    "10.0.0.0/8",
                    "100.64.0.0/10",
                    "127.0.0.0/8",
                    "169.254.0.0/16",
                    "172.16.0.0/12",
                    "192.0.2.0/24",
                    "192.168.0.0/16",
                    "198.51.100.0/24"
                ]
                .map(String::from)
                .to_vec()
            )]
        );
        assert_eq!(
            blocks(&r[2]),
            [("::/0".to_owned(), ["::1/128", "2001:db8::/32", "fc00::/7", "fe80::/10"].map(String::from).to_vec())]
        );
        assert!(r[1].ports.is_none() && r[2].ports.is_none(), "every port of the internet");
    }

    #[test]
    fn every_special_range_is_denied_by_default() {
        let defaults = EgressDefaults::default();
        let denied: Vec<Cidr> = defaults.denied(true).into_iter().chain(defaults.denied(false)).collect();
        for special in SPECIAL_RANGES {
            assert!(denied.iter().any(|d| d.contains(cidr(special))), "{special} not denied");
        }
        for metadata in ["169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "127.0.0.1/32"] {
            assert!(denied.iter().any(|d| d.contains(cidr(metadata))), "{metadata} not denied");
        }
        for public in ["1.1.1.1/32", "8.8.8.0/24", "2606:4700::/32", "172.32.0.0/16", "100.128.0.0/16"] {
            assert!(!denied.iter().any(|d| d.contains(cidr(public))), "{public} denied");
        }
    }

    #[test]
    fn a_deny_list_covering_a_family_drops_that_family() {
        let defaults = EgressDefaults { deny_cidrs: vec![cidr("0.0.0.0/0")], ..EgressDefaults::default() };
        let r = rules(json!({"mode": "Internet"}), &defaults).expect("egress");
        assert_eq!(r.len(), 2, "DNS and IPv6 only: {r:?}");
        assert_eq!(blocks(&r[1])[0].0, "::/0");
    }

    #[test]
    fn allow_lists_add_cidrs_and_peers() {
        let r = rules(
            json!({"allowCIDRs": ["10.244.0.17/32", "fd00::/8"], "allowPeers": [
                {"namespace": "fixtures", "podLabels": {"app": "web"}},
                {"podLabels": {"app": "api", "tier": "x"}},
                {"namespace": "shared"}
            ]}),
            &EgressDefaults::default(),
        )
        .expect("egress");
        assert_eq!(r.len(), 4);
        let allow = &r[3];
        assert!(allow.ports.is_none());
        assert_eq!(
            blocks(allow),
            [("10.244.0.17/32".to_owned(), vec![]), ("fd00::/8".to_owned(), vec![])],
            "allow-listed CIDRs carry no exceptions"
        );
        let to = allow.to.as_ref().expect("to");
        assert_eq!(to.len(), 5);
        let ns = |p: &NetworkPolicyPeer| p.namespace_selector.as_ref().map(|s| s.match_labels.clone());
        let pods = |p: &NetworkPolicyPeer| p.pod_selector.as_ref().map(|s| s.match_labels.clone());
        assert_eq!(ns(&to[2]), Some(Some(BTreeMap::from([(NAMESPACE_NAME_LABEL.into(), "fixtures".into())]))));
        assert_eq!(pods(&to[2]), Some(Some(BTreeMap::from([("app".into(), "web".into())]))));
        assert_eq!(ns(&to[3]), None, "no namespace: the session's own");
        assert_eq!(pods(&to[3]).flatten().map(|l| l.len()), Some(2));
        assert_eq!(pods(&to[4]), Some(None), "no labels: every Pod of the namespace");
    }

    #[test]
    fn allowed_hosts_open_the_internet_minus_the_denied_ranges_to_the_proxy() {
        let listed = json!({"mode": "AllowListOnly", "allowHosts": ["*.example.com"]});
        let r = rules(listed.clone(), &EgressDefaults::default()).expect("egress");
        assert_eq!(r.len(), 3, "DNS and the internet of both families, as in Internet mode");
        assert_eq!(blocks(&r[1])[0].0, "0.0.0.0/0");
        assert!(blocks(&r[1])[0].1.contains(&"169.254.0.0/16".to_owned()));
        let chart = EgressDefaults { allow_hosts: vec!["sso.test".into()], ..EgressDefaults::default() };
        assert_eq!(rules(json!({"mode": "AllowListOnly"}), &chart).expect("egress").len(), 3);
        let denied_only = json!({"mode": "AllowListOnly", "denyHosts": ["a.test"]});
        assert_eq!(rules(denied_only, &EgressDefaults::default()).expect("egress").len(), 1, "DNS only");
        let tcp_only = Some(vec![NetworkPolicyPort { protocol: Some("TCP".into()), port: None, end_port: None }]);
        assert!(r[1..].iter().all(|rule| rule.ports == tcp_only), "the proxy carries TCP only: so does the policy");
        let deny_only = rules(json!({"mode": "Internet", "denyHosts": ["a.test"]}), &EgressDefaults::default());
        assert!(deny_only.expect("egress")[1..].iter().all(|rule| rule.ports == tcp_only), "any host rule");
        let plain = rules(json!({"mode": "Internet"}), &EgressDefaults::default()).expect("egress");
        assert!(plain[1..].iter().all(|rule| rule.ports.is_none()), "without host rules, every protocol");
        let summary = egress_summary(&egress(listed), false, &EgressDefaults::default());
        assert!(summary.contains("the internet (TCP only) except 10.0.0.0/8"), "{summary}");
        assert!(
            summary.ends_with("hosts through the session runtime's proxy: allow *.example.com; ingress denied"),
            "{summary}"
        );
    }

    #[test]
    fn only_the_operator_reaches_the_readiness_port_and_only_with_host_rules_or_an_export() {
        let reader = PodPeer {
            namespace: "playpen-system".into(),
            pod_labels: BTreeMap::from([("app.kubernetes.io/name".into(), "playpen".into())]),
        };
        let defaults = EgressDefaults { report_reader: Some(reader), ..EgressDefaults::default() };
        let hosts = egress(json!({"mode": "AllowListOnly", "allowHosts": ["*.example.com"]}));
        let rule = report_reader_rule(&hosts, false, &defaults).expect("a rule with host rules");
        let from = rule.from.as_deref().expect("from");
        assert_eq!(from.len(), 1);
        assert_eq!(
            from[0].namespace_selector.as_ref().and_then(|s| s.match_labels.clone()),
            Some(BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), "playpen-system".to_owned())]))
        );
        assert_eq!(
            from[0].pod_selector.as_ref().and_then(|s| s.match_labels.clone()),
            Some(BTreeMap::from([("app.kubernetes.io/name".to_owned(), "playpen".to_owned())]))
        );
        let ports = rule.ports.as_deref().expect("ports");
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].port, Some(IntOrString::Int(i32::from(READINESS_PORT))));
        assert!(egress_summary(&hosts, false, &defaults)
            .ends_with("ingress only from the operator (namespace playpen-system) to port 9321"));
        // Denied hosts alone run the proxy too.
        assert!(report_reader_rule(&egress(json!({"mode": "Internet", "denyHosts": ["a.test"]})), false, &defaults)
            .is_some());
        // No host rules, or no operator in the cluster: no ingress at all.
        let plain = egress(json!({"mode": "Internet"}));
        assert!(report_reader_rule(&plain, false, &defaults).is_none());
        assert!(egress_summary(&plain, false, &defaults).ends_with("; ingress denied"));
        assert!(report_reader_rule(&hosts, false, &EgressDefaults::default()).is_none());
        // An export without host rules is read too (its status), whatever the mode.
        assert!(report_reader_rule(&plain, true, &defaults).is_some());
        let deny_all = egress(json!({"mode": "DenyAll"}));
        assert!(egress_summary(&deny_all, true, &defaults)
            .ends_with("ingress only from the operator (namespace playpen-system) to port 9321"));
        assert!(report_reader_rule(&plain, true, &EgressDefaults::default()).is_none());
    }

    #[test]
    fn allow_list_only_keeps_dns_and_the_lists() {
        let r = rules(json!({"mode": "AllowListOnly", "allowCIDRs": ["203.0.113.0/24"]}), &EgressDefaults::default())
            .expect("egress");
        assert_eq!(r.len(), 2);
        assert!(r[0].ports.is_some(), "DNS first");
        assert_eq!(blocks(&r[1]), [("203.0.113.0/24".to_owned(), vec![])]);
        let only_dns = rules(json!({"mode": "AllowListOnly"}), &EgressDefaults::default()).expect("egress");
        assert_eq!(only_dns.len(), 1);
    }

    #[test]
    fn deny_all_has_no_egress_rule() {
        assert_eq!(rules(json!({"mode": "DenyAll"}), &EgressDefaults::default()), None);
    }

    #[test]
    fn dns_cidrs_join_the_dns_rule() {
        let defaults = EgressDefaults {
            dns: DnsPeer { cidrs: vec![cidr("169.254.20.10/32")], ..DnsPeer::default() },
            ..EgressDefaults::default()
        };
        let r = rules(json!({}), &defaults).expect("egress");
        assert_eq!(blocks(&r[0]), [("169.254.20.10/32".to_owned(), vec![])]);
        assert!(egress_summary(&egress(json!({})), false, &defaults).contains("DNS to 169.254.20.10/32"));
    }

    #[test]
    fn a_bad_allow_cidr_is_an_error_naming_the_fix() {
        let err = egress_rules(&egress(json!({"allowCIDRs": ["10.0.0.1/8"]})), &EgressDefaults::default())
            .expect_err("not canonical");
        assert_eq!(err, CidrError::NotCanonical { given: "10.0.0.1/8".into(), canonical: "10.0.0.0/8".into() });
    }

    #[test]
    fn the_pod_is_a_second_owner_of_the_policy_and_only_the_current_one() {
        let mut policy = NetworkPolicy::default();
        policy.metadata.owner_references = Some(vec![OwnerReference {
            kind: "BrowserSession".into(),
            controller: Some(true),
            uid: "s".into(),
            ..OwnerReference::default()
        }]);
        outlive_pod(&mut policy, "demo-browser", "p1");
        outlive_pod(&mut policy, "demo-browser", "p2");
        let owners = policy.metadata.owner_references.expect("owners");
        let said: Vec<(&str, &str, Option<bool>)> =
            owners.iter().map(|o| (o.kind.as_str(), o.uid.as_str(), o.controller)).collect();
        assert_eq!(said, [("BrowserSession", "s", Some(true)), ("Pod", "p2", None)]);
        assert!(owners[1].block_owner_deletion.is_none(), "the Pod's deletion never waits for the policy");
    }

    #[test]
    fn the_summary_says_what_the_browser_may_reach() {
        let defaults = EgressDefaults { cluster_cidrs: vec![cidr("10.96.0.0/12")], ..EgressDefaults::default() };
        let internet = egress_summary(
            &egress(
                json!({"allowCIDRs": ["10.1.0.0/16"], "allowPeers": [{"namespace": "f", "podLabels": {"app": "x"}}, {}]}),
            ),
            false,
            &defaults,
        );
        assert_eq!(
            internet,
            "egress to DNS (port 53) to Pods k8s-app=kube-dns in namespace kube-system; the internet except \
             10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16, ::1/128, \
             fc00::/7, fe80::/10; allowed CIDRs 10.1.0.0/16; Pods app=x in namespace f; all Pods in the session's \
             namespace; ingress denied"
        );
        let only = egress_summary(&egress(json!({"mode": "AllowListOnly"})), false, &defaults);
        assert!(!only.contains("internet"), "{only}");
        assert_eq!(
            egress_summary(&egress(json!({"mode": "DenyAll"})), false, &defaults),
            "no egress at all; ingress denied"
        );
    }
}
