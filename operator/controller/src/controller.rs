//! The reconciler: validate → build → apply → status, wired to kube-rs's
//! `Controller` watching BrowserSessions and the children they own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use std::future::Future;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::Event;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM};
use playpen_api::v1alpha1::{BrowserPool, Phase};
use playpen_api::BrowserSession;
use tracing::info;

use crate::cache::{self, CachedPod, Caches};
use crate::children;
use crate::claim;
use crate::egress_watch;
use crate::error::Result;
use crate::export_watch::{self, ExportBook};
use crate::own_writes::{Key, OwnWrites};
use crate::runtime::metrics::PhaseLabels;
use crate::runtime::{self, api};

use crate::context::key;
pub use crate::context::Context;
pub use crate::session::reconcile;
use crate::{apply, session};

/// How long the controller waits after an event for more of the same
/// object's before it reconciles: short, since a claim waits for it too;
/// a cache that has not seen this operator's own status write yet is
/// caught by [`OwnWrites`], not by waiting.
pub const RECONCILE_DEBOUNCE: Duration = Duration::from_millis(20);

/// Reconciles in flight at once (the others wait their turn in order). A
/// first reconcile waits for two round trips in a row (what the Pod mounts
/// and is isolated by; then the Pod and the status at once), so at the 32
/// of an ideal controller that creates the children in one the API server
/// idles between them; measured with tests/bench/operator.sh, burst of 1,000.
pub const RECONCILE_CONCURRENCY: u16 = 96;

/// Every 5 s: the sessions-by-phase gauge from the controllers' caches, and
/// the per-object records cut to the sessions that exist. Without a
/// finalizer a delete never reaches a reconcile, and a watch that relists
/// reports no delete at all; this sweep sees both.
async fn keep_books(stores: Vec<Store<BrowserSession>>, ctx: Arc<Context>) {
    loop {
        let mut counts: HashMap<&'static str, i64> = Phase::ALL.iter().map(|p| (p.as_str(), 0)).collect();
        let mut uids = HashSet::new();
        let mut namespaces = HashSet::new();
        for store in &stores {
            for bs in store.state() {
                let phase = bs.status.as_ref().and_then(|s| s.phase).unwrap_or(Phase::Pending);
                *counts.entry(phase.as_str()).or_default() += 1;
                uids.insert(key(&bs));
                namespaces.insert(bs.namespace().unwrap_or_default());
            }
        }
        for (phase, n) in counts {
            ctx.metrics.sessions.get_or_create(&PhaseLabels { phase: phase.to_owned() }).set(n);
        }
        // Only from caches that hold their first list: an empty cache is not "all gone".
        if stores.iter().all(|s| matches!(futures::FutureExt::now_or_never(s.wait_until_ready()), Some(Ok(())))) {
            ctx.forget_all_but(&uids, &namespaces);
        }
        ctx.report_tracked();
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// The watch of the sessions' Pods: it keeps them, as a reconcile reads
/// them, in `stores` and wakes their owners, except for the event of a
/// Pod at the version this process created it (`own`): no news.
fn cached_pods(
    api: Api<CachedPod>,
    config: watcher::Config,
    stores: &mut cache::Stores<CachedPod>,
    own: Option<Arc<OwnWrites>>,
) -> impl futures::Stream<Item = std::result::Result<CachedPod, watcher::Error>> + Send + 'static {
    let (reader, writer) = reflector::store();
    stores.push(reader);
    watcher(api, config)
        .default_backoff()
        .modify(CachedPod::trim)
        .reflect(writer)
        .try_filter(move |event| {
            let echo = matches!((event, &own), (Event::Apply(pod), Some(own))
                if own.heard_created(&Key::of::<Pod>(&pod.metadata), &pod.metadata));
            std::future::ready(!echo)
        })
        .touched_objects()
}

/// A metadata watch of one applied child kind: it keeps what
/// [`cache::applied`] judges by in `applied` and wakes the owners.
fn cached_metas<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
    applied: &mut cache::Applied<K>,
) -> impl futures::Stream<Item = std::result::Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: cache::Cached + apply::Child + Send + Sync + 'static,
{
    let store = applied.store();
    let known = applied.clone();
    watcher(api, config)
        .default_backoff()
        .map_ok(move |event| {
            store.apply(&event);
            event
        })
        // A version this process wrote (or read and compared) is no news.
        .try_filter(move |event| {
            std::future::ready(!matches!(event, Event::Apply(child) if known.known(&child.metadata)))
        })
        .touched_objects()
}

