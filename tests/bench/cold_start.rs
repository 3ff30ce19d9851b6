//! Cold-start benchmark driver (run by `tests/bench/cold-start.sh`, not a
//! test): applies N BrowserSessions one after another on the single-node
//! cluster (image present, chart installed) and prints apply → Ready with a
//! breakdown per stage.
//!
//! Baseline, measured in the same run: a plain Pod on the same image whose
//! container only sleeps, apply → container running: the floor the platform
//! itself (scheduling, sandbox, container start) costs before any browser.
//!
//! Clocks: apply, scheduling and Ready are seen by this process's watch
//! (milliseconds); the runtime's own stages come from `kubectl logs
//! --timestamps` (the node's clock, the same machine).

use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, kubectl, quantile};
use serde_json::json;

const IMAGE: &str = "playpen/browser:dev";
const POLL: Duration = Duration::from_millis(25);

/// Stages of one session, in seconds since its apply.
#[derive(Debug, Default, Clone)]
struct Sample {
    scheduled: f64,
    runtime_started: f64,
    checks_passed: f64,
    daemon_running: f64,
    ready: f64,
}

fn since(t0: SystemTime, t: SystemTime) -> f64 {
    t.duration_since(t0).unwrap_or_default().as_secs_f64()
}

/// The timestamp `kubectl logs --timestamps` put on the first line containing `needle`.
fn log_time(logs: &str, needle: &str) -> Option<SystemTime> {
    let line = logs.lines().find(|l| l.contains(needle))?;
    let ts: k8s_openapi::jiff::Timestamp = line.split_whitespace().next()?.parse().ok()?;
    Some(SystemTime::from(ts))
}

async fn logs(ns: &str, pod: &str) -> anyhow::Result<String> {
    Ok(kubectl::run(&["logs", "--timestamps", "-n", ns, pod, "-c", "browser"]).await?.stdout)
}

async fn one_session(client: &Client, ns: &str, i: usize, toleration: &serde_json::Value) -> anyhow::Result<Sample> {
    let name = format!("cold-{i}");
    let bs = fixtures::session(
        &name,
        json!({"image": IMAGE, "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "pod": {"tolerations": toleration}}),
    )?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let t0 = SystemTime::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    sessions.create(&PostParams::default(), &bs).await?;
    let pod_name = format!("{name}-browser");
    let mut sample = Sample::default();
    loop {
        if Instant::now() > deadline {
            bail!("{name} not Ready within 120 s: {sample:?}");
        }
        if sample.scheduled == 0.0 {
            if let Some(pod) = pods.get_opt(&pod_name).await? {
                if pod.spec.and_then(|s| s.node_name).is_some() {
                    sample.scheduled = since(t0, SystemTime::now());
                }
            }
        }
        let phase = sessions.get(&name).await?.status.and_then(|s| s.phase);
        if phase == Some(Phase::Ready) {
            sample.ready = since(t0, SystemTime::now());
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let logs = logs(ns, &pod_name).await?;
    let stage = |needle: &str| log_time(&logs, needle).map(|t| since(t0, t)).unwrap_or(f64::NAN);
    sample.runtime_started = stage("runtime started");
    sample.checks_passed = stage("start-up checks passed");
    sample.daemon_running = stage("daemon running");
    sessions.delete(&name, &DeleteParams::default()).await?;
    Ok(sample)
}

async fn baseline(client: &Client, ns: &str, i: usize, toleration: &serde_json::Value) -> anyhow::Result<f64> {
    let name = format!("floor-{i}");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"tolerations": toleration, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "Never",
                "command": ["sleep", "3600"]}]}
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let t0 = Instant::now();
    pods.create(&PostParams::default(), &pod).await?;
    loop {
        if t0.elapsed() > Duration::from_secs(120) {
            bail!("{name} not running within 120 s");
        }
        let status = pods.get(&name).await?.status.and_then(|s| s.container_statuses).unwrap_or_default();
        if status.iter().any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some())) {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let took = t0.elapsed().as_secs_f64();
    pods.delete(&name, &DeleteParams::default()).await?;
    Ok(took)
}

fn stats(v: Vec<f64>) -> (f64, f64) {
    (quantile(&v, 0.5), quantile(&v, 0.95))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(10);
    let namespace = args.get(2).context("usage: bench-cold-start N NAMESPACE [TAINT_KEY]")?.clone();
    let toleration = match args.get(3) {
        Some(key) => json!([{"key": key, "operator": "Exists", "effect": "NoSchedule"}]),
        None => json!([]),
    };
    let client = client().await?;
    let mut samples = Vec::new();
    let mut floors = Vec::new();
    // Interleaved, so that both see the same machine load.
    for i in 0..n {
        // The plain Pods sit beside the sessions: the operator ignores Pods it does not own.
        floors.push(baseline(&client, &namespace, i, &toleration).await?);
        let s = one_session(&client, &namespace, i, &toleration).await?;
        eprintln!("session {i}: {s:?}");
        samples.push(s);
    }
    let col = |f: fn(&Sample) -> f64| stats(samples.iter().map(f).collect());
    let rows: [(&str, (f64, f64)); 6] = [
        ("apply → Pod scheduled", col(|s| s.scheduled)),
        ("scheduled → runtime started (container start)", col(|s| s.runtime_started - s.scheduled)),
        ("runtime start-up checks", col(|s| s.checks_passed - s.runtime_started)),
        ("browser launch (daemon running)", col(|s| s.daemon_running - s.checks_passed)),
        ("daemon running → session Ready (probe, status)", col(|s| s.ready - s.daemon_running)),
        ("apply → session Ready (total)", col(|s| s.ready)),
    ];
    let (floor_p50, floor_p95) = stats(floors);
    println!("\nCold start over {n} sessions (image present), seconds\n");
    println!("{:<50} {:>8} {:>8}", "stage", "p50", "p95");
    for (label, (p50, p95)) in rows {
        println!("{label:<50} {p50:>8.2} {p95:>8.2}");
    }
    println!("{:<50} {floor_p50:>8.2} {floor_p95:>8.2}", "baseline: plain Pod apply → container running");
    let (total_p50, _) = stats(samples.iter().map(|s| s.ready).collect());
    println!("\nsession Ready p50 / baseline running p50 = {:.2}x", total_p50 / floor_p50);
    Ok(())
}
