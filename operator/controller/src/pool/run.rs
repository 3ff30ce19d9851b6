//! The BrowserPool controller: kube-rs's `Controller` watching pools, their
//! NetworkPolicies and every Pod labelled with a pool.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use playpen_api::naming::POOL_LABEL;
use playpen_api::v1alpha1::BrowserPool;
use tracing::info;

use super::{reconcile, Context};
use crate::children::managed_selector;
use crate::runtime::metrics::{Metrics, PoolStateLabels};
use crate::runtime::{self, api};

fn controller_for(client: &Client, namespace: Option<&str>) -> Controller<BrowserPool> {
    // Pods map to their pool by label, not owner: a claim removes the
    // pool's owner reference, and must still wake the pool to replenish.
    let pods = watcher::Config::default().labels(POOL_LABEL);
    let config = controller::Config::default().debounce(Duration::from_millis(300)).concurrency(8);
    Controller::new(api::<BrowserPool>(client, namespace), watcher::Config::default())
        .with_config(config)
        // Metadata only: the owner reference, or the pool label, is all a
        // mapper reads, and every session's NetworkPolicy passes here too.
        .owns(
            api::<PartialObjectMeta<NetworkPolicy>>(client, namespace),
            watcher::Config::default().labels(&managed_selector()),
        )
        .watches(api::<PartialObjectMeta<Pod>>(client, namespace), pods, |pod: PartialObjectMeta<Pod>| {
            let pool = pod.labels().get(POOL_LABEL).cloned();
            let namespace = pod.namespace();
            pool.zip(namespace).map(|(pool, ns)| ObjectRef::<BrowserPool>::new(&pool).within(&ns))
        })
}

/// Keeps the warm-Pods-by-state gauge in step with the pools' statuses.
async fn count_states(stores: Vec<Store<BrowserPool>>, metrics: Arc<Metrics>) {
    loop {
        let (mut ready, mut warming, mut claimed) = (0i64, 0i64, 0i64);
        for pool in stores.iter().flat_map(Store::state) {
            if let Some(s) = pool.status.as_ref() {
                ready += i64::from(s.ready);
                warming += i64::from(s.warming);
                claimed += i64::from(s.claimed);
            }
        }
        for (state, n) in [("ready", ready), ("warming", warming), ("claimed", claimed)] {
            metrics.pool_pods.get_or_create(&PoolStateLabels { state: state.to_owned() }).set(n);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Runs the pool controllers (one per listed namespace, or one cluster-wide)
/// until `shutdown` resolves.
pub fn run(
    ctx: Arc<Context>,
    namespaces: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = ()> + Send + 'static {
    let controllers: Vec<_> =
        runtime::targets(namespaces).iter().map(|ns| (controller_for(&ctx.client, ns.as_deref()), reconcile)).collect();
    let stores = controllers.iter().map(|(c, _)| c.store()).collect();
    info!(?namespaces, "starting the pool controllers");
    let books = count_states(stores, ctx.metrics.clone());
    runtime::run("pool", controllers, ctx, books, shutdown)
}
