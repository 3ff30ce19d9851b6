//! Density benchmark driver (run by `tests/bench/density.sh`, not a test):
//! what idle sessions cost the real node, and whether a new one still
//! starts fast beside them.
//!
//! For each step N (0 first: the baseline, measured in the same run): the
//! idle fleet is grown to N Ready sessions, each with the fixture page open
//! (`playwright-cli goto`), then left alone to settle; the node's busy CPU
//! is read from `/proc/stat` over a window, split by process group, and the
//! fleet's working set from the kubelet's summary API. Then cold sessions
//! are created one at a time beside the fleet, create → Ready timed by a
//! poll of their status, each deleted (and its Pod gone) before the next.
//! Per-session figures are the step's minus the baseline's, over N.
//!
//! A step `fill` grows the fleet to what the browser containers' CPU request
//! admits on the node, less one, so that the cold sessions take the last
//! place.

#[path = "../e2e/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "density/node_cpu.rs"]
mod node_cpu;
#[path = "../e2e/setup.rs"]
#[allow(dead_code)]
mod setup;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, quantile};
use serde_json::json;

const IMAGE: &str = "playpen/browser:dev";
const POLL: Duration = Duration::from_millis(50);

fn env_secs(name: &str, default: u64) -> anyhow::Result<Duration> {
    let value = std::env::var(name).ok().map(|v| v.parse::<u64>()).transpose().context(name.to_owned())?;
    Ok(Duration::from_secs(value.unwrap_or(default)))
}

struct Bench {
    client: Client,
    ns: String,
    fixture_url: String,
    node: String,
    cores: f64,
}

/// One step's figures.
#[derive(Debug, Default)]
struct Step {
    sessions: usize,
    busy_cores: f64,
    groups: BTreeMap<&'static str, f64>,
    working_set_mib: f64,
    cold: Vec<f64>,
    /// The busiest processes of no group (cores), for a look at what "other" is.
    others: Vec<(String, f64)>,
}

impl Bench {
    fn session(&self, name: &str) -> anyhow::Result<BrowserSession> {
        fixtures::session(
            name,
            json!({"image": IMAGE, "imagePullPolicy": "Never",
                "launchConfig": {"executablePath": "/usr/bin/chromium",
                    "args": ["--disable-background-networking", "--disable-component-update"]},
                "network": {"egress": {"allowPeers": [{"namespace": self.ns, "podLabels": {"app": "fixture"}}]}}}),
        )
    }

    fn sessions(&self) -> Api<BrowserSession> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn wait_ready(&self, name: &str, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let status = self.sessions().get(name).await?.status;
            if status.as_ref().and_then(|s| s.phase) == Some(Phase::Ready) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let conditions = status.map(|s| s.conditions).unwrap_or_default();
                bail!("{name} not Ready within {within:?}: {conditions:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn kubectl(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = kubectl::kubectl(args).await?;
        if out.code != 0 {
            bail!("kubectl {args:?}: {}", out.stderr);
        }
        Ok(out.stdout)
    }

    /// Grows the idle fleet to `n` sessions, each Ready with the fixture open.
    async fn grow(&self, have: &mut usize, n: usize) -> anyhow::Result<()> {
        let names: Vec<String> = (*have..n).map(|i| format!("idle-{i}")).collect();
        for name in &names {
            self.sessions().create(&PostParams::default(), &self.session(name)?).await?;
        }
        for name in &names {
            self.wait_ready(name, Duration::from_secs(600)).await?;
            let pod = format!("{name}-browser");
            let out = self
                .kubectl(&[
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
            if !out.contains("Playpen fixture") {
                bail!("{name}: goto did not open the fixture page: {out}");
            }
        }
        *have = n;
        Ok(())
    }

    /// How many more browsers the node admits by their requests (CPU and
    /// memory, whichever runs out first), judged by one already there.
    async fn room(&self) -> anyhow::Result<usize> {
        let node = Api::<Node>::all(self.client.clone()).get(&self.node).await?;
        let allocatable = node.status.and_then(|s| s.allocatable).context("the node's allocatable")?;
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default().fields(&format!("spec.nodeName={}", self.node)))
            .await?;
        let mut fits = usize::MAX;
        for resource in ["cpu", "memory"] {
            let quantity = |q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
                q.and_then(|q| playpen_api::quantity::millis(&q.0)).unwrap_or(0)
            };
            let mut requested = 0;
            let mut browser = 0;
            for pod in &pods.items {
                let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
                if phase == "Succeeded" || phase == "Failed" {
                    continue;
                }
                for c in pod.spec.iter().flat_map(|s| &s.containers) {
                    let asked =
                        quantity(c.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get(resource)));
                    requested += asked;
                    if c.name == "browser" {
                        browser = asked;
                    }
                }
            }
            let free = quantity(allocatable.get(resource)).saturating_sub(requested);
            if let Some(more) = free.checked_div(browser) {
                let more = usize::try_from(more)?;
                eprintln!("density: {resource}: {free} (milli-units) of requests free, {browser} per browser: {more} more fit");
                fits = fits.min(more);
            }
        }
        if fits == usize::MAX {
            bail!("no browser container with requests on the node: nothing to fill it by");
        }
        Ok(fits)
    }

