//! Benchmark driver (run by `tests/bench/operator.sh`, not a test): N
//! BrowserSessions created in a burst (or paced) against the real API
//! server, in phases measured in the same run and printed as one table:
//!
//! 1. **one ConfigMap**: create → watch event of N plain ConfigMaps, the
//!    floor of one API round trip;
//! 2. **rounds** (`PLAYPEN_BENCH_ROUNDS`, 3), each of two phases in the
//!    order the round gives (ideal first in odd rounds, operator first in
//!    even ones), each on a settled cluster (the last phase's deletion
//!    done, the cluster's own writes stopped) in a namespace of its own:
//!    - **ideal**: N sessions whose children the ideal controller creates
//!      ([`ideal`]): the limit the API server and etcd set on this machine;
//!    - **operator**: N sessions reconciled by the real operator (a
//!      separate process watching only its own namespace);
//! 3. **resync** (after the last round's operator phase): the operator
//!    restarted once the N sessions have settled: the new process lists and
//!    reconciles every session; whatever it writes is waste (target: nothing).
//!
//! One phase on this shared machine is a coin toss: the table shows the
//! median round (by p99 ratio) whole, every round's ratios below, and the
//! targets judged on the medians.
//!
//! Each phase: create → all children present (and → Ready with
//! `PLAYPEN_BENCH_READY=1`), sessions per second, the API server's request
//! counts by resource and verb ([`apimetrics`]), the operator's reconciles,
//! CPU seconds and peak RSS.
//!
//! Environment (tests/bench/operator.sh sets the first four):
//! `PLAYPEN_BENCH_OPERATOR` the operator binary; `PLAYPEN_BENCH_METRICS_ADDR`
//! its /metrics address (127.0.0.1:18081); `PLAYPEN_BENCH_OPERATOR_LOG` its
//! log; `PLAYPEN_BENCH_PIDFILE` where its pid is kept for the script's
//! cleanup; `PLAYPEN_BENCH_NAMESPACE` the namespaces' prefix
//! (playpen-bench-operator: `-baseline`, `-ideal-<round>` and
//! `-operator-<round>`, labelled `playpen.dev/bench=operator`); `PLAYPEN_BENCH_CONCURRENCY` the ideal
//! controller's concurrency (the operator's reconcile concurrency,
//! `RECONCILE_CONCURRENCY`);
//! `PLAYPEN_BENCH_ROUNDS` rounds of ideal and operator (3);
//! `PLAYPEN_BENCH_READY=1` also waits for Ready (needs nodes that run the
//! Pods); `PLAYPEN_BENCH_SPEC` a JSON object merged into every session's
//! spec (e.g. `{"pod":{"tolerations":[…]}}`); `PLAYPEN_BENCH_TIMEOUT`
//! seconds to wait for each phase (600).

#[path = "operator/apimetrics.rs"]
mod apimetrics;
#[path = "operator/cpu.rs"]
mod cpu;
#[path = "operator/ideal.rs"]
mod ideal;
#[path = "operator/process.rs"]
mod process;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use playpen_api::naming::ChildNames;
use playpen_api::v1alpha1::condition;
use playpen_api::BrowserSession;
use playpen_operator::children::{self, managed_selector, Identity, Settings};
use playpen_tests::{client, ensure_crd, eventually};
use serde::de::DeserializeOwned;

use apimetrics::Delta;
use process::{Launch, Operator};

/// Label on the bench's namespaces, by which the script finds leftovers.
const BENCH_LABEL: (&str, &str) = ("playpen.dev/bench", "operator");
/// Sessions (and baseline ConfigMaps) created at once.
const CREATE_CONCURRENCY: usize = 32;
/// Resources a BrowserSession controller writes (the operator, or the ideal
/// one); the rest (EndpointSlices, Leases…) are the cluster's own writes.
const CONTROLLER_RESOURCES: &[&str] = &[
    "browsersessions",
    "browsersessions/status",
    "pods",
    "secrets",
    "configmaps",
    "services",
    "networkpolicies",
    "persistentvolumeclaims",
    "events",
];
/// How long the reconcile counter must stand still before a phase is settled.
const QUIET: Duration = Duration::from_secs(3);

#[derive(Debug)]
struct Options {
    n: usize,
    /// Sessions per second; 0 creates them as fast as possible (a burst).
    rate: f64,
    controller_concurrency: usize,
    ready: bool,
    spec: serde_json::Map<String, serde_json::Value>,
    prefix: String,
    /// Rounds of ideal and operator, alternating which goes first.
    rounds: usize,
    launch: Launch,
    timeout: Duration,
}

