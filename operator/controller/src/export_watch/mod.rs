//! The export watch: every [`EVERY`], the operator reads the exporter
//! status of each Ready session with `spec.recording.export` (`GET /export`
//! on its runtime's readiness port, [`crate::runtime_reads`]), keeps it in
//! the [`ExportBook`], and wakes the session when its status does not show
//! it yet ([`crate::status::export::up_to_date`]): a new condition at once,
//! new counts at most every [`COUNTS_EVERY`].
//!
//! As for the egress watch: the Pods hold no API credentials, the session's
//! NetworkPolicy admits only the operator's Pods to that port, and every
//! read is bounded in time and size, [`CONCURRENCY`] at once.

pub mod book;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::ResourceExt as _;
use playpen_api::BrowserSession;

pub use book::ExportBook;

use crate::children::cluster_defaults::effective_export;
use crate::context::Context;
use crate::runtime_reads::{self, FetchError};
use crate::status::export::up_to_date;

/// How often the statuses are read: a failing upload shows on the session
/// within about this long after the exporter first fails.
pub const EVERY: Duration = Duration::from_secs(10);
/// How long a session's status may show older counts than its exporter's.
pub const COUNTS_EVERY: Duration = Duration::from_secs(120);
/// Statuses read at once.
pub const CONCURRENCY: usize = 16;

/// Runs until dropped (with the controllers), when the operator runs in
/// the cluster (its Pods are the ones the sessions admit); idle otherwise.
pub async fn run(stores: Vec<Store<BrowserSession>>, ctx: Arc<Context>) {
    if ctx.settings.egress.report_reader.is_none() {
        return std::future::pending().await;
    }
    loop {
        tokio::time::sleep(EVERY).await;
        round(&stores, &ctx).await;
    }
}

async fn round(stores: &[Store<BrowserSession>], ctx: &Context) {
    let exporting = |bs: &BrowserSession| effective_export(&bs.spec, &ctx.settings).is_some();
    let (targets, present) = runtime_reads::ready_targets(stores, ctx, exporting);
    let mut reads = futures::stream::iter(targets)
        .map(|t| async move {
            let status = runtime_reads::export_status(t.ip).await;
            (t, status)
        })
        .buffer_unordered(CONCURRENCY);
    while let Some((target, status)) = reads.next().await {
        let bs = &target.session;
        let uid = bs.uid().unwrap_or_default();
        match status {
            Ok(report) => {
                let stale = !up_to_date(bs.status.as_ref(), &report, Timestamp::now(), COUNTS_EVERY);
                ctx.exports.put(&uid, report);
                if stale {
                    ctx.exports.wake(ObjectRef::from_obj(&**bs));
                }
            }
            // The exporter has not written its first status yet.
            Err(FetchError::NotFound) => {}
            Err(error) => {
                tracing::debug!(session = %bs.name_any(), namespace = ?bs.namespace(), %error, "export status unread")
            }
        }
    }
    ctx.exports.retain(&present);
}
