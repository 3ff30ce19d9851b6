//! A client from the kubeconfig the way kubectl picks it: `--kubeconfig`,
//! else `$KUBECONFIG` (a list of files, merged), else `~/.kube/config`, else
//! the in-cluster ServiceAccount; `--context` selects a context; `--as` and
//! `--as-group` impersonate (kubectl does not hand its own flags to plugins:
//! it refuses any flag placed before the plugin's name).

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use crate::cli::Global;
use crate::error::{Error, Result};

/// A connected client and the namespace commands act in.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: Client,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

/// How long a request may wait for bytes: streams (exec, logs -f,
/// port-forward) may be quiet for as long as the user likes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeouts {
    /// Plain requests keep the client's read timeout.
    Requests,
    /// Long-lived streams have none.
    Streams,
}

fn kubeconfig(global: &Global) -> Result<Option<Kubeconfig>> {
    if let Some(path) = &global.kubeconfig {
        return Kubeconfig::read_from(path)
            .map(Some)
            .map_err(|e| Error::Config(format!("reading kubeconfig {}: {e}", path.display())));
    }
    match Kubeconfig::read() {
        Ok(config) => Ok(Some(config)),
        // No file anywhere: in a Pod, the ServiceAccount may do.
        Err(KubeconfigError::FindPath) => Ok(None),
        Err(KubeconfigError::ReadConfig(e, _))
            if e.kind() == std::io::ErrorKind::NotFound && std::env::var_os("KUBECONFIG").is_none() =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::Config(format!("reading the kubeconfig ($KUBECONFIG or ~/.kube/config): {e}"))),
    }
}

async fn config(global: &Global) -> Result<Config> {
    let options = KubeConfigOptions { context: global.context.clone(), cluster: None, user: None };
    match kubeconfig(global)? {
        Some(file) => Config::from_custom_kubeconfig(file, &options).await.map_err(|e| {
            let context = global.context.as_deref().map(|c| format!(" (context {c:?})")).unwrap_or_default();
            Error::Config(format!("loading the kubeconfig{context}: {e}"))
        }),
        None if global.context.is_some() => {
            Err(Error::Config("--context was given, but there is no kubeconfig ($KUBECONFIG or ~/.kube/config)".into()))
        }
        None => Config::incluster().map_err(|e| {
            Error::Config(format!(
                "no kubeconfig ($KUBECONFIG, ~/.kube/config or --kubeconfig) and not in a Pod with a \
                 ServiceAccount: {e}"
            ))
        }),
    }
}

/// Connects as `global` says.
pub async fn connect(global: &Global, timeouts: Timeouts) -> Result<Cluster> {
    let mut config = config(global).await?;
    if let Some(user) = &global.as_user {
        config.auth_info.impersonate = Some(user.clone());
        config.auth_info.impersonate_groups =
            if global.as_group.is_empty() { None } else { Some(global.as_group.clone()) };
    }
    if timeouts == Timeouts::Streams {
        config.read_timeout = None;
    }
    let namespace = global.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| Error::Config(format!("building the API client: {e}")))?;
    Ok(Cluster { client, namespace })
}
