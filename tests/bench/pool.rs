//! Warm-pool benchmark driver (run by `tests/bench/pool.sh`, not a test): on
//! the single-node cluster, in one run, sessions that claim a warm Pod from a
//! BrowserPool versus cold sessions on the same image and launch config:
//! create → Ready and create → first `playwright-cli goto` answered (through
//! `kubectl exec`, as an agent drives it), one at a time and in bursts;
//! pooled sessions with auth state (create → Ready and → its cookie
//! visible in the browser); the working set of an idle warm browser container (the
//! kubelet's own stats). Prints a table and the ratio cold / warm.
//!
//! Each round starts when the last round's Pods are gone and the pool is
//! full, and Ready is seen through a watch opened before the create: the
//! figures are the operator's, not the benchmark's teardown or polling.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL};
use playpen_api::v1alpha1::{BrowserPool, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, kubectl, quantile};
use serde_json::json;

const IMAGE: &str = "playpen/browser:dev";
const POOL: &str = "bench";
const PAGE: &str = "data:text/html,<title>bench</title>";

struct Bench {
    client: Client,
    ns: String,
    toleration: serde_json::Value,
}

/// One session's figures, in seconds since its create request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    ready: f64,
    driven: f64,
    claimed: bool,
}

fn launch_config() -> serde_json::Value {
    json!({"executablePath": "/usr/bin/chromium",
        "args": ["--disable-background-networking", "--disable-component-update"]})
}

