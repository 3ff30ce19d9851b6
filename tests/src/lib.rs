//! Harness for tests against the real control plane started by
//! `tests/cluster/start.sh` (the runner exports `KUBECONFIG`).
//!
//! Each test gets its own namespace and, when it needs one, its own
//! in-process operator watching only that namespace, so tests run in
//! parallel without seeing each other.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use playpen_operator::children::{SeccompChoice, Settings};
use playpen_operator::operator::{self, Handles};
use playpen_operator::recovery::RecoveryBudget;
use playpen_operator::runtime::leader::LeaseConfig;
use tokio::sync::OnceCell;

pub mod fixtures;
pub mod kubectl;

/// Path of the committed CRD, relative to this crate.
pub const CRD_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/browsersession.yaml");
/// Path of the committed BrowserPool CRD (the operator watches pools too).
pub const POOL_CRD_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/browserpool.yaml");
/// Path of the committed BrowserSnapshot CRD (the operator watches snapshots too).
pub const SNAPSHOT_CRD_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/browsersnapshot.yaml");

/// The admin kubeconfig of the test control plane. Fails loudly when none is running.
pub fn kubeconfig_path() -> anyhow::Result<String> {
    std::env::var("KUBECONFIG").context(
        "KUBECONFIG is not set: these tests need the real control plane. Run `bash tests/run.sh`, \
         or `export KUBECONFIG=$(tests/cluster/start.sh | tail -1)` first",
    )
}

async fn admin_config() -> anyhow::Result<Config> {
    let path = kubeconfig_path()?;
    let kubeconfig = Kubeconfig::read_from(&path).with_context(|| format!("reading {path}"))?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// An admin client for the test control plane.
pub async fn client() -> anyhow::Result<Client> {
    Ok(Client::try_from(admin_config().await?)?)
}

/// A client that impersonates `user` in `groups` (RBAC tests).
pub async fn client_as(user: &str, groups: &[&str]) -> anyhow::Result<Client> {
    let mut config = admin_config().await?;
    config.auth_info.impersonate = Some(user.to_owned());
    config.auth_info.impersonate_groups = Some(groups.iter().map(|g| (*g).to_owned()).collect());
    Ok(Client::try_from(config)?)
}

/// A client acting as ServiceAccount `namespace/name`.
pub async fn client_as_service_account(namespace: &str, name: &str) -> anyhow::Result<Client> {
    let user = format!("system:serviceaccount:{namespace}:{name}");
    let ns_group = format!("system:serviceaccounts:{namespace}");
    client_as(&user, &["system:serviceaccounts", &ns_group, "system:authenticated"]).await
}

/// A tool the runner built and exported as `var` (fails loudly when missing).
pub fn tool(var: &str) -> anyhow::Result<String> {
    std::env::var(var)
        .with_context(|| format!("{var} is not set: run the tests through `bash tests/run.sh`, which builds it"))
}

static CRD: OnceCell<()> = OnceCell::const_new();

/// Installs the committed CRDs (BrowserSession, BrowserPool and BrowserSnapshot) once per
/// test binary and waits until they are served.
pub async fn ensure_crd(client: &Client) -> anyhow::Result<()> {
    CRD.get_or_try_init(|| async {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crds = [
            ("browsersessions.playpen.dev", CRD_PATH),
            ("browserpools.playpen.dev", POOL_CRD_PATH),
            ("browsersnapshots.playpen.dev", SNAPSHOT_CRD_PATH),
        ];
        for (name, path) in crds {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading the committed CRD {path}"))?;
            let crd: CustomResourceDefinition = serde_yaml::from_str(&text)?;
            api.patch(name, &PatchParams::apply("playpen-tests").force(), &Patch::Apply(&crd))
                .await
                .with_context(|| format!("applying the CRD {name}"))?;
        }
        wait_crd_established(client).await?;
        wait_named_crd_established(client, "browserpools.playpen.dev").await?;
        wait_named_crd_established(client, "browsersnapshots.playpen.dev").await
    })
    .await
    .copied()
}

/// Waits until the BrowserSession CRD is served.
pub async fn wait_crd_established(client: &Client) -> anyhow::Result<()> {
    wait_named_crd_established(client, "browsersessions.playpen.dev").await
}

/// Waits until the CRD `name` is served.
pub async fn wait_named_crd_established(client: &Client, name: &str) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually(Duration::from_secs(30), || async {
        let crd = api.get(name).await?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions.iter().any(|c| c.type_ == "Established" && c.status == "True") {
            Ok(())
        } else {
            bail!("CRD not established yet")
        }
    })
    .await
}

/// A fresh namespace (deleted on drop) with its default ServiceAccount ready.
#[derive(Debug)]
pub struct TestNamespace {
    /// Its name.
    pub name: String,
    namespaces: Api<Namespace>,
}

