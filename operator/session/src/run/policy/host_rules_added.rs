//! Host rules added to a browser launched without them. The proxy is a
//! launch switch (`--proxy-server`), so a browser started before any host
//! rule applied (a session whose `allowHosts`/`denyHosts` were set while it
//! ran, a warm browser claimed by a session with host rules) cannot be put
//! behind it. Leaving it direct would silently not enforce the rules; the
//! runtime ends the container instead, and the kubelet starts it afresh
//! with the proxy.

use std::path::PathBuf;
use std::time::Duration;

use playpen_api::runtime_config::RuntimeConfig;

use crate::config::load;
use crate::run::expose::egress_proxy::live_of;

/// Whether `config` asks for host rules the runtime can enforce (rules it
/// cannot parse end nothing: the operator checks them before writing).
pub(crate) fn asks_for_the_proxy(config: &RuntimeConfig) -> bool {
    matches!(live_of(config), Some(Ok(_)))
}

/// Resolves once `runtime.json` asks for host rules, re-read every `every`.
pub(crate) async fn host_rules_added(config_path: PathBuf, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if load(&config_path).is_ok_and(|config| asks_for_the_proxy(&config)) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::runtime_config::EgressHostsConfig;
    use playpen_api::v1alpha1::EgressMode;

    #[test]
    fn only_enforceable_host_rules_ask_for_the_proxy() {
        let mut config = crate::config::tests::sample();
        assert!(!asks_for_the_proxy(&config));
        let hosts = EgressHostsConfig {
            mode: EgressMode::Internet,
            allow_hosts: vec![],
            deny_hosts: vec!["ads.test".into()],
            allow_cidrs: vec![],
            denied_cidrs: vec!["10.0.0.0/8".into()],
        };
        config.egress_hosts = Some(hosts.clone());
        assert!(asks_for_the_proxy(&config));
        config.egress_hosts = Some(EgressHostsConfig { deny_hosts: vec!["10.0.0.1".into()], ..hosts });
        assert!(!asks_for_the_proxy(&config));
    }
}
