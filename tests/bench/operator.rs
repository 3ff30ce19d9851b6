//! Benchmark driver (run by `tests/bench/operator.sh`, not a test): applies
//! N BrowserSessions to the real API server while a separately started
//! operator reconciles them, and prints a table.
//!
//! Baseline, measured in the same run: create → watch-event latency of a
//! plain ConfigMap, the floor any controller pays for one API round trip.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, TestNamespace};
use serde::de::DeserializeOwned;

type Seen = Arc<Mutex<HashMap<(String, String), Instant>>>;

/// Records when each object (kind, name) was first seen.
fn record<K>(api: Api<K>, kind: &'static str, labels: &str, seen: Seen) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let cfg = watcher::Config::default().labels(labels);
    tokio::spawn(async move {
        let stream = watcher(api, cfg).default_backoff().applied_objects();
        futures::pin_mut!(stream);
        while let Ok(Some(obj)) = stream.try_next().await {
            let key = (kind.to_owned(), obj.name_any());
            seen.lock().map(|mut s| s.entry(key).or_insert_with(Instant::now).to_owned()).ok();
        }
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

async fn scrape_reconciles(url: &str) -> anyhow::Result<f64> {
    let out = tokio::process::Command::new("curl").args(["-fsS", url]).output().await?;
    let text = String::from_utf8(out.stdout)?;
    text.lines()
        .find_map(|l| l.strip_prefix("playpen_reconciles_total "))
        .context("playpen_reconciles_total not in /metrics")?
        .trim()
        .parse()
        .context("parse reconciles")
}

fn peak_rss_mib(pid: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .context("VmHWM")?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kb / 1024.0)
}

/// Creates `count` objects with at most `concurrency` in flight; returns create instants by name.
/// Each future returns the object's name and the instant its create was sent.
async fn create_all<F, Fut>(count: usize, concurrency: usize, make: F) -> anyhow::Result<HashMap<String, Instant>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(String, Instant)>>,
{
    let results: Vec<anyhow::Result<(String, Instant)>> =
        futures::stream::iter(0..count).map(&make).buffer_unordered(concurrency).collect().await;
    results.into_iter().collect()
}

async fn wait_for(seen: &Seen, want: &[(String, String)], timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let missing = {
            let s = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
            want.iter().filter(|k| !s.contains_key(*k)).count()
        };
        if missing == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{missing} children still missing after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn latencies(created: &HashMap<String, Instant>, seen: &Seen, kinds: &[&str]) -> anyhow::Result<Vec<Duration>> {
    let s = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let mut out = Vec::with_capacity(created.len());
    for (name, t0) in created {
        let mut worst = Duration::ZERO;
        for kind in kinds {
            let child = match *kind {
                "Pod" => format!("{name}-browser"),
                "Secret" => format!("{name}-launch"),
                "ConfigMap" => format!("{name}-runtime"),
                "Service" => format!("{name}-view"),
                "NetworkPolicy" => format!("{name}-isolate"),
                _ => name.clone(),
            };
            let at = s.get(&((*kind).to_owned(), child)).context("child never seen")?;
            worst = worst.max(at.saturating_duration_since(*t0));
        }
        out.push(worst);
    }
    out.sort();
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let metrics_url = args.get(2).cloned().unwrap_or_else(|| "http://127.0.0.1:18081/metrics".into());
    let operator_pid = args.get(3).cloned().context("usage: bench-operator N METRICS_URL OPERATOR_PID [RATE]")?;
    // Sessions per second; 0 creates them as fast as possible (a burst).
    let rate: f64 = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(0.0);
    let concurrency = 32;
    let client: Client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "bench").await?;
    let n_ns = ns.name.clone();
    let seen: Seen = Arc::default();
    let managed = "app.kubernetes.io/managed-by=playpen-operator";
    let _watchers = [
        record(Api::<Pod>::namespaced(client.clone(), &n_ns), "Pod", managed, seen.clone()),
        record(Api::<Secret>::namespaced(client.clone(), &n_ns), "Secret", managed, seen.clone()),
        record(Api::<ConfigMap>::namespaced(client.clone(), &n_ns), "ConfigMap", managed, seen.clone()),
        record(Api::<Service>::namespaced(client.clone(), &n_ns), "Service", managed, seen.clone()),
        record(Api::<NetworkPolicy>::namespaced(client.clone(), &n_ns), "NetworkPolicy", managed, seen.clone()),
        record(
            Api::<ConfigMap>::namespaced(client.clone(), &n_ns),
            "Baseline",
            "playpen.dev/bench=baseline",
            seen.clone(),
        ),
    ];
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Baseline: plain ConfigMaps, same count and concurrency.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &n_ns);
    let base_start = Instant::now();
    let base_created = create_all(n, concurrency, |i| {
        let cms = cms.clone();
        async move {
            let name = format!("base-{i}");
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": name,
                "labels": {"playpen.dev/bench": "baseline"}}, "data": {"k": "v"}}))?;
            let sent = Instant::now();
            cms.create(&PostParams::default(), &cm).await?;
            Ok((name, sent))
        }
    })
    .await?;
    let want: Vec<_> = base_created.keys().map(|n| ("Baseline".to_owned(), n.clone())).collect();
    wait_for(&seen, &want, Duration::from_secs(120)).await?;
    let base_elapsed = base_start.elapsed();
    let base = latencies(&base_created, &seen, &["Baseline"])?;

    // Sessions.
    let before = scrape_reconciles(&metrics_url).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), &n_ns);
    let start = Instant::now();
    let created = create_all(n, concurrency, |i| {
        let sessions = sessions.clone();
        let due = (rate > 0.0).then(|| start + Duration::from_secs_f64(i as f64 / rate));
        async move {
            if let Some(due) = due {
                tokio::time::sleep_until(due.into()).await;
            }
            let name = format!("s{i}");
            let bs: BrowserSession = serde_json::from_value(serde_json::json!({"apiVersion": "playpen.dev/v1alpha1",
                "kind": "BrowserSession", "metadata": {"name": name}, "spec": {"image": "playpen/browser:bench"}}))?;
            let sent = Instant::now();
            sessions.create(&PostParams::default(), &bs).await?;
            Ok((name, sent))
        }
    })
    .await?;
    let kinds = ["Pod", "Secret", "ConfigMap", "Service", "NetworkPolicy"];
    let want: Vec<_> = created
        .keys()
        .flat_map(|name| {
            [
                ("Pod".to_owned(), format!("{name}-browser")),
                ("Secret".to_owned(), format!("{name}-launch")),
                ("ConfigMap".to_owned(), format!("{name}-runtime")),
                ("Service".to_owned(), format!("{name}-view")),
                ("NetworkPolicy".to_owned(), format!("{name}-isolate")),
            ]
        })
        .collect();
    wait_for(&seen, &want, Duration::from_secs(600)).await?;
    let elapsed = start.elapsed();
    // Let status writes settle, then count reconciles.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = scrape_reconciles(&metrics_url).await?;
    let lat = latencies(&created, &seen, &kinds)?;
    let rss = peak_rss_mib(&operator_pid)?;

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (p50, p99) = (percentile(&lat, 0.50), percentile(&lat, 0.99));
    let (b50, b99) = (percentile(&base, 0.50), percentile(&base, 0.99));
    println!();
    let arrival = if rate > 0.0 { format!("paced at {rate}/s") } else { "burst".to_owned() };
    println!("BrowserSessions: {n}, {arrival}, create concurrency {concurrency}");
    println!("{:<44} {:>12} {:>12} {:>10}", "measure", "sessions", "baseline", "ratio");
    println!(
        "{:<44} {:>12.1} {:>12.1} {:>10.2}",
        "create -> all children present, p50 (ms)",
        ms(p50),
        ms(b50),
        ms(p50) / ms(b50).max(0.001)
    );
    println!(
        "{:<44} {:>12.1} {:>12.1} {:>10.2}",
        "create -> all children present, p99 (ms)",
        ms(p99),
        ms(b99),
        ms(p99) / ms(b99).max(0.001)
    );
    println!(
        "{:<44} {:>12.2} {:>12.2} {:>10.2}",
        "wall time for all N (s)",
        elapsed.as_secs_f64(),
        base_elapsed.as_secs_f64(),
        elapsed.as_secs_f64() / base_elapsed.as_secs_f64()
    );
    println!("{:<44} {:>12.1}", "reconciles per second", (after - before) / elapsed.as_secs_f64());
    println!("{:<44} {:>12.0}", "reconciles in total", after - before);
    println!("{:<44} {:>12.1}", "operator peak RSS (MiB)", rss);
    println!();
    println!(
        "targets: p99 < 1000 ms, RSS < 100 MiB -> {}",
        if ms(p99) < 1000.0 && rss < 100.0 { "met" } else { "NOT met" }
    );
    Ok(())
}
