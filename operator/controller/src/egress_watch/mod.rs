//! The egress watch: every [`EVERY`], the operator reads the egress report
//! of each Ready session with host rules (`GET /egress` on its runtime's
//! readiness port, [`crate::runtime_reads`]), publishes an `EgressRefused` Event when the
//! proxy refused new attempts (at most one per session per
//! [`ledger::EVENT_EVERY`], [`ledger`]) and sets the per-session gauge
//! `playpen_session_egress_connections{namespace,session,verdict,rule}`.
//!
//! Why the operator reads the Pods rather than the Pods writing to the API:
//! a browser Pod has no API credentials (the browser runs beside the
//! runtime, and a compromised one would hold them), and the Pods' own
//! NetworkPolicy admits only the operator's Pods to that one port
//! (`children::network`). Sessions without host rules have no proxy and
//! are not read. Reads run [`CONCURRENCY`] at once, each bounded in time
//! and size ([`crate::runtime_reads`]), so a silent or hostile Pod delays the round by at
//! most one exchange bound per slot and costs nobody else an Event.

pub mod ledger;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::ResourceExt as _;
use playpen_api::egress_report::EgressReport;
use playpen_api::BrowserSession;

use crate::children::egress_hosts::egress_hosts_config;
use crate::context::Context;
use crate::runtime::metrics::EgressLabels;
use crate::runtime_reads;
use ledger::Ledger;

/// How often the reports are read.
pub const EVERY: Duration = Duration::from_secs(60);
/// Reports read at once.
pub const CONCURRENCY: usize = 16;
/// The reason of the Event.
pub const EGRESS_REFUSED: &str = "EgressRefused";

/// Runs until dropped (with the controllers), when the operator runs in
/// the cluster (its Pods are the ones the sessions admit); idle otherwise.
pub async fn run(stores: Vec<Store<BrowserSession>>, ctx: Arc<Context>) {
    if ctx.settings.egress.report_reader.is_none() {
        return std::future::pending().await;
    }
    let mut ledger = Ledger::default();
    let mut series: HashMap<String, Vec<EgressLabels>> = HashMap::new();
    loop {
        tokio::time::sleep(EVERY).await;
        round(&stores, &ctx, &mut ledger, &mut series).await;
    }
}

async fn round(
    stores: &[Store<BrowserSession>],
    ctx: &Context,
    ledger: &mut Ledger,
    series: &mut HashMap<String, Vec<EgressLabels>>,
) {
    let hosts = |bs: &BrowserSession| egress_hosts_config(&bs.spec.network.egress, &ctx.settings.egress).is_some();
    let (targets, present) = runtime_reads::ready_targets(stores, ctx, hosts);
    let mut reads = futures::stream::iter(targets)
        .map(|t| async move {
            let report = runtime_reads::report(t.ip).await;
            (t, report)
        })
        .buffer_unordered(CONCURRENCY);
    while let Some((target, report)) = reads.next().await {
        let bs = &target.session;
        let uid = bs.uid().unwrap_or_default();
        match report {
            Ok(report) => {
                set_gauges(ctx, bs, &report, series.entry(uid.clone()).or_default());
                if let Some(note) = ledger.observe(&uid, &report, Instant::now()) {
                    ctx.metrics.egress_refused_events.inc();
                    ctx.publish(&**bs, EventType::Warning, EGRESS_REFUSED, note).await;
                }
            }
            Err(error) => {
                tracing::debug!(session = %bs.name_any(), namespace = ?bs.namespace(), %error, "egress report unread")
            }
        }
    }
    ledger.retain(&present);
    series.retain(|uid, labels| {
        let keep = present.contains(uid);
        if !keep {
            for label in labels.iter() {
                ctx.metrics.session_egress.remove(label);
            }
        }
        keep
    });
}

/// The session's gauge rows as `report` counts them; rows it no longer has go.
fn set_gauges(ctx: &Context, bs: &BrowserSession, report: &EgressReport, kept: &mut Vec<EgressLabels>) {
    let fresh: Vec<(EgressLabels, u64)> = report
        .rules
        .iter()
        .map(|row| {
            let labels = EgressLabels {
                namespace: bs.namespace().unwrap_or_default(),
                session: bs.name_any(),
                verdict: row.verdict.clone(),
                rule: row.rule.clone(),
            };
            (labels, row.connections)
        })
        .collect();
    for old in kept.iter() {
        if !fresh.iter().any(|(labels, _)| labels == old) {
            ctx.metrics.session_egress.remove(old);
        }
    }
    for (labels, n) in &fresh {
        ctx.metrics.session_egress.get_or_create(labels).set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    *kept = fresh.into_iter().map(|(labels, _)| labels).collect();
}
