//! The operator's per-object records follow what exists: sessions created
//! and deleted in numbers (each refused a child, so every record fills:
//! the record of its own writes, failing streaks, the namespace's baseline) leave
//! nothing behind once gone. `PLAYPEN_CHURN_CYCLES` sets how many (200 by
//! default; 10000 for the long run the issue asks for).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use kube::api::Api;
use playpen_api::BrowserSession;
use playpen_operator::runtime::metrics::{Metrics, TrackedLabels};
use playpen_tests::{churn_batch, client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::one_network_policy_quota;

const RECORDS: [&str; 4] = ["own_writes", "deferred", "failing", "baselines"];

fn tracked(metrics: &Metrics, record: &str) -> i64 {
    metrics.tracked.get_or_create(&TrackedLabels { record: record.to_owned() }).get()
}

#[tokio::test]
async fn records_of_sessions_go_with_them() -> anyhow::Result<()> {
    let cycles: usize = std::env::var("PLAYPEN_CHURN_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "churn").await?;
    let n = ns.name.as_str();
    // Every session's own policy is refused, so each one also fails (and is
    // retried) while it lives.
    one_network_policy_quota(&client, n).await?;
    let op = RunningOperator::start(&client, n, None).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    // The records' largest sizes, sampled while the sessions come and go.
    let peak: Arc<[AtomicI64; 4]> = Arc::default();
    let sampler = {
        let (metrics, peak) = (op.handles.metrics.clone(), peak.clone());
        tokio::spawn(async move {
            loop {
                for (i, record) in RECORDS.iter().enumerate() {
                    peak[i].fetch_max(tracked(&metrics, record), Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    const BATCH: usize = 20;
    for start in (0..cycles).step_by(BATCH) {
        let names: Vec<String> = (start..(start + BATCH).min(cycles)).map(|i| format!("c{i}")).collect();
        churn_batch(&sessions, &names, &json!({"image": "playpen/browser:test"}), Duration::from_secs(60)).await?;
    }
    // Filled at some point, or the test proves nothing.
    eventually(Duration::from_secs(10), || async {
        let peak: Vec<i64> = peak.iter().map(|p| p.load(Ordering::Relaxed)).collect();
        ensure!(peak[2] > 0 && peak[3] > 0, "the failing and baseline records never filled: {peak:?}");
        Ok(())
    })
    .await?;
    sampler.abort();
    let peak: Vec<i64> = peak.iter().map(|p| p.load(Ordering::Relaxed)).collect();
    eprintln!(
        "churn: {cycles} sessions; the records at their largest: {:?}",
        RECORDS.iter().zip(peak).collect::<Vec<_>>()
    );
    let metrics = &op.handles.metrics;
    eventually(Duration::from_secs(60), || async {
        let left: Vec<(&str, i64)> =
            RECORDS.iter().map(|r| (*r, tracked(metrics, r))).filter(|(_, n)| *n != 0).collect();
        ensure!(left.is_empty(), "records left after every session went: {left:?}");
        Ok(())
    })
    .await
}
