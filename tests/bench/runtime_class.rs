//! RuntimeClass benchmark driver (run by `tests/bench/runtime-class.sh`, not
//! a test): what a stronger sandbox costs a session, measured against the
//! node's default runtime (runc) in the same run, on the real node.
//!
//! For each RuntimeClass (the node's default first, the baseline):
//! - cold start: N sessions applied one at a time, apply → Ready, each
//!   deleted (and its Pod gone) before the next; the classes interleaved so
//!   both see the same machine load;
//! - warm claim: a pool of 2 warm Pods per class, M pooled sessions applied
//!   one at a time, apply → Ready (claimed in place), each deleted and the
//!   pool full again before the next;
//! - idle: K sessions per class, all at once, each Ready with the fixture
//!   page open, left alone to settle, then the working set and the CPU of
//!   their Pods (cgroup figures from the kubelet's summary API: for gVisor
//!   the sandbox's sentry and gofer, which hold the browser's memory) over
//!   a window in which both classes idle side by side.

#[path = "../e2e/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../e2e/setup.rs"]
#[allow(dead_code)]
mod setup;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL};
use playpen_api::v1alpha1::{BrowserPool, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, pod_is_ready, quantile};
use serde_json::json;

const IMAGE: &str = "playpen/browser:dev";
const POLL: Duration = Duration::from_millis(25);
/// Warm Pods per class's pool.
const WARM: usize = 2;

fn env_number(name: &str, default: u64) -> anyhow::Result<u64> {
    Ok(std::env::var(name).ok().map(|v| v.parse::<u64>()).transpose().context(name.to_owned())?.unwrap_or(default))
}

/// A RuntimeClass under test: `None` is the node's default runtime.
#[derive(Clone, Copy)]
struct Class<'a>(Option<&'a str>);

impl Class<'_> {
    fn label(&self) -> &str {
        self.0.unwrap_or("runc (default)")
    }

    /// The part of a name that tells the classes apart.
    fn tag(&self) -> &str {
        self.0.unwrap_or("runc")
    }

    fn pod_settings(&self) -> serde_json::Value {
        match self.0 {
            Some(class) => json!({"runtimeClassName": class}),
            None => json!({}),
        }
    }
}

struct Bench {
    client: Client,
    ns: String,
    node: String,
    fixture_url: String,
}

/// What one class measured.
#[derive(Debug, Default)]
struct Figures {
    cold: Vec<f64>,
    claim: Vec<f64>,
    working_set_mib: Vec<f64>,
    idle_millicores: Vec<f64>,
}

impl Bench {
    fn sessions(&self) -> Api<BrowserSession> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn browser(&self, class: Class) -> serde_json::Value {
        json!({"image": IMAGE, "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "pod": class.pod_settings(),
            "network": {"egress": {"allowPeers": [{"namespace": self.ns, "podLabels": {"app": "fixture"}}]}}})
    }

