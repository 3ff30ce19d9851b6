//! `kubectl playpen logs NAME [-f] [-c browser|agent]`: a container's log.

use futures::io::AllowStdIo;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use playpen_api::BrowserSession;

use crate::cli::{Container, LogsArgs};
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;
use crate::sessions;

/// Refuses the agent container when the session has no sidecar.
pub fn check_container(session: &BrowserSession, container: Container) -> Result<()> {
    if container == Container::Agent && session.spec.agent.is_none() {
        let ns = session.metadata.namespace.clone().unwrap_or_default();
        return Err(Error::Unavailable(format!(
            "BrowserSession {ns}/{} has no agent sidecar (spec.agent); its Pod has only the browser container",
            sessions::name(session)
        )));
    }
    Ok(())
}

/// The log request.
pub fn params(args: &LogsArgs) -> LogParams {
    LogParams {
        container: Some(args.container.name().to_owned()),
        follow: args.follow,
        tail_lines: args.tail,
        previous: args.previous,
        ..LogParams::default()
    }
}

/// Runs `logs`.
pub async fn run(cluster: &Cluster, args: LogsArgs) -> Result<()> {
    let session = sessions::get(cluster, &args.name).await?;
    check_container(&session, args.container)?;
    let ns = cluster.namespace.as_str();
    let pod = sessions::pod_name(&session);
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let stream = pods.log_stream(&pod, &params(&args)).await.map_err(|e| match &e {
        kube::Error::Api(status) if status.is_not_found() => Error::Unavailable(format!(
            "the Pod {pod} of BrowserSession {ns}/{} does not exist (yet): see kubectl playpen ls -n {ns}",
            args.name
        )),
        _ => forbidden::kube_error(
            e,
            &Attempt::pods("get", Some("log"), ns),
            format!("logs of {ns}/{pod} container {}", args.container.name()),
        ),
    })?;
    futures::io::copy(stream, &mut AllowStdIo::new(std::io::stdout()))
        .await
        .map_err(Error::io(format!("reading the log of {ns}/{pod}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(agent: bool) -> BrowserSession {
        let mut spec = serde_json::json!({"image": "i"});
        if agent {
            spec["agent"] = serde_json::json!({"image": "a"});
        }
        serde_json::from_value(serde_json::json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
            "metadata": {"name": "demo", "namespace": "n"}, "spec": spec}))
        .unwrap()
    }

    #[test]
    fn the_agent_container_needs_a_sidecar() {
        assert!(check_container(&session(false), Container::Browser).is_ok());
        assert!(check_container(&session(true), Container::Agent).is_ok());
        let err = check_container(&session(false), Container::Agent).unwrap_err().to_string();
        assert!(err.contains("n/demo has no agent sidecar"), "{err}");
    }

    #[test]
    fn flags_become_log_params() {
        let args =
            LogsArgs { name: "x".into(), follow: true, container: Container::Agent, tail: Some(5), previous: true };
        let p = params(&args);
        assert_eq!((p.container.as_deref(), p.follow, p.tail_lines, p.previous), (Some("agent"), true, Some(5), true));
    }
}
