//! Reading a BrowserSession and what the commands take from it: its Pod,
//! phase, readiness, viewer port, CDP port and warm pool.

use kube::api::Api;
use kube::core::Status;
use playpen_api::naming::ChildNames;
use playpen_api::v1alpha1::condition;
use playpen_api::{BrowserSession, BrowserSessionStatus};

use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// The BrowserSessions of `namespace`.
pub fn api(cluster: &Cluster, namespace: &str) -> Api<BrowserSession> {
    Api::namespaced(cluster.client.clone(), namespace)
}

/// What a 404 on a BrowserSession means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotFound {
    /// The object is missing.
    Session,
    /// The type is not served (no CRD).
    Crd,
}

/// Tells a missing object (`browsersessions.playpen.dev "x" not found`,
/// details naming it) from a missing type (`the server could not find the
/// requested resource`).
pub fn classify_not_found(status: &Status, name: &str) -> NotFound {
    let names_it = status.details.as_ref().is_some_and(|d| d.name == name)
        || status.message.contains(&format!("\"{name}\" not found"));
    if names_it {
        NotFound::Session
    } else {
        NotFound::Crd
    }
}

/// The error a failed call on BrowserSessions becomes.
pub fn api_error(err: kube::Error, attempt: &Attempt, name: Option<&str>, namespace: &str, action: String) -> Error {
    if let kube::Error::Api(status) = &err {
        if status.is_not_found() {
            return match name {
                Some(name) if classify_not_found(status, name) == NotFound::Session => {
                    Error::SessionNotFound { name: name.to_owned(), namespace: namespace.to_owned() }
                }
                _ => Error::CrdMissing,
            };
        }
    }
    forbidden::kube_error(err, attempt, action)
}

/// Gets BrowserSession `name` in the cluster's namespace.
pub async fn get(cluster: &Cluster, name: &str) -> Result<BrowserSession> {
    let ns = cluster.namespace.as_str();
    api(cluster, ns).get(name).await.map_err(|e| {
        api_error(e, &Attempt::sessions("get", Some(ns)), Some(name), ns, format!("get BrowserSession {ns}/{name}"))
    })
}

/// The phase as a word (`-` before the operator wrote one).
pub fn phase(status: Option<&BrowserSessionStatus>) -> &'static str {
    status.and_then(|s| s.phase).map(|p| p.as_str()).unwrap_or("-")
}

/// The Ready condition's status (`True`, `False`, `Unknown`), or `-`.
pub fn ready(status: Option<&BrowserSessionStatus>) -> String {
    status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == condition::READY))
        .map(|c| c.status.clone())
        .unwrap_or_else(|| "-".to_owned())
}

/// The session's Pod: `status.podName`, else the name the operator gives it.
pub fn pod_name(session: &BrowserSession) -> String {
    session
        .status
        .as_ref()
        .and_then(|s| s.pod_name.clone())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ChildNames::for_session(&name(session)).pod)
}

/// `metadata.name`.
pub fn name(session: &BrowserSession) -> String {
    session.metadata.name.clone().unwrap_or_default()
}

/// The BrowserPool a session takes its browser from (`spec.pool.name`).
pub fn pool_of(session: &BrowserSession) -> Option<String> {
    session.spec.pool.as_ref().map(|p| p.name.clone())
}

fn port(value: i32, what: &str) -> Result<u16> {
    u16::try_from(value)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| Error::Unavailable(format!("{what} is {value}, not a TCP port")))
}

/// The viewer's pinned port: `status.viewer.port`, else `spec.viewer.port`.
/// Refuses when the session has the viewer disabled.
pub fn viewer_port(session: &BrowserSession) -> Result<u16> {
    let ns = session.metadata.namespace.clone().unwrap_or_default();
    let name = name(session);
    if !session.spec.browser.viewer.enabled {
        return Err(Error::Unavailable(format!(
            "BrowserSession {ns}/{name} has no viewer (spec.viewer.enabled is false); \
             create a session with the viewer on to watch it"
        )));
    }
    match session.status.as_ref().and_then(|s| s.viewer.as_ref()) {
        Some(viewer) => port(viewer.port, "status.viewer.port"),
        None => port(session.spec.browser.viewer.port, "spec.viewer.port"),
    }
}

