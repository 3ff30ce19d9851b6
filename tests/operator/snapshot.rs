//! BrowserSnapshots and sessions started from them, against the real API
//! server with a stand-in runtime on a loopback address (see
//! [`crate::suspend`]): a snapshot waits for its source, is taken while the
//! source keeps running, keeps its bytes in a Secret it owns; sessions
//! started from it get their own copy, resume from it, and wait (or fail,
//! saying why) for a snapshot that is not Ready.

use std::net::IpAddr;

use anyhow::{ensure, Context as _};
use kube::api::{Api, PostParams};
use kube::ResourceExt as _;
use playpen_api::suspend::SuspendedState;
use playpen_api::v1alpha1::{BrowserSnapshot, BrowserSnapshotStatus, Phase, SnapshotPhase};
use playpen_tests::eventually;
use serde_json::json;

use crate::suspend::{document, phase_is, ready_at, scene, status, Answer, StandIn, WAIT};
use crate::{condition, create, session};

fn snapshot(name: &str, source: &str) -> anyhow::Result<BrowserSnapshot> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSnapshot",
        "metadata": {"name": name}, "spec": {"source": {"session": source}},
    }))?)
}

async fn snapshot_is(
    api: &Api<BrowserSnapshot>,
    name: &str,
    want: SnapshotPhase,
) -> anyhow::Result<BrowserSnapshotStatus> {
    eventually(WAIT, || async {
        let st = api.get(name).await?.status.context("no status yet")?;
        ensure!(st.phase == Some(want), "phase {:?}, want {want:?}: {:?}", st.phase, st.message);
        Ok(st)
    })
    .await
}

#[tokio::test]
async fn a_snapshot_is_taken_from_a_running_session_and_forks_start_from_it() -> anyhow::Result<()> {
    let s = scene("snapshot").await?;
    let n = s.ns.name.as_str();
    let snapshots: Api<BrowserSnapshot> = Api::namespaced(s.client.clone(), n);

    // Before its source exists, and while it is not Ready: Pending, saying why.
    snapshots.create(&PostParams::default(), &snapshot("snap", "source")?).await?;
    let waiting = snapshot_is(&snapshots, "snap", SnapshotPhase::Pending).await?;
    assert_eq!(waiting.reason.as_deref(), Some("SourceNotFound"));
    create(&s.client, n, session("source", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("source-browser").await?) }).await?;
    eventually(WAIT, || async {
        let st = snapshots.get("snap").await?.status.context("status")?;
        ensure!(st.reason.as_deref() == Some("SourceNotReady"), "{st:?}");
        Ok(())
    })
    .await?;

    // Ready: taken with the source's control token; the source keeps running.
    let ip = IpAddr::from([127, 0, 35, 5]);
    let saved = document(2, "the-cookie-value");
    let runtime = StandIn::start(ip, s.secrets.clone(), "source-control", Answer::Ok(saved.clone())).await?;
    ready_at(&s.pods, "source-browser", ip).await?;
    let taken = snapshot_is(&snapshots, "snap", SnapshotPhase::Ready).await?;
    assert_eq!(
        (taken.tabs, taken.state_secret.as_deref(), taken.path.as_deref()),
        (Some(2), Some("snap-state"), Some("State"))
    );
    assert!(taken.bytes.is_some_and(|b| b > 0) && taken.taken_at.is_some() && taken.take_millis.is_some());
    let source_uid = s.sessions.get("source").await?.uid();
    assert_eq!(taken.source_uid, source_uid);
    assert_eq!(runtime.presented.lock().expect("the stand-in's record").len(), 1, "asked once");
    let secret = s.secrets.get("snap-state").await?;
    assert_eq!(secret.type_.as_deref(), Some("playpen.dev/suspended-state"));
    assert!(
        secret.owner_references().iter().any(|o| o.kind == "BrowserSnapshot" && o.name == "snap"),
        "the bytes go with the snapshot: {:?}",
        secret.owner_references()
    );
    let stored = secret.data.and_then(|d| d.get("state.json").cloned()).context("state.json")?;
    assert_eq!(serde_json::from_slice::<SuspendedState>(&stored.0)?, serde_json::from_slice(&saved)?);
    let source = status(&s.sessions, "source").await?;
    assert_eq!(source.phase, Some(Phase::Ready), "the source kept running");
    ensure!(s.pods.get_opt("source-browser").await?.is_some(), "a snapshot stopped its source");
    ensure!(s.secrets.get_opt("source-suspended").await?.is_none(), "a snapshot is not a suspend");

    // Two forks: each its own copy of the state, its own Pod with it mounted, Resuming until Ready.
    for fork in ["fork-1", "fork-2"] {
        create(&s.client, n, session(fork, json!({"image": "i", "from": {"snapshot": "snap"}}))).await?;
    }
    for (i, fork) in ["fork-1", "fork-2"].into_iter().enumerate() {
        let copy = eventually(WAIT, || async { Ok(s.secrets.get(&format!("{fork}-suspended")).await?) }).await?;
        assert!(copy.owner_references().iter().any(|o| o.kind == "BrowserSession" && o.name == fork));
        let bytes = copy.data.and_then(|d| d.get("state.json").cloned()).context("state.json")?;
        assert_eq!(bytes.0, stored.0, "{fork} holds the snapshot's document");
        let pod = eventually(WAIT, || async { Ok(s.pods.get(&format!("{fork}-browser")).await?) }).await?;
        let volumes = pod.spec.and_then(|p| p.volumes).unwrap_or_default();
        let resume = volumes.iter().find(|v| v.name == "resume-state").context("no resume-state volume")?;
        assert_eq!(resume.secret.as_ref().and_then(|v| v.secret_name.clone()), Some(format!("{fork}-suspended")));
        let resuming = phase_is(&s.sessions, fork, Phase::Resuming).await?;
        let said = resuming.suspend.context("status.suspend")?;
        assert!(said.reason.contains("BrowserSnapshot snap"), "{}", said.reason);
        assert_eq!(said.tabs, Some(2));
        let fork_ip = IpAddr::from([127, 0, 35, 6 + u8::try_from(i)?]);
        ready_at(&s.pods, &format!("{fork}-browser"), fork_ip).await?;
        let back = phase_is(&s.sessions, fork, Phase::Ready).await?;
        assert!(back.suspend.is_some_and(|st| st.state_secret.is_none()), "the copy is consumed");
    }
    // Every fork's copy goes once it is Ready; the snapshot's own bytes stay.
    eventually(WAIT, || async {
        for fork in ["fork-1", "fork-2"] {
            ensure!(s.secrets.get_opt(&format!("{fork}-suspended")).await?.is_none(), "{fork}'s copy stayed");
        }
        Ok(())
    })
    .await?;
    ensure!(s.secrets.get_opt("snap-state").await?.is_some(), "a fork consumed the snapshot's bytes");
    Ok(())
}

