//! The BrowserSnapshot controller: kube-rs's `Controller` watching
//! snapshots; their takes are polled ([`super::reconcile`]), so nothing
//! else is watched.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use playpen_api::v1alpha1::BrowserSnapshot;
use tracing::info;

use super::reconcile::reconcile;
use crate::context::Context;
use crate::runtime::{self, api, Reconciled};

impl Reconciled for BrowserSnapshot {
    fn failure_key(&self) -> String {
        // Apart from a session of the same name.
        format!("snapshot:{}/{}", self.namespace().unwrap_or_default(), self.name_any())
    }
}

fn controller_for(client: &Client, namespace: Option<&str>) -> Controller<BrowserSnapshot> {
    let config = controller::Config::default().debounce(Duration::from_millis(100)).concurrency(4);
    Controller::new(api::<BrowserSnapshot>(client, namespace), watcher::Config::default()).with_config(config)
}

/// Forgets the takes of snapshots no longer there (a snapshot deleted
/// while taken is never reconciled again).
async fn tidy(stores: Vec<Store<BrowserSnapshot>>, ctx: Arc<Context>) {
    loop {
        tokio::time::sleep(Duration::from_secs(60)).await;
        let uids: HashSet<String> = stores.iter().flat_map(Store::state).filter_map(|s| s.uid()).collect();
        ctx.snapshots.retain(&uids);
    }
}

/// Runs the snapshot controllers (one per listed namespace, or one
/// cluster-wide) until `shutdown` resolves.
pub fn run(
    ctx: Arc<Context>,
    namespaces: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = ()> + Send + 'static {
    let controllers: Vec<_> =
        runtime::targets(namespaces).iter().map(|ns| (controller_for(&ctx.client, ns.as_deref()), reconcile)).collect();
    let stores = controllers.iter().map(|(c, _)| c.store()).collect();
    info!(?namespaces, "starting the snapshot controllers");
    runtime::run("snapshot", controllers, ctx.clone(), tidy(stores, ctx), shutdown)
}
