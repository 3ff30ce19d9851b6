//! Suspend/resume benchmark driver through the operator, State path (run by
//! `tests/bench/suspend/operator.sh`, not a test): on the single-node
//! cluster, N sessions one after another, each with three tabs holding a
//! form value; per session: its cold start (apply → Ready, the baseline in
//! the same run), suspend (`spec.suspended: true` → phase `Suspended`, →
//! Pod gone), the saved bytes, and resume (`false` → Ready with the tabs
//! back, → first `playwright-cli` command answered with three tabs).
//!
//! The first command goes through `kubectl exec` (about 100 ms of its own),
//! as an agent outside the Pod would send it.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::{BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, fixtures, kubectl, quantile};
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

/// A data: page with a field whose value the suspend keeps.
fn tab(i: usize) -> String {
    format!("data:text/html,<title>tab {i}</title><input id=f{i}><p>page {i}</p>")
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

async fn one_session(client: &Client, ns: &str, i: usize, toleration: &serde_json::Value) -> anyhow::Result<Sample> {
    let name = format!("parked-{i}");
    let bs = fixtures::session(
        &name,
        json!({"image": IMAGE, "imagePullPolicy": "Never",
            "launchConfig": {"executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]},
            "network": {"egress": {"mode": "DenyAll"}},
            "pod": {"tolerations": toleration}}),
    )?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut sample = Sample::default();
    let t0 = Instant::now();
    sessions.create(&PostParams::default(), &bs).await?;
    let ready = |s: &BrowserSessionStatus| s.phase == Some(Phase::Ready);
    (sample.cold_ready, _) = status_when(&sessions, &name, t0, ready).await?;
    let pod = format!("{name}-browser");
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
    ensure!(said.tabs == Some(3), "{name}: saved {:?} tabs", said.tabs);
    sample.capture_ms = said.suspend_millis.unwrap_or_default() as f64;
    sample.bytes = said.bytes.unwrap_or_default() as f64;
    while pods.get_opt(&pod).await?.is_some() {
        if t0.elapsed() > WITHIN {
            bail!("{pod} not gone within {WITHIN:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    sample.pod_gone = t0.elapsed().as_secs_f64();

    let t0 = Instant::now();
    set_suspended(&sessions, &name, false).await?;
    (sample.resume_ready, _) = status_when(&sessions, &name, t0, ready).await?;
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

fn stats(v: Vec<f64>) -> (f64, f64) {
    (quantile(&v, 0.5), quantile(&v, 0.99))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let namespace = args.get(2).context("usage: bench-suspend N NAMESPACE [TAINT_KEY]")?.clone();
    let toleration = match args.get(3) {
        Some(key) => json!([{"key": key, "operator": "Exists", "effect": "NoSchedule"}]),
        None => json!([]),
    };
    let client = client().await?;
    let mut samples = Vec::new();
    for i in 0..n {
        let s = one_session(&client, &namespace, i, &toleration).await?;
        eprintln!("session {i}: {s:?}");
        samples.push(s);
    }
    let col = |f: fn(&Sample) -> f64| stats(samples.iter().map(f).collect());
    let seconds: [(&str, (f64, f64)); 6] = [
        ("baseline: cold start, apply → Ready", col(|s| s.cold_ready)),
        ("suspend: spec.suspended true → phase Suspended", col(|s| s.suspended)),
        ("suspend: → Pod gone (browser closed)", col(|s| s.pod_gone)),
        ("resume: spec.suspended false → Ready (tabs back)", col(|s| s.resume_ready)),
        ("resume: → first playwright-cli command, 3 tabs", col(|s| s.resume_first_command)),
        ("operator's capture (status.suspend.suspendMillis)", col(|s| s.capture_ms / 1000.0)),
    ];
    println!("\nSuspend and resume through the operator, State path, {n} sessions of 3 tabs, seconds\n");
    println!("{:<55} {:>8} {:>8}", "stage", "p50", "p99");
    for (label, (p50, p99)) in seconds {
        println!("{label:<55} {p50:>8.2} {p99:>8.2}");
    }
    let (bytes, _) = col(|s| s.bytes);
    println!("{:<55} {bytes:>8.0}", "saved state, bytes (p50)");
    let (cold, _) = col(|s| s.cold_ready);
    let (resume, _) = col(|s| s.resume_ready);
    println!("\nresume → Ready p50 / cold start p50 = {:.2}x", resume / cold);
    Ok(())
}
