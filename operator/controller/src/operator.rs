//! The whole operator as one future: HTTP endpoints, leader election and
//! the controllers, which run only while this replica leads.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;
use tracing::info;

use crate::children::Settings;
use crate::controller::{self, Context};
use crate::http::{self, Health};
use crate::pool;
use crate::recovery::RecoveryBudget;
use crate::room::{self, Room};
use crate::runtime::leader::{self, Fence, LeaseConfig};
use crate::runtime::metrics::Metrics;
use crate::snapshot;

/// Everything `run` needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Namespaces to watch; empty means all.
    pub namespaces: Vec<String>,
    /// Session settings.
    pub settings: Settings,
    /// Where `/metrics`, `/healthz` and `/readyz` listen.
    pub http_addr: SocketAddr,
    /// Leader election; `None` runs the controllers unconditionally.
    pub lease: Option<LeaseConfig>,
    /// Event reporter name.
    pub reporter: String,
    /// How failed browser Pods are replaced.
    pub recovery: RecoveryBudget,
}

/// A running operator's handles (for tests and `main`).
#[derive(Debug, Clone)]
pub struct Handles {
    /// Metrics, to read counts in tests.
    pub metrics: Arc<Metrics>,
    /// Where the HTTP endpoints listen.
    pub http_addr: SocketAddr,
}

/// Starts the operator; returns its handles and the future that runs it.
pub async fn start(
    client: Client,
    config: Config,
) -> std::io::Result<(Handles, impl std::future::Future<Output = ()>)> {
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health::default());
    let (http_addr, serving) = http::serve(config.http_addr, metrics.clone(), health.clone()).await?;
    let handles = Handles { metrics: metrics.clone(), http_addr };
    let fence = if config.lease.is_some() { Fence::closed() } else { Fence::unconditional() };
    let room = Arc::new(Room::default());
    let ctx = Arc::new(
        Context::new(client.clone(), config.settings.clone(), metrics.clone(), &config.reporter)
            .with_fence(fence.clone())
            .with_recovery(config.recovery)
            .with_room(room.clone()),
    );
    let pool_ctx = Arc::new(
        pool::Context::new(client.clone(), config.settings.clone(), metrics.clone(), &config.reporter, fence.clone())
            .with_room(room),
    );
    let run = async move {
        // Guards: dropping this future (a test stopping the operator) ends
        // every task it spawned, including the Lease renewals.
        let _http = AbortOnDropHandle::new(tokio::spawn(async move {
            if let Err(error) = serving.await {
                tracing::error!(%error, "HTTP endpoints stopped");
            }
        }));
        let (leading_tx, mut leading) = watch::channel(config.lease.is_none());
        let elector = config.lease.clone().map(|lease| {
            AbortOnDropHandle::new(tokio::spawn(leader::run(client.clone(), lease, leading_tx.clone(), fence.clone())))
        });
        // Held for the whole run: a closed channel would read as "lost".
        let _leading_tx = leading_tx;
        health.ready.store(true, Ordering::Relaxed);
        loop {
            // Stand by until we lead.
            if leading.wait_for(|l| *l).await.is_err() {
                break;
            }
            metrics.leader.set(1);
            info!("leading: starting controllers");
            let lost = |mut leading: watch::Receiver<bool>| async move {
                let _ = leading.wait_for(|l| !*l).await;
            };
            // The room loop has no end of its own: it stops with the controllers.
            let making_room = AbortOnDropHandle::new(tokio::spawn(room::run(ctx.clone())));
            futures::join!(
                controller::run(ctx.clone(), &config.namespaces, lost(leading.clone())),
                pool::run(pool_ctx.clone(), &config.namespaces, lost(leading.clone())),
                snapshot::run(ctx.clone(), &config.namespaces, lost(leading.clone())),
            );
            drop(making_room);
            metrics.leader.set(0);
            if elector.is_none() {
                break;
            }
            info!("lost leadership: controllers stopped");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    Ok((handles, run))
}
