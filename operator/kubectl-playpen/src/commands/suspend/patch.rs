//! The two requests of `suspend` and `resume`, on the BrowserSession as
//! untyped JSON (`DynamicObject`) rather than the typed `BrowserSession`:
//! the typed object fails to deserialize a status whose phase its `Phase`
//! enum does not know (`Suspending`, `Suspended`, `Resuming` arrive with the
//! operator's suspend), which is exactly the status these commands meet, and
//! `spec.suspended` may not be one of its fields yet. As JSON both read the
//! same before and after the API crate learns them.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, ValidationDirective};
use kube::core::Status;
use playpen_api::BrowserSession;

use super::Want;
use crate::commands::new::FIELD_MANAGER;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::rbac::Attempt;
use crate::sessions;

/// The BrowserSessions of `namespace`, untyped.
pub fn api(cluster: &Cluster, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(cluster.client.clone(), namespace, &ApiResource::erase::<BrowserSession>(&()))
}

/// `spec.suspended` as stored; absent reads as false (running, the default).
pub fn suspended(object: &DynamicObject) -> bool {
    object.data.pointer("/spec/suspended").and_then(serde_json::Value::as_bool).unwrap_or(false)
}

/// Gets session `name` (a missing one is named with its namespace).
pub async fn get(cluster: &Cluster, name: &str) -> Result<DynamicObject> {
    let ns = cluster.namespace.as_str();
    api(cluster, ns).get(name).await.map_err(|e| {
        sessions::api_error(
            e,
            &Attempt::sessions("get", Some(ns)),
            Some(name),
            ns,
            format!("get BrowserSession {ns}/{name}"),
        )
    })
}

/// The refusal of a strictly validated patch when the CRD has no
/// `spec.suspended` (a Playpen from before suspend), worded as what to do.
pub fn unknown_field(status: &Status, ns: &str, name: &str) -> Option<Error> {
    let message = &status.message;
    (message.contains("unknown field") && message.contains("suspended")).then(|| {
        Error::Unavailable(format!(
            "BrowserSession {ns}/{name} cannot be suspended here: this cluster's BrowserSession CRD has no \
             spec.suspended (upgrade Playpen's CRD and operator to a version with suspend); the API server said: \
             {message}"
        ))
    })
}

/// Sends the merge patch for `want`, with strict field validation: on a CRD
/// without `spec.suspended` the default (warn and prune) would drop the
/// field and answer 200, and `--wait` would wait for nothing.
pub async fn send(cluster: &Cluster, name: &str, want: Want) -> Result<DynamicObject> {
    let ns = cluster.namespace.as_str();
    // kube documents fieldValidation for apply only, but sends it on every
    // patch, and the API server honours it on merge patches too.
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        field_validation: Some(ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let body = super::body(want);
    api(cluster, ns).patch(name, &params, &Patch::Merge(&body)).await.map_err(|e| {
        if let kube::Error::Api(status) = &e {
            if let Some(err) = unknown_field(status, ns, name) {
                return err;
            }
        }
        let action = format!("{} BrowserSession {ns}/{name}", want.verb());
        sessions::api_error(e, &Attempt::sessions("patch", Some(ns)), Some(name), ns, action)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
            "metadata": {"name": "demo", "namespace": "team-a"}, "spec": spec,
            "status": {"phase": "Suspending"},
        }))
        .unwrap()
    }

    #[test]
    fn spec_suspended_reads_absent_as_running() {
        assert!(!suspended(&object(serde_json::json!({"image": "i"}))));
        assert!(suspended(&object(serde_json::json!({"image": "i", "suspended": true}))));
        assert!(!suspended(&object(serde_json::json!({"image": "i", "suspended": false}))));
    }

    #[test]
    fn a_crd_without_the_field_says_to_upgrade() {
        let refused = Status::failure(
            "BrowserSession.playpen.dev \"demo\" is invalid: strict decoding error: unknown field \"spec.suspended\"",
            "BadRequest",
        )
        .with_code(400);
        let err = unknown_field(&refused, "team-a", "demo").unwrap().to_string();
        assert!(err.starts_with("BrowserSession team-a/demo cannot be suspended here: this cluster's BrowserSession CRD has no spec.suspended"), "{err}");
        assert!(err.ends_with("unknown field \"spec.suspended\""), "{err}");
        let other = Status::failure("admission webhook denied the request", "BadRequest").with_code(400);
        assert!(unknown_field(&other, "team-a", "demo").is_none());
    }

    #[test]
    fn refusals_name_the_patch_right_and_a_missing_session() {
        let denial = Status::failure(
            "browsersessions.playpen.dev \"demo\" is forbidden: User \"alice\" cannot patch resource \"browsersessions\" \
             in API group \"playpen.dev\" in the namespace \"team-a\"",
            "Forbidden",
        )
        .with_code(403);
        let err = sessions::api_error(
            kube::Error::Api(denial.boxed()),
            &Attempt::sessions("patch", Some("team-a")),
            Some("demo"),
            "team-a",
            "suspend".into(),
        );
        assert_eq!(
            err.to_string(),
            "forbidden: alice may not \"patch\" \"browsersessions.playpen.dev\" in namespace \"team-a\" (ask your \
             platform team for the playpen-admin role in \"team-a\", or check: kubectl auth can-i patch \
             browsersessions.playpen.dev -n team-a)"
        );
        let missing = Status::failure("browsersessions.playpen.dev \"demo\" not found", "NotFound").with_code(404);
        let err = sessions::api_error(
            kube::Error::Api(missing.boxed()),
            &Attempt::sessions("patch", Some("team-a")),
            Some("demo"),
            "team-a",
            "suspend".into(),
        );
        assert_eq!(
            err.to_string(),
            "no BrowserSession \"demo\" in namespace \"team-a\" (kubectl playpen ls -n team-a)"
        );
    }
}
