//! The spec a pooled session runs (pure): the pool's template for the
//! browser, the session's own fields for the rest; and what keeps a warm
//! browser from serving it.

use playpen_api::v1alpha1::{BrowserSessionSpec, BrowserSpec};

/// The session's spec with its browser taken from `template`, but for the
/// snapshots' retention: that stays the session's policy.
pub fn effective_spec(template: &BrowserSpec, session: &BrowserSessionSpec) -> BrowserSessionSpec {
    let mut browser = template.clone();
    browser.snapshots.retention = session.browser.snapshots.retention.clone();
    BrowserSessionSpec { browser, ..session.clone() }
}

/// Why a warm browser cannot serve `session`, if it cannot: what must be in
/// place when the browser starts. Idle timeout, lifetime and retention
/// reach a claimed Pod through its runtime ConfigMap; egress through the
/// session's NetworkPolicy; auth state through the Pod's own Secret, loaded
/// into the running browser ([`super::deliver`]).
pub fn cold_start_reason(session: &BrowserSessionSpec) -> Option<String> {
    let needs = [
        ("spec.profile", "is the browser's user data directory", session.profile.is_some()),
        ("spec.recording", "starts with the browser", session.recording.video || session.recording.trace),
        ("spec.agent", "is a container of the browser's Pod", session.agent.is_some()),
        // A warm browser is launched for the pool's (DenyAll) egress, through
        // the proxy only when the chart's denyHosts apply: a session's own
        // host rules need a browser launched through it.
        (
            "spec.network.egress host rules",
            "need the browser launched through its egress proxy",
            !session.network.egress.allow_hosts.is_empty() || !session.network.egress.deny_hosts.is_empty(),
        ),
    ];
    let first = needs.into_iter().find(|(_, _, set)| *set)?;
    Some(format!("{} {}: a warm browser cannot take it, so this session started cold", first.0, first.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::v1alpha1::{AuthState, EgressMode, PoolRef, Recording, SandboxMode, SecretKeyRef};

    fn template() -> BrowserSpec {
        serde_json::from_value(serde_json::json!({
            "image": "playpen/browser:pool", "imagePullPolicy": "Never", "sandbox": "Disabled",
            "launchConfig": {"executablePath": "/usr/bin/chromium"}, "viewer": {"enabled": false},
            "snapshots": {"retention": {"maxCount": 7}}
        }))
        .unwrap()
    }

    fn session(extra: serde_json::Value) -> BrowserSessionSpec {
        let mut spec = serde_json::json!({"pool": {"name": "warm"}});
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn the_template_defines_the_browser_and_the_session_the_rest() {
        let s = session(serde_json::json!({
            "idleTimeoutSeconds": 60, "maxLifetimeSeconds": 600,
            "network": {"egress": {"mode": "DenyAll"}}, "snapshots": {"retention": {"maxCount": 3}}
        }));
        let e = effective_spec(&template(), &s);
        assert_eq!(e.browser.image, "playpen/browser:pool");
        assert_eq!(e.browser.sandbox, SandboxMode::Disabled);
        assert!(!e.browser.viewer.enabled);
        assert_eq!(e.browser.launch_config.executable_path.as_deref(), Some("/usr/bin/chromium"));
        assert_eq!((e.idle_timeout_seconds, e.max_lifetime_seconds), (Some(60), Some(600)));
        assert_eq!(e.network.egress.mode, EgressMode::DenyAll);
        assert_eq!(e.browser.snapshots.retention.max_count, 3, "retention is the session's policy");
        assert_eq!(e.browser.snapshots.volume, template().snapshots.volume);
        assert_eq!(e.pool, Some(PoolRef { name: "warm".into() }));
    }

    #[test]
    fn what_a_browser_needs_at_start_sends_the_session_cold_naming_the_field() {
        assert_eq!(cold_start_reason(&session(serde_json::json!({"idleTimeoutSeconds": 5}))), None);
        let mut s = session(serde_json::json!({}));
        s.auth_state = Some(AuthState { secret_ref: SecretKeyRef { name: "login".into(), key: None } });
        assert_eq!(cold_start_reason(&s), None, "a claimed browser loads auth state while it runs");
        s.auth_state = None;
        s.recording = Recording { video: false, trace: true, ..Recording::default() };
        assert!(cold_start_reason(&s).unwrap().starts_with("spec.recording"));
        s.recording = Recording::default();
        s.network.egress.deny_hosts = vec!["ads.test".into()];
        assert!(cold_start_reason(&s).unwrap().starts_with("spec.network.egress host rules"));
    }
}
