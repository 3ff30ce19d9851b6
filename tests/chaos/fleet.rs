//! A fleet of live sessions in one namespace, and the convergence checks run
//! after every fault: each session that should exist is Ready, each deleted
//! one is gone with its children, no child lacks a live owner, no Chromium
//! outlives its container, and the files that should survive are there.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use playpen_api::v1alpha1::{condition, Phase};
use playpen_api::BrowserSession;
use playpen_operator::children::COMPONENT_BASELINE;
use playpen_tests::eventually_every;
use playpen_tests::fixtures::session;
use serde_json::json;

use crate::kubectl::exec;
use crate::node;
use crate::setup::{tolerations, BROWSER_IMAGE};

/// The label every child carries (`app.kubernetes.io/managed-by`).
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=playpen-operator";
/// The file the profile session writes to its profile claim.
pub const PROFILE_MARKER: &str = "/var/lib/playpen/profile/chaos-marker";
/// The cookie the auth session's state file carries.
pub const AUTH_COOKIE: &str = "chaos_auth";

/// What a session is for, beyond being live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain session.
    Plain,
    /// Its browser profile is on a claim; a marker file there must survive.
    Profile,
    /// It loads an auth state Secret; the cookie must be in the browser.
    Auth,
    /// A 64Mi snapshot emptyDir, for filling.
    Small,
}

/// The sessions of one namespace and what the suite expects of them.
pub struct Fleet {
    client: Client,
    /// The namespace.
    pub ns: String,
    api: Api<BrowserSession>,
    /// Sessions that should exist, by kind.
    pub live: BTreeMap<String, Kind>,
    /// Sessions deleted so far.
    pub deleted: BTreeSet<String>,
    /// Snapshot files (session, path) that must survive.
    pub kept_files: Vec<(String, String)>,
    /// Whether the profile marker and the kept files have been written (and are checked).
    pub files_written: bool,
    seq: u32,
}

/// What one convergence check counted.
#[derive(Debug, Clone, Default)]
pub struct Count {
    /// Sessions not (yet) Ready, with why.
    pub not_ready: Vec<String>,
    /// Deleted sessions still present.
    pub lingering: Vec<String>,
    /// Children without a live owner.
    pub ownerless: Vec<String>,
    /// Chromium processes whose container is gone.
    pub orphans: Vec<String>,
    /// Files that should have survived and did not.
    pub lost: Vec<String>,
}

impl Count {
    fn converged(&self) -> bool {
        self.not_ready.is_empty()
            && self.lingering.is_empty()
            && self.ownerless.is_empty()
            && self.orphans.is_empty()
            && self.lost.is_empty()
    }
}

impl Fleet {
    /// An empty fleet in `ns`.
    pub fn new(client: &Client, ns: &str) -> Self {
        Self {
            client: client.clone(),
            ns: ns.to_owned(),
            api: Api::namespaced(client.clone(), ns),
            live: BTreeMap::new(),
            deleted: BTreeSet::new(),
            kept_files: vec![],
            files_written: false,
            seq: 0,
        }
    }

    /// Creates a session of `kind`; returns its name. Does not wait.
    pub async fn create(&mut self, kind: Kind) -> anyhow::Result<String> {
        self.seq += 1;
        let name = format!("s{:03}", self.seq);
        let mut spec = json!({
            "image": BROWSER_IMAGE,
            "imagePullPolicy": "Never",
            "launchConfig": {
                "executablePath": "/usr/bin/chromium",
                "args": ["--disable-background-networking", "--disable-component-update"]
            },
            "pod": {"tolerations": tolerations(), "shmSize": "128Mi"},
            // The fixture server beside the sessions is the one peer they may reach.
            "network": {"egress": {"mode": "AllowListOnly", "allowPeers": [{"podLabels": {"app": "fixture"}}]}}
        });
        match kind {
            Kind::Plain => {}
            Kind::Profile => spec["profile"] = json!({"claimName": "chaos-profile"}),
            Kind::Auth => spec["authState"] = json!({"secretRef": {"name": "chaos-auth"}}),
            Kind::Small => spec["snapshots"] = json!({"volume": {"emptyDir": {"sizeLimit": "64Mi"}}}),
        }
        self.api
            .create(&PostParams::default(), &session(&name, spec)?)
            .await
            .with_context(|| format!("creating {name}"))?;
        self.live.insert(name.clone(), kind);
        Ok(name)
    }

    /// Deletes the oldest plain session; returns its name.
    pub async fn delete_oldest_plain(&mut self) -> anyhow::Result<String> {
        let name = self
            .live
            .iter()
            .find(|(_, k)| **k == Kind::Plain)
            .map(|(n, _)| n.clone())
            .context("no plain session left to delete")?;
        self.api.delete(&name, &DeleteParams::default()).await.with_context(|| format!("deleting {name}"))?;
        self.live.remove(&name);
        self.kept_files.retain(|(s, _)| *s != name);
        self.deleted.insert(name.clone());
        Ok(name)
    }

    /// The names of live sessions of `kind`.
    pub fn of_kind(&self, kind: Kind) -> Vec<String> {
        self.live.iter().filter(|(_, k)| **k == kind).map(|(n, _)| n.clone()).collect()
    }