    /// The fleet's working set per session (MiB), from the kubelet's summary.
    async fn working_set_mib(&self, sessions: usize) -> anyhow::Result<f64> {
        if sessions == 0 {
            return Ok(0.0);
        }
        let path = format!("/api/v1/nodes/{}/proxy/stats/summary", self.node);
        let summary: serde_json::Value = serde_json::from_str(&self.kubectl(&["get", "--raw", &path]).await?)?;
        let total: f64 = summary["pods"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["podRef"]["namespace"] == self.ns.as_str())
            .filter(|p| p["podRef"]["name"].as_str().is_some_and(|n| n.starts_with("idle-")))
            .filter_map(|p| p["memory"]["workingSetBytes"].as_f64())
            .sum();
        Ok(total / sessions as f64 / 1048576.0)
    }

    async fn measure(&self, sessions: usize, window: Duration) -> anyhow::Result<Step> {
        let (busy0, procs0) = (node_cpu::busy(), node_cpu::sample());
        tokio::time::sleep(window).await;
        let (busy1, procs1) = (node_cpu::busy(), node_cpu::sample());
        let seconds = window.as_secs_f64();
        let (groups, others) = node_cpu::between(&procs0, &procs1);
        let groups = groups.into_iter().map(|(g, s)| (g, s / seconds)).collect();
        let mut others: Vec<(String, f64)> = others.into_iter().map(|(c, s)| (c, s / seconds)).collect();
        others.sort_by(|a, b| b.1.total_cmp(&a.1));
        others.truncate(8);
        Ok(Step {
            sessions,
            busy_cores: node_cpu::busy_cores(busy0, busy1, self.cores),
            groups,
            working_set_mib: self.working_set_mib(sessions).await?,
            cold: Vec::new(),
            others,
        })
    }