    async fn wait_ready(&self, name: &str, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let status = self.sessions().get(name).await?.status;
            if status.as_ref().and_then(|s| s.phase) == Some(Phase::Ready) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{name} not Ready within {within:?}: {:?}", status.map(|s| s.conditions).unwrap_or_default());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Applies `session`, waits for Ready; the seconds it took.
    async fn apply_until_ready(&self, session: BrowserSession) -> anyhow::Result<f64> {
        let name = session.metadata.name.clone().context("a named session")?;
        let t0 = Instant::now();
        self.sessions().create(&PostParams::default(), &session).await?;
        self.wait_ready(&name, Duration::from_secs(300)).await?;
        Ok(t0.elapsed().as_secs_f64())
    }

    /// Deletes session `name` and waits until Pod `pod` is gone.
    async fn delete_and_wait(&self, name: &str, pod: &str) -> anyhow::Result<()> {
        self.sessions().delete(name, &DeleteParams::default()).await?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let deadline = Instant::now() + Duration::from_secs(120);
        while pods.get_opt(pod).await?.is_some() {
            if Instant::now() > deadline {
                bail!("{pod} still there 120 s after session {name} was deleted");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    async fn cold_start(&self, class: Class<'_>, i: usize) -> anyhow::Result<f64> {
        let name = format!("cold-{}-{i}", class.tag());
        let took = self.apply_until_ready(fixtures::session(&name, self.browser(class))?).await?;
        self.delete_and_wait(&name, &format!("{name}-browser")).await?;
        Ok(took)
    }

    fn pool_name(class: Class) -> String {
        format!("warm-{}", class.tag())
    }

    async fn create_pool(&self, class: Class<'_>) -> anyhow::Result<()> {
        let pool: BrowserPool = serde_json::from_value(json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
            "metadata": {"name": Self::pool_name(class)},
            "spec": {"minReady": WARM, "template": self.browser(class)}
        }))?;
        Api::<BrowserPool>::namespaced(self.client.clone(), &self.ns).create(&PostParams::default(), &pool).await?;
        Ok(())
    }

    /// Waits until the class's pool has its warm Pods Ready.
    async fn pool_full(&self, class: Class<'_>) -> anyhow::Result<()> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let selector = format!("{POOL_LABEL}={},{POOL_STATE_LABEL}=warm", Self::pool_name(class));
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let warm = pods.list(&ListParams::default().labels(&selector)).await?.items;
            let ready = warm.iter().filter(|p| p.metadata.deletion_timestamp.is_none() && pod_is_ready(p)).count();
            if ready >= WARM {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("pool {} has {ready} of {WARM} warm Pods Ready after 300 s", Self::pool_name(class));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn claim(&self, class: Class<'_>, i: usize) -> anyhow::Result<f64> {
        self.pool_full(class).await?;
        let name = format!("claim-{}-{i}", class.tag());
        let session = fixtures::session(&name, json!({"pool": {"name": Self::pool_name(class)}}))?;
        let took = self.apply_until_ready(session).await?;
        let status = self.sessions().get(&name).await?.status.context("no status")?;
        if !status.pool.as_ref().is_some_and(|p| p.claimed) {
            bail!("{name} was not claimed from the warm pool: {:?}", status.conditions);
        }
        let pod = status.pod_name.context("no podName")?;
        self.delete_and_wait(&name, &pod).await?;
        Ok(took)
    }

    /// Starts `count` idle sessions of `class`, each with the fixture page open.
    async fn idle_fleet(&self, class: Class<'_>, count: usize) -> anyhow::Result<Vec<String>> {
        let names: Vec<String> = (0..count).map(|i| format!("idle-{}-{i}", class.tag())).collect();
        for name in &names {
            self.sessions().create(&PostParams::default(), &fixtures::session(name, self.browser(class))?).await?;
        }
        for name in &names {
            self.wait_ready(name, Duration::from_secs(600)).await?;
            let pod = format!("{name}-browser");
            let out = kubectl::kubectl(&[
                "exec",
                "-n",
                &self.ns,
                &pod,
                "-c",
                "browser",
                "--",
                "playwright-cli",
                "goto",
                &self.fixture_url,
            ])
            .await?;
            if !out.stdout.contains("Playpen fixture") {
                bail!("{name}: goto did not open the fixture page: {}{}", out.stdout, out.stderr);
            }
        }
        Ok(names.iter().map(|n| format!("{n}-browser")).collect())
    }

    /// `pod → (working set bytes, cumulative CPU core-nanoseconds)` of this
    /// namespace's Pods, from the kubelet's summary API.
    async fn pod_stats(&self) -> anyhow::Result<BTreeMap<String, (f64, f64)>> {
        let path = format!("/api/v1/nodes/{}/proxy/stats/summary", self.node);
        let out = kubectl::kubectl(&["get", "--raw", &path]).await?;
        if out.code != 0 {
            bail!("kubectl get --raw {path}: {}", out.stderr);
        }
        let summary: serde_json::Value = serde_json::from_str(&out.stdout)?;
        Ok(summary["pods"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["podRef"]["namespace"] == self.ns.as_str())
            .filter_map(|p| {
                let name = p["podRef"]["name"].as_str()?.to_owned();
                let ws = p["memory"]["workingSetBytes"].as_f64()?;
                let cpu = p["cpu"]["usageCoreNanoSeconds"].as_f64()?;
                Some((name, (ws, cpu)))
            })
            .collect())
    }
}

fn p50_p95(v: &[f64]) -> String {
    if v.is_empty() {
        return format!("{:>8} {:>8}", "-", "-");
    }
    format!("{:>8.2} {:>8.2}", quantile(v, 0.5), quantile(v, 0.95))
}

/// One measure of [`Figures`].
type Column = fn(&Figures) -> &Vec<f64>;

fn report(classes: &[Class], figures: &[Figures]) {
    println!("\nSessions by RuntimeClass on this node, same run (p50 / p95)\n");
    println!("{:<28} {:<22} {:>8} {:>8} {:>10}", "measure", "class", "p50", "p95", "vs runc");
    let rows: [(&str, Column); 4] = [
        ("cold start, apply → Ready s", |f| &f.cold),
        ("warm claim, apply → Ready s", |f| &f.claim),
        ("idle working set, MiB", |f| &f.working_set_mib),
        ("idle CPU, millicores", |f| &f.idle_millicores),
    ];
    for (label, values) in rows {
        let base = figures.first().map(|f| quantile(values(f), 0.5)).unwrap_or(f64::NAN);
        for (class, f) in classes.iter().zip(figures) {
            let v = values(f);
            let ratio = if v.is_empty() { f64::NAN } else { quantile(v, 0.5) / base };
            println!("{label:<28} {:<22} {} {:>9.2}x", class.label(), p50_p95(v), ratio);
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench-runtime-class NAMESPACE NODE RUNTIME_CLASS";
    let ns = args.get(1).context(usage)?.clone();
    let node = args.get(2).context(usage)?.clone();
    let other = args.get(3).context(usage)?.clone();
    let cold_n = env_number("PLAYPEN_BENCH_COLD", 5)? as usize;
    let claim_n = env_number("PLAYPEN_BENCH_CLAIMS", 5)? as usize;
    let idle_n = env_number("PLAYPEN_BENCH_IDLE", 3)? as usize;
    let settle = Duration::from_secs(env_number("PLAYPEN_BENCH_SETTLE", 30)?);
    let window = Duration::from_secs(env_number("PLAYPEN_BENCH_WINDOW", 60)?);
    let client = client().await?;
    let fixture_url = setup::start_fixture(&client, &ns, "fixture").await.context("the fixture page server")?;
    let bench = Bench { client, ns, node, fixture_url };
    let classes = [Class(None), Class(Some(other.as_str()))];
    let mut figures: Vec<Figures> = classes.iter().map(|_| Figures::default()).collect();
    let outcome = measure(&bench, &classes, &mut figures, (cold_n, claim_n, idle_n), settle, window).await;
    // What was measured before a failure is still worth printing.
    report(&classes, &figures);
    outcome
}

async fn measure(
    bench: &Bench,
    classes: &[Class<'_>],
    figures: &mut [Figures],
    (cold_n, claim_n, idle_n): (usize, usize, usize),
    settle: Duration,
    window: Duration,
) -> anyhow::Result<()> {
    for i in 0..cold_n {
        for (class, f) in classes.iter().zip(figures.iter_mut()) {
            let took =
                bench.cold_start(*class, i).await.with_context(|| format!("cold start under {}", class.label()))?;
            eprintln!("runtime-class: cold {} #{i}: {took:.2} s", class.label());
            f.cold.push(took);
        }
    }
    for class in classes {
        bench.create_pool(*class).await?;
    }
    for i in 0..claim_n {
        for (class, f) in classes.iter().zip(figures.iter_mut()) {
            let took = bench.claim(*class, i).await.with_context(|| format!("claim under {}", class.label()))?;
            eprintln!("runtime-class: claim {} #{i}: {took:.2} s", class.label());
            f.claim.push(took);
        }
    }
    let pools: Api<BrowserPool> = Api::namespaced(bench.client.clone(), &bench.ns);
    for class in classes {
        pools.delete(&Bench::pool_name(*class), &DeleteParams::default()).await?;
    }
    let mut fleets = Vec::new();
    for class in classes {
        fleets.push(bench.idle_fleet(*class, idle_n).await?);
    }
    eprintln!("runtime-class: {idle_n} idle sessions per class Ready with a page open; settling {settle:?}");
    tokio::time::sleep(settle).await;
    let before = bench.pod_stats().await?;
    tokio::time::sleep(window).await;
    let after = bench.pod_stats().await?;
    for (fleet, f) in fleets.iter().zip(figures.iter_mut()) {
        for pod in fleet {
            let ((_, cpu0), (ws, cpu1)) = match (before.get(pod), after.get(pod)) {
                (Some(b), Some(a)) => (*b, *a),
                _ => bail!("no kubelet stats for {pod}"),
            };
            f.working_set_mib.push(ws / 1048576.0);
            f.idle_millicores.push((cpu1 - cpu0) / window.as_secs_f64() / 1e6);
        }
    }
    Ok(())
}
