//! Suspend/resume benchmark driver through the operator (run by
//! `tests/bench/suspend/operator.sh`, not a test): on the single-node
//! cluster, N rounds one after another, each with sessions of three tabs
//! holding a form value: one with its own browser and one from a
//! BrowserPool (minReady 1), both on the State path, and, when a live
//! RuntimeClass is given, one with its own browser under it (the live path:
//! the node agent's checkpoint, restored into a new Pod). Per session: its start (apply → Ready: a cold
//! start, the baseline in the same run, or a warm claim), suspend
//! (`spec.suspended: true` → phase `Suspended`, → Pod gone), the saved
//! bytes, and resume (`false` → Ready with the tabs back, → first
//! `playwright-cli` command answered with three tabs): into a new Pod of
//! its own, or into a warm Pod it claims (the pool refilled first).
//!
//! The first command goes through `kubectl exec` (about 100 ms of its own),
//! as an agent outside the Pod would send it.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM};
use playpen_api::v1alpha1::{BrowserPool, BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, kubectl, pod_is_ready, quantile};
use serde_json::json;

const IMAGE: &str = "playpen/browser:dev";
const POLL: Duration = Duration::from_millis(25);
const WITHIN: Duration = Duration::from_secs(180);

/// One session's figures, in seconds (bytes as they are).
#[derive(Debug, Default, Clone)]
struct Sample {
    cold_ready: f64,
    suspended: f64,
    pod_gone: f64,
    capture_ms: f64,
    bytes: f64,
    resume_ready: f64,
    resume_first_command: f64,
}

/// A data: page with a field whose value the suspend keeps (no raw
/// whitespace: the document refuses a URL with any, as a tab to leave out).
fn tab(i: usize) -> String {
    format!("data:text/html,<title>tab{i}</title><input%20id=f{i}><p>page{i}</p>")
}

