//! The BrowserPool controller: kube-rs's `Controller` watching pools, their
//! NetworkPolicies and every Pod labelled with a pool.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use playpen_api::naming::POOL_LABEL;
use playpen_api::v1alpha1::BrowserPool;
use tokio_util::task::AbortOnDropHandle;
use tracing::{info, warn};

use super::{reconcile, Context};
use crate::children::managed_selector;
use crate::error::{Error, Result};
use crate::guard;
use crate::metrics::{Metrics, PoolStateLabels};

pub(super) fn key(pool: &BrowserPool) -> String {
    format!("{}/{}", pool.namespace().unwrap_or_default(), pool.name_any())
}

/// Backoff per pool, 1 s doubling to 5 minutes; an Event says why.
fn error_policy(pool: Arc<BrowserPool>, error: &Error, ctx: Arc<Context>) -> Action {
    warn!(%error, name = %pool.name_any(), "pool reconcile failed");
    ctx.metrics.reconcile_failed(error);
    let attempts = ctx.failures.record(&key(&pool));
    if guard::announce(attempts) {
        let note = error.to_string();
        let publisher = ctx.clone();
        tokio::spawn(async move { publisher.publish(&pool, EventType::Warning, "ReconcileFailed", note).await });
    }
    guard::backoff(attempts)
}

/// A panic in one pool's reconcile becomes an error for that pool, not the
/// end of the process.
async fn catch_panics(pool: Arc<BrowserPool>, ctx: Arc<Context>) -> Result<Action> {
    let metrics = ctx.metrics.clone();
    guard::catch_panics(reconcile(pool, ctx), &metrics).await
}

fn api<K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>>(
    c: &Client,
    ns: Option<&str>,
) -> Api<K> {
    match ns {
        Some(ns) => Api::namespaced(c.clone(), ns),
        None => Api::all(c.clone()),
    }
}

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
pub async fn run(ctx: Arc<Context>, namespaces: &[String], shutdown: impl Future<Output = ()> + Send + 'static) {
    let targets: Vec<Option<&str>> =
        if namespaces.is_empty() { vec![None] } else { namespaces.iter().map(|n| Some(n.as_str())).collect() };
    let controllers: Vec<_> = targets.iter().map(|ns| controller_for(&ctx.client, *ns)).collect();
    let stores = controllers.iter().map(Controller::store).collect();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let runs = controllers.into_iter().map(|c| {
        let mut stop = stop_rx.clone();
        c.graceful_shutdown_on(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .run(catch_panics, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "pool reconcile result");
            }
        })
    });
    let _counter = AbortOnDropHandle::new(tokio::spawn(count_states(stores, ctx.metrics.clone())));
    let _shutdown = AbortOnDropHandle::new(tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    }));
    info!(?namespaces, "pool controllers started");
    futures::future::join_all(runs).await;
    info!("pool controllers stopped");
}