    /// Create → Ready of `count` cold sessions, one at a time.
    async fn cold_starts(&self, step: usize, count: usize) -> anyhow::Result<Vec<f64>> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let mut took = Vec::new();
        for i in 0..count {
            let name = format!("cold-{step}-{i}");
            let t0 = Instant::now();
            self.sessions().create(&PostParams::default(), &self.session(&name)?).await?;
            self.wait_ready(&name, Duration::from_secs(300)).await?;
            took.push(t0.elapsed().as_secs_f64());
            self.sessions().delete(&name, &DeleteParams::default()).await?;
            let pod = format!("{name}-browser");
            let deadline = Instant::now() + Duration::from_secs(120);
            while pods.get_opt(&pod).await?.is_some() {
                if Instant::now() > deadline {
                    bail!("{pod} still there 120 s after its session was deleted");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(took)
    }
}

fn median_p95(v: Vec<f64>) -> (f64, f64) {
    (quantile(&v, 0.5), quantile(&v, 0.95))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench-density NAMESPACE NODE STEP... (a number of idle sessions, or fill)";
    let ns = args.get(1).context(usage)?.clone();
    let node = args.get(2).context(usage)?.clone();
    let mut steps: Vec<String> = args.iter().skip(3).cloned().collect();
    if steps.first().map(String::as_str) != Some("0") {
        steps.insert(0, "0".into());
    }
    let settle = env_secs("PLAYPEN_BENCH_SETTLE", 30)?;
    let window = env_secs("PLAYPEN_BENCH_WINDOW", 60)?;
    let cold = env_secs("PLAYPEN_BENCH_COLD", 5)?.as_secs() as usize;
    let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    let client = client().await?;
    let fixture_url = setup::start_fixture(&client, &ns, "fixture").await.context("the fixture page server")?;
    let bench = Bench { client, ns, fixture_url, node, cores };
    let mut have = 0;
    let mut results = Vec::new();
    let outcome = run_steps(&bench, &steps, settle, window, cold, &mut have, &mut results).await;
    // What was measured before a failure is still worth printing.
    report(&results, cores);
    outcome
}

async fn run_steps(
    bench: &Bench,
    steps: &[String],
    settle: Duration,
    window: Duration,
    cold: usize,
    have: &mut usize,
    results: &mut Vec<Step>,
) -> anyhow::Result<()> {
    let usage = "a number of idle sessions, or fill";
    for (index, step) in steps.iter().enumerate() {
        let target = match step.as_str() {
            "fill" => {
                let fits = *have + bench.room().await?;
                eprintln!("density: {fits} fit; filling to {}", fits.saturating_sub(1));
                fits.saturating_sub(1)
            }
            n => n.parse().with_context(|| format!("step {n:?}: {usage}"))?,
        };
        if target < *have {
            bail!("steps must not shrink the fleet ({have} -> {target})");
        }
        let t0 = Instant::now();
        bench.grow(have, target).await?;
        eprintln!(
            "density: {have} idle sessions Ready with a page open in {:.0} s; settling {settle:?}",
            t0.elapsed().as_secs_f64()
        );
        tokio::time::sleep(settle).await;
        let mut measured = bench.measure(*have, window).await?;
        measured.cold = bench.cold_starts(index, cold).await?;
        eprintln!("density: step {step}: {measured:?}");
        results.push(measured);
    }
    Ok(())
}

fn report(results: &[Step], cores: f64) {
    let Some(base) = results.first() else { return };
    println!("\nDensity on this node ({cores} cores): idle sessions with a page open, no viewer, no commands\n");
    println!(
        "{:>8} {:>11} {:>17} {:>17} {:>14} {:>11} {:>11}",
        "sessions", "busy cores", "m-cores/session", "by processes", "WS MiB/sess.", "cold p50 s", "cold p95 s"
    );
    let by_processes = |s: &Step| s.groups.values().sum::<f64>();
    for s in results {
        let per_session = |now: f64, then: f64| {
            if s.sessions == 0 {
                f64::NAN
            } else {
                (now - then) * 1000.0 / s.sessions as f64
            }
        };
        let (p50, p95) = median_p95(s.cold.clone());
        println!(
            "{:>8} {:>11.3} {:>17.1} {:>17.1} {:>14.1} {:>11.2} {:>11.2}",
            s.sessions,
            s.busy_cores,
            per_session(s.busy_cores, base.busy_cores),
            per_session(by_processes(s), by_processes(base)),
            s.working_set_mib,
            p50,
            p95
        );
    }
    println!(
        "\n(busy cores: /proc/stat without steal; by processes: the sum of every process's own and reaped \
         children's time, which leaves out interrupts and what is neither)"
    );
    println!("\nWho spent it: millicores per idle session over the baseline, by process group\n");
    let groups: std::collections::BTreeSet<&str> = results.iter().flat_map(|s| s.groups.keys().copied()).collect();
    print!("{:<40}", "group");
    for s in results.iter().skip(1) {
        print!(" {:>8}", format!("N={}", s.sessions));
    }
    println!();
    for group in groups {
        print!("{group:<40}");
        for s in results.iter().skip(1) {
            let spent = s.groups.get(group).copied().unwrap_or(0.0) - base.groups.get(group).copied().unwrap_or(0.0);
            print!(" {:>8.2}", spent * 1000.0 / s.sessions.max(1) as f64);
        }
        println!();
    }
    println!("\nThe busiest processes of no group (millicores, whole node)\n");
    for s in results {
        let list: Vec<String> = s.others.iter().map(|(c, cores)| format!("{c} {:.1}", cores * 1000.0)).collect();
        println!("N={:<4} {}", s.sessions, list.join(", "));
    }
    let fast = results.iter().filter(|s| median_p95(s.cold.clone()).0 < 2.0).map(|s| s.sessions).max();
    match fast {
        Some(n) => println!(
            "\nLargest N with a cold session Ready in under 2 s (p50): {n}, {:.1} sessions per core",
            n as f64 / cores
        ),
        None => println!("\nNo step had a cold session Ready in under 2 s (p50)"),
    }
    if let Some(last) = results.last().filter(|s| s.sessions > 0) {
        let per = (last.busy_cores - base.busy_cores) * 1000.0 / last.sessions as f64;
        if per > 0.0 {
            println!(
                "Idle cost at N={}: {per:.1} millicores per session, {:.0} idle sessions per core of CPU",
                last.sessions,
                1000.0 / per
            );
        }
    }
}