    /// The browser Pod of `name` as the API server has it.
    pub async fn pod(&self, name: &str) -> anyhow::Result<Pod> {
        let bs = self.api.get(name).await?;
        let pod = bs.status.and_then(|s| s.pod_name).with_context(|| format!("{name} has no status.podName"))?;
        Ok(Api::<Pod>::namespaced(self.client.clone(), &self.ns).get(&pod).await?)
    }

    /// One pass of every check.
    pub async fn count(&self) -> anyhow::Result<Count> {
        let mut count = Count::default();
        let sessions = self.api.list(&ListParams::default()).await?.items;
        let uids: BTreeSet<String> = sessions.iter().filter_map(|s| s.uid()).collect();
        for bs in &sessions {
            let name = bs.name_any();
            if self.deleted.contains(&name) {
                count.lingering.push(name);
                continue;
            }
            let status = bs.status.clone().unwrap_or_default();
            let ok = |t: &str| status.conditions.iter().any(|c| c.type_ == t && c.status == "True");
            if status.phase != Some(Phase::Ready) || !ok(condition::BROWSER_READY) || !ok(condition::VIEWER_READY) {
                let why: Vec<String> = status
                    .conditions
                    .iter()
                    .filter(|c| c.status != "True")
                    .map(|c| format!("{}={}: {}", c.type_, c.reason, c.message))
                    .collect();
                count.not_ready.push(format!("{name} {:?} {}", status.phase, why.join("; ")));
            }
        }
        let present: BTreeSet<String> = sessions.iter().map(ResourceExt::name_any).collect();
        for name in self.live.keys().filter(|n| !present.contains(*n)) {
            count.not_ready.push(format!("{name} is missing"));
        }
        count.ownerless.extend(self.ownerless::<Pod>(&uids).await?);
        count.ownerless.extend(self.ownerless::<Service>(&uids).await?);
        count.ownerless.extend(self.ownerless::<Secret>(&uids).await?);
        count.ownerless.extend(self.ownerless::<ConfigMap>(&uids).await?);
        count.ownerless.extend(self.ownerless::<NetworkPolicy>(&uids).await?);
        count.ownerless.extend(self.ownerless::<PersistentVolumeClaim>(&uids).await?);
        let all_pods = Api::<Pod>::all(self.client.clone()).list(&ListParams::default()).await?.items;
        let running = node::running_containers(&all_pods);
        count.orphans = node::orphan_chromium(&node::processes(), &running)
            .into_iter()
            .map(|p| format!("pid {} of pod {:?} container {:?}", p.pid, p.pod_uid, p.container_id))
            .collect();
        if count.not_ready.is_empty() && self.files_written {
            count.lost = self.lost_files().await?;
        }
        Ok(count)
    }

    /// Children (by the operator's label) whose owner is not a live session.
    async fn ownerless<K>(&self, live_uids: &BTreeSet<String>) -> anyhow::Result<Vec<String>>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.ns);
        let items = api.list(&ListParams::default().labels(MANAGED_BY)).await?.items;
        Ok(items
            .iter()
            .filter(|o| o.meta().deletion_timestamp.is_none())
            // The namespace's baseline policy serves every session: no owner.
            .filter(|o| o.labels().get("app.kubernetes.io/component").map(String::as_str) != Some(COMPONENT_BASELINE))
            .filter(|o| !o.owner_references().iter().any(|r| r.kind == "BrowserSession" && live_uids.contains(&r.uid)))
            .map(|o| format!("{} {}", K::kind(&K::DynamicType::default()), o.name_any()))
            .collect())
    }

    /// The profile marker, the auth cookie and the kept snapshot files, checked in the browser containers.
    async fn lost_files(&self) -> anyhow::Result<Vec<String>> {
        let mut lost = vec![];
        for name in self.of_kind(Kind::Profile) {
            let pod = self.pod(&name).await?.name_any();
            if exec(&self.ns, &pod, "browser", &["cat", PROFILE_MARKER]).await?.code != 0 {
                lost.push(format!("{name}: {PROFILE_MARKER}"));
            }
        }
        for name in self.of_kind(Kind::Auth) {
            let pod = self.pod(&name).await?.name_any();
            let out = exec(&self.ns, &pod, "browser", &["playwright-cli", "cookie-list"]).await?;
            if !out.stdout.contains(AUTH_COOKIE) {
                lost.push(format!("{name}: cookie {AUTH_COOKIE} ({} {})", out.stdout.trim(), out.stderr.trim()));
            }
        }
        for (name, path) in &self.kept_files {
            let pod = self.pod(name).await?.name_any();
            if exec(&self.ns, &pod, "browser", &["test", "-f", path]).await?.code != 0 {
                lost.push(format!("{name}: {path}"));
            }
        }
        Ok(lost)
    }

    /// Waits until every check passes; returns how long that took. Once a
    /// second: a count lists every kind of child and execs into Pods.
    pub async fn converge(&self, timeout: Duration) -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        eventually_every(Duration::from_secs(1), timeout, || async {
            // The API server may be coming back from a fault.
            let count = self.count().await.context("the check itself failed")?;
            ensure!(count.converged(), "not converged: {count:#?}");
            Ok(())
        })
        .await?;
        Ok(t0.elapsed())
    }
}
