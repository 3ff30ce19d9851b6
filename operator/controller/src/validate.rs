//! Validate phase: dereference what the spec names (Secrets and claims in
//! the session's namespace). Admission (CEL) already refused malformed
//! specs; what is left is whether the referenced objects exist. Secrets are
//! looked up by metadata only, so their values never enter the operator.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::Api;
use kube::Client;
use playpen_api::BrowserSession;

use crate::children::{self, Settings};
use crate::error::{Error, Result};

/// An object the spec names that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingReference {
    /// The spec field that names it.
    pub field: &'static str,
    /// `Secret` or `PersistentVolumeClaim`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The key the Secret lacks, when it exists but without the named key.
    pub key: Option<String>,
}

impl MissingReference {
    /// The condition reason for this kind of miss.
    pub fn reason(&self) -> &'static str {
        match (self.kind, &self.key) {
            ("Secret", Some(_)) => "SecretKeyNotFound",
            ("Secret", None) => "SecretNotFound",
            ("RuntimeClass", _) => "RuntimeClassNotFound",
            _ => "ClaimNotFound",
        }
    }

    /// Message naming the field, the object and the fix.
    pub fn message(&self, namespace: &str) -> String {
        let (field, kind, name) = (self.field, self.kind, &self.name);
        match &self.key {
            Some(key) => format!("{field}: {kind} {namespace}/{name} has no key {key:?}; add it or correct the key"),
            None if kind == "RuntimeClass" => format!(
                "{field}: {kind} {name} not found; create it (with a handler the nodes' container runtime has, \
                 for example runsc for gVisor) or correct the name"
            ),
            None => format!("{field}: {kind} {namespace}/{name} not found; create it or correct the name"),
        }
    }
}

/// Objects of `bs` the cluster must already have, with the field naming each.
pub fn references(bs: &BrowserSession) -> Vec<(&'static str, &'static str, String)> {
    let spec = &bs.spec;
    let mut refs = Vec::new();
    if let Some(r) = &spec.browser.launch_config.secret_ref {
        refs.push(("spec.launchConfig.secretRef", "Secret", r.name.clone()));
    }
    if let Some(a) = &spec.auth_state {
        refs.push(("spec.authState.secretRef", "Secret", a.secret_ref.name.clone()));
    }
    if let Some(name) =
        spec.browser.snapshots.volume.persistent_volume_claim.as_ref().and_then(|c| c.claim_name.clone())
    {
        refs.push(("spec.snapshots.volume.persistentVolumeClaim.claimName", "PersistentVolumeClaim", name));
    }
    if let Some(p) = &spec.profile {
        refs.push(("spec.profile.claimName", "PersistentVolumeClaim", p.claim_name.clone()));
    }
    if let Some(export) = &spec.recording.export {
        refs.push(("spec.recording.export.s3.credentialsSecret", "Secret", export.s3.credentials_secret.name.clone()));
    }
    refs
}

/// The RuntimeClass `bs`'s Pod names, with the field (or chart value) naming it.
pub fn runtime_class_reference(bs: &BrowserSession, settings: &Settings) -> Option<(&'static str, String)> {
    let name = children::runtime_class(bs, settings)?;
    let own = children::own_runtime_class(bs).is_some();
    let field = if own {
        "spec.pod.runtimeClassName"
    } else {
        "the operator's default (chart value sessions.runtimeClassName)"
    };
    Some((field, name.to_owned()))
}

/// Whether the RuntimeClass `name` exists. The API server refuses a Pod
/// naming one that does not, and only the operator's log would say why;
/// looked up first, it is a condition the tenant reads. `None`: not ours to
/// read (an operator limited to namespaces has no cluster-wide grant), so
/// the Pod is created and the API server's answer stands.
async fn runtime_class_exists(client: &Client, name: &str) -> Result<Option<bool>> {
    match Api::<RuntimeClass>::all(client.clone()).get_metadata_opt(name).await {
        Ok(found) => Ok(Some(found.is_some())),
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(None),
        Err(source) => Err(Error::Kube {
            action: "get",
            kind: "RuntimeClass",
            namespace: String::new(),
            name: name.to_owned(),
            source: Box::new(source),
        }),
    }
}

