//! Two operator instances: exactly one (the Lease holder) reconciles, and
//! the other takes over when it goes away; a paused leader that resumes
//! after its term writes nothing.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{create, lease, session};

#[tokio::test]
async fn only_the_lease_holder_reconciles() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "lead").await?;
    let n = ns.name.as_str();
    let a = RunningOperator::start(&client, n, Some(lease(n, "replica-a"))).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(20), || async {
        let l = leases.get("playpen-operator").await?;
        ensure!(l.spec.and_then(|s| s.holder_identity).as_deref() == Some("replica-a"), "not held by a yet");
        Ok(())
    })
    .await?;
    let b = RunningOperator::start(&client, n, Some(lease(n, "replica-b"))).await?;
    for i in 0..3 {
        create(&client, n, session(&format!("s{i}"), json!({"image": "i"}))).await?;
    }
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(30), || async {
        for i in 0..3 {
            ensure!(sessions.get(&format!("s{i}")).await?.status.is_some(), "s{i} not reconciled");
        }
        Ok(())
    })
    .await?;
    assert!(a.reconciles() >= 3, "leader reconciled {}", a.reconciles());
    assert_eq!(b.reconciles(), 0, "the standby must not reconcile");
    assert_eq!(b.handles.metrics.leader.get(), 0);

    // The leader goes away; the standby takes the Lease once it expires.
    a.stop();
    eventually(Duration::from_secs(30), || async {
        let spec = leases.get("playpen-operator").await?.spec;
        let holder = spec.as_ref().and_then(|s| s.holder_identity.as_deref());
        ensure!(holder == Some("replica-b"), "b has not taken over: {spec:?}");
        Ok(())
    })
    .await?;
    sessions.patch("s0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"idleTimeoutSeconds": 5}}))).await?;
    eventually(Duration::from_secs(30), || async {
        ensure!(b.reconciles() > 0, "b never reconciled");
        Ok(())
    })
    .await?;
    Ok(())
}

/// An operator replica as its own process (so it can be paused with SIGSTOP).
struct Replica {
    child: std::process::Child,
}

impl Replica {
    fn start(ns: &str, identity: &str) -> anyhow::Result<Self> {
        let binary = playpen_tests::tool("PLAYPEN_OPERATOR_BIN")?;
        let log = std::fs::File::create(std::env::temp_dir().join(format!("{ns}-{identity}.log")))?;
        let child = std::process::Command::new(binary)
            .args(["run", "--namespaces", ns, "--http-addr", "127.0.0.1:0", "--leader-election"])
            .args(["--lease-namespace", ns, "--identity", identity, "--log-text"])
            .args(["--lease-duration-seconds", "4", "--lease-retry-seconds", "1"])
            .env("RUST_LOG", "info")
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        Ok(Self { child })
    }

    fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let status = std::process::Command::new("kill").args([signal, &self.child.id().to_string()]).status()?;
        ensure!(status.success(), "kill {signal} failed");
        Ok(())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.signal("-KILL");
        let _ = self.child.wait();
    }
}

/// resourceVersion of every object an operator writes in `ns` (Pods are
/// created once and only read; Events about sessions count).
async fn written_objects(client: &kube::Client, ns: &str) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret, Service};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use kube::api::ListParams;
    use kube::ResourceExt;
    fn versions<K: kube::Resource>(kind: &str, items: Vec<K>) -> Vec<String> {
        items.iter().map(|o| format!("{kind}/{}@{}", o.name_any(), o.resource_version().unwrap_or_default())).collect()
    }
    let lp = ListParams::default();
    let mut all =
        versions("BrowserSession", Api::<BrowserSession>::namespaced(client.clone(), ns).list(&lp).await?.items);
    all.extend(versions("ConfigMap", Api::<ConfigMap>::namespaced(client.clone(), ns).list(&lp).await?.items));
    all.extend(versions("Secret", Api::<Secret>::namespaced(client.clone(), ns).list(&lp).await?.items));
    all.extend(versions("Service", Api::<Service>::namespaced(client.clone(), ns).list(&lp).await?.items));
    all.extend(versions("NetworkPolicy", Api::<NetworkPolicy>::namespaced(client.clone(), ns).list(&lp).await?.items));
    all.extend(versions("Lease", Api::<Lease>::namespaced(client.clone(), ns).list(&lp).await?.items));
    let events = Api::<Event>::namespaced(client.clone(), ns).list(&lp).await?.items;
    let about_sessions = events.into_iter().filter(|e| e.involved_object.kind.as_deref() == Some("BrowserSession"));
    all.extend(versions("Event", about_sessions.collect()));
    all.sort();
    Ok(all)
}

