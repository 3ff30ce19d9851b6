//! The faults, one at a time, each aimed at real work: how to inject it and
//! what must be true of the fleet afterwards beyond convergence.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::fleet::{Fleet, Kind, AUTH_COOKIE, PROFILE_MARKER};
use crate::kubectl::{exec, port_forward, sh};
use crate::node;
use crate::setup::Installed;

/// Where the profile claim's hostPath volume lives on the node.
const PROFILE_ROOT: &str = "/var/tmp/playpen-chaos";

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// kill -9 of the leading operator replica while a burst of sessions is created.
    OperatorLeaderKilled,
    /// kube-apiserver stopped and started again.
    ApiServerRestarted,
    /// etcd stopped and started again.
    EtcdRestarted,
    /// The kubelet stopped for 30 s.
    KubeletStopped,
    /// containerd stopped and started again.
    ContainerdRestarted,
    /// kill -9 of `playpen-session` (PID 1) in browser Pods.
    RuntimeKilled,
    /// kill -9 of the viewer's dashboard process in browser Pods.
    DashboardKilled,
    /// A file bigger than the snapshot volume written into it.
    SnapshotVolumeFilled,
    /// Browser Pods evicted through the Eviction API.
    PodsEvicted,
    /// A session's Service, Secret, ConfigMap and NetworkPolicy, and another's Pod, deleted by hand.
    ChildrenDeleted,
}

/// What a fault left to check once the fleet converged.
#[derive(Debug)]
pub enum Check {
    /// Nothing beyond convergence.
    Converged,
    /// These (session, pod UID, browser restarts before) restarted in place: same Pod, more restarts.
    RestartedInPlace(Vec<(String, String, i32)>),
    /// These (session, pod UID, restarts before) kept their Pod and container.
    Untouched(Vec<(String, String, i32)>),
    /// These (session, old pod UID) have a new Pod.
    Replaced(Vec<(String, String)>),
    /// The operator Pod that was killed: its container restarted.
    OperatorRestarted { namespace: String, pod: String, restarts_before: i32 },
}

