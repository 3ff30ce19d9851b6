//! Per-session settings on a claimed warm Pod, without a restart and without
//! an API token in the Pod: the session's `runtime.json` (idle timeout,
//! lifetime, retention) is the Pod's own ConfigMap, already applied; its auth
//! state is copied into the Pod's own optional Secret (mounted empty while
//! warm, see `pool::warm`). A digest of both goes on the Pod as an
//! annotation: a Pod update makes the kubelet sync it at once, which
//! refreshes its ConfigMap and Secret volumes, where otherwise they follow
//! at its next periodic sync, about a minute later. The runtime in the Pod
//! sees the files change and loads the state into the running browser.
//!
//! Only after the claim: a state written to a Pod another session might
//! still win would hand one tenant's login to another session.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use playpen_api::layout::AUTH_STATE_FILE;
use playpen_api::naming::{delivery_digest, warm_auth_secret, DELIVERED_ANNOTATION, MANAGER, WARM_NAME_ANNOTATION};
use playpen_api::BrowserSession;
use serde_json::json;

use crate::apply::Target;
use crate::children::{child_labels, Identity};
use crate::error::{Error, Result};
use crate::validate::MissingReference;

/// Component label of the copied auth state.
const COMPONENT_AUTH_STATE: &str = "auth-state";

/// The claimed Pod's copy of a session's auth state (`state` is the tenant
/// Secret's value under the session's key).
pub fn auth_state_copy(id: &Identity, warm_name: &str, state: ByteString) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(warm_auth_secret(warm_name)),
            namespace: Some(id.namespace.clone()),
            labels: Some(child_labels(&id.name, COMPONENT_AUTH_STATE)),
            owner_references: Some(vec![id.owner.clone()]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(AUTH_STATE_FILE.to_owned(), state)])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// What the annotation digests: the runtime config as applied, and the
/// auth state copy's resourceVersion (never its content).
pub fn digest(runtime_config: &ConfigMap, auth_state_version: Option<&str>) -> String {
    let config = serde_json::to_string(&runtime_config.data).unwrap_or_default();
    delivery_digest(&[&config, auth_state_version.unwrap_or("")])
}

/// Writes `copy` unless the Pod's slot holds it already (read first: a
/// reconcile of an unchanged session writes nothing); returns its version.
async fn copy_state(to: Target<'_>, copy: &Secret) -> Result<Option<String>> {
    let name = copy.name_any();
    let secrets: Api<Secret> = Api::namespaced(to.client.clone(), to.namespace);
    let live = secrets.get_opt(&name).await.map_err(Error::kube("get", "Secret", to.namespace, &name))?;
    let live = match live {
        Some(live) if crate::cache::matches(&live, copy) => live,
        _ => crate::apply::apply(to, copy).await?,
    };
    Ok(live.resource_version())
}

/// Writes the session's auth state into the claimed Pod's slot and, when
/// what the Pod holds changed, annotates the Pod so the kubelet refreshes
/// its volumes now. Returns the key the tenant's Secret lacks, if it does
/// (a cold Pod would fail to mount it; this one runs without the state,
/// and the status says why).
pub async fn deliver(
    to: Target<'_>,
    session: &BrowserSession,
    id: &Identity,
    pod: &Pod,
    runtime_config: &ConfigMap,
) -> Result<Option<MissingReference>> {
    let Some(warm_name) = pod.annotations().get(WARM_NAME_ANNOTATION) else { return Ok(None) };
    let ns = to.namespace;
    let mut version = None;
    let mut missing = None;
    if let Some(auth) = &session.spec.auth_state {
        let name = &auth.secret_ref.name;
        let key = auth.secret_ref.key.as_deref().unwrap_or(AUTH_STATE_FILE);
        let secrets: Api<Secret> = Api::namespaced(to.client.clone(), ns);
        // A missing Secret is the status's to say (validate); so is a missing key, from here.
        let source = secrets.get_opt(name).await.map_err(Error::kube("get", "Secret", ns, name))?;
        let source_found = source.is_some();
        match source.and_then(|s| s.data).and_then(|mut d| d.remove(key)) {
            Some(state) => version = copy_state(to, &auth_state_copy(id, warm_name, state)).await?,
            None => {
                missing = source_found.then(|| MissingReference {
                    field: "spec.authState.secretRef.key",
                    kind: "Secret",
                    name: name.clone(),
                    key: Some(key.to_owned()),
                });
            }
        }
    }
    let digest = digest(runtime_config, version.as_deref());
    if pod.annotations().get(DELIVERED_ANNOTATION) == Some(&digest) {
        return Ok(missing);
    }
    let pods: Api<Pod> = to.writer()?;
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    let patch = json!({"metadata": {"annotations": {DELIVERED_ANNOTATION: digest}}});
    let name = pod.name_any();
    pods.patch(&name, &params, &Patch::Merge(&patch)).await.map_err(Error::kube("annotate", "Pod", ns, &name))?;
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::v1alpha1::BrowserSessionSpec;

    fn id() -> Identity {
        let mut bs =
            BrowserSession::new("shop", serde_json::from_value::<BrowserSessionSpec>(json!({"image": "i"})).unwrap());
        bs.metadata.namespace = Some("team".into());
        bs.metadata.uid = Some("uid-1".into());
        Identity::of(&bs).unwrap()
    }

    #[test]
    fn the_copy_is_the_sessions_and_holds_only_the_state() {
        let id = id();
        let copy = auth_state_copy(&id, "pool-abc123.x1y2z", ByteString(b"{}".to_vec()));
        assert_eq!(copy.metadata.name.as_deref(), Some("pool-abc123.x1y2z-auth"));
        assert_eq!(copy.metadata.namespace.as_deref(), Some("team"));
        let owners = copy.metadata.owner_references.clone().unwrap();
        assert_eq!((owners.len(), owners[0].uid.as_str()), (1, "uid-1"), "deleted with the session");
        let data = copy.data.unwrap();
        assert_eq!(data.keys().collect::<Vec<_>>(), [AUTH_STATE_FILE]);
        assert_eq!(copy.metadata.labels.unwrap()["app.kubernetes.io/instance"], "shop");
    }

    #[test]
    fn the_digest_follows_the_config_and_the_states_version_never_its_content() {
        let map = |v: &str| ConfigMap {
            data: Some(BTreeMap::from([("runtime.json".to_owned(), v.to_owned())])),
            ..ConfigMap::default()
        };
        let a = digest(&map("{\"idleTimeoutSeconds\":60}"), None);
        assert_eq!(a, digest(&map("{\"idleTimeoutSeconds\":60}"), None), "stable: no write for a no-op");
        assert_ne!(a, digest(&map("{\"idleTimeoutSeconds\":90}"), None));
        assert_ne!(a, digest(&map("{\"idleTimeoutSeconds\":60}"), Some("17")));
        assert_ne!(digest(&map("x"), Some("17")), digest(&map("x"), Some("18")));
        assert_eq!(a.len(), 16);
    }
}
