//! The ideal controller: the least any controller must do for a session.
//! It watches BrowserSessions and, for each new one, creates exactly the
//! children the operator would (the operator's own pure builders, with the
//! operator binary's default settings, so same kinds and sizes) with plain
//! creates, at the operator's reconcile concurrency: no reads, no status,
//! no Events, no reconcile logic. What it reaches is the limit the API
//! server and etcd set on this machine.

use std::collections::HashSet;

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use playpen_api::BrowserSession;
use playpen_operator::apply::Child;
use playpen_operator::children::{self, Identity, Settings};

/// Runs until aborted (or a create fails for another reason than "already exists").
pub async fn run(client: Client, namespace: String, concurrency: usize) -> anyhow::Result<()> {
    let settings = Settings::default();
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), &namespace);
    let (tx, rx) = futures::channel::mpsc::unbounded::<BrowserSession>();
    let watch = async move {
        let mut seen = HashSet::new();
        let stream = watcher(sessions, watcher::Config::default()).default_backoff().applied_objects();
        futures::pin_mut!(stream);
        while let Some(bs) = stream.try_next().await.context("watching BrowserSessions")? {
            if bs.uid().is_some_and(|uid| seen.insert(uid)) {
                tx.unbounded_send(bs).context("the create queue closed")?;
            }
        }
        Ok::<_, anyhow::Error>(())
    };
    let create = rx
        .map(|bs| create_children(&client, &settings, bs))
        .buffer_unordered(concurrency)
        .try_for_each(|()| async { Ok(()) });
    futures::try_join!(watch, create)?;
    Ok(())
}

/// Every child of `bs`, created in parallel (they are independent objects).
async fn create_children(client: &Client, settings: &Settings, bs: BrowserSession) -> anyhow::Result<()> {
    let id = Identity::of(&bs)?;
    let built = children::build(&bs, &id, settings)?;
    let ns = id.namespace.as_str();
    futures::try_join!(
        create_opt(client, ns, built.launch_secret.as_ref()),
        create(client, ns, &built.runtime_config),
        create_opt(client, ns, built.snapshot_claim.as_ref()),
        create(client, ns, &built.pod),
        create_opt(client, ns, built.viewer_service.as_ref()),
        create(client, ns, &built.network_policy),
    )?;
    Ok(())
}

async fn create<K: Child>(client: &Client, ns: &str, obj: &K) -> anyhow::Result<()> {
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        // A watch restart hands out a session again; its children are there.
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => {
            Err(e).with_context(|| format!("creating {} {ns}/{}", <K as k8s_openapi::Resource>::KIND, obj.name_any()))
        }
    }
}

async fn create_opt<K: Child>(client: &Client, ns: &str, obj: Option<&K>) -> anyhow::Result<()> {
    match obj {
        Some(obj) => create(client, ns, obj).await,
        None => Ok(()),
    }
}