async fn status_when(
    sessions: &Api<BrowserSession>,
    name: &str,
    t0: Instant,
    done: impl Fn(&BrowserSessionStatus) -> bool,
) -> anyhow::Result<(f64, BrowserSessionStatus)> {
    loop {
        if t0.elapsed() > WITHIN {
            bail!("{name}: not there within {WITHIN:?}");
        }
        if let Some(status) = sessions.get(name).await?.status {
            if done(&status) {
                return Ok((t0.elapsed().as_secs_f64(), status));
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn cli(ns: &str, pod: &str, args: &[&str]) -> anyhow::Result<String> {
    let mut all = vec!["exec", "-n", ns, pod, "-c", "browser", "--", "playwright-cli"];
    all.extend_from_slice(args);
    let out = kubectl::run(&all).await?;
    ensure!(out.code == 0, "playwright-cli {args:?}: {}{}", out.stdout, out.stderr);
    Ok(out.stdout)
}

async fn set_suspended(sessions: &Api<BrowserSession>, name: &str, suspended: bool) -> anyhow::Result<()> {
    let patch = json!({"spec": {"suspended": suspended}});
    sessions.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// The browser every session runs (a session's own, or the pool's template).
fn browser(toleration: &serde_json::Value) -> serde_json::Value {
    json!({"image": IMAGE, "imagePullPolicy": "Never",
        "launchConfig": {"executablePath": "/usr/bin/chromium",
            "args": ["--disable-background-networking", "--disable-component-update"]},
        "pod": {"tolerations": toleration}})
}

const POOL: &str = "bench-parking";

async fn create_pool(client: &Client, ns: &str, toleration: &serde_json::Value) -> anyhow::Result<()> {
    let pool: BrowserPool = serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": POOL},
        "spec": {"minReady": 1, "maxSize": 3, "template": browser(toleration)}
    }))?;
    Api::<BrowserPool>::namespaced(client.clone(), ns).create(&PostParams::default(), &pool).await?;
    Ok(())
}

/// Waits for the pool's warm Pod to be Ready.
async fn pool_full(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={POOL},{POOL_STATE_LABEL}={POOL_STATE_WARM}"));
    let t0 = Instant::now();
    loop {
        let warm = pods.list(&params).await?.items;
        if warm.iter().any(|p| p.metadata.deletion_timestamp.is_none() && pod_is_ready(p)) {
            return Ok(());
        }
        if t0.elapsed() > WITHIN {
            bail!("no Ready warm Pod of {POOL} within {WITHIN:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Which path a session is suspended on, and where its browser comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    /// Its own browser, the State path.
    Own,
    /// From the pool, the State path (resumed into a warm claim).
    Pooled,
    /// Its own browser under this RuntimeClass, the live path.
    Live(&'a str),
}

async fn one_session(
    client: &Client,
    ns: &str,
    name: &str,
    kind: Kind<'_>,
    toleration: &serde_json::Value,
) -> anyhow::Result<Sample> {
    let pooled = kind == Kind::Pooled;
    let spec = match kind {
        Kind::Pooled => json!({"pool": {"name": POOL}, "network": {"egress": {"mode": "DenyAll"}}}),
        Kind::Own | Kind::Live(_) => {
            let mut spec = browser(toleration);
            spec["network"] = json!({"egress": {"mode": "DenyAll"}});
            if let Kind::Live(class) = kind {
                spec["pod"]["runtimeClassName"] = json!(class);
            }
            spec
        }
    };
    if pooled {
        pool_full(client, ns).await?;
    }
    let name = name.to_owned();
    let bs = fixtures::session(&name, spec)?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut sample = Sample::default();
    let t0 = Instant::now();
    sessions.create(&PostParams::default(), &bs).await?;
    let ready = |s: &BrowserSessionStatus| s.phase == Some(Phase::Ready);
    let (took, placed) = status_when(&sessions, &name, t0, ready).await?;
    sample.cold_ready = took;
    let pod = placed.pod_name.context("a Ready session names no Pod")?;
    cli(ns, &pod, &["goto", &tab(0)]).await?;
    for t in 1..3 {
        cli(ns, &pod, &["tab-new", &tab(t)]).await?;
    }
    for t in 0..3 {
        let fill = format!("() => {{ document.querySelector('#f{t}').value = 'typed {t}'; }}");
        cli(ns, &pod, &["tab-select", &t.to_string()]).await?;
        cli(ns, &pod, &["eval", &fill]).await?;
    }

    let t0 = Instant::now();
    set_suspended(&sessions, &name, true).await?;
    let parked = |s: &BrowserSessionStatus| s.phase == Some(Phase::Suspended);
    let (took, status) = status_when(&sessions, &name, t0, parked).await?;
    sample.suspended = took;
    let said = status.suspend.context("no status.suspend")?;
    match kind {
        Kind::Live(_) => ensure!(said.path == "Live", "{name}: suspended on the {} path", said.path),
        _ => ensure!(said.tabs == Some(3), "{name}: saved {:?} tabs", said.tabs),
    }
    sample.capture_ms = said.suspend_millis.unwrap_or_default() as f64;
    sample.bytes = said.bytes.unwrap_or_default() as f64;
    while pods.get_opt(&pod).await?.is_some() {
        if t0.elapsed() > WITHIN {
            bail!("{pod} not gone within {WITHIN:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    sample.pod_gone = t0.elapsed().as_secs_f64();

    if pooled {
        pool_full(client, ns).await?;
    }
    let t0 = Instant::now();
    set_suspended(&sessions, &name, false).await?;
    let (took, resumed) = status_when(&sessions, &name, t0, ready).await?;
    sample.resume_ready = took;
    let pod = resumed.pod_name.context("a resumed session names no Pod")?;
    ensure!(!pooled || resumed.pool.as_ref().is_some_and(|p| p.claimed), "{name}: resumed cold, not into a warm claim");
    loop {
        if let Ok(tabs) = cli(ns, &pod, &["tab-list"]).await {
            if tabs.matches("data:text/html").count() == 3 {
                break;
            }
        }
        if t0.elapsed() > WITHIN {
            bail!("{name}: three tabs not listed within {WITHIN:?}");
        }
    }
    sample.resume_first_command = t0.elapsed().as_secs_f64();
    let value = cli(ns, &pod, &["--raw", "eval", "() => document.querySelector('input').value"]).await?;
    ensure!(value.contains("typed"), "{name}: the active tab's value did not come back: {value}");
    sessions.delete(&name, &DeleteParams::default()).await?;
    Ok(sample)
}

/// One figure of a sample.
type Column = fn(&Sample) -> f64;

fn stats(v: Vec<f64>) -> (f64, f64) {
    (quantile(&v, 0.5), quantile(&v, 0.99))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let namespace = args.get(2).context("usage: bench-suspend N NAMESPACE [TAINT_KEY [LIVE_RUNTIME_CLASS]]")?.clone();
    let toleration = match args.get(3).filter(|k| !k.is_empty()) {
        Some(key) => json!([{"key": key, "operator": "Exists", "effect": "NoSchedule"}]),
        None => json!([]),
    };
    // A RuntimeClass the chart's node agent checkpoints: a third series, on the live path.
    let live_class: Option<&str> = args.get(4).map(String::as_str).filter(|c| !c.is_empty());
    let client = client().await?;
    create_pool(&client, &namespace, &toleration).await?;
    let (mut own, mut pooled, mut live) = (Vec::new(), Vec::new(), Vec::new());
    // Interleaved, so that all see the same machine load.
    for i in 0..n {
        let s = one_session(&client, &namespace, &format!("own-{i}"), Kind::Own, &toleration).await?;
        eprintln!("own {i}: {s:?}");
        own.push(s);
        let s = one_session(&client, &namespace, &format!("pooled-{i}"), Kind::Pooled, &toleration).await?;
        eprintln!("pooled {i}: {s:?}");
        pooled.push(s);
        if let Some(class) = live_class {
            let s = one_session(&client, &namespace, &format!("live-{i}"), Kind::Live(class), &toleration).await?;
            eprintln!("live {i}: {s:?}");
            live.push(s);
        }
    }
    println!("\nSuspend and resume through the operator, {n} sessions of 3 tabs each way, seconds");
    println!("own and pool: the State path (runc); live: the live path under RuntimeClass {live_class:?}\n");
    println!(
        "{:<55} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "stage", "own p50", "own p99", "pool p50", "pool p99", "live p50", "live p99"
    );
    let rows: [(&str, Column); 6] = [
        ("start: apply → Ready (own: cold start; pool: claim)", |s| s.cold_ready),
        ("suspend: spec.suspended true → phase Suspended", |s| s.suspended),
        ("suspend: → Pod gone (browser closed)", |s| s.pod_gone),
        ("resume: spec.suspended false → Ready (tabs back)", |s| s.resume_ready),
        ("resume: → first playwright-cli command, 3 tabs", |s| s.resume_first_command),
        ("capture or checkpoint (status.suspend.suspendMillis)", |s| s.capture_ms / 1000.0),
    ];
    let column = |v: &[Sample], f: Column| match v.is_empty() {
        true => format!("{:>8} {:>8}", "-", "-"),
        false => {
            let (p50, p99) = stats(v.iter().map(f).collect());
            format!("{p50:>8.2} {p99:>8.2}")
        }
    };
    for (label, f) in rows {
        println!("{label:<55} {} {} {}", column(&own, f), column(&pooled, f), column(&live, f));
    }
    let bytes = |v: &[Sample]| match v.is_empty() {
        true => "-".to_owned(),
        false => format!("{:.0}", stats(v.iter().map(|s| s.bytes).collect()).0),
    };
    println!("{:<55} {:>8} {:>17} {:>17}", "saved bytes (p50)", bytes(&own), bytes(&pooled), bytes(&live));
    let p50 = |v: &[Sample], f: Column| stats(v.iter().map(f).collect()).0;
    let cold = p50(&own, |s| s.cold_ready);
    println!(
        "\nresume → Ready p50 / cold start p50 (own, same run): own {:.2}x, pooled (warm claim) {:.2}x",
        p50(&own, |s| s.resume_ready) / cold,
        p50(&pooled, |s| s.resume_ready) / cold
    );
    if !live.is_empty() {
        let live_cold = p50(&live, |s| s.cold_ready);
        println!(
            "live: resume → Ready p50 / its own cold start under {live_class:?} p50: {:.2}x ({:.2} s / {:.2} s)",
            p50(&live, |s| s.resume_ready) / live_cold,
            p50(&live, |s| s.resume_ready),
            live_cold
        );
    }
    Ok(())
}