fn controller_for(
    client: &Client,
    namespace: Option<&str>,
    caches: &mut Caches,
    exports: &ExportBook,
) -> Controller<BrowserSession> {
    let own = caches.own.clone();
    // Only our own children wake us: select them by the managed-by label.
    // Secrets are not watched: that would need list/watch on every Secret
    // in the cluster (and hold them in memory); a reconcile reads the
    // launch config Secret instead (see `apply`).
    let owned = || watcher::Config::default().labels(&children::managed_selector());
    // Creating one session makes five child events and a status update;
    // those that arrive within the debounce, or while its reconcile runs,
    // are folded into one more. The concurrency bound caps memory and API
    // pressure when a thousand sessions arrive at once.
    // No limit here: kube's runner, at its limit, parks the objects that
    // wait in a hash set and takes them in hash order, so in a burst some
    // waited for the whole burst (p99 19 s where p50 was 3 s). The limit is
    // a fair semaphore in `run_with` instead: first come, first reconciled.
    let config = controller::Config::default().debounce(RECONCILE_DEBOUNCE);
    // The sessions' own cache drops managed fields too: at 10,000 sessions
    // they are a good part of the operator's memory, and nothing reads them.
    let (reader, writer) = reflector::store();
    let sessions = watcher(api::<BrowserSession>(client, namespace), watcher::Config::default())
        .default_backoff()
        .modify(cache::slim)
        .reflect(writer)
        .try_filter(move |event| {
            let echo = matches!(event, Event::Apply(bs) if own.is_echo(
                &Key::status_of(bs),
                bs.meta().resource_version.as_deref(),
                || own.fingerprint(&session::as_reconciled(bs, bs.status.as_ref())),
            ));
            std::future::ready(!echo)
        })
        .applied_objects();
    let controller = Controller::for_stream(sessions, reader).with_config(config);
    let sessions = controller.store();
    let in_namespace = controller.store();
    // Unclaimed pool Pods are the pool's, not a session's: a mapper, not
    // `owns`, wakes the sessions waiting on their pool when one is ready.
    // Cached: a claim picks from them without a round trip.
    let warm = watcher::Config::default().labels(&format!("{POOL_LABEL},{POOL_STATE_LABEL}={POOL_STATE_WARM}"));
    let warm = cached_pods(api::<CachedPod>(client, namespace), warm, &mut caches.warm, None);
    // Pools wake nobody (a waiting session is woken by a ready Pod); they
    // are cached for the claims, which read the pool's template.
    let (pools, writer) = reflector::store();
    caches.pools.push(pools);
    let pools = watcher(api::<BrowserPool>(client, namespace), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .touched_objects();
    controller
        // The export watch wakes a session whose status should show its exporter's report.
        .reconcile_on(exports.wakes_for(namespace.map(str::to_owned)))
        .watches_stream(warm, move |pod: CachedPod| {
            claim::wake::sessions_to_wake(&pod.to_pod(), sessions.state().iter().map(|s| &**s))
        })
        .watches_stream(pools, |_: BrowserPool| std::iter::empty())
        .owns_stream(cached_pods(
            api::<CachedPod>(client, namespace),
            owned(),
            &mut caches.pods,
            Some(caches.own.clone()),
        ))
        .owns_stream(cached_metas(
            api::<PartialObjectMeta<ConfigMap>>(client, namespace),
            owned(),
            &mut caches.config_maps,
        ))
        .owns_stream(cached_metas(api::<PartialObjectMeta<Service>>(client, namespace), owned(), &mut caches.services))
        // A session's policy wakes its owner; the namespace's baseline, which
        // no session owns, wakes one session of its namespace, whose
        // reconcile ensures it: edited or deleted, it is back within seconds.
        .watches_stream(
            cached_metas(
                api::<PartialObjectMeta<NetworkPolicy>>(client, namespace),
                owned(),
                &mut caches.network_policies,
            ),
            move |policy: PartialObjectMeta<NetworkPolicy>| {
                let ns = policy.namespace().unwrap_or_default();
                let owner = policy
                    .owner_references()
                    .iter()
                    .find(|o| o.controller == Some(true) && o.kind == "BrowserSession")
                    .map(|o| ObjectRef::<BrowserSession>::new(&o.name).within(&ns));
                owner.or_else(|| {
                    (policy.name_any() == children::BASELINE_POLICY)
                        .then(|| in_namespace.find(|s| s.namespace().as_deref() == Some(ns.as_str())))
                        .flatten()
                        .map(|s| ObjectRef::from_obj(&*s))
                })
            },
        )
        .owns_stream(cached_metas(
            api::<PartialObjectMeta<PersistentVolumeClaim>>(client, namespace),
            owned(),
            &mut caches.claims,
        ))
}

/// Runs the controllers (one per listed namespace, or one cluster-wide)
/// until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, namespaces: &[String], shutdown: impl Future<Output = ()> + Send + 'static) {
    run_with(ctx, namespaces, shutdown, reconcile).await;
}