impl TestNamespace {
    /// Creates `pp-<prefix>-<random>`.
    pub async fn new(client: &Client, prefix: &str) -> anyhow::Result<Self> {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.subsec_nanos();
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("pp-{prefix}-{:x}{seq}", nanos ^ std::process::id());
        let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await?;
        // The ServiceAccount admission plugin refuses Pods until the
        // controller-manager has created the default ServiceAccount.
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        eventually(Duration::from_secs(30), || async {
            sas.get("default").await.map(|_| ()).context("default ServiceAccount")
        })
        .await?;
        Ok(Self { name, namespaces: Api::all(client.clone()) })
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let api = self.namespaces.clone();
        let name = self.name.clone();
        // Best effort, in the background: the control plane is thrown away anyway.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { api.delete(&name, &DeleteParams::background()).await });
        }
    }
}

/// The Pod's condition Ready is True.
pub fn pod_is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The `p` quantile (0 to 1, nearest rank) of the finite `values`, NaN when
/// there are none: what the benchmarks' tables print.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[(((v.len() - 1) as f64) * p.clamp(0.0, 1.0)).round() as usize]
}

/// Settings the tests run the operator with.
pub fn settings() -> Settings {
    Settings {
        enforced_seccomp: SeccompChoice::Localhost("playpen/chromium.json".into()),
        run_as_user: 1000,
        ..Settings::default()
    }
}

/// Every write (any method but GET) a client sent, as `METHOD path`.
#[derive(Debug, Clone, Default)]
pub struct WriteLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl WriteLog {
    /// The writes so far.
    pub fn writes(&self) -> Vec<String> {
        self.0.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// How many writes so far.
    pub fn count(&self) -> usize {
        self.0.lock().map(|w| w.len()).unwrap_or_default()
    }
}

impl<S> tower::Layer<S> for WriteLog {
    type Service = LoggedWrites<S>;

    fn layer(&self, inner: S) -> Self::Service {
        LoggedWrites { inner, log: self.clone() }
    }
}

/// The service [`WriteLog`] wraps around a client's HTTP stack.
#[derive(Debug, Clone)]
pub struct LoggedWrites<S> {
    inner: S,
    log: WriteLog,
}

impl<S, B> tower::Service<http::Request<B>> for LoggedWrites<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.method() != http::Method::GET {
            let line = format!("{} {}", request.method(), request.uri().path());
            if let Ok(mut log) = self.log.0.lock() {
                log.push(line);
            }
        }
        self.inner.call(request)
    }
}

/// An admin client whose writes are recorded in the returned log.
pub async fn logged_client() -> anyhow::Result<(Client, WriteLog)> {
    let log = WriteLog::default();
    let client = kube::client::ClientBuilder::try_from(admin_config().await?)?.with_layer(&log).build();
    Ok((client, log))
}

/// A running in-process operator; stopped on drop.
#[derive(Debug)]
pub struct RunningOperator {
    /// Its metrics and address.
    pub handles: Handles,
    task: tokio::task::JoinHandle<()>,
}

impl RunningOperator {
    /// Starts an operator watching `namespace`, optionally electing through `lease`.
    pub async fn start(client: &Client, namespace: &str, lease: Option<LeaseConfig>) -> anyhow::Result<Self> {
        Self::start_watching(client, &[namespace], lease).await
    }

    /// Starts an operator watching `namespaces`.
    pub async fn start_watching(
        client: &Client,
        namespaces: &[&str],
        lease: Option<LeaseConfig>,
    ) -> anyhow::Result<Self> {
        Self::start_with_recovery(client, namespaces, lease, RecoveryBudget::default()).await
    }

    /// Starts an operator watching `namespaces` with these `settings`.
    pub async fn start_with_settings(client: &Client, namespaces: &[&str], settings: Settings) -> anyhow::Result<Self> {
        Self::start_configured(client, namespaces, None, RecoveryBudget::default(), settings).await
    }

    /// Starts an operator watching `namespaces` that replaces failed Pods within `recovery`.
    pub async fn start_with_recovery(
        client: &Client,
        namespaces: &[&str],
        lease: Option<LeaseConfig>,
        recovery: RecoveryBudget,
    ) -> anyhow::Result<Self> {
        Self::start_configured(client, namespaces, lease, recovery, settings()).await
    }

    async fn start_configured(
        client: &Client,
        namespaces: &[&str],
        lease: Option<LeaseConfig>,
        recovery: RecoveryBudget,
        settings: Settings,
    ) -> anyhow::Result<Self> {
        let config = operator::Config {
            namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
            settings,
            http_addr: "127.0.0.1:0".parse()?,
            lease,
            reporter: "playpen-operator".into(),
            recovery,
        };
        let (handles, run) = operator::start(client.clone(), config).await?;
        Ok(Self { handles, task: tokio::spawn(run) })
    }

    /// Reconciles this instance has started.
    pub fn reconciles(&self) -> u64 {
        self.handles.metrics.reconciles.get()
    }

    /// Stops it now.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for RunningOperator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Retries `check` every 200 ms until it succeeds or `timeout` passes; then
/// fails with the last error.
pub async fn eventually<T, F, Fut>(timeout: Duration, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    eventually_every(Duration::from_millis(200), timeout, check).await
}

/// [`eventually`], retrying every `interval` (for checks too costly to run
/// five times a second).
pub async fn eventually_every<T, F, Fut>(interval: Duration, timeout: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match check().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(e.context(format!("still failing after {timeout:?}")));
            }
            Err(_) => tokio::time::sleep(interval).await,
        }
    }
}

