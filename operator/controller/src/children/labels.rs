//! Labels and metadata shared by every child.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use playpen_api::naming::{APP_NAME, MANAGER, SESSION_LABEL};

use super::Identity;

/// `app.kubernetes.io/component` of the browser Pod.
pub const COMPONENT_BROWSER: &str = "browser";
/// The label naming the manager of every child; its value is
/// [`MANAGER`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// The label selector matching every child of every session (the watch
/// selector of the controller): `app.kubernetes.io/managed-by=playpen-operator`.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGER}")
}

/// The labels of everything the operator makes, as `component`.
pub fn managed_labels(component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), APP_NAME.to_owned()),
        ("app.kubernetes.io/component".to_owned(), component.to_owned()),
        (MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned()),
        ("app.kubernetes.io/part-of".to_owned(), "playpen".to_owned()),
    ])
}

/// The label set every child of session `name` carries.
pub fn child_labels(name: &str, component: &str) -> BTreeMap<String, String> {
    let mut labels = managed_labels(component);
    labels.insert("app.kubernetes.io/instance".to_owned(), name.to_owned());
    labels.insert(SESSION_LABEL.to_owned(), name.to_owned());
    labels
}

/// Labels that select the browser Pod of session `name`.
pub fn pod_selector(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (SESSION_LABEL.to_owned(), name.to_owned()),
        ("app.kubernetes.io/component".to_owned(), COMPONENT_BROWSER.to_owned()),
    ])
}

/// Metadata for a child called `child_name`, owned by the session.
pub fn child_meta(id: &Identity, child_name: &str, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(child_name.to_owned()),
        namespace: Some(id.namespace.clone()),
        labels: Some(child_labels(&id.name, component)),
        owner_references: Some(vec![id.owner.clone()]),
        ..ObjectMeta::default()
    }
}
