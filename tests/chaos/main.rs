//! The chaos suite, on the single-node cluster with the chart installed (two
//! operator replicas): 20 and more live sessions, some of them mid-creation
//! and some being deleted, while one fault at a time hits the operator, the
//! control plane, the node or a browser Pod. After each fault the fleet must
//! converge: every session that should exist Ready, every deleted one gone
//! with its children, no child without a live owner, no Chromium left by a
//! container that is gone, and the profile file, the auth state and the
//! snapshot files that should survive still there. The figures (how long
//! each convergence took, what was counted) go to stderr and to
//! `target/chaos-report.md`; docs/reliability.md records a run.

mod faults;
mod fleet;
#[path = "../e2e/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
mod node;
#[path = "../e2e/setup.rs"]
#[allow(dead_code)]
mod setup;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use playpen_tests::client;

use crate::faults::Fault;
use crate::fleet::{Fleet, Kind};

/// Sessions alive before the first fault.
const FLEET_SIZE: usize = 20;
/// The longest a convergence may take.
const CONVERGE_WITHIN: Duration = Duration::from_secs(240);

/// One line of the report.
struct Row {
    fault: &'static str,
    injected: String,
    live: usize,
    deleted: usize,
    fault_seconds: f64,
    converged_seconds: f64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_during_real_work_converges_with_nothing_lost() -> anyhow::Result<()> {
    let client = client().await?;
    let installed = setup::install_release(&client, "chaos", &["replicaCount=2"])
        .await
        .context("helm install with two operator replicas")?;
    let outcome = run(&client, &installed).await;
    let uninstalled = setup::uninstall(&client, &installed).await;
    faults::remove_profile_volume(&client, &installed.team_a.name).await;
    let rows = outcome?;
    report(&rows)?;
    uninstalled
}

async fn run(client: &kube::Client, installed: &setup::Installed) -> anyhow::Result<Vec<Row>> {
    let ns = &installed.team_a.name;
    faults::prepare_profile_and_auth(client, ns).await.context("the profile claim and the auth state Secret")?;
    let mut fleet = Fleet::new(client, ns);
    let t0 = Instant::now();
    for kind in [Kind::Profile, Kind::Auth, Kind::Small] {
        fleet.create(kind).await?;
    }
    while fleet.live.len() < FLEET_SIZE {
        fleet.create(Kind::Plain).await?;
    }
    fleet.converge(CONVERGE_WITHIN).await.context("the first 20 sessions")?;
    eprintln!("chaos: {FLEET_SIZE} sessions Ready in {:.1} s", t0.elapsed().as_secs_f64());
    faults::write_survivors(&mut fleet, &installed.fixture_url).await.context("writing the files that must survive")?;

    let mut rows = vec![];
    for fault in Fault::ALL {
        // Real work around every fault: sessions being created and deleted.
        let created = [fleet.create(Kind::Plain).await?, fleet.create(Kind::Plain).await?];
        let deleted = fleet.delete_oldest_plain().await?;
        let started = Instant::now();
        let (injected, check) =
            fault.inject(client, installed, &mut fleet).await.with_context(|| format!("injecting {fault:?}"))?;
        let fault_seconds = started.elapsed().as_secs_f64();
        let converged = fleet
            .converge(CONVERGE_WITHIN)
            .await
            .with_context(|| format!("after {fault:?} ({injected}); created {created:?}, deleted {deleted}"))?;
        faults::verify(client, &fleet, &check).await.with_context(|| format!("after {fault:?}: {check:?}"))?;
        let row = Row {
            fault: fault.name(),
            injected,
            live: fleet.live.len(),
            deleted: fleet.deleted.len(),
            fault_seconds,
            converged_seconds: converged.as_secs_f64(),
        };
        eprintln!(
            "chaos: {} — {} — converged {:.1} s after the fault ({:.1} s)",
            row.fault, row.injected, row.converged_seconds, row.fault_seconds
        );
        rows.push(row);
    }
    Ok(rows)
}

fn report(rows: &[Row]) -> anyhow::Result<()> {
    let mut text = String::from(
        "| fault | what was injected | live sessions | deleted so far | fault took | converged after | orphans | ownerless children | lost files |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        writeln!(
            text,
            "| {} | {} | {} | {} | {:.1} s | {:.1} s | 0 | 0 | 0 |",
            r.fault, r.injected, r.live, r.deleted, r.fault_seconds, r.converged_seconds
        )?;
    }
    eprintln!("{text}");
    let target =
        std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").into());
    std::fs::write(format!("{target}/chaos-report.md"), text)?;
    Ok(())
}
