//! The spec a pooled session runs (pure): the pool's template for the
//! browser, the session's own fields for the rest; what in the session
//! contradicts the template; and what keeps a warm browser from serving it.

use playpen_api::v1alpha1::{
    BrowserSessionSpec, Cdp, LaunchConfig, SandboxMode, SessionTemplate, SnapshotVolume, Viewer,
};

/// The session's spec with the browser-defining part taken from `template`.
pub fn effective_spec(template: &SessionTemplate, session: &BrowserSessionSpec) -> BrowserSessionSpec {
    let mut spec = template.session_spec();
    spec.auth_state = session.auth_state.clone();
    spec.profile = session.profile.clone();
    spec.idle_timeout_seconds = session.idle_timeout_seconds;
    spec.max_lifetime_seconds = session.max_lifetime_seconds;
    spec.agent = session.agent.clone();
    spec.network = session.network.clone();
    spec.recording = session.recording.clone();
    spec.snapshots.retention = session.snapshots.retention.clone();
    spec.pool = session.pool.clone();
    spec
}

/// Fields of a pooled session that the pool's template defines: each set
/// one is refused by its path (silently ignoring it would run a browser
/// other than the one asked for).
pub fn template_conflicts(session: &BrowserSessionSpec) -> Vec<&'static str> {
    let set = [
        ("spec.imagePullPolicy", session.image_pull_policy.is_some()),
        ("spec.imagePullSecrets", !session.image_pull_secrets.is_empty()),
        ("spec.sessionName", session.session_name.is_some()),
        ("spec.sandbox", session.sandbox != SandboxMode::default()),
        ("spec.launchConfig", session.launch_config != LaunchConfig::default()),
        ("spec.viewer", session.viewer != Viewer::default()),
        ("spec.cdp", session.cdp != Cdp::default()),
        ("spec.snapshots.volume", session.snapshots.volume != SnapshotVolume::default()),
        ("spec.pod", session.pod.is_some()),
    ];
    set.into_iter().filter(|(_, is_set)| *is_set).map(|(path, _)| path).collect()
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
    ];
    let first = needs.into_iter().find(|(_, _, set)| *set)?;
    Some(format!("{} {}: a warm browser cannot take it, so this session started cold", first.0, first.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::v1alpha1::{AuthState, EgressMode, PoolRef, Recording, SecretKeyRef};

    fn template() -> SessionTemplate {
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
        assert_eq!(e.image, "playpen/browser:pool");
        assert_eq!(e.sandbox, SandboxMode::Disabled);
        assert!(!e.viewer.enabled);
        assert_eq!(e.launch_config.executable_path.as_deref(), Some("/usr/bin/chromium"));
        assert_eq!((e.idle_timeout_seconds, e.max_lifetime_seconds), (Some(60), Some(600)));
        assert_eq!(e.network.egress.mode, EgressMode::DenyAll);
        assert_eq!(e.snapshots.retention.max_count, 3, "retention is the session's policy");
        assert_eq!(e.pool, Some(PoolRef { name: "warm".into() }));
    }

    #[test]
    fn browser_fields_on_a_pooled_session_are_refused_by_path() {
        assert!(template_conflicts(&session(serde_json::json!({}))).is_empty());
        let s = session(serde_json::json!({
            "sandbox": "Disabled", "viewer": {"port": 9400}, "pod": {"shmSize": "2Gi"}, "sessionName": "x"
        }));
        assert_eq!(template_conflicts(&s), ["spec.sessionName", "spec.sandbox", "spec.viewer", "spec.pod"]);
    }

    #[test]
    fn what_a_browser_needs_at_start_sends_the_session_cold_naming_the_field() {
        assert_eq!(cold_start_reason(&session(serde_json::json!({"idleTimeoutSeconds": 5}))), None);
        let mut s = session(serde_json::json!({}));
        s.auth_state = Some(AuthState { secret_ref: SecretKeyRef { name: "login".into(), key: None } });
        assert_eq!(cold_start_reason(&s), None, "a claimed browser loads auth state while it runs");
        s.auth_state = None;
        s.recording = Recording { video: false, trace: true };
        assert!(cold_start_reason(&s).unwrap().starts_with("spec.recording"));
    }
}