/// The session's CDP port: `status.cdp.port`, else `spec.cdp.port`.
/// Refuses when the session has CDP disabled.
pub fn cdp_port(session: &BrowserSession) -> Result<u16> {
    let ns = session.metadata.namespace.clone().unwrap_or_default();
    let name = name(session);
    if !session.spec.browser.cdp.enabled {
        return Err(Error::Unavailable(format!(
            "BrowserSession {ns}/{name} has CDP disabled (spec.cdp.enabled is false, and spec.cdp cannot change): \
             create a session with it on, e.g. kubectl playpen new NAME --cdp -n {ns}"
        )));
    }
    match session.status.as_ref().and_then(|s| s.cdp.as_ref()) {
        Some(cdp) => port(cdp.port, "status.cdp.port"),
        None => port(session.spec.browser.cdp.port, "spec.cdp.port"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use kube::core::response::StatusDetails;
    use playpen_api::v1alpha1::{CdpStatus, Phase, ViewerStatus};

    fn session(spec: serde_json::Value, status: Option<serde_json::Value>) -> BrowserSession {
        let mut value = serde_json::json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
            "metadata": {"name": "demo", "namespace": "team-a"}, "spec": spec,
        });
        if let Some(status) = status {
            value["status"] = status;
        }
        serde_json::from_value(value).unwrap()
    }

    fn not_found(message: &str, details_name: Option<&str>) -> Status {
        let mut s = Status::failure(message, "NotFound").with_code(404);
        if let Some(name) = details_name {
            s.details = Some(StatusDetails {
                name: name.to_owned(),
                group: "playpen.dev".into(),
                kind: "browsersessions".into(),
                uid: String::new(),
                causes: vec![],
                retry_after_seconds: 0,
            });
        }
        s
    }

    #[test]
    fn a_missing_session_is_told_from_a_missing_crd() {
        let s = not_found("browsersessions.playpen.dev \"x\" not found", Some("x"));
        assert_eq!(classify_not_found(&s, "x"), NotFound::Session);
        let s = not_found("browsersessions.playpen.dev \"x\" not found", None);
        assert_eq!(classify_not_found(&s, "x"), NotFound::Session);
        let s = not_found("the server could not find the requested resource", None);
        assert_eq!(classify_not_found(&s, "x"), NotFound::Crd);
    }

    #[test]
    fn not_found_errors_read_as_the_user_needs_them() {
        let err = api_error(
            kube::Error::Api(not_found("browsersessions.playpen.dev \"x\" not found", Some("x")).boxed()),
            &Attempt::sessions("get", Some("y")),
            Some("x"),
            "y",
            "get".into(),
        );
        assert_eq!(err.to_string(), "no BrowserSession \"x\" in namespace \"y\" (kubectl playpen ls -n y)");
        let err = api_error(
            kube::Error::Api(not_found("the server could not find the requested resource", None).boxed()),
            &Attempt::sessions("list", Some("y")),
            None,
            "y",
            "list".into(),
        );
        assert!(matches!(err, Error::CrdMissing), "{err:?}");
    }

    #[test]
    fn phase_ready_and_pod_before_and_after_the_operator() {
        let fresh = session(serde_json::json!({"image": "i"}), None);
        assert_eq!(phase(fresh.status.as_ref()), "-");
        assert_eq!(ready(fresh.status.as_ref()), "-");
        assert_eq!(pod_name(&fresh), "demo-browser");
        assert_eq!(pool_of(&fresh), None);
        let mut pooled = fresh.clone();
        pooled.spec.pool = Some(playpen_api::v1alpha1::PoolRef { name: "warm".into() });
        assert_eq!(pool_of(&pooled).as_deref(), Some("warm"));

        let mut running = fresh.clone();
        running.status = Some(BrowserSessionStatus {
            phase: Some(Phase::Ready),
            pod_name: Some("other-pod".into()),
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: "Ready".into(),
                message: String::new(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
                observed_generation: None,
            }],
            ..Default::default()
        });
        assert_eq!(phase(running.status.as_ref()), "Ready");
        assert_eq!(ready(running.status.as_ref()), "True");
        assert_eq!(pod_name(&running), "other-pod");

        let mut empty_pod = running.clone();
        if let Some(s) = empty_pod.status.as_mut() {
            s.pod_name = Some(String::new());
        }
        assert_eq!(pod_name(&empty_pod), "demo-browser");
    }

    #[test]
    fn viewer_port_from_status_then_spec_and_refused_when_disabled() {
        let s = session(serde_json::json!({"image": "i"}), None);
        assert_eq!(viewer_port(&s).unwrap(), 9323);
        let s = session(serde_json::json!({"image": "i", "viewer": {"port": 9400}}), None);
        assert_eq!(viewer_port(&s).unwrap(), 9400);
        let mut s = session(serde_json::json!({"image": "i", "viewer": {"port": 9400}}), None);
        s.status = Some(BrowserSessionStatus {
            viewer: Some(ViewerStatus { service: "demo-view".into(), port: 9500, command: String::new() }),
            ..Default::default()
        });
        assert_eq!(viewer_port(&s).unwrap(), 9500);
        let s = session(serde_json::json!({"image": "i", "viewer": {"enabled": false}}), None);
        let err = viewer_port(&s).unwrap_err().to_string();
        assert!(err.contains("team-a/demo has no viewer (spec.viewer.enabled is false)"), "{err}");
        let mut s = session(serde_json::json!({"image": "i"}), None);
        s.status = Some(BrowserSessionStatus {
            viewer: Some(ViewerStatus { service: "demo-view".into(), port: 70000, command: String::new() }),
            ..Default::default()
        });
        assert!(viewer_port(&s).unwrap_err().to_string().contains("70000, not a TCP port"));
    }

    #[test]
    fn cdp_port_from_status_then_spec_and_refused_when_disabled() {
        let s = session(serde_json::json!({"image": "i"}), None);
        let err = cdp_port(&s).unwrap_err().to_string();
        assert!(err.contains("team-a/demo has CDP disabled (spec.cdp.enabled is false"), "{err}");
        assert!(err.contains("kubectl playpen new NAME --cdp -n team-a"), "{err}");
        let s = session(serde_json::json!({"image": "i", "cdp": {"enabled": true}}), None);
        assert_eq!(cdp_port(&s).unwrap(), 9222);
        let mut s = session(serde_json::json!({"image": "i", "cdp": {"enabled": true, "port": 9300}}), None);
        assert_eq!(cdp_port(&s).unwrap(), 9300);
        s.status = Some(BrowserSessionStatus {
            cdp: Some(CdpStatus { service: "demo-view".into(), port: 9301, command: String::new() }),
            ..Default::default()
        });
        assert_eq!(cdp_port(&s).unwrap(), 9301);
        let mut s = session(serde_json::json!({"image": "i", "cdp": {"enabled": true}}), None);
        s.status = Some(BrowserSessionStatus {
            cdp: Some(CdpStatus { service: "demo-view".into(), port: -1, command: String::new() }),
            ..Default::default()
        });
        assert!(cdp_port(&s).unwrap_err().to_string().contains("status.cdp.port is -1"));
    }
}