impl Fault {
    /// Every fault, in the order the suite injects them.
    pub const ALL: [Fault; 10] = [
        Fault::OperatorLeaderKilled,
        Fault::ApiServerRestarted,
        Fault::EtcdRestarted,
        Fault::KubeletStopped,
        Fault::ContainerdRestarted,
        Fault::RuntimeKilled,
        Fault::DashboardKilled,
        Fault::SnapshotVolumeFilled,
        Fault::PodsEvicted,
        Fault::ChildrenDeleted,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Fault::OperatorLeaderKilled => "leading operator replica killed during a burst",
            Fault::ApiServerRestarted => "API server restarted",
            Fault::EtcdRestarted => "etcd restarted",
            Fault::KubeletStopped => "kubelet stopped for 30 s",
            Fault::ContainerdRestarted => "containerd restarted",
            Fault::RuntimeKilled => "playpen-session (PID 1) killed",
            Fault::DashboardKilled => "viewer dashboard killed",
            Fault::SnapshotVolumeFilled => "snapshot volume filled",
            Fault::PodsEvicted => "browser Pods evicted",
            Fault::ChildrenDeleted => "children deleted by hand",
        }
    }

    /// Injects the fault; returns what was done and what to check afterwards.
    pub async fn inject(
        self,
        client: &Client,
        installed: &Installed,
        fleet: &mut Fleet,
    ) -> anyhow::Result<(String, Check)> {
        match self {
            Fault::OperatorLeaderKilled => {
                for _ in 0..6 {
                    fleet.create(Kind::Plain).await?;
                }
                fleet.delete_oldest_plain().await?;
                let (pod, uid, restarts_before) = leader(client, &installed.system.name).await?;
                let killed = kill_in_pod(&uid, "playpen-operator")?;
                let check = Check::OperatorRestarted {
                    namespace: installed.system.name.clone(),
                    pod: pod.clone(),
                    restarts_before,
                };
                Ok((format!("kill -9 of the leader {pod} ({killed} process) amid 8 creates and 2 deletes"), check))
            }
            Fault::ApiServerRestarted => component("restart", "kube-apiserver", 2).await,
            Fault::EtcdRestarted => component("restart", "etcd", 2).await,
            Fault::KubeletStopped => component("restart", "kubelet", 30).await,
            Fault::ContainerdRestarted => component("restart", "containerd", 0).await,
            Fault::RuntimeKilled => {
                let mut targets = fleet.kept_files.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>();
                targets.extend(fleet.of_kind(Kind::Profile));
                targets.extend(fleet.of_kind(Kind::Auth));
                let before = kill_in_browser_pods(fleet, &targets, "playpen-session run").await?;
                Ok((format!("kill -9 of PID 1 in {} browser Pods", targets.len()), Check::RestartedInPlace(before)))
            }
            Fault::DashboardKilled => {
                // Not the two created for this round: they may have no Pod yet.
                let targets: Vec<String> = fleet.of_kind(Kind::Plain).into_iter().rev().skip(2).take(3).collect();
                // The dashboard runs only while someone views: a viewer first, through the tunnel a human uses.
                for name in &targets {
                    view(&fleet.ns, name).await?;
                }
                let before = kill_in_browser_pods(fleet, &targets, "dashboardApp.js").await?;
                Ok((format!("kill -9 of the dashboard in {} browser Pods", targets.len()), Check::Untouched(before)))
            }
            Fault::SnapshotVolumeFilled => {
                let name = fleet.of_kind(Kind::Small).first().cloned().context("no small-volume session")?;
                let pod = fleet.pod(&name).await?;
                let uid = pod.uid().context("pod uid")?;
                let path = "/var/lib/playpen/snapshots/fill.bin";
                // 100 MiB into a 64Mi emptyDir: the kubelet would evict the Pod for it.
                sh(&fleet.ns, &pod.name_any(), "browser", &format!("dd if=/dev/zero of={path} bs=1M count=100 2>&1"))
                    .await?;
                let check = Check::Untouched(vec![(name.clone(), uid, browser_restarts(&pod))]);
                // The file must be gone too; checked first, then the Pod.
                fleet_file_gone(fleet, &name, path).await?;
                Ok((format!("100 MiB written into the 64Mi snapshot emptyDir of {name}"), check))
            }
            Fault::PodsEvicted => {
                let kept: Vec<String> = fleet.kept_files.iter().map(|(s, _)| s.clone()).collect();
                let mut targets = fleet.of_kind(Kind::Profile);
                targets.extend(fleet.of_kind(Kind::Auth));
                targets.extend(fleet.of_kind(Kind::Plain).into_iter().filter(|s| !kept.contains(s)).take(2));
                let mut old = vec![];
                for name in &targets {
                    let pod = fleet.pod(name).await?;
                    let pods: Api<Pod> = Api::namespaced(client.clone(), &fleet.ns);
                    pods.evict(&pod.name_any(), &EvictParams::default())
                        .await
                        .with_context(|| format!("evicting {name}"))?;
                    old.push((name.clone(), pod.uid().context("pod uid")?));
                }
                Ok((format!("{} browser Pods evicted (Eviction API)", targets.len()), Check::Replaced(old)))
            }
            Fault::ChildrenDeleted => {
                let plain = fleet.of_kind(Kind::Plain);
                let (a, b) = (plain.first().context("a plain session")?, plain.get(1).context("two plain sessions")?);
                let selector = format!("app.kubernetes.io/instance={a}");
                let lp = ListParams::default().labels(&selector);
                let dp = DeleteParams::default();
                let ns = fleet.ns.clone();
                let deleted = delete_labelled::<Service>(client, &ns, &lp).await?
                    + delete_labelled::<Secret>(client, &ns, &lp).await?
                    + delete_labelled::<ConfigMap>(client, &ns, &lp).await?
                    + delete_labelled::<NetworkPolicy>(client, &ns, &lp).await?;
                ensure!(deleted >= 4, "{a} had only {deleted} children besides its Pod");
                let pod = fleet.pod(b).await?;
                Api::<Pod>::namespaced(client.clone(), &ns).delete(&pod.name_any(), &dp).await?;
                let check = Check::Replaced(vec![(b.clone(), pod.uid().context("pod uid")?)]);
                Ok((format!("{deleted} children of {a} and the Pod of {b} deleted"), check))
            }
        }
    }
}

