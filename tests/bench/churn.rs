//! Benchmark driver (run by `tests/bench/churn.sh`, not a test): the
//! operator's memory under churn. N BrowserSessions (default 10,000) are
//! created and deleted in batches against the real API server, each refused
//! a child (a ResourceQuota admits only the namespace's baseline policy), so
//! every per-object record of the operator fills: the record of its own
//! writes, failing streaks, burst deferrals, the namespace's baseline. At
//! every tenth of the run, once the batch is gone and the garbage collector
//! has deleted its children too (it lags under churn, and the operator's
//! watches rightly hold what still exists), it prints the operator's
//! resident set and its `playpen_tracked_objects` gauges. The verdict reads
//! the second half of the run (same process): a leak grows with every
//! cycle, while the allocator's arenas and the watch caches grow only
//! while they warm up.
//!
//! Environment (tests/bench/churn.sh sets them): `PLAYPEN_BENCH_OPERATOR`
//! the release binary; `PLAYPEN_BENCH_METRICS_ADDR` its /metrics address;
//! `PLAYPEN_BENCH_OPERATOR_LOG`; `PLAYPEN_BENCH_PIDFILE`;
//! `PLAYPEN_BENCH_NAMESPACE` (playpen-bench-churn, labelled
//! `playpen.dev/bench=churn`); `PLAYPEN_BENCH_END_WITH_SIGKILL=1` ends the
//! operator with SIGKILL instead of a clean stop, so a heap profiler lists
//! what it still held after the last batch was gone as "leaked".

#[path = "operator/process.rs"]
#[allow(dead_code)]
mod process;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams, PostParams};
use kube::Client;
use playpen_api::naming::SESSION_LABEL;
use playpen_api::BrowserSession;
use playpen_tests::{churn_batch, client, ensure_crd, eventually, http_get, one_network_policy_quota};
use serde_json::json;

use process::{Launch, Operator};

/// Sessions created (then deleted) at once.
const BATCH: usize = 50;
/// The records `playpen_tracked_objects` counts.
const RECORDS: [&str; 4] = ["own_writes", "deferred", "failing", "baselines"];
/// The resident set may grow this much over the second half of the run
/// and still count as flat (a shared machine's noise).
const FLAT: f64 = 1.10;

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

/// How many of the deleted sessions' children the API server still holds
/// (the garbage collector deletes them after their sessions, and under
/// churn it lags: the operator's watches rightly keep what still exists).
async fn children_left(client: &Client, ns: &str) -> anyhow::Result<usize> {
    let by_session = ListParams::default().labels(SESSION_LABEL);
    Ok(Api::<Pod>::namespaced(client.clone(), ns).list_metadata(&by_session).await?.items.len()
        + Api::<ConfigMap>::namespaced(client.clone(), ns).list_metadata(&by_session).await?.items.len()
        + Api::<Service>::namespaced(client.clone(), ns).list_metadata(&by_session).await?.items.len()
        + Api::<NetworkPolicy>::namespaced(client.clone(), ns).list_metadata(&by_session).await?.items.len())
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
    println!(
        "| sessions | elapsed s | children left, then s until collected | RSS MiB | RSS / first row | {} |",
        RECORDS.join(" | ")
    );
    println!("|---:|---:|---:|---:|---:|{}", "---:|".repeat(RECORDS.len()));
    let mut first_rss = None;
    // The resident set at each row, and the last row's records.
    let mut rows: Vec<f64> = Vec::new();
    let mut last_records = vec![];
    for start in (0..cycles).step_by(BATCH) {
        let names: Vec<String> = (start..(start + BATCH).min(cycles)).map(|i| format!("c{i}")).collect();
        churn_batch(&sessions, &names, &json!({"image": "playpen/browser:bench"}), Duration::from_secs(120)).await?;
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
            // What the operator holds once every child is gone too.
            let (left, collecting) = (children_left(&client, &ns).await?, Instant::now());
            eventually(Duration::from_secs(600), || async {
                let n = children_left(&client, &ns).await?;
                ensure!(n == 0, "{n} children of deleted sessions still there");
                Ok(())
            })
            .await?;
            let rss = op.rss_mib()?;
            let first = *first_rss.get_or_insert(rss);
            let cells: Vec<String> = records.iter().map(i64::to_string).collect();
            println!(
                "| {done} | {:.0} | {left}, {:.0} | {rss:.1} | {:.2} | {} |",
                started.elapsed().as_secs_f64(),
                collecting.elapsed().as_secs_f64(),
                rss / first,
                cells.join(" | ")
            );
            rows.push(rss);
            last_records = records;
        }
    }
    if env("PLAYPEN_BENCH_END_WITH_SIGKILL").is_some() {
        op.kill().await?;
    } else {
        op.stop().await?;
    }
    let half = rows.get(rows.len().saturating_sub(1) / 2).copied().unwrap_or_default();
    let end = rows.last().copied().unwrap_or_default();
    let growth = if half > 0.0 { end / half } else { 0.0 };
    let held: i64 = last_records.iter().sum();
    println!(
        "\nverdict: resident set {end:.1} MiB at the end, {growth:.2}x the middle row's {half:.1} MiB (flat below \
         {FLAT}x): {}; records at the end {last_records:?}: {}",
        if growth <= FLAT { "flat" } else { "GROWS" },
        if held == 0 { "back to their start" } else { "HELD" }
    );
    Ok(())
}