impl Options {
    fn parse() -> anyhow::Result<Self> {
        let args: Vec<String> = std::env::args().collect();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let n: usize = args.get(1).map(|s| s.parse()).transpose().context("N")?.unwrap_or(1000);
        let rate: f64 = args.get(2).map(|s| s.parse()).transpose().context("RATE")?.unwrap_or(0.0);
        let mut spec = serde_json::Map::new();
        spec.insert("image".into(), "playpen/browser:bench".into());
        if let Some(extra) = env("PLAYPEN_BENCH_SPEC") {
            let extra: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&extra).context("PLAYPEN_BENCH_SPEC must be a JSON object")?;
            spec.extend(extra);
        }
        let prefix = env("PLAYPEN_BENCH_NAMESPACE").unwrap_or_else(|| "playpen-bench-operator".into());
        let binary = env("PLAYPEN_BENCH_OPERATOR")
            .context("PLAYPEN_BENCH_OPERATOR (the playpen-operator binary) is not set: run tests/bench/operator.sh")?;
        let addr = env("PLAYPEN_BENCH_METRICS_ADDR").unwrap_or_else(|| "127.0.0.1:18081".into());
        Ok(Self {
            n,
            rate,
            controller_concurrency: env("PLAYPEN_BENCH_CONCURRENCY")
                .map(|s| s.parse())
                .transpose()
                .context("PLAYPEN_BENCH_CONCURRENCY")?
                .unwrap_or(usize::from(playpen_operator::controller::RECONCILE_CONCURRENCY)),
            ready: env("PLAYPEN_BENCH_READY").is_some_and(|v| v != "0"),
            spec,
            launch: Launch {
                binary: binary.into(),
                namespace: format!("{prefix}-operator"),
                addr: addr.parse().with_context(|| format!("PLAYPEN_BENCH_METRICS_ADDR={addr}"))?,
                log: env("PLAYPEN_BENCH_OPERATOR_LOG").unwrap_or_else(|| "bench-operator.log".into()).into(),
                pidfile: env("PLAYPEN_BENCH_PIDFILE").map(Into::into),
            },
            prefix,
            rounds: env("PLAYPEN_BENCH_ROUNDS")
                .map(|s| s.parse())
                .transpose()
                .context("PLAYPEN_BENCH_ROUNDS")?
                .unwrap_or(3),
            timeout: Duration::from_secs(
                env("PLAYPEN_BENCH_TIMEOUT")
                    .map(|s| s.parse())
                    .transpose()
                    .context("PLAYPEN_BENCH_TIMEOUT")?
                    .unwrap_or(600),
            ),
        })
    }
}