/// Checks what `check` says, once the fleet has converged.
pub async fn verify(client: &Client, fleet: &Fleet, check: &Check) -> anyhow::Result<()> {
    match check {
        Check::Converged => {}
        Check::RestartedInPlace(before) => {
            for (name, uid, restarts) in before {
                let pod = fleet.pod(name).await?;
                ensure!(pod.uid().as_deref() == Some(uid.as_str()), "{name}: the Pod was replaced, not restarted");
                ensure!(browser_restarts(&pod) > *restarts, "{name}: the browser container did not restart");
            }
        }
        Check::Untouched(before) => {
            for (name, uid, restarts) in before {
                let pod = fleet.pod(name).await?;
                ensure!(pod.uid().as_deref() == Some(uid.as_str()), "{name}: the Pod was replaced (evicted?)");
                ensure!(browser_restarts(&pod) == *restarts, "{name}: the browser container restarted");
            }
        }
        Check::Replaced(old) => {
            for (name, uid) in old {
                let pod = fleet.pod(name).await?;
                ensure!(pod.uid().as_deref() != Some(uid.as_str()), "{name}: still the old Pod");
            }
        }
        Check::OperatorRestarted { namespace, pod, restarts_before } => {
            let pod = Api::<Pod>::namespaced(client.clone(), namespace).get(pod).await?;
            ensure!(operator_restarts(&pod) > *restarts_before, "the killed operator container did not restart");
        }
    }
    Ok(())
}

async fn fleet_file_gone(fleet: &Fleet, session: &str, path: &str) -> anyhow::Result<()> {
    let pod = fleet.pod(session).await?.name_any();
    playpen_tests::eventually(Duration::from_secs(20), || async {
        let out = exec(&fleet.ns, &pod, "browser", &["test", "-e", path]).await?;
        ensure!(out.code == 1, "{path} is still in {session}'s snapshot volume");
        Ok(())
    })
    .await
}

/// Restarts of the operator Pod's one container.
fn operator_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(0, |c| c.restart_count)
}

fn browser_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "browser"))
        .map_or(0, |c| c.restart_count)
}

/// `tests/cluster/fault.sh` on a component, off the async threads.
async fn component(action: &'static str, name: &'static str, down: u64) -> anyhow::Result<(String, Check)> {
    tokio::task::spawn_blocking(move || node::cluster_fault(action, name, down)).await??;
    Ok((format!("{name}: {action}, down {down} s"), Check::Converged))
}

/// Kills `needle` in the browser Pod of each of `sessions`; returns (session,
/// pod UID, browser restarts before) for each.
async fn kill_in_browser_pods(
    fleet: &Fleet,
    sessions: &[String],
    needle: &str,
) -> anyhow::Result<Vec<(String, String, i32)>> {
    let mut before = vec![];
    for name in sessions {
        let pod = fleet.pod(name).await?;
        let uid = pod.uid().context("pod uid")?;
        before.push((name.clone(), uid.clone(), browser_restarts(&pod)));
        kill_in_pod(&uid, needle)?;
    }
    Ok(before)
}

/// Opens `session`'s viewer through `kubectl port-forward`, which starts its dashboard.
async fn view(ns: &str, session: &str) -> anyhow::Result<()> {
    // Twice, each through a new tunnel: right after the faults before this
    // one a port-forward stream once hung (30 s without an answer) where a
    // new one is served; a viewer that answers on the second try still works.
    match view_once(ns, session).await {
        Ok(()) => Ok(()),
        Err(first) => {
            eprintln!("chaos: viewing {session} failed once ({first:#}); trying a new tunnel");
            view_once(ns, session).await
        }
    }
}

async fn view_once(ns: &str, session: &str) -> anyhow::Result<()> {
    let port = u16::try_from(playpen_api::v1alpha1::DEFAULT_VIEWER_PORT)?;
    let forward = port_forward(ns, &format!("svc/{session}-view"), port).await?;
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], forward.local_port));
    let (code, _) = playpen_tests::http_get(local, "/").await.with_context(|| format!("viewing {session}"))?;
    ensure!(code == 302, "{session}: the viewer answered {code}, expected the dashboard's 302");
    Ok(())
}

