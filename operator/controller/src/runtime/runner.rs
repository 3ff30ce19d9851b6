//! One runner for every controller: each reconcile guarded against
//! panics, failures backed off and announced, the controllers (one per
//! watched namespace, or one cluster-wide) stopped together on shutdown,
//! with a bookkeeping task beside them for as long as they run.

use std::fmt::Debug;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio_util::task::AbortOnDropHandle;
use tracing::{debug, info, warn};

use super::guard;
use super::Shared;
use crate::error::{Error, Result};

/// An object a controller reconciles.
pub trait Reconciled: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static {
    /// Its key in the failure streaks.
    fn failure_key(&self) -> String;
}

/// Backoff per object, 1 s doubling to 5 minutes; an Event says why (on
/// the first failure and every 16th).
fn error_policy<K, C>(object: Arc<K>, error: &Error, ctx: Arc<C>) -> Action
where
    K: Reconciled,
    C: Deref<Target = Shared> + Send + Sync + 'static,
{
    warn!(%error, kind = %K::kind(&()), name = %object.name_any(), "reconcile failed");
    ctx.metrics.reconcile_failed(error);
    let attempts = ctx.failures.record(&object.failure_key());
    if guard::announce(attempts) {
        let note = error.to_string();
        tokio::spawn(async move {
            ctx.publish_about(&object.object_ref(&()), EventType::Warning, "ReconcileFailed", note).await;
        });
    }
    guard::backoff(attempts)
}

/// Where controllers run: one per listed namespace, or one cluster-wide.
pub fn targets(namespaces: &[String]) -> Vec<Option<String>> {
    if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    }
}

/// An `Api` over `namespace`, or every namespace: what a controller
/// watches where it runs.
pub fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs each controller with its reconciler until `shutdown` resolves,
/// and `books` beside them. A panic in one object's reconcile becomes
/// that object's error, never the end of the process.
pub async fn run<K, C, R, F>(
    what: &'static str,
    controllers: Vec<(Controller<K>, R)>,
    ctx: Arc<C>,
    books: impl Future<Output = ()> + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + 'static,
) where
    K: Reconciled,
    C: Deref<Target = Shared> + Send + Sync + 'static,
    R: FnMut(Arc<K>, Arc<C>) -> F,
    F: Future<Output = Result<Action>> + Send + 'static,
{
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let runs = controllers.into_iter().map(|(controller, mut reconciler)| {
        let mut stop = stop_rx.clone();
        controller
            .graceful_shutdown_on(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .run(
                move |object, ctx: Arc<C>| {
                    let metrics = ctx.metrics.clone();
                    let attempt = reconciler(object, ctx);
                    async move { guard::catch_panics(attempt, &metrics).await }
                },
                error_policy,
                ctx.clone(),
            )
            .for_each(|result| {
                if let Err(error) = result {
                    debug!(%error, "reconcile result");
                }
                std::future::ready(())
            })
    });
    let _books = AbortOnDropHandle::new(tokio::spawn(books));
    let _shutdown = AbortOnDropHandle::new(tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    }));
    info!(what, "controllers started");
    futures::future::join_all(runs).await;
    info!(what, "controllers stopped");
}