/// When each object was first seen, by (what, name): a child's kind, or
/// `Ready` (a session's Ready condition), `PodReady` (a Pod's) and
/// `Status` (a session's status naming its Pod).
type Seen = Arc<Mutex<HashMap<(&'static str, String), Instant>>>;

/// Watches of one namespace that record when things appear.
struct Watchers {
    seen: Seen,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers").finish_non_exhaustive()
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        self.tasks.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

fn present<K: ResourceExt>(kind: &'static str) -> impl Fn(&K) -> Option<(&'static str, String)> {
    move |obj| Some((kind, obj.name_any()))
}

impl Watchers {
    /// `status`: also when each session's status first names its Pod.
    async fn start(client: &Client, ns: &str, ready: bool, status: bool) -> Self {
        let seen = Seen::default();
        let managed = watcher::Config::default().labels(&managed_selector());
        // One watch per kind, recording every key it shows.
        let mut tasks = vec![
            record::<Pod, _>(client, ns, &managed, &seen, move |pod: &Pod| {
                let is_ready = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                let name = pod.name_any();
                let ready_key = (ready && is_ready).then(|| ("PodReady", name.clone()));
                [Some(("Pod", name)), ready_key].into_iter().flatten()
            }),
            record::<Secret, _>(client, ns, &managed, &seen, present("Secret")),
            record::<ConfigMap, _>(client, ns, &managed, &seen, present("ConfigMap")),
            record::<Service, _>(client, ns, &managed, &seen, present("Service")),
            record::<NetworkPolicy, _>(client, ns, &managed, &seen, present("NetworkPolicy")),
            record::<PersistentVolumeClaim, _>(client, ns, &managed, &seen, present("PersistentVolumeClaim")),
            record::<ConfigMap, _>(
                client,
                ns,
                &watcher::Config::default().labels("playpen.dev/bench=baseline"),
                &seen,
                present("Baseline"),
            ),
        ];
        if status || ready {
            let session_keys = move |bs: &BrowserSession| {
                let Some(st) = bs.status.as_ref() else { return Vec::new() };
                let is_ready = st.conditions.iter().any(|c| c.type_ == condition::READY && c.status == "True");
                let mut keys = Vec::new();
                if status && st.pod_name.is_some() {
                    keys.push(("Status", bs.name_any()));
                }
                if ready && is_ready {
                    keys.push(("Ready", bs.name_any()));
                }
                keys
            };
            tasks.push(record::<BrowserSession, _>(client, ns, &watcher::Config::default(), &seen, session_keys));
        }
        // Let every watch list before anything is created.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Self { seen, tasks }
    }

    /// Waits until every key in `want` was seen; says what is missing on timeout.
    async fn wait(&self, want: &[(&'static str, String)], timeout: Duration, what: &str) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut told = Instant::now();
        loop {
            let missing: Vec<&(&str, String)> = {
                let s = self.seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                want.iter().filter(|k| !s.contains_key(*k)).collect()
            };
            let Some((kind, name)) = missing.first() else { return Ok(()) };
            if started.elapsed() > timeout {
                bail!(
                    "timed out after {} s waiting for {what}: {} of {} not seen yet (for example {kind} {name})",
                    timeout.as_secs(),
                    missing.len(),
                    want.len()
                );
            }
            if told.elapsed() > Duration::from_secs(15) {
                eprintln!("still waiting for {what}: {} of {} seen", want.len() - missing.len(), want.len());
                told = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Per session, the time from its create to the last of its `keys` seen; sorted.
    fn latencies(
        &self,
        created: &HashMap<String, Instant>,
        keys: impl Fn(&str) -> Vec<(&'static str, String)>,
    ) -> anyhow::Result<Vec<Duration>> {
        let s = self.seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut out = Vec::with_capacity(created.len());
        for (name, t0) in created {
            let mut worst = Duration::ZERO;
            for key in keys(name) {
                let at = s.get(&key).with_context(|| format!("{} {} never seen", key.0, key.1))?;
                worst = worst.max(at.saturating_duration_since(*t0));
            }
            out.push(worst);
        }
        out.sort();
        Ok(out)
    }
}

/// Records when `key` first holds for an object of kind `K` in `ns`.
fn record<K, I>(
    client: &Client,
    ns: &str,
    cfg: &watcher::Config,
    seen: &Seen,
    keys: impl Fn(&K) -> I + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    I: IntoIterator<Item = (&'static str, String)>,
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let (cfg, seen) = (cfg.clone(), seen.clone());
    tokio::spawn(async move {
        let stream = watcher(api, cfg).default_backoff().applied_objects();
        futures::pin_mut!(stream);
        while let Ok(Some(obj)) = stream.try_next().await {
            if let Ok(mut s) = seen.lock() {
                for k in keys(&obj) {
                    s.entry(k).or_insert_with(Instant::now);
                }
            }
        }
    })
}

/// A kind of child and how its name follows from the session's child names.
type ChildKind = (&'static str, fn(&ChildNames) -> String);

/// Which children one session of `spec` gets: (kind, name from its child names).
fn child_kinds(spec: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Vec<ChildKind>> {
    let bs: BrowserSession = serde_json::from_value(serde_json::json!({"apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserSession", "metadata": {"name": "x", "namespace": "x", "uid": "00000000-0000-0000-0000-000000000000"},
        "spec": spec}))?;
    let built = children::build(&bs, &Identity::of(&bs)?, &Settings::default())?;
    let mut kinds: Vec<ChildKind> = vec![
        ("Pod", |n| n.pod.clone()),
        ("ConfigMap", |n| n.runtime_config.clone()),
        ("NetworkPolicy", |n| n.network_policy.clone()),
    ];
    if built.launch_secret.is_some() {
        kinds.push(("Secret", |n| n.launch_secret.clone()));
    }
    if built.viewer_service.is_some() {
        kinds.push(("Service", |n| n.viewer_service.clone()));
    }
    if built.snapshot_claim.is_some() {
        kinds.push(("PersistentVolumeClaim", |n| n.snapshot_claim.clone()));
    }
    Ok(kinds)
}

/// Creates `count` objects with at most [`CREATE_CONCURRENCY`] in flight,
/// the i-th not before `start + i / rate` when paced; returns when each create was sent, by name.
async fn create_all<F, Fut>(count: usize, rate: f64, make: F) -> anyhow::Result<HashMap<String, Instant>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(String, Instant)>>,
{
    let start = Instant::now();
    let results: Vec<anyhow::Result<(String, Instant)>> = futures::stream::iter(0..count)
        .map(|i| {
            let due = (rate > 0.0).then(|| start + Duration::from_secs_f64(i as f64 / rate));
            let made = make(i);
            async move {
                if let Some(due) = due {
                    tokio::time::sleep_until(due.into()).await;
                }
                made.await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

async fn create_sessions(client: &Client, ns: &str, opts: &Options) -> anyhow::Result<HashMap<String, Instant>> {
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    create_all(opts.n, opts.rate, |i| {
        let sessions = sessions.clone();
        let spec = opts.spec.clone();
        async move {
            let name = format!("s{i}");
            let bs = playpen_tests::fixtures::session(&name, spec.into())?;
            let sent = Instant::now();
            sessions
                .create(&PostParams::default(), &bs)
                .await
                .with_context(|| format!("creating BrowserSession {name}"))?;
            Ok((name, sent))
        }
    })
    .await
}

/// What one phase measured.
#[derive(Debug, Default)]
struct Measured {
    /// First create → last child seen.
    wall: Duration,
    /// First create → last Ready, when waited for.
    ready_wall: Option<Duration>,
    /// First create → last status naming its Pod (a controller that writes one).
    status_wall: Option<Duration>,
    /// Per session: create → all children present, sorted.
    children: Vec<Duration>,
    /// Per session: create → Ready (the ideal: its Pod Ready), sorted; empty unless waited for.
    ready: Vec<Duration>,
    /// Per session: create → its status names its Pod, sorted; empty for the ideal.
    status: Vec<Duration>,
    api: Delta,
    /// CPU seconds by process over the same window as `api`.
    cpu_by: BTreeMap<String, f64>,
    reconciles: Option<f64>,
    cpu: Option<f64>,
    rss: Option<f64>,
}

/// N sessions in `ns` while a controller (the ideal one, or the operator,
/// already running) makes their children; the caller counts the API
/// requests around it, since when a phase has settled depends on who works.
/// `writes_status`: the controller records each session's Pod in its status
/// (the operator; the ideal writes none), and the phase waits for that too.
async fn sessions_phase(
    client: &Client,
    ns: &str,
    opts: &Options,
    kinds: &[ChildKind],
    who: &str,
    ready_key: &'static str,
    writes_status: bool,
) -> anyhow::Result<Measured> {
    let watchers = Watchers::start(client, ns, opts.ready, writes_status).await;
    let start = Instant::now();
    let created = create_sessions(client, ns, opts).await?;
    let children_of = |name: &str| {
        let names = ChildNames::for_session(name);
        kinds.iter().map(|(kind, child)| (*kind, child(&names))).collect::<Vec<_>>()
    };
    let want: Vec<_> = created.keys().flat_map(|n| children_of(n)).collect();
    let what = format!("the children of {} sessions ({who}) in namespace {ns}", opts.n);
    watchers.wait(&want, opts.timeout, &what).await?;
    let wall = start.elapsed();
    let children = watchers.latencies(&created, children_of)?;
    let (mut status, mut status_wall) = (Vec::new(), None);
    if writes_status {
        let status_of = |name: &str| vec![("Status", name.to_owned())];
        let want: Vec<_> = created.keys().flat_map(|n| status_of(n)).collect();
        let what = format!("{} sessions ({who}) in namespace {ns} to have a status naming their Pod", opts.n);
        watchers.wait(&want, opts.timeout, &what).await?;
        status_wall = Some(start.elapsed());
        status = watchers.latencies(&created, status_of)?;
    }
    let (mut ready, mut ready_wall) = (Vec::new(), None);
    if opts.ready {
        let ready_of = |name: &str| match ready_key {
            "PodReady" => vec![("PodReady", ChildNames::for_session(name).pod)],
            _ => vec![(ready_key, name.to_owned())],
        };
        let want: Vec<_> = created.keys().flat_map(|n| ready_of(n)).collect();
        let what = format!("{} sessions ({who}) in namespace {ns} to be Ready ({ready_key} condition True)", opts.n);
        watchers.wait(&want, opts.timeout, &what).await?;
        ready_wall = Some(start.elapsed());
        ready = watchers.latencies(&created, ready_of)?;
    }
    Ok(Measured { wall, children, ready, ready_wall, status, status_wall, ..Measured::default() })
}

/// The floor of one API round trip: N plain ConfigMaps, create → watch event.
async fn baseline_phase(client: &Client, ns: &str, opts: &Options) -> anyhow::Result<Measured> {
    let watchers = Watchers::start(client, ns, false, false).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    let created = create_all(opts.n, opts.rate, |i| {
        let cms = cms.clone();
        async move {
            let name = format!("base-{i}");
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": name,
                "labels": {"playpen.dev/bench": "baseline"}}, "data": {"k": "v"}}))?;
            let sent = Instant::now();
            cms.create(&PostParams::default(), &cm).await.with_context(|| format!("creating ConfigMap {name}"))?;
            Ok((name, sent))
        }
    })
    .await?;
    let want: Vec<_> = created.keys().map(|n| ("Baseline", n.clone())).collect();
    watchers.wait(&want, opts.timeout, &format!("{} baseline ConfigMaps in namespace {ns}", opts.n)).await?;
    let wall = start.elapsed();
    let children = watchers.latencies(&created, |n| vec![("Baseline", n.to_owned())])?;
    Ok(Measured { wall, children, ..Measured::default() })
}

async fn ideal_phase(client: &Client, ns: &str, opts: &Options, kinds: &[ChildKind]) -> anyhow::Result<Measured> {
    // Its own client (connection pool), as a controller process would have.
    let controller =
        tokio::spawn(ideal::run(playpen_tests::client().await?, ns.to_owned(), opts.controller_concurrency));
    let (before, cpu_before) = (apimetrics::scrape(client).await?, cpu::sample());
    let phase = sessions_phase(client, ns, opts, kinds, "ideal controller", "PodReady", false).await;
    let failed = controller.is_finished();
    controller.abort();
    if failed {
        if let Ok(Err(e)) = controller.await {
            return Err(e.context("the ideal controller failed"));
        }
    }
    let mut measured = phase?;
    tokio::time::sleep(QUIET).await;
    measured.api = Delta::between(&before, &apimetrics::scrape(client).await?);
    measured.cpu_by = cpu::between(&cpu_before, &cpu::sample());
    Ok(measured)
}

async fn operator_phase(
    client: &Client,
    op: &Operator,
    ns: &str,
    opts: &Options,
    kinds: &[ChildKind],
) -> anyhow::Result<Measured> {
    let (reconciles0, cpu0) = (op.reconciles().await?, op.cpu_seconds()?);
    let (before, cpu_before) = (apimetrics::scrape(client).await?, cpu::sample());
    let mut measured = sessions_phase(client, ns, opts, kinds, "operator", "Ready", true).await?;
    // Status writes wake follow-up reconciles: count them too.
    let reconciles = op.settle(QUIET, Duration::from_secs(120)).await?;
    measured.api = Delta::between(&before, &apimetrics::scrape(client).await?);
    measured.cpu_by = cpu::between(&cpu_before, &cpu::sample());
    measured.reconciles = Some(reconciles - reconciles0);
    measured.cpu = Some(op.cpu_seconds()? - cpu0);
    measured.rss = Some(op.peak_rss_mib()?);
    Ok(measured)
}

/// Restarts the operator with every session settled: a new process lists
/// and reconciles all of them; returns it, running, and what it cost.
async fn resync_phase(
    client: &Client,
    old: Operator,
    opts: &Options,
    launch: &Launch,
) -> anyhow::Result<(Operator, Measured)> {
    let before = apimetrics::scrape(client).await?;
    old.stop().await?;
    let start = Instant::now();
    let op = Operator::start(launch).await?;
    let mut told = Instant::now();
    loop {
        let done = op.reconciles().await?;
        if done >= opts.n as f64 {
            break;
        }
        if start.elapsed() > opts.timeout {
            bail!(
                "timed out after {} s waiting for the restarted operator to reconcile all {} sessions ({done} so far)",
                opts.timeout.as_secs(),
                opts.n
            );
        }
        if told.elapsed() > Duration::from_secs(15) {
            eprintln!("still waiting for the restarted operator to reconcile all {} sessions: {done} so far", opts.n);
            told = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wall = start.elapsed();
    let reconciles = op.settle(QUIET, Duration::from_secs(120)).await?;
    let api = Delta::between(&before, &apimetrics::scrape(client).await?);
    let measured = Measured {
        wall,
        api,
        reconciles: Some(reconciles),
        cpu: Some(op.cpu_seconds()?),
        rss: Some(op.peak_rss_mib()?),
        ..Measured::default()
    };
    Ok((op, measured))
}

/// What one status write costs alone: every session's status patched once
/// (its phase), [`CREATE_CONCURRENCY`] at a time, with no controller
/// running; CPU milliseconds per write by process. The status is the one
/// write the operator sends that the ideal does not.
async fn status_write_cost(client: &Client, ns: &str, n: usize) -> anyhow::Result<BTreeMap<String, f64>> {
    settle_cluster(client, Duration::from_secs(120)).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let before = cpu::sample();
    create_all(n, 0.0, |i| {
        let sessions = sessions.clone();
        async move {
            let name = format!("s{i}");
            let patch = serde_json::json!({"status": {"phase": "Starting"}});
            let sent = Instant::now();
            sessions
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("patching the status of BrowserSession {name}"))?;
            Ok((name, sent))
        }
    })
    .await?;
    let spent = cpu::between(&before, &cpu::sample());
    Ok(spent.into_iter().map(|(group, seconds)| (group, seconds * 1000.0 / n as f64)).collect())
}

/// Creates namespace `name` with the bench's label; waits for its default
/// ServiceAccount (the admission plugin refuses Pods until it exists).
async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name,
        "labels": {BENCH_LABEL.0: BENCH_LABEL.1}}}))?;
    namespaces.create(&PostParams::default(), &ns).await.with_context(|| {
        format!("creating namespace {name} (left by an earlier run? tests/bench/operator.sh removes it first)")
    })?;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    eventually(Duration::from_secs(30), || async {
        sas.get("default").await.map(|_| ()).with_context(|| format!("waiting for ServiceAccount {name}/default"))
    })
    .await
}

/// Deletes namespace `name` and waits until it is gone.
async fn delete_namespace(client: &Client, name: &str, timeout: Duration) -> anyhow::Result<Duration> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let start = Instant::now();
    match namespaces.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Duration::ZERO),
        Err(e) => return Err(e).with_context(|| format!("deleting namespace {name}")),
    }
    while namespaces.get_opt(name).await?.is_some() {
        if start.elapsed() > timeout {
            bail!(
                "timed out after {} s waiting for namespace {name} and everything in it to be deleted",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(start.elapsed())
}

/// One round: the ideal controller and the operator, each on a settled
/// cluster in a namespace of its own.
#[derive(Debug)]
struct Round {
    ideal_first: bool,
    ideal: Measured,
    operator: Measured,
}

impl Round {
    fn p99_ratio(&self) -> Option<f64> {
        Some(percentile(&self.operator.children, 0.99)? / percentile(&self.ideal.children, 0.99)?)
    }

    fn rate_ratio(&self) -> f64 {
        self.ideal.wall.as_secs_f64() / self.operator.wall.as_secs_f64()
    }
}

/// Below this many cores of CPU (API server, etcd and controller-manager
/// together; about 0.03 when idle here) the control plane is settled.
const SETTLED_CORES: f64 = 0.1;

/// Waits until the cluster's own work after the last phase (the garbage
/// collector, the endpoints controller, a namespace's deletion) has
/// stopped for [`QUIET`]: no writes but leases and Events, and the control
/// plane's CPU under [`SETTLED_CORES`]. A phase run while that work goes on
/// shares the API server with it: the garbage collector still read the
/// previous phase's deleted children for seconds after its writes ended,
/// and whichever side ran second was up to 1.8x slower.
async fn settle_cluster(client: &Client, timeout: Duration) -> anyhow::Result<()> {
    let background = |d: &Delta| d.writes_to(|r| r != "leases" && r != "events");
    let control_plane = |spent: &BTreeMap<String, f64>| {
        cpu::CONTROL_PLANE.iter().map(|g| spent.get(*g).copied().unwrap_or(0.0)).sum::<f64>()
    };
    let step = Duration::from_millis(500);
    let start = Instant::now();
    let first = apimetrics::scrape(client).await?;
    let (mut last, mut since) = (0.0, Instant::now());
    loop {
        let cpu_before = cpu::sample();
        tokio::time::sleep(step).await;
        let cores = control_plane(&cpu::between(&cpu_before, &cpu::sample())) / step.as_secs_f64();
        let now = background(&Delta::between(&first, &apimetrics::scrape(client).await?));
        if now != last || cores >= SETTLED_CORES {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= QUIET {
            return Ok(());
        }
        if start.elapsed() > timeout {
            eprintln!(
                "note: the control plane still works after {timeout:?} ({last:.0} writes since, {cores:.2} cores \
                 in the last {step:?}); measuring anyway"
            );
            return Ok(());
        }
    }
}

async fn run(opts: &Options) -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let kinds = child_kinds(&opts.spec)?;
    let base_ns = format!("{}-baseline", opts.prefix);
    create_namespace(&client, &base_ns).await?;
    eprintln!("baseline: {} plain ConfigMaps (one API round trip each)", opts.n);
    let base = baseline_phase(&client, &base_ns, opts).await?;
    delete_namespace(&client, &base_ns, opts.timeout).await?;
    let mut rounds = Vec::new();
    let mut resync = None;
    let mut status_cost = BTreeMap::new();
    for round in 1..=opts.rounds {
        // Alternating which goes first: neither always follows the other's deletion.
        let ideal_first = round % 2 == 1;
        let (mut ideal, mut operator) = (None, None);
        for ideal_turn in [ideal_first, !ideal_first] {
            settle_cluster(&client, Duration::from_secs(120)).await?;
            let who = if ideal_turn { "ideal" } else { "operator" };
            let ns = format!("{}-{who}-{round}", opts.prefix);
            create_namespace(&client, &ns).await?;
            eprintln!("round {round}/{}: {} sessions, {who}", opts.rounds, opts.n);
            if ideal_turn {
                ideal = Some(ideal_phase(&client, &ns, opts, &kinds).await?);
            } else {
                let launch = Launch { namespace: ns.clone(), ..opts.launch.clone() };
                let op = Operator::start(&launch).await?;
                operator = Some(operator_phase(&client, &op, &ns, opts, &kinds).await?);
                let op = if round == opts.rounds {
                    eprintln!("full resync: the operator restarted with {} settled sessions", opts.n);
                    let (op, measured) = resync_phase(&client, op, opts, &launch).await?;
                    resync = Some(measured);
                    op
                } else {
                    op
                };
                op.stop().await?;
                if round == opts.rounds {
                    eprintln!("one status write per session, alone (no controller running)");
                    status_cost = status_write_cost(&client, &ns, opts.n).await?;
                }
            }
            let cleared = delete_namespace(&client, &ns, opts.timeout).await?;
            eprintln!("deleted namespace {ns} in {:.1} s", cleared.as_secs_f64());
        }
        let (Some(ideal), Some(operator)) = (ideal, operator) else { bail!("round {round} measured only one side") };
        rounds.push(Round { ideal_first, ideal, operator });
    }
    let resync = resync.context("no round ran: PLAYPEN_BENCH_ROUNDS must be at least 1")?;
    print_table(opts, &base, &rounds, &resync, &status_cost);
    Ok(())
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

fn percentile(sorted: &[Duration], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let idx = ((last as f64) * p).round() as usize;
    Some(sorted[idx.min(last)].as_secs_f64() * 1000.0)
}

/// Controller writes per session: writes to the kinds a controller writes,
/// without the bench's own creates of the sessions.
fn controller_writes(d: &Delta) -> f64 {
    d.rows
        .iter()
        .filter(|((r, v), _)| {
            apimetrics::is_write(v)
                && CONTROLLER_RESOURCES.contains(&r.as_str())
                && (r.as_str(), v.as_str()) != ("browsersessions", "POST")
        })
        .map(|(_, (n, _))| n)
        .sum()
}

/// etcd writes to the kinds a controller writes, without the bench's own
/// creates of the sessions (a no-op apply is a request but no etcd write).
fn controller_etcd_writes(d: &Delta) -> f64 {
    let all = d.etcd_writes(|r| CONTROLLER_RESOURCES.contains(&r));
    let bench = d.etcd.get(&("browsersessions".to_owned(), "create".to_owned())).copied().unwrap_or(0.0);
    all - bench
}

fn print_table(
    opts: &Options,
    base: &Measured,
    rounds: &[Round],
    resync: &Measured,
    status_cost: &BTreeMap<String, f64>,
) {
    // The whole table for the median round by p99 ratio; every round's
    // ratios, and the targets judged on their medians, below it.
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|a, b| {
        rounds[*a].p99_ratio().unwrap_or(f64::MAX).total_cmp(&rounds[*b].p99_ratio().unwrap_or(f64::MAX))
    });
    let shown = order[order.len() / 2];
    let (ideal, op) = (&rounds[shown].ideal, &rounds[shown].operator);
    let n = opts.n as f64;
    let per = |v: f64| v / n;
    // `+ 0.0` turns the -0.0 of an empty f64 sum into 0.
    let fmt = |v: Option<f64>, d: usize| v.map_or_else(|| "-".to_owned(), |v| format!("{:.d$}", v + 0.0));
    let row = |label: &str, o: Option<f64>, i: Option<f64>, b: Option<f64>, d: usize| {
        let ratio = match (o, i) {
            (Some(o), Some(i)) if i > 0.0 => format!("{:.2}", o / i),
            _ => "-".to_owned(),
        };
        println!("{label:<46} {:>11} {:>11} {:>9} {:>11}", fmt(o, d), fmt(i, d), ratio, fmt(b, d));
    };
    let rate_of = |m: &Measured| n / m.wall.as_secs_f64();
    let arrival = if opts.rate > 0.0 { format!("paced at {}/s", opts.rate) } else { "one burst".to_owned() };
    println!();
    println!(
        "BrowserSessions: {}, {arrival}, created {CREATE_CONCURRENCY} at a time; ideal controller concurrency {} \
         (operator: its own); round {} of {} (the median by p99 ratio)",
        opts.n,
        opts.controller_concurrency,
        shown + 1,
        rounds.len()
    );
    println!("{:<46} {:>11} {:>11} {:>9} {:>11}", "measure", "operator", "ideal", "op/ideal", "1 ConfigMap");
    row(
        "create -> all children present, p50 (ms)",
        percentile(&op.children, 0.5),
        percentile(&ideal.children, 0.5),
        percentile(&base.children, 0.5),
        0,
    );
    row(
        "create -> all children present, p99 (ms)",
        percentile(&op.children, 0.99),
        percentile(&ideal.children, 0.99),
        percentile(&base.children, 0.99),
        0,
    );
    row("create -> status names the Pod, p50 (ms)", percentile(&op.status, 0.5), None, None, 0);
    row("create -> status names the Pod, p99 (ms)", percentile(&op.status, 0.99), None, None, 0);
    if opts.ready {
        row(
            "create -> Ready, p50 (ms) (ideal: Pod Ready)",
            percentile(&op.ready, 0.5),
            percentile(&ideal.ready, 0.5),
            None,
            0,
        );
        row(
            "create -> Ready, p99 (ms) (ideal: Pod Ready)",
            percentile(&op.ready, 0.99),
            percentile(&ideal.ready, 0.99),
            None,
            0,
        );
    }
    row(
        "all N with their children (s)",
        Some(op.wall.as_secs_f64()),
        Some(ideal.wall.as_secs_f64()),
        Some(base.wall.as_secs_f64()),
        2,
    );
    row("all N with a status naming the Pod (s)", op.status_wall.map(|d| d.as_secs_f64()), None, None, 2);
    if opts.ready {
        let secs = |m: &Measured| m.ready_wall.map(|d| d.as_secs_f64());
        row("all N Ready (s) (ideal: their Pods)", secs(op), secs(ideal), None, 2);
    }
    row("sessions per second (with children)", Some(rate_of(op)), Some(rate_of(ideal)), Some(rate_of(base)), 1);
    row(
        "controller API writes per session",
        Some(per(controller_writes(&op.api))),
        Some(per(controller_writes(&ideal.api))),
        None,
        2,
    );
    row(
        "  of which reached etcd",
        Some(per(controller_etcd_writes(&op.api))),
        Some(per(controller_etcd_writes(&ideal.api))),
        None,
        2,
    );
    let all_writes = |d: &Delta| per(d.writes_except(Some(("browsersessions", "POST"))));
    row(
        "all API writes per session (+ cluster's own)",
        Some(all_writes(&op.api)),
        Some(all_writes(&ideal.api)),
        None,
        2,
    );
    row("API reads per session (incl. the bench's)", Some(per(op.api.reads())), Some(per(ideal.api.reads())), None, 2);
    row("reconciles per session", op.reconciles.map(per), None, None, 2);
    row("reconciles per second", op.reconciles.map(|r| r / op.wall.as_secs_f64()), None, None, 1);
    row("operator CPU seconds", op.cpu, None, None, 2);
    row("operator peak RSS (MiB)", op.rss, None, None, 1);
    // Who used the machine's two cores in the phase: what the operator's
    // side spends beyond the ideal's is CPU the API server and etcd lack.
    let mut groups: Vec<&String> = op.cpu_by.keys().chain(ideal.cpu_by.keys()).collect();
    groups.sort();
    groups.dedup();
    for group in groups {
        let of = |m: &Measured| Some(m.cpu_by.get(group).copied().unwrap_or(0.0) * 1000.0 / n);
        row(&format!("CPU ms per session: {group}"), of(op), of(ideal), None, 2);
    }
    for group in [cpu::API_SERVER, cpu::ETCD] {
        let alone = status_cost.get(group).copied();
        row(&format!("CPU ms per status write alone: {group}"), alone, None, None, 2);
    }
    println!();
    println!("full resync (a new operator process, {} settled sessions)", opts.n);
    let line = |label: &str, v: String| println!("{label:<46} {v:>11}");
    line("until all N reconciled (s)", format!("{:.2}", resync.wall.as_secs_f64()));
    line("reconciles", fmt(resync.reconciles, 0));
    line("controller API writes (total)", fmt(Some(controller_writes(&resync.api)), 0));
    line("  of which reached etcd", fmt(Some(controller_etcd_writes(&resync.api)), 0));
    line("all API writes (total, + cluster's own)", fmt(Some(resync.api.writes_except(None)), 0));
    line("API reads per session", fmt(Some(per(resync.api.reads())), 2));
    line("operator CPU seconds (whole process)", fmt(resync.cpu, 2));
    line("operator peak RSS (MiB)", fmt(resync.rss, 1));

    println!();
    println!("API requests by resource and verb, per session (resync: total); [n] of them not 2xx");
    println!("{:<34} {:<8} {:>14} {:>14} {:>14}", "resource", "verb", "operator", "ideal", "resync");
    let mut keys: Vec<&(String, String)> =
        op.api.rows.keys().chain(ideal.api.rows.keys()).chain(resync.api.rows.keys()).collect();
    keys.sort_by_key(|(r, v)| (!apimetrics::is_write(v), r.clone(), v.clone()));
    keys.dedup();
    let cell = |d: &Delta, k: &(String, String), scale: f64, dec: usize| match d.rows.get(k) {
        None => "-".to_owned(),
        Some((c, 0.0)) => format!("{:.dec$}", c / scale),
        Some((c, bad)) => format!("{:.dec$} [{bad:.0}]", c / scale),
    };
    for k in keys {
        println!(
            "{:<34} {:<8} {:>14} {:>14} {:>14}",
            k.0,
            k.1,
            cell(&op.api, k, n, 2),
            cell(&ideal.api, k, n, 2),
            cell(&resync.api, k, 1.0, 0)
        );
    }

    println!();
    println!("every round (each side on a settled cluster, in a namespace of its own)");
    println!(
        "{:<7} {:<16} {:>16} {:>16} {:>9} {:>14} {:>14} {:>9}",
        "round", "first", "p99 op (ms)", "p99 ideal (ms)", "ratio", "op sessions/s", "ideal /s", "ratio"
    );
    for (i, r) in rounds.iter().enumerate() {
        println!(
            "{:<7} {:<16} {:>16} {:>16} {:>9} {:>14.1} {:>14.1} {:>9.2}",
            i + 1,
            if r.ideal_first { "ideal" } else { "operator" },
            fmt(percentile(&r.operator.children, 0.99), 0),
            fmt(percentile(&r.ideal.children, 0.99), 0),
            fmt(r.p99_ratio(), 2),
            rate_of(&r.operator),
            rate_of(&r.ideal),
            r.rate_ratio()
        );
    }
    println!();
    let ideal_rate = median(rounds.iter().map(|r| rate_of(&r.ideal)).collect()).unwrap_or_default();
    println!(
        "ideal controller: {ideal_rate:.0} sessions/s (median of the rounds): {} agent-sandbox's 300/s on this machine",
        if ideal_rate >= 300.0 { "reaches" } else { "does NOT reach" }
    );
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    if let Some(p99) = median(rounds.iter().filter_map(Round::p99_ratio).collect()) {
        println!(
            "target p99 create->children <= 1.5x ideal: {p99:.2}x (median of the rounds), {}",
            verdict(p99 <= 1.5)
        );
    }
    let rate = median(rounds.iter().map(Round::rate_ratio).collect()).unwrap_or_default();
    println!("target sessions/s >= ideal/1.5: {rate:.2}x (median of the rounds), {}", verdict(rate * 1.5 >= 1.0));
    let resync_writes = controller_writes(&resync.api);
    // `+ 0.0`: an empty sum is -0.0.
    println!("target no write in a no-op resync: {:.0} writes, {}", resync_writes + 0.0, verdict(resync_writes == 0.0));
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = Options::parse()?;
    // On a signal the run is dropped, which kills the operator it started;
    // tests/bench/operator.sh deletes the namespaces.
    tokio::select! {
        r = run(&opts) => r,
        _ = tokio::signal::ctrl_c() => bail!("interrupted: the operator it started is stopped"),
        () = terminated() => bail!("terminated: the operator it started is stopped"),
    }
}

async fn terminated() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}
