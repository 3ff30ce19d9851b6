//! The room loop: reads the session controller's caches, asks [`plan`] which
//! warm Pods go, deletes them, and publishes how many sessions wait. Quiet
//! while nobody waits (a reconcile that sees a Pod wait wakes it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::events::EventType;
use tracing::{info, warn};

use super::plan::{self, Ledger, Pick, Reason, WaitingPod, WarmPod};
use crate::cache::CachedPod;
use crate::context::Context;

/// How often the loop looks while sessions wait.
const WHILE_WAITING: Duration = Duration::from_secs(2);
/// How often it looks otherwise (a missed wake-up costs at most this).
const WHILE_QUIET: Duration = Duration::from_secs(30);

/// Runs until dropped (the operator drops it with the controllers when it
/// stops leading).
pub async fn run(ctx: Arc<Context>) {
    let mut ledger = Ledger::default();
    loop {
        let waited = round(&ctx, &mut ledger).await;
        let pause = if waited { WHILE_WAITING } else { WHILE_QUIET };
        tokio::select! {
            () = ctx.room.wake.notified() => {}
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// One look; whether any session waits.
async fn round(ctx: &Context, ledger: &mut Ledger) -> bool {
    let caches = ctx.caches();
    let waiting: Vec<WaitingPod> = caches
        .pods
        .filter(CachedPod::refused_by_scheduler)
        .iter()
        .filter_map(|p| WaitingPod::of(&p.to_pod()))
        .collect();
    let warm: Vec<WarmPod> = caches.warm.filter(|_| true).iter().filter_map(|p| WarmPod::of(&p.to_pod())).collect();
    let now = Instant::now();
    ledger.update(&waiting, &warm, now);
    ctx.room.set_waiting(waiting.len());
    ctx.metrics.sessions_waiting_for_room.set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    for pick in plan::plan(&waiting, &warm, ledger, now) {
        let pod = &warm[pick.warm];
        match delete(ctx, pod).await {
            Ok(true) => {
                if let Reason::MakesRoomFor(uid) = &pick.reason {
                    ledger.give(uid, &pod.uid);
                }
                yielded(ctx, &caches, pod, &pick, &waiting).await;
            }
            // Claimed or gone meanwhile: the next round sees it as it is.
            Ok(false) => {}
            Err(error) => {
                warn!(pod = %pod.name, namespace = %pod.namespace, %error, "could not delete a warm Pod to make room")
            }
        }
    }
    !waiting.is_empty()
}

/// Deletes `pod` if it is still as cached; `false` when it changed or is gone.
async fn delete(ctx: &Context, pod: &WarmPod) -> Result<bool, kube::Error> {
    // Not while another replica may lead: a deletion is a write like any.
    let Ok(api) = ctx.fence.writer::<Pod>(&ctx.client, &pod.namespace) else { return Ok(false) };
    let preconditions = Preconditions { uid: Some(pod.uid.clone()), resource_version: pod.resource_version.clone() };
    match api.delete(&pod.name, &DeleteParams { preconditions: Some(preconditions), ..DeleteParams::default() }).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Logs, counts and announces on the pool a yielded Pod. The Event names
/// the session only when it is in the pool's namespace: a pool's readers
/// need not learn other tenants' session names.
async fn yielded(ctx: &Context, caches: &crate::cache::Caches, pod: &WarmPod, pick: &Pick, waiting: &[WaitingPod]) {
    ctx.metrics.warm_pods_yielded.inc();
    let note = match &pick.reason {
        Reason::Competes => {
            info!(pod = %pod.name, namespace = %pod.namespace, "deleted an unscheduled warm Pod: sessions wait for room");
            format!("deleted warm Pod {}, not yet on a node: sessions wait for room and come first", pod.name)
        }
        Reason::MakesRoomFor(uid) => {
            let session = waiting.iter().find(|w| &w.uid == uid);
            let (ns, name) = session.map_or(("", ""), |w| (w.namespace.as_str(), w.name.as_str()));
            info!(pod = %pod.name, namespace = %pod.namespace, for_namespace = ns, for_pod = name, "deleted a warm Pod to make room for a session");
            let whose = if ns == pod.namespace { format!("the session Pod {name}") } else { "a session".to_owned() };
            format!("deleted warm Pod {} to make room for {whose}, which did not fit on any node; the pool refills once no session waits", pod.name)
        }
    };
    let Some(pool) = caches.pools.get(&pod.namespace, &pod.pool) else { return };
    let reference: ObjectReference = kube::Resource::object_ref(&*pool, &());
    ctx.publish_about(&reference, EventType::Normal, "WarmPodYielded", note).await;
}