/// Looks every reference up (and the RuntimeClass the Pod would run
/// under); returns the ones that are missing.
pub async fn missing_references(
    client: &Client,
    bs: &BrowserSession,
    namespace: &str,
    settings: &Settings,
) -> Result<Vec<MissingReference>> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let mut missing = Vec::new();
    for (field, kind, name) in references(bs) {
        let found = match kind {
            "Secret" => secrets.get_metadata_opt(&name).await.map(|o| o.is_some()),
            _ => claims.get_metadata_opt(&name).await.map(|o| o.is_some()),
        }
        .map_err(|source| Error::Kube {
            action: "get",
            kind,
            namespace: namespace.to_owned(),
            name: name.clone(),
            source: Box::new(source),
        })?;
        if !found {
            missing.push(MissingReference { field, kind, name, key: None });
        }
    }
    if let Some((field, name)) = runtime_class_reference(bs, settings) {
        if runtime_class_exists(client, &name).await? == Some(false) {
            missing.push(MissingReference { field, kind: "RuntimeClass", name, key: None });
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_named_object_is_a_reference() {
        let spec = serde_json::from_value(json!({"image": "i",
            "launchConfig": {"secretRef": {"name": "cfg"}},
            "authState": {"secretRef": {"name": "login"}},
            "snapshots": {"volume": {"persistentVolumeClaim": {"claimName": "snaps"}}},
            "profile": {"claimName": "prof"},
            "recording": {"video": true, "export": {"s3": {"endpoint": "https://s3.test", "bucket": "rec",
                "credentialsSecret": {"name": "s3-keys"}}}}}))
        .expect("spec");
        let bs = BrowserSession::new("demo", spec);
        let refs = references(&bs);
        assert_eq!(refs.len(), 5);
        assert_eq!(refs[4], ("spec.recording.export.s3.credentialsSecret", "Secret", "s3-keys".to_owned()));
        assert_eq!(refs[0], ("spec.launchConfig.secretRef", "Secret", "cfg".to_owned()));
        assert_eq!(refs[3].1, "PersistentVolumeClaim");
    }

    #[test]
    fn created_claims_are_not_references() {
        let spec = serde_json::from_value(json!({"image": "i",
            "snapshots": {"volume": {"persistentVolumeClaim": {"size": "1Gi"}}}}))
        .expect("spec");
        assert!(references(&BrowserSession::new("demo", spec)).is_empty());
    }

    #[test]
    fn the_runtime_class_is_the_sessions_own_or_the_default_by_its_field() {
        let gvisor = Settings { runtime_class: Some("gvisor".into()), ..Settings::default() };
        let plain = BrowserSession::new("demo", serde_json::from_value(json!({"image": "i"})).expect("spec"));
        assert_eq!(runtime_class_reference(&plain, &Settings::default()), None, "the cluster's default runtime");
        let (field, name) = runtime_class_reference(&plain, &gvisor).expect("the default");
        assert!(field.contains("sessions.runtimeClassName") && name == "gvisor", "{field}");
        let own = BrowserSession::new(
            "demo",
            serde_json::from_value(json!({"image": "i", "pod": {"runtimeClassName": "kata"}})).expect("spec"),
        );
        assert_eq!(runtime_class_reference(&own, &gvisor), Some(("spec.pod.runtimeClassName", "kata".into())));
        let m = MissingReference {
            field: "spec.pod.runtimeClassName",
            kind: "RuntimeClass",
            name: "kata".into(),
            key: None,
        };
        assert_eq!(m.reason(), "RuntimeClassNotFound");
        assert!(m.message("team-a").starts_with("spec.pod.runtimeClassName: RuntimeClass kata not found; create it"));
    }

    #[test]
    fn message_names_field_object_and_fix() {
        let m = MissingReference { field: "spec.authState.secretRef", kind: "Secret", name: "login".into(), key: None };
        assert_eq!(m.reason(), "SecretNotFound");
        assert_eq!(
            m.message("team-a"),
            "spec.authState.secretRef: Secret team-a/login not found; create it or correct the name"
        );
    }
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn a_missing_key_names_the_key_field_the_secret_and_the_fix() {
        let m = MissingReference {
            field: "spec.authState.secretRef.key",
            kind: "Secret",
            name: "login".into(),
            key: Some("state.json".into()),
        };
        assert_eq!(m.reason(), "SecretKeyNotFound");
        assert_eq!(
            m.message("team"),
            "spec.authState.secretRef.key: Secret team/login has no key \"state.json\"; add it or correct the key"
        );
        let gone = MissingReference { key: None, ..m };
        assert_eq!(gone.reason(), "SecretNotFound");
        assert!(gone.message("team").ends_with("not found; create it or correct the name"));
    }
}
