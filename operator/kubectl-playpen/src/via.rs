//! How a tunnel reaches a pinned port of the session's Pod: the API
//! server's port-forward, or an exec of `playpen-session pipe PORT` in the
//! browser container. Port-forward is the kubelet dialling the port from
//! the Pod's network namespace on the host; a gVisor sandbox (runsc) runs
//! its own network stack, where nothing of the host's listens, so there
//! only exec reaches the port (upstream: google/gvisor#3811,
//! containerd/containerd#11338).

use std::pin::Pin;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

pub use crate::cli::Via;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// The runtime handler whose sandboxes port-forward cannot reach.
pub const GVISOR_HANDLER: &str = "runsc";
/// The session runtime in the browser image, and its relay subcommand.
const RELAY: [&str; 2] = ["/usr/local/bin/playpen-session", "pipe"];
/// The container that holds it.
const BROWSER_CONTAINER: &str = "browser";

impl Via {
    /// How a message names the way.
    pub fn describe(self) -> &'static str {
        match self {
            Via::Auto => "port-forward or exec",
            Via::PortForward => "through port-forward",
            Via::Exec => "through an exec relay (playpen-session pipe)",
        }
    }
}

/// The rights each way needs, checked before the listener binds.
pub fn rights(via: Via, namespace: &str) -> Vec<Attempt> {
    match via {
        Via::Exec => {
            vec![Attempt::pods("get", Some("exec"), namespace), Attempt::pods("create", Some("exec"), namespace)]
        }
        Via::Auto | Via::PortForward => forbidden::port_forward_rights(namespace).to_vec(),
    }
}

/// The way for `pod` when asked for `via`: `Auto` looks at the Pod's
/// RuntimeClass; where the Pod or the RuntimeClass cannot be read, port-forward.
pub async fn resolve(cluster: &Cluster, pod: &str, via: Via) -> Via {
    if via != Via::Auto {
        return via;
    }
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let class = match pods.get_opt(pod).await {
        Ok(Some(pod)) => pod.spec.and_then(|s| s.runtime_class_name),
        _ => None,
    };
    let Some(class) = class else { return Via::PortForward };
    match Api::<RuntimeClass>::all(cluster.client.clone()).get_opt(&class).await {
        Ok(Some(rc)) if rc.handler == GVISOR_HANDLER => Via::Exec,
        Ok(_) => Via::PortForward,
        Err(_) => {
            eprintln!(
                "note: cannot read RuntimeClass {class} of Pod {pod}; using port-forward (if the Pod runs under \
                 gVisor, use --via exec)"
            );
            Via::PortForward
        }
    }
}

/// A byte stream both ways.
pub trait Duplex: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Duplex for T {}

/// A stream to 127.0.0.1:`port` inside `pod`, through an exec of the relay;
/// the exec lives as long as the returned handle.
pub async fn exec_stream(
    cluster: &Cluster,
    pod: &str,
    port: u16,
) -> Result<(Pin<Box<dyn Duplex>>, kube::api::AttachedProcess)> {
    let ns = cluster.namespace.as_str();
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let command = [RELAY[0].to_owned(), RELAY[1].to_owned(), port.to_string()];
    let params = AttachParams::default().container(BROWSER_CONTAINER).stdin(true).stdout(true).stderr(true);
    let mut process = pods.exec(pod, command, &params).await.map_err(|e| {
        forbidden::kube_error(e, &Attempt::pods("get", Some("exec"), ns), format!("exec relay to {ns}/{pod}:{port}"))
    })?;
    let (Some(stdout), Some(stdin)) = (process.stdout(), process.stdin()) else {
        return Err(Error::Remote(format!("the exec relay to {pod}:{port} gave no stdin or stdout")));
    };
    if let Some(mut stderr) = process.stderr() {
        let pod = pod.to_owned();
        tokio::spawn(async move {
            let mut text = String::new();
            if stderr.read_to_string(&mut text).await.is_ok() && !text.trim().is_empty() {
                eprintln!("exec relay to {pod}:{port}: {}", crate::output::untrusted(text.trim(), false));
            }
        });
    }
    Ok((Box::pin(tokio::io::join(stdout, stdin)), process))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_needs_exec_rights_and_the_rest_port_forward() {
        let subresources = |via| {
            rights(via, "team-a").into_iter().map(|a| (a.verb, a.subresource.unwrap_or_default())).collect::<Vec<_>>()
        };
        assert_eq!(subresources(Via::Exec), [("get".into(), "exec".into()), ("create".into(), "exec".into())]);
        let forward = [("get".to_owned(), "portforward".to_owned()), ("create".to_owned(), "portforward".to_owned())];
        assert_eq!(subresources(Via::PortForward), forward);
        assert_eq!(subresources(Via::Auto), forward, "auto is checked again once resolved");
    }
}