#[tokio::test]
async fn a_session_from_a_snapshot_that_is_missing_or_failed_waits_or_fails_naming_the_field() -> anyhow::Result<()> {
    let s = scene("snapshot-wait").await?;
    let n = s.ns.name.as_str();
    create(&s.client, n, session("early", json!({"image": "i", "from": {"snapshot": "later"}}))).await?;
    let waiting = phase_is(&s.sessions, "early", Phase::Pending).await?;
    let said = condition(&waiting, "ConfigResolved").context("ConfigResolved")?;
    assert_eq!((said.0.as_str(), said.1.as_str()), ("False", "SnapshotNotFound"));
    assert!(said.2.starts_with("spec.from.snapshot: BrowserSnapshot"), "{}", said.2);
    ensure!(s.pods.get_opt("early-browser").await?.is_none(), "a Pod started without its snapshot");

    // The snapshot's source fails every take: after five tries it is Failed, and so is the session.
    let snapshots: Api<BrowserSnapshot> = Api::namespaced(s.client.clone(), n);
    create(&s.client, n, session("flaky", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("flaky-browser").await?) }).await?;
    let ip = IpAddr::from([127, 0, 35, 9]);
    let _runtime = StandIn::start(ip, s.secrets.clone(), "flaky-control", Answer::Failed).await?;
    ready_at(&s.pods, "flaky-browser", ip).await?;
    snapshots.create(&PostParams::default(), &snapshot("later", "flaky")?).await?;
    let retried = eventually(WAIT, || async {
        let st = snapshots.get("later").await?.status.context("status")?;
        ensure!(st.reason.as_deref() == Some("TakeFailed"), "{st:?}");
        Ok(st)
    })
    .await?;
    assert_eq!(retried.phase, Some(SnapshotPhase::Taking), "retried, not failed at once");
    let message = retried.message.unwrap_or_default();
    assert!(message.contains("503"), "{message}");
    // The session looks again every few seconds: it now waits for a snapshot that exists.
    let still = eventually(WAIT, || async {
        let st = status(&s.sessions, "early").await?;
        let reason = condition(&st, "ConfigResolved").map(|c| c.1);
        ensure!(reason.as_deref() == Some("SnapshotNotReady"), "{reason:?}");
        Ok(st)
    })
    .await?;
    assert_eq!(still.phase, Some(Phase::Pending));
    ensure!(s.pods.get_opt("early-browser").await?.is_none(), "a Pod started without its snapshot");
    ensure!(s.secrets.get_opt("later-state").await?.is_none(), "a failed take stored something");
    Ok(())
}
