//! The operator against a real kube-apiserver, etcd and
//! kube-controller-manager (no kubelet: Pod status is written by the tests).

mod admission;
mod leader;
mod reconcile;

use kube::api::{Api, PostParams};
use kube::Client;
use playpen_api::BrowserSession;
use serde_json::Value;

/// Creates a BrowserSession from JSON in `ns`.
pub async fn create(client: &Client, ns: &str, body: Value) -> Result<BrowserSession, kube::Error> {
    let bs: BrowserSession = serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &bs).await
}

/// A session object with `name` and `spec`.
pub fn session(name: &str, spec: Value) -> Value {
    serde_json::json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
        "metadata": {"name": name}, "spec": spec})
}