/// Deletes every `K` in `ns` that `lp` selects; how many.
async fn delete_labelled<K>(client: &Client, ns: &str, lp: &ListParams) -> anyhow::Result<usize>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let items = api.list(lp).await?.items;
    for item in &items {
        api.delete(&item.name_any(), &DeleteParams::default()).await?;
    }
    Ok(items.len())
}

/// SIGKILLs the processes of Pod `uid` whose command line contains `needle`; how many.
fn kill_in_pod(uid: &str, needle: &str) -> anyhow::Result<usize> {
    let procs = node::processes();
    let targets = node::in_pod(&procs, uid, needle);
    if targets.is_empty() {
        bail!("no process {needle:?} in Pod {uid}");
    }
    for p in &targets {
        node::sigkill(p.pid)?;
    }
    Ok(targets.len())
}

/// The operator Pod holding the Lease in `ns`: (name, UID, container restarts).
async fn leader(client: &Client, ns: &str) -> anyhow::Result<(String, String, i32)> {
    let leases = Api::<Lease>::namespaced(client.clone(), ns).list(&ListParams::default()).await?.items;
    let pods = Api::<Pod>::namespaced(client.clone(), ns).list(&ListParams::default()).await?.items;
    for lease in leases {
        let Some(holder) = lease.spec.and_then(|s| s.holder_identity) else { continue };
        if let Some(pod) = pods.iter().find(|p| p.name_any() == holder) {
            return Ok((holder, pod.uid().context("pod uid")?, operator_restarts(pod)));
        }
    }
    bail!("no Lease in {ns} is held by one of its Pods")
}

/// The profile claim (a hostPath volume on the node, writable by the browser
/// user) and the auth state Secret in `ns`.
pub async fn prepare_profile_and_auth(client: &Client, ns: &str) -> anyhow::Result<()> {
    let dir = format!("{PROFILE_ROOT}/{ns}");
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": format!("{ns}-profile")},
        "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
            "hostPath": {"path": dir, "type": "Directory"},
            "claimRef": {"namespace": ns, "name": "chaos-profile"}
        }
    }))?;
    Api::<PersistentVolume>::all(client.clone()).create(&PostParams::default(), &pv).await?;
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "chaos-profile"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": format!("{ns}-profile"),
            "resources": {"requests": {"storage": "1Gi"}}}
    }))?;
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns).create(&PostParams::default(), &pvc).await?;
    let state = json!({"cookies": [{"name": AUTH_COOKIE, "value": "kept", "domain": "fixture.chaos.test", "path": "/",
        "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}], "origins": []});
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "chaos-auth"}, "stringData": {"state.json": state.to_string()}
    }))?;
    Api::<Secret>::namespaced(client.clone(), ns).create(&PostParams::default(), &secret).await?;
    Ok(())
}

/// Deletes the profile volume and its directory (best effort: cleanup).
pub async fn remove_profile_volume(client: &Client, ns: &str) {
    let _ =
        Api::<PersistentVolume>::all(client.clone()).delete(&format!("{ns}-profile"), &DeleteParams::default()).await;
    let _ = std::fs::remove_dir_all(format!("{PROFILE_ROOT}/{ns}"));
}

/// Writes what must survive: the marker on the profile claim, and a snapshot
/// (from a real `playwright-cli goto`) in the two newest plain sessions.
pub async fn write_survivors(fleet: &mut Fleet, fixture_url: &str) -> anyhow::Result<()> {
    let ns = fleet.ns.clone();
    for name in fleet.of_kind(Kind::Profile) {
        let pod = fleet.pod(&name).await?.name_any();
        sh(&ns, &pod, "browser", &format!("echo kept > {PROFILE_MARKER}")).await?;
    }
    for name in fleet.of_kind(Kind::Plain).into_iter().rev().take(2) {
        let pod = fleet.pod(&name).await?.name_any();
        let out =
            exec(&ns, &pod, "browser", &["playwright-cli", "goto", fixture_url]).await?.ok("playwright-cli goto")?;
        let start = out.find("[Snapshot](").with_context(|| format!("no snapshot link in:\n{out}"))? + 11;
        let end = out[start..].find(')').context("unterminated link")? + start;
        let path = out[start..end].to_owned();
        // As printed: relative to the container's working directory, where exec runs too.
        fleet.kept_files.push((name, path));
    }
    fleet.files_written = true;
    Ok(())
}
