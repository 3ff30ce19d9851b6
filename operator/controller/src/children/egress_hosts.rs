//! A session's effective host rules (issue 36): its own `allowHosts` and
//! `denyHosts` with the chart's added, as `runtime.json` carries them to the
//! runtime's egress proxy and as the `EgressPolicy` condition says them.

use playpen_api::runtime_config::EgressHostsConfig;
use playpen_api::v1alpha1::{Egress, EgressMode};

use super::egress_defaults::EgressDefaults;

/// The effective `allowHosts`. The chart's are added only where host rules
/// narrow the session: a session in `Internet` mode with no `allowHosts` of
/// its own already reaches every host, and the chart's list would otherwise
/// shrink it to those hosts; `DenyAll` reaches none.
pub fn effective_allow_hosts(egress: &Egress, defaults: &EgressDefaults) -> Vec<String> {
    let narrowed = match egress.mode {
        EgressMode::DenyAll => return Vec::new(),
        EgressMode::Internet => !egress.allow_hosts.is_empty(),
        EgressMode::AllowListOnly => true,
    };
    let chart = narrowed.then_some(&defaults.allow_hosts).into_iter().flatten();
    egress.allow_hosts.iter().chain(chart).cloned().collect()
}

/// The effective `denyHosts`: the session's, then the chart's.
pub fn effective_deny_hosts(egress: &Egress, defaults: &EgressDefaults) -> Vec<String> {
    egress.deny_hosts.iter().chain(&defaults.deny_hosts).cloned().collect()
}

/// What the runtime's proxy enforces; `None` when no host rule applies (no
/// proxy: the browser connects directly, as before host rules existed).
pub fn egress_hosts_config(egress: &Egress, defaults: &EgressDefaults) -> Option<EgressHostsConfig> {
    let allow_hosts = effective_allow_hosts(egress, defaults);
    let deny_hosts = effective_deny_hosts(egress, defaults);
    if allow_hosts.is_empty() && deny_hosts.is_empty() {
        return None;
    }
    let denied = defaults.denied(true).into_iter().chain(defaults.denied(false));
    Some(EgressHostsConfig {
        mode: egress.mode,
        allow_hosts,
        deny_hosts,
        allow_cidrs: egress.allow_cidrs.clone(),
        denied_cidrs: denied.map(|c| c.to_string()).collect(),
    })
}

/// The host rules in one clause of the `EgressPolicy` message; `None` without any.
pub fn host_rules_summary(egress: &Egress, defaults: &EgressDefaults) -> Option<String> {
    let config = egress_hosts_config(egress, defaults)?;
    let mut parts = Vec::new();
    if !config.allow_hosts.is_empty() {
        parts.push(format!("allow {}", config.allow_hosts.join(", ")));
    } else if egress.mode == EgressMode::Internet {
        parts.push("allow every other host".to_owned());
    }
    if !config.deny_hosts.is_empty() {
        parts.push(format!("deny {}", config.deny_hosts.join(", ")));
    }
    Some(format!("hosts through the session runtime's proxy: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn egress(value: serde_json::Value) -> Egress {
        serde_json::from_value(value).expect("egress")
    }

    fn chart(allow: &[&str], deny: &[&str]) -> EgressDefaults {
        EgressDefaults {
            allow_hosts: allow.iter().map(|s| (*s).to_owned()).collect(),
            deny_hosts: deny.iter().map(|s| (*s).to_owned()).collect(),
            ..EgressDefaults::default()
        }
    }

    #[test]
    fn without_host_rules_there_is_no_proxy_config() {
        assert_eq!(egress_hosts_config(&egress(json!({})), &EgressDefaults::default()), None);
        assert_eq!(host_rules_summary(&egress(json!({"mode": "AllowListOnly"})), &EgressDefaults::default()), None);
        // The chart's allow-list alone does not narrow an Internet session.
        assert_eq!(egress_hosts_config(&egress(json!({})), &chart(&["sso.test"], &[])), None);
    }

    #[test]
    fn the_chart_lists_follow_the_session_lists() {
        let e =
            egress(json!({"mode": "AllowListOnly", "allowHosts": ["*.example.com"], "denyHosts": ["ads.example.com"]}));
        let config = egress_hosts_config(&e, &chart(&["sso.test"], &["tracker.test"])).expect("config");
        assert_eq!(config.allow_hosts, ["*.example.com", "sso.test"]);
        assert_eq!(config.deny_hosts, ["ads.example.com", "tracker.test"]);
        assert_eq!(config.mode, EgressMode::AllowListOnly);
    }

    #[test]
    fn an_allow_list_only_session_gets_the_chart_allow_list_alone() {
        let config = egress_hosts_config(&egress(json!({"mode": "AllowListOnly"})), &chart(&["sso.test"], &[]));
        assert_eq!(config.expect("config").allow_hosts, ["sso.test"]);
    }

    #[test]
    fn deny_all_takes_the_deny_lists_only() {
        let e = egress(json!({"mode": "DenyAll", "denyHosts": ["a.test"]}));
        let config = egress_hosts_config(&e, &chart(&["sso.test"], &[])).expect("config");
        assert!(config.allow_hosts.is_empty());
        assert_eq!(config.deny_hosts, ["a.test"]);
    }

    #[test]
    fn the_floor_is_every_denied_range_and_allow_listed_cidrs_travel_along() {
        let e = egress(json!({"denyHosts": ["a.test"], "allowCIDRs": ["10.20.0.0/16"]}));
        let mut defaults = chart(&[], &[]);
        defaults.cluster_cidrs = vec!["10.96.0.0/12".parse().expect("cidr")];
        let config = egress_hosts_config(&e, &defaults).expect("config");
        assert_eq!(config.allow_cidrs, ["10.20.0.0/16"]);
        for range in ["10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "::1/128", "fe80::/10"] {
            assert!(config.denied_cidrs.iter().any(|c| c == range), "{range}");
        }
        let (_, floor) = config.parse().expect("the runtime parses what the operator writes");
        assert_eq!(floor.allowed.len(), 1);
    }

    #[test]
    fn the_summary_names_the_effective_lists() {
        let e = egress(json!({"allowHosts": ["*.example.com"], "denyHosts": ["ads.example.com"]}));
        assert_eq!(
            host_rules_summary(&e, &chart(&["sso.test"], &[])).expect("summary"),
            "hosts through the session runtime's proxy: allow *.example.com, sso.test; deny ads.example.com"
        );
        let open = egress(json!({"denyHosts": ["ads.example.com"]}));
        assert_eq!(
            host_rules_summary(&open, &EgressDefaults::default()).expect("summary"),
            "hosts through the session runtime's proxy: allow every other host; deny ads.example.com"
        );
    }
}