/// A plain HTTP/1.1 GET on loopback: (status code, body).
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    http_get_as(addr, path, &addr.to_string()).await
}

/// [`http_get`] with the Host header a browser would send for `host` (a
/// name that resolves to `addr`, as in DNS rebinding).
pub async fn http_get_as(addr: std::net::SocketAddr, path: &str, host: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        // Some servers (Chromium's DevTools) keep the connection open despite
        // `Connection: close`: the answer ends at its Content-Length, or at EOF.
        let mut raw = Vec::new();
        let mut chunk = [0u8; 8192];
        while !http_answer_complete(&raw) {
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..read]);
        }
        anyhow::Ok(String::from_utf8_lossy(&raw).into_owned())
    };
    let response = tokio::time::timeout(Duration::from_secs(30), exchange)
        .await
        .with_context(|| format!("GET {path} from {addr}: no complete answer within 30 s"))??;
    let status = response.split_whitespace().nth(1).context("no status line")?.parse()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

/// Has `raw` a whole HTTP answer with a Content-Length (a chunked one, or
/// one without a length, ends at EOF)?
fn http_answer_complete(raw: &[u8]) -> bool {
    let Some(head_end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let length = head
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok());
    length.is_some_and(|length| raw.len() >= head_end + 4 + length)
}

/// What a finished command printed.
#[derive(Debug)]
pub struct Output {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// Stdout, or an error carrying the whole output when the command failed.
    pub fn ok(self, what: &str) -> anyhow::Result<String> {
        if self.code == 0 {
            Ok(self.stdout)
        } else {
            bail!("{what} exited {}:\nstdout: {}\nstderr: {}", self.code, self.stdout, self.stderr)
        }
    }

    /// Stderr of a command that had to fail, or an error when it succeeded.
    pub fn failed(self, what: &str) -> anyhow::Result<String> {
        if self.code == 0 {
            bail!("{what} succeeded but should have failed:\nstdout: {}", self.stdout)
        }
        Ok(self.stderr)
    }
}

/// Runs `command` to its end (at most `timeout`) and collects what it printed.
pub async fn run_to_end(command: tokio::process::Command, timeout: Duration) -> anyhow::Result<Output> {
    run_feeding(command, None, timeout).await
}

/// [`run_to_end`], writing `stdin` (when given) to the command first.
pub async fn run_feeding(
    mut command: tokio::process::Command,
    stdin: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<Output> {
    use tokio::io::AsyncWriteExt as _;
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let what = format!("{command:?}");
    let finish = async {
        // Without input, output() as before: stdin closed unless the command set it.
        let Some(text) = stdin else { return anyhow::Ok(command.output().await?) };
        command.stdin(std::process::Stdio::piped());
        let mut child = command.spawn().with_context(|| format!("starting {what}"))?;
        if let Some(mut pipe) = child.stdin.take() {
            pipe.write_all(text.as_bytes()).await?;
            // Dropped here: the command sees the end of its input.
        }
        anyhow::Ok(child.wait_with_output().await?)
    };
    let out = tokio::time::timeout(timeout, finish)
        .await
        .with_context(|| format!("{what} did not finish within {timeout:?}"))??;
    Ok(Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// A ResourceQuota `one-policy` in `ns` that admits one NetworkPolicy (the
/// namespace's baseline takes it, so every session's own is refused), once
/// the quota controller has counted it: before, it refuses everything.
pub async fn one_network_policy_quota(
    client: &kube::Client,
    ns: &str,
) -> anyhow::Result<kube::Api<k8s_openapi::api::core::v1::ResourceQuota>> {
    let quotas: kube::Api<k8s_openapi::api::core::v1::ResourceQuota> = kube::Api::namespaced(client.clone(), ns);
    let quota = serde_json::json!({"metadata": {"name": "one-policy"},
        "spec": {"hard": {"count/networkpolicies.networking.k8s.io": "1"}}});
    quotas.create(&kube::api::PostParams::default(), &serde_json::from_value(quota)?).await?;
    eventually(std::time::Duration::from_secs(30), || async {
        let hard = quotas.get("one-policy").await?.status.and_then(|s| s.hard).unwrap_or_default();
        anyhow::ensure!(!hard.is_empty(), "the quota is not counted yet");
        Ok(())
    })
    .await?;
    Ok(quotas)
}

/// One batch of churn: a BrowserSession of `spec` for each of `names`
/// (created one after another), each reconciled at least once (its status
/// written, within `within`), then all deleted.
pub async fn churn_batch(
    sessions: &Api<playpen_api::BrowserSession>,
    names: &[String],
    spec: &serde_json::Value,
    within: Duration,
) -> anyhow::Result<()> {
    for name in names {
        sessions.create(&PostParams::default(), &fixtures::session(name, spec.clone())?).await?;
    }
    eventually(within, || async {
        for name in names {
            anyhow::ensure!(sessions.get(name).await?.status.is_some(), "{name} has no status yet");
        }
        Ok(())
    })
    .await?;
    for name in names {
        sessions.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}
