//! `kubectl playpen fork SOURCE`: copy a running session's pages into a
//! BrowserSnapshot, wait until the operator has taken it, then create N
//! BrowserSessions starting from it (`spec.from.snapshot`). Every name is
//! checked before anything is created; taking the snapshot and starting the
//! forks is the operator's work.

pub mod build;
pub mod wait;

use kube::api::PostParams;
use kube::core::Request as ApiRequest;
use kube::Resource;
use playpen_api::v1alpha1::BrowserSnapshot;
use playpen_api::BrowserSession;
use serde_json::Value;

use crate::cli::ForkArgs;
use crate::commands::new::{self, FIELD_MANAGER};
use crate::commands::suspend::patch;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// Random bytes for the default snapshot name; the clock when the system
/// has none to give (a name suffix needs no cryptographic quality).
fn random_bytes() -> [u8; 3] {
    let mut bytes = [0u8; 3];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let [_, a, b, c] = nanos.to_be_bytes();
        bytes = [a, b, c];
    }
    bytes
}

/// POSTs `object` to `url` with strict field validation (a field the CRD
/// does not know is refused, not dropped); `refused` words a failure.
async fn create_strict(
    cluster: &Cluster,
    url: String,
    object: &Value,
    action: &str,
    refused: impl FnOnce(kube::Error) -> Error,
) -> Result<Value> {
    let params = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..PostParams::default() };
    let body = serde_json::to_vec(object).map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    let mut request = ApiRequest::new(url).create(&params, body).map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    let strict = format!("{}&fieldValidation=Strict", request.uri());
    *request.uri_mut() = strict.parse().map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    cluster.client.request::<Value>(request).await.map_err(refused)
}

/// Creates the snapshot; an existing name or a cluster without the type is
/// said plainly.
async fn create_snapshot(cluster: &Cluster, object: &Value, name: &str) -> Result<Value> {
    let ns = cluster.namespace.as_str();
    let action = format!("create BrowserSnapshot {ns}/{name}");
    let url = BrowserSnapshot::url_path(&(), Some(ns));
    create_strict(cluster, url, object, &action, |e| match &e {
        kube::Error::Api(status) if status.is_already_exists() => Error::Usage(format!(
            "BrowserSnapshot \"{name}\" already exists in namespace \"{ns}\": pass --snapshot with another name"
        )),
        kube::Error::Api(status) if status.is_not_found() => Error::Unavailable(format!(
            "{action}: the API server does not serve BrowserSnapshots (browsersnapshots.playpen.dev) in namespace \
             \"{ns}\": install a Playpen with fork support, or check the namespace exists"
        )),
        _ => forbidden::kube_error(e, &Attempt::snapshots("create", ns), action.clone()),
    })
    .await
}

/// Creates fork `name`.
async fn create_fork(cluster: &Cluster, object: &Value, name: &str) -> Result<Value> {
    let ns = cluster.namespace.as_str();
    let action = format!("create BrowserSession {ns}/{name}");
    let url = BrowserSession::url_path(&(), Some(ns));
    create_strict(cluster, url, object, &action, |e| match &e {
        kube::Error::Api(status) if status.is_already_exists() => {
            Error::AlreadyExists { name: name.to_owned(), namespace: ns.to_owned() }
        }
        _ => forbidden::kube_error(e, &Attempt::sessions("create", Some(ns)), action.clone()),
    })
    .await
}

/// Runs `fork`.
pub async fn run(cluster: &Cluster, args: ForkArgs) -> Result<()> {
    let ns = cluster.namespace.clone();
    let snapshot = build::snapshot_name(&args.source, args.snapshot.as_deref(), &build::suffix(random_bytes()))?;
    // Refused here, before the snapshot exists, so a bad name leaves nothing behind.
    let names = build::session_names(&snapshot, args.count)?;
    let source = patch::get(cluster, &args.source).await?;
    let source_spec = source.data.get("spec").cloned().unwrap_or(Value::Null);
    let forks = names
        .iter()
        .map(|name| build::fork_object(name, &ns, &args.source, &source_spec, &snapshot))
        .collect::<Result<Vec<_>>>()?;

    create_snapshot(cluster, &build::snapshot_object(&snapshot, &ns, &args.source), &snapshot).await?;
    println!("browsersnapshot.playpen.dev/{snapshot} created in namespace {ns} (of BrowserSession {})", args.source);
    let budget = wait::budget(args.wait);
    println!("waiting up to {budget:?} for BrowserSnapshot {ns}/{snapshot} to be Ready");
    wait::until_ready(cluster, &snapshot, budget).await?;

    let first = names.first().map(String::as_str).unwrap_or_default();
    let mut cdp = false;
    for (name, fork) in names.iter().zip(&forks) {
        let created = create_fork(cluster, fork, name).await?;
        cdp |= build::cdp_enabled(&created);
        println!(
            "browsersession.playpen.dev/{name} created in namespace {ns} (from snapshot {snapshot}, {})",
            build::browser_of(&created)
        );
    }
    let Some(timeout) = args.wait else {
        println!("they become Ready in a moment (kubectl playpen ls -n {ns}); then, e.g.:");
        print!("{}", new::usage_hints(&ns, first, cdp));
        return Ok(());
    };
    // Watched side by side, as they start: each within the same DURATION,
    // the first failure or timeout ending the wait.
    println!("waiting up to {timeout:?} for the forks to be Ready");
    let ns = ns.as_str();
    futures::future::try_join_all(names.iter().map(|name| async move {
        let status = new::wait::until_ready(cluster, name, timeout).await?;
        let pod = status.pod_name.as_deref().unwrap_or("-");
        println!("BrowserSession {ns}/{name} is Ready (Pod {pod})");
        Ok::<(), Error>(())
    }))
    .await?;
    println!("drive and view them, e.g.:");
    print!("{}", new::usage_hints(ns, first, cdp));
    Ok(())
}