impl Bench {
    fn sessions(&self) -> Api<BrowserSession> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn create_pool(&self, min_ready: usize) -> anyhow::Result<()> {
        let pool: BrowserPool = serde_json::from_value(json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": POOL},
            "spec": {"minReady": min_ready, "maxSize": min_ready,
                "template": {"image": IMAGE, "imagePullPolicy": "Never", "launchConfig": launch_config(),
                    "pod": {"tolerations": self.toleration}}}
        }))?;
        Api::<BrowserPool>::namespaced(self.client.clone(), &self.ns).create(&PostParams::default(), &pool).await?;
        Ok(())
    }

    /// Waits until the pool holds `n` ready Pods, saying what it waits for.
    async fn pool_full(&self, n: usize) -> anyhow::Result<()> {
        let pools: Api<BrowserPool> = Api::namespaced(self.client.clone(), &self.ns);
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let status = pools.get(POOL).await?.status.unwrap_or_default();
            if status.ready as usize >= n {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "waited 600 s for BrowserPool {POOL} to hold {n} ready Pods: ready {}, warming {}",
                    status.ready,
                    status.warming
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn create(&self, name: &str, spec: serde_json::Value) -> anyhow::Result<()> {
        self.sessions().create(&PostParams::default(), &fixtures::session(name, spec)?).await?;
        Ok(())
    }

    fn cold_spec(&self) -> serde_json::Value {
        json!({"image": IMAGE, "imagePullPolicy": "Never", "launchConfig": launch_config(),
            "pod": {"tolerations": self.toleration}})
    }

    /// Starts watching session `name` (before it is created, so that its
    /// Ready is seen the moment the API server has it, without polling
    /// load on the API server while the operator works); the watch ends at
    /// Ready with the Pod and whether it was claimed warm.
    fn watch_ready(&self, name: &str) -> tokio::task::JoinHandle<anyhow::Result<(Instant, String, bool)>> {
        let (api, name) = (self.sessions(), name.to_owned());
        tokio::spawn(async move {
            let ready = |bs: Option<&BrowserSession>| {
                bs.and_then(|b| b.status.as_ref()).is_some_and(|s| s.phase == Some(Phase::Ready))
            };
            let wait = kube::runtime::wait::await_condition(api, &name, ready);
            let seen = tokio::time::timeout(Duration::from_secs(300), wait)
                .await
                .with_context(|| format!("waited 300 s for session {name} to be Ready"))??;
            let at = Instant::now();
            let status = seen.and_then(|b| b.status).context("Ready without a status")?;
            let pod = status.pod_name.context("Ready without status.podName")?;
            Ok((at, pod, status.pool.is_some_and(|p| p.claimed)))
        })
    }

    /// Creates session `name` and waits for Ready: seconds from the create
    /// request, the Pod, whether it was claimed warm.
    async fn create_ready(&self, name: &str, spec: serde_json::Value) -> anyhow::Result<(f64, String, bool, Instant)> {
        let watch = self.watch_ready(name);
        // The watch's first list is answered before the clock starts.
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The watch holds the connection its list used; without a request
        // now the create would pay for a new TLS connection (30–40 ms
        // here), which is this client's cost, not the create's.
        self.sessions().get_opt(name).await?;
        let t0 = Instant::now();
        self.create(name, spec).await?;
        let (at, pod, claimed) = watch.await??;
        Ok((at.duration_since(t0).as_secs_f64(), pod, claimed, t0))
    }

    /// Waits until the Pods of earlier rounds are gone and the pool holds
    /// `n` ready Pods: a one-at-a-time claim is timed on a node that is not
    /// also tearing down the last round's browsers.
    async fn settled(&self, n: usize) -> anyhow::Result<()> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let listed = pods.list(&ListParams::default()).await?.items;
            let leaving: Vec<String> = listed
                .iter()
                .filter(|p| {
                    let warm = p.metadata.labels.as_ref().and_then(|l| l.get(POOL_STATE_LABEL)).map(String::as_str)
                        == Some("warm");
                    !warm || p.metadata.deletion_timestamp.is_some()
                })
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            if leaving.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                bail!("waited 300 s for the last round's Pods to go: {leaving:?} are still there");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.pool_full(n).await
    }

    async fn exec(&self, pod: &str, args: &[&str]) -> anyhow::Result<String> {
        let mut argv = vec!["exec", "-n", &self.ns, pod, "-c", "browser", "--"];
        argv.extend_from_slice(args);
        let out = kubectl::run(&argv).await?;
        if out.code != 0 {
            bail!("kubectl exec {pod} {args:?}: {}{}", out.stderr, out.stdout);
        }
        Ok(out.stdout)
    }

    /// Create → Ready → first goto answered, for one session of `spec`.
    async fn drive(&self, name: &str, spec: serde_json::Value) -> anyhow::Result<Sample> {
        let (ready, pod, claimed, t0) = self.create_ready(name, spec).await?;
        let out = self.exec(&pod, &["playwright-cli", "goto", PAGE]).await?;
        if !out.contains("Page Title: bench") {
            bail!("goto on {name} printed:\n{out}");
        }
        Ok(Sample { ready, driven: t0.elapsed().as_secs_f64(), claimed })
    }

    async fn delete_all(&self) -> anyhow::Result<()> {
        self.sessions().delete_collection(&DeleteParams::default(), &ListParams::default()).await?;
        Ok(())
    }

    /// `n` sessions created at once; each timed from its own create.
    async fn burst(&self, prefix: &str, n: usize, spec: serde_json::Value) -> anyhow::Result<Vec<Sample>> {
        let runs = (0..n).map(|i| {
            let spec = spec.clone();
            async move { self.drive(&format!("{prefix}-{i}"), spec).await }
        });
        futures::future::try_join_all(runs).await
    }

    /// The working set of an idle warm browser container, from the kubelet's summary.
    async fn warm_working_set(&self) -> anyhow::Result<Vec<f64>> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let warm = pods
            .list(&ListParams::default().labels(&format!("{POOL_LABEL}={POOL},{POOL_STATE_LABEL}=warm")))
            .await?
            .items;
        let node = Api::<Node>::all(self.client.clone()).list(&ListParams::default()).await?;
        let node = node.items.first().and_then(|n| n.metadata.name.clone()).context("no node")?;
        let raw = kubectl::run(&["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/stats/summary")]).await?;
        let summary: serde_json::Value =
            serde_json::from_str(&raw.stdout).context("the kubelet's stats summary through the API server")?;
        let mut sets = Vec::new();
        for pod in summary["pods"].as_array().into_iter().flatten() {
            let name = pod["podRef"]["name"].as_str().unwrap_or_default();
            if !warm.iter().any(|p| p.metadata.name.as_deref() == Some(name)) {
                continue;
            }
            for container in pod["containers"].as_array().into_iter().flatten() {
                if container["name"] == "browser" {
                    if let Some(bytes) = container["memory"]["workingSetBytes"].as_f64() {
                        sets.push(bytes / (1024.0 * 1024.0));
                    }
                }
            }
        }
        Ok(sets)
    }
}

fn percentiles(v: Vec<f64>) -> (f64, f64) {
    (quantile(&v, 0.5), quantile(&v, 0.99))
}

