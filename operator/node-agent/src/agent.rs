//! The agent's loop: two watches (the Pods on its node; the gated Pods
//! labelled to be restored onto it), one task per Pod at a time, answers
//! written back as annotations, and a periodic collection of what the
//! store no longer needs.

use crate::plan::{self, Action, Meta};
use crate::runsc::Runsc;
use crate::store::{self, Store};
use crate::Error;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use playpen_api::live::{
    CheckpointResult, RestoreResult, CHECKPOINT_RESULT, GVISOR_RESTORE_IMAGE, RESTORE_GATE, RESTORE_NODE_LABEL,
    RESTORE_RESULT,
};
use playpen_api::BrowserSession;
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// The field manager of the agent's patches.
const MANAGER: &str = "playpen-node-agent";
/// A partial checkpoint older than this was abandoned by a dead agent.
const MAX_PARTIAL: Duration = Duration::from_secs(15 * 60);
/// A checkpoint is kept this long even before its session's status names
/// it (the operator writes the status after the agent's answer).
const UNCLAIMED_GRACE: Duration = Duration::from_secs(10 * 60);

/// How the agent runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The node it serves (the downward API's `spec.nodeName`).
    pub node: String,
    pub store: Store,
    pub runsc: Runsc,
    /// No checkpoint is kept longer than this.
    pub max_age: Duration,
    /// How often the store is collected.
    pub collect_every: Duration,
}

struct Agent {
    client: Client,
    config: Config,
    /// Pods (by UID) with a task running.
    busy: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("config", &self.config).finish_non_exhaustive()
    }
}

/// Runs the agent until its watches end.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    let node = config.node.clone();
    let every = config.collect_every;
    let agent = Arc::new(Agent { client: client.clone(), config, busy: Mutex::new(HashSet::new()) });
    let pods: Api<Pod> = Api::all(client);
    let on_node = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let to_restore = watcher::Config::default().labels(&format!("{RESTORE_NODE_LABEL}={node}"));
    let local = watcher(pods.clone(), on_node).default_backoff().applied_objects().boxed();
    let restoring = watcher(pods, to_restore).default_backoff().applied_objects().boxed();
    let mut events = futures::stream::select(local, restoring);
    let collector = tokio::spawn(collect_forever(agent.clone(), every));
    info!(node = %node, "node agent watching");
    while let Some(event) = events.next().await {
        match event {
            Ok(pod) => consider(&agent, pod),
            Err(e) => warn!(error = %e, "watch error; retrying"),
        }
    }
    collector.abort();
    Ok(())
}

/// Starts the task `pod` asks for, unless one runs for it already.
fn consider(agent: &Arc<Agent>, pod: Pod) {
    let action = plan::action(&pod, &agent.config.node);
    if action == Action::Nothing {
        return;
    }
    let Some(uid) = pod.uid() else { return };
    if !agent.busy.lock().unwrap_or_else(|e| e.into_inner()).insert(uid.clone()) {
        return;
    }
    let agent = agent.clone();
    tokio::spawn(async move {
        if let Err(e) = act(&agent, &pod, action).await {
            warn!(namespace = pod.namespace().unwrap_or_default(), pod = pod.name_any(), error = %e, "answering the Pod failed");
        }
        agent.busy.lock().unwrap_or_else(|e| e.into_inner()).remove(&uid);
    });
}

