//! Benchmark driver (run by `tests/bench/churn.sh`, not a test): the
//! operator's memory under churn. N BrowserSessions (default 10,000) are
//! created and deleted in batches against the real API server, each refused
//! a child (a ResourceQuota admits only the namespace's baseline policy), so
//! every per-object record of the operator fills: written statuses, failing
//! streaks, burst deferrals, the namespace's baseline. At every tenth of
//! the run, once the batch is gone, it prints the operator's resident set
//! and its `playpen_tracked_objects` gauges; the verdict compares the last
//! row's resident set with the first's (same run, same process).
//!
//! Environment (tests/bench/churn.sh sets them): `PLAYPEN_BENCH_OPERATOR`
//! the release binary; `PLAYPEN_BENCH_METRICS_ADDR` its /metrics address;
//! `PLAYPEN_BENCH_OPERATOR_LOG`; `PLAYPEN_BENCH_PIDFILE`;
//! `PLAYPEN_BENCH_NAMESPACE` (playpen-bench-churn, labelled
//! `playpen.dev/bench=churn`).

#[path = "operator/process.rs"]
#[allow(dead_code)]
mod process;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, eventually, http_get, one_network_policy_quota};
use serde_json::json;

use process::{Launch, Operator};

/// Sessions created (then deleted) at once.
const BATCH: usize = 50;
/// The records `playpen_tracked_objects` counts.
const RECORDS: [&str; 4] = ["written", "deferred", "failing", "baselines"];
/// The resident set may grow this much from the first row to the last
/// (allocator arenas and caches settle) and still count as flat.
const FLAT: f64 = 1.25;

/// The operator's `playpen_tracked_objects` gauges, in [`RECORDS`] order.
async fn tracked(op: &Operator) -> anyhow::Result<Vec<i64>> {
    let (code, text) = http_get(op.addr(), "/metrics").await?;
    ensure!(code == 200, "the operator's /metrics answered {code}");
    RECORDS
        .iter()
        .map(|record| {
            let series = format!("playpen_tracked_objects{{record=\"{record}\"}} ");
            let line = text.lines().find_map(|l| l.strip_prefix(&series)).with_context(|| format!("no {series}"))?;
            Ok(line.trim().parse()?)
        })
        .collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let cycles: usize = std::env::args().nth(1).map(|s| s.parse()).transpose().context("N")?.unwrap_or(10_000);
    let ns = env("PLAYPEN_BENCH_NAMESPACE").unwrap_or_else(|| "playpen-bench-churn".into());
    let launch = Launch {
        binary: env("PLAYPEN_BENCH_OPERATOR")
            .context("PLAYPEN_BENCH_OPERATOR is not set: run tests/bench/churn.sh")?
            .into(),
        namespace: ns.clone(),
        addr: env("PLAYPEN_BENCH_METRICS_ADDR").unwrap_or_else(|| "127.0.0.1:18083".into()).parse()?,
        log: env("PLAYPEN_BENCH_OPERATOR_LOG").unwrap_or_else(|| "bench-churn-operator.log".into()).into(),
        pidfile: env("PLAYPEN_BENCH_PIDFILE").map(Into::into),
    };
    let client = client().await?;
    ensure_crd(&client).await?;
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns,
        "labels": {"playpen.dev/bench": "churn"}}}))?;
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await?;
    one_network_policy_quota(&client, &ns).await?;
    let op = Operator::start(&launch).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), &ns);
    let started = Instant::now();
    let every = (cycles / 10).max(BATCH);
    println!("| sessions | elapsed s | RSS MiB | RSS / first row | {} |", RECORDS.join(" | "));
    println!("|---:|---:|---:|---:|{}", "---:|".repeat(RECORDS.len()));
    let mut first_rss = None;
    let mut last = (0.0, vec![]);
    for start in (0..cycles).step_by(BATCH) {
        let names: Vec<String> = (start..(start + BATCH).min(cycles)).map(|i| format!("c{i}")).collect();
        for name in &names {
            let bs: BrowserSession = serde_json::from_value(json!({
                "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
                "metadata": {"name": name}, "spec": {"image": "playpen/browser:bench"}}))?;
            sessions.create(&PostParams::default(), &bs).await?;
        }
        eventually(Duration::from_secs(120), || async {
            for name in &names {
                ensure!(sessions.get(name).await?.status.is_some(), "{name} has no status yet");
            }
            Ok(())
        })
        .await?;
        for name in &names {
            sessions.delete(name, &DeleteParams::default()).await?;
        }
        let done = start + names.len();
        if done.is_multiple_of(every) || done == cycles {
            // The batch gone, its records swept (every 5 s).
            let records = eventually(Duration::from_secs(60), || async {
                let records = tracked(&op).await?;
                ensure!(records.iter().all(|&n| n == 0), "records still held: {records:?}");
                Ok(records)
            })
            .await
            .unwrap_or_default();
            let rss = op.rss_mib()?;
            let first = *first_rss.get_or_insert(rss);
            let cells: Vec<String> = records.iter().map(i64::to_string).collect();
            println!(
                "| {done} | {:.0} | {rss:.1} | {:.2} | {} |",
                started.elapsed().as_secs_f64(),
                rss / first,
                cells.join(" | ")
            );
            last = (rss / first, records);
        }
    }
    op.stop().await?;
    let (growth, records) = last;
    let held: i64 = records.iter().sum();
    println!(
        "\nverdict: resident set {:.2}x the first row's (flat below {FLAT}x): {}; records at the end {records:?} \
         {}",
        growth,
        if growth <= FLAT { "flat" } else { "GROWS" },
        if held == 0 { "back to their start" } else { "HELD" }
    );
    Ok(())
}