fn row(label: &str, samples: &[Sample]) -> (f64, f64) {
    let (ready50, ready99) = percentiles(samples.iter().map(|s| s.ready).collect());
    let (drive50, drive99) = percentiles(samples.iter().map(|s| s.driven).collect());
    let claimed = samples.iter().filter(|s| s.claimed).count();
    println!(
        "{label:<34} {:>4} {:>7} {ready50:>9.3} {ready99:>9.3} {drive50:>9.3} {drive99:>9.3}",
        samples.len(),
        claimed
    );
    (ready50, drive50)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench-pool N BURST NAMESPACE [TAINT_KEY]";
    let n: usize = args.get(1).context(usage)?.parse()?;
    let burst: usize = args.get(2).context(usage)?.parse()?;
    let ns = args.get(3).context(usage)?.clone();
    let toleration = match args.get(4) {
        Some(key) => json!([{"key": key, "operator": "Exists", "effect": "NoSchedule"}]),
        None => json!([]),
    };
    let bench = Bench { client: client().await?, ns, toleration };
    let pooled = json!({"pool": {"name": POOL}});

    bench.create_pool(burst.max(1)).await?;
    bench.pool_full(burst.max(1)).await?;
    // Settled: the warm browsers have sat idle since they turned Ready.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let idle = bench.warm_working_set().await?;

    // One at a time, interleaved so that both see the same machine load.
    let (mut warm, mut cold) = (Vec::new(), Vec::new());
    for i in 0..n {
        bench.settled(burst.max(1)).await?;
        warm.push(bench.drive(&format!("warm-{i}"), pooled.clone()).await?);
        cold.push(bench.drive(&format!("cold-{i}"), bench.cold_spec()).await?);
        eprintln!("round {i}: warm {:?} cold {:?}", warm[i], cold[i]);
        bench.delete_all().await?;
    }

    // Bursts: the pool refilled to `burst` ready Pods and the last round's Pods gone first.
    bench.settled(burst).await?;
    let warm_burst = bench.burst("wb", burst, pooled.clone()).await?;
    bench.delete_all().await?;
    bench.settled(burst).await?;
    let cold_burst = bench.burst("cb", burst, bench.cold_spec()).await?;
    bench.delete_all().await?;

    // Auth state: claimed like any other, loaded into the running browser; its cookie shows when it is.
    let state = json!({"cookies": [{"name": "bench", "value": "1", "domain": "bench.invalid", "path": "/",
        "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}], "origins": []});
    let secret: Secret = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "bench-auth"}, "stringData": {"state.json": state.to_string()}}))?;
    Api::<Secret>::namespaced(bench.client.clone(), &bench.ns).create(&PostParams::default(), &secret).await?;
    let mut authed = Vec::new();
    for i in 0..n.min(5) {
        bench.settled(burst.max(1)).await?;
        let name = format!("auth-{i}");
        let spec = json!({"pool": {"name": POOL}, "authState": {"secretRef": {"name": "bench-auth"}}});
        let (ready, pod, claimed, t0) = bench.create_ready(&name, spec).await?;
        loop {
            if bench.exec(&pod, &["playwright-cli", "cookie-list"]).await?.contains("bench.invalid") {
                break;
            }
            if t0.elapsed() > Duration::from_secs(120) {
                bail!("{name}: the auth state's cookie never showed");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        authed.push(Sample { ready, driven: t0.elapsed().as_secs_f64(), claimed });
        bench.delete_all().await?;
    }

    println!("\nWarm pool versus cold start, seconds from the create request (p50 / p99)\n");
    println!(
        "{:<34} {:>4} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "sessions", "n", "claimed", "Ready p50", "Ready p99", "goto p50", "goto p99"
    );
    let (warm_ready, warm_goto) = row("warm, one at a time", &warm);
    let (cold_ready, cold_goto) = row("cold, one at a time", &cold);
    let (warm_burst_ready, _) = row(&format!("warm, bursts of {burst}"), &warm_burst);
    let (cold_burst_ready, _) = row(&format!("cold, bursts of {burst}"), &cold_burst);
    println!(
        "{:<34} {:>4} {:>7} {:>9.3} {:>9.3} {:>9} {:>9}",
        "pooled + auth state",
        authed.len(),
        authed.iter().filter(|s| s.claimed).count(),
        percentiles(authed.iter().map(|s| s.ready).collect()).0,
        percentiles(authed.iter().map(|s| s.ready).collect()).1,
        "cookie:",
        format!("{:.3}", percentiles(authed.iter().map(|s| s.driven).collect()).0),
    );
    println!(
        "\ncold / warm: Ready {:.1}x, first goto {:.1}x; in bursts: Ready {:.1}x",
        cold_ready / warm_ready,
        cold_goto / warm_goto,
        cold_burst_ready / warm_burst_ready
    );
    let (idle50, _) = percentiles(idle.clone());
    let max = idle.iter().copied().fold(f64::NAN, f64::max);
    println!(
        "idle warm browser container working set: median {idle50:.0} MiB, max {max:.0} MiB over {} Pods",
        idle.len()
    );
    Ok(())
}