/// [`run`] with another reconcile function: tests wrap [`reconcile`] to
/// inject a fault; production uses [`run`]. Panics are caught either way.
pub async fn run_with<R, F>(
    ctx: Arc<Context>,
    namespaces: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
    reconciler: R,
) where
    R: Fn(Arc<BrowserSession>, Arc<Context>) -> F + Clone + Send + 'static,
    F: Future<Output = Result<Action>> + Send + 'static,
{
    let mut caches = Caches::new(ctx.own.clone());
    let controllers: Vec<_> = runtime::targets(namespaces)
        .iter()
        .map(|ns| controller_for(&ctx.client, ns.as_deref(), &mut caches, &ctx.exports))
        .collect();
    ctx.set_caches(caches);
    let stores: Vec<Store<BrowserSession>> = controllers.iter().map(Controller::store).collect();
    let slots = Arc::new(tokio::sync::Semaphore::new(usize::from(RECONCILE_CONCURRENCY)));
    let controllers = controllers
        .into_iter()
        .map(|c| {
            let (reconciler, slots, store) = (reconciler.clone(), slots.clone(), c.store());
            let in_turn = move |bs: Arc<BrowserSession>, ctx: Arc<Context>| {
                let (reconciler, slots, store) = (reconciler.clone(), slots.clone(), store.clone());
                // Only the key waits: a session changed meanwhile (a burst's
                // status writes) would otherwise stay in memory twice.
                let key = ObjectRef::from_obj(&*bs);
                let first = ctx.burst.is_first(bs.meta().uid.as_deref().unwrap_or_default(), bs.status.is_some());
                drop(bs);
                async move {
                    let _first = first.then(|| ctx.burst.begin());
                    // Never closed; were it, reconciling unbounded beats not at all.
                    let _slot = slots.acquire_owned().await.ok();
                    // The session as it is now, not as when it began to wait
                    // (gone meanwhile: its owner references clean up).
                    let Some(bs) = store.get(&key) else {
                        return Ok(Action::await_change());
                    };
                    // Boxed: every session waiting for a slot holds this
                    // future, whose size would otherwise include the whole
                    // reconcile's (measured: docs/operations.md).
                    Box::pin(reconciler(bs, ctx.clone())).await
                }
            };
            (c, in_turn)
        })
        .collect();
    info!(?namespaces, "starting the session controllers");
    // Beside the bookkeeping: both read the session caches and end with the controllers.
    let books = futures::future::join3(
        keep_books(stores.clone(), ctx.clone()),
        egress_watch::run(stores.clone(), ctx.clone()),
        export_watch::run(stores, ctx.clone()),
    );
    runtime::run(
        "session",
        controllers,
        ctx.clone(),
        async move {
            books.await;
        },
        shutdown,
    )
    .await;
}