async fn idle_timeout_in_runtime_config(client: &kube::Client, ns: &str, session: &str) -> anyhow::Result<String> {
    let cm = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), ns)
        .get(&format!("{session}-runtime"))
        .await?;
    let json = cm.data.and_then(|d| d.into_values().next()).unwrap_or_default();
    let config: serde_json::Value = serde_json::from_str(&json)?;
    Ok(config["idleTimeoutSeconds"].to_string())
}

#[tokio::test]
async fn a_paused_leader_writes_nothing_after_it_resumes() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "split").await?;
    let n = ns.name.as_str();
    let leases: Api<Lease> = Api::namespaced(client.clone(), n);
    let holder = || async {
        let spec = leases.get("playpen-operator").await?.spec.unwrap_or_default();
        Ok::<_, anyhow::Error>((spec.holder_identity.unwrap_or_default(), spec.renew_time))
    };
    let a = Replica::start(n, "replica-a")?;
    eventually(Duration::from_secs(30), || async {
        ensure!(holder().await?.0 == "replica-a", "a does not lead yet");
        Ok(())
    })
    .await?;
    let b = Replica::start(n, "replica-b")?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    for name in ["s0", "s1"] {
        create(&client, n, session(name, json!({"image": "i", "idleTimeoutSeconds": 10}))).await?;
    }
    eventually(Duration::from_secs(30), || async {
        for name in ["s0", "s1"] {
            ensure!(sessions.get(name).await?.status.is_some(), "{name} not reconciled");
        }
        Ok(())
    })
    .await?;

    // Pause the leader past its term: the standby takes over and works.
    a.signal("-STOP")?;
    eventually(Duration::from_secs(30), || async {
        ensure!(holder().await?.0 == "replica-b", "b has not taken over");
        Ok(())
    })
    .await?;
    let change = |name: &'static str, seconds: i64| {
        let sessions = sessions.clone();
        async move {
            let patch = Patch::Merge(json!({"spec": {"idleTimeoutSeconds": seconds}}));
            sessions.patch(name, &PatchParams::default(), &patch).await
        }
    };
    change("s0", 20).await?;
    eventually(Duration::from_secs(30), || async {
        ensure!(idle_timeout_in_runtime_config(&client, n, "s0").await? == "20", "b has not applied s0");
        Ok(())
    })
    .await?;

    // The new leader dies; its Lease stays live until it expires. Work
    // arrives that the old leader's watches will see when it resumes.
    b.signal("-KILL")?;
    let (_, renewed) = holder().await?;
    let expires = renewed.context("renewTime")?.0 + std::time::Duration::from_secs(4);
    change("s1", 30).await?;
    // Lease timing, deliberate: the change is stored before `before` is read.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = written_objects(&client, n).await?;
    a.signal("-CONT")?;
    // Until the Lease expires, nobody may write: the resumed replica's term
    // ended while it was paused, whatever it had queued.
    let window = expires.duration_since(k8s_openapi::jiff::Timestamp::now());
    let window = Duration::try_from(window).unwrap_or_default().saturating_sub(Duration::from_millis(300));
    ensure!(window >= Duration::from_secs(1), "the test's window is too short to show anything: {window:?}");
    tokio::time::sleep(window).await;
    let after = written_objects(&client, n).await?;
    let changed: Vec<&String> = after.iter().filter(|o| !before.contains(o)).collect();
    assert!(changed.is_empty(), "the resumed replica wrote during another's term: {changed:?}");
    assert_eq!(idle_timeout_in_runtime_config(&client, n, "s1").await?, "10");

    // Once the Lease has expired the resumed replica leads again and does the
    // queued work: it was alive, with work to do, and chose not to write.
    eventually(Duration::from_secs(30), || async {
        ensure!(holder().await?.0 == "replica-a", "a has not taken the expired Lease");
        ensure!(idle_timeout_in_runtime_config(&client, n, "s1").await? == "30", "a has not applied s1");
        Ok(())
    })
    .await?;
    Ok(())
}