async fn act(agent: &Agent, pod: &Pod, action: Action) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(agent.client.clone(), &pod.namespace().unwrap_or_default());
    let name = pod.name_any();
    let annotate = |key: &str, value: String| json!({ "metadata": { "annotations": { key: value } } });
    let patch = match action {
        Action::Nothing => return Ok(()),
        Action::Checkpoint { request } => {
            let result = checkpoint(agent, pod, request).await;
            annotate(CHECKPOINT_RESULT, serde_json::to_string(&result).unwrap_or_default())
        }
        Action::RefuseCheckpoint { request, error } => {
            let result =
                CheckpointResult { request, ok: false, node: agent.config.node.clone(), error, ..Default::default() };
            annotate(CHECKPOINT_RESULT, serde_json::to_string(&result).unwrap_or_default())
        }
        Action::Stage { from } => match stage(agent, pod, &from) {
            Ok(patch) => patch,
            Err(e) => {
                warn!(namespace = pod.namespace().unwrap_or_default(), pod = %name, from = %from, error = %e, "restore refused");
                let refused = RestoreResult { from, error: e.to_string() };
                annotate(RESTORE_RESULT, serde_json::to_string(&refused).unwrap_or_default())
            }
        },
        Action::RefuseRestore { from, error } => {
            annotate(RESTORE_RESULT, serde_json::to_string(&RestoreResult { from, error }).unwrap_or_default())
        }
    };
    api.patch(&name, &PatchParams::apply(MANAGER), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Checkpoints `pod`'s sandbox into the store and says how it went.
async fn checkpoint(agent: &Agent, pod: &Pod, request: String) -> CheckpointResult {
    let node = agent.config.node.clone();
    let started = Instant::now();
    match take(agent, pod, started).await {
        Ok(meta) => {
            info!(namespace = %meta.namespace, pod = %meta.pod, bytes = meta.bytes, millis = meta.millis, "checkpointed");
            CheckpointResult { request, ok: true, node, bytes: meta.bytes, millis: meta.millis, error: String::new() }
        }
        Err(e) => {
            warn!(namespace = pod.namespace().unwrap_or_default(), pod = pod.name_any(), error = %e, "checkpoint failed");
            CheckpointResult { request, ok: false, node, error: e.to_string(), ..Default::default() }
        }
    }
}

async fn take(agent: &Agent, pod: &Pod, started: Instant) -> Result<Meta, Error> {
    let uid = pod.uid().unwrap_or_default();
    let sandbox = agent.config.runsc.find_sandbox(&uid).await?;
    let store = &agent.config.store;
    let dir = store.begin(&uid)?;
    if let Err(e) = agent.config.runsc.checkpoint(&sandbox, &dir).await {
        store.abandon(&dir);
        return Err(e);
    }
    let mut meta = Meta {
        namespace: pod.namespace().unwrap_or_default(),
        pod: pod.name_any(),
        pod_uid: uid,
        owner: plan::owner_of(pod),
        taken_at: store::now_secs(SystemTime::now()),
        bytes: 0,
        millis: started.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
    };
    if let Err(e) = store.commit(&dir, &mut meta) {
        store.abandon(&dir);
        return Err(e);
    }
    Ok(meta)
}

/// Moves checkpoint `from` into place for `pod`; the patch that points the
/// shim at it and lifts the gate.
fn stage(agent: &Agent, pod: &Pod, from: &str) -> Result<serde_json::Value, Error> {
    let to = pod.uid().unwrap_or_default();
    let image = agent.config.store.stage(from, &to, |meta| plan::may_restore(meta, pod))?;
    info!(namespace = pod.namespace().unwrap_or_default(), pod = pod.name_any(), from = %from, "restore staged");
    let gates: Vec<_> = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|g| g.name != RESTORE_GATE)
        .collect();
    Ok(json!({
        "metadata": { "annotations": { GVISOR_RESTORE_IMAGE: image.display().to_string() } },
        "spec": { "schedulingGates": gates },
    }))
}

async fn collect_forever(agent: Arc<Agent>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if let Err(e) = collect(&agent).await {
            warn!(error = %e, "collecting the checkpoint store failed");
        }
    }
}

/// Removes checkpoints their session no longer names (it is gone, resumed
/// afresh, or parked past its bound) and restore images whose Pod has
/// started or is gone.
async fn collect(agent: &Agent) -> Result<(), Error> {
    let pods: Api<Pod> = Api::all(agent.client.clone());
    let node = &agent.config.node;
    let mut waiting = BTreeMap::new();
    for params in [
        ListParams::default().fields(&format!("spec.nodeName={node}")),
        ListParams::default().labels(&format!("{RESTORE_NODE_LABEL}={node}")),
    ] {
        for pod in pods.list(&params).await? {
            let started = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            waiting.insert(pod.uid().unwrap_or_default(), !started);
        }
    }
    let store = &agent.config.store;
    let mut gone_owners = HashSet::new();
    let now = store::now_secs(SystemTime::now());
    for meta in store.metas()? {
        let Some(owner) = meta.owner.as_ref().filter(|o| o.kind == "BrowserSession") else { continue };
        if now.saturating_sub(meta.taken_at) < UNCLAIMED_GRACE.as_secs() {
            continue;
        }
        let sessions: Api<BrowserSession> = Api::namespaced(agent.client.clone(), &meta.namespace);
        match sessions.get_opt(&owner.name).await {
            Ok(Some(s)) if plan::names_checkpoint(&s, &owner.uid, &meta.pod_uid) => {}
            Ok(_) => {
                gone_owners.insert(meta.pod_uid.clone());
            }
            Err(e) => warn!(error = %e, "looking up a checkpoint's session; kept"),
        }
    }
    let gone = store.collect(
        SystemTime::now(),
        agent.config.max_age,
        MAX_PARTIAL,
        |meta| !gone_owners.contains(&meta.pod_uid),
        |uid| waiting.get(uid).copied().unwrap_or(false),
    )?;
    if gone != store::Collected::default() {
        info!(snapshots = ?gone.snapshots, restores = ?gone.restores, "collected");
    }
    Ok(())
}
