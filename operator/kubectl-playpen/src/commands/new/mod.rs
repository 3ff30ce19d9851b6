//! `kubectl playpen new NAME`: create a BrowserSession, optionally wait
//! until it is Ready.

pub mod build;
pub mod wait;

use kube::api::PostParams;
use kube::core::Request as ApiRequest;
use kube::Resource;
use playpen_api::BrowserSession;

use crate::cli::{NewArgs, IMAGE_ENV};
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// The field manager of objects the plugin creates.
pub const FIELD_MANAGER: &str = "kubectl-playpen";

/// How to use a session, printed once it exists.
pub fn usage_hints(ns: &str, name: &str, cdp: bool) -> String {
    let mut hints = format!(
        "  drive: kubectl playpen run {name} -n {ns} -- goto https://example.com\n  \
         view:  kubectl playpen view {name} -n {ns} --open\n"
    );
    if cdp {
        hints.push_str(&format!("  cdp:   kubectl playpen cdp {name} -n {ns}\n"));
    }
    hints.push_str(&format!("  logs:  kubectl playpen logs {name} -n {ns}\n"));
    hints
}

/// POSTs `object` with strict field validation: a field the CRD does not
/// know is refused instead of silently dropped.
async fn create(cluster: &Cluster, object: &serde_json::Value, name: &str) -> Result<BrowserSession> {
    let ns = cluster.namespace.as_str();
    let action = format!("create BrowserSession {ns}/{name}");
    let body = serde_json::to_vec(object).map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    let params = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..PostParams::default() };
    let mut request = ApiRequest::new(BrowserSession::url_path(&(), Some(ns)))
        .create(&params, body)
        .map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    let strict = format!("{}&fieldValidation=Strict", request.uri());
    *request.uri_mut() = strict.parse().map_err(|e| Error::Usage(format!("{action}: {e}")))?;
    cluster.client.request::<BrowserSession>(request).await.map_err(|e| match &e {
        kube::Error::Api(status) if status.is_already_exists() => {
            Error::AlreadyExists { name: name.to_owned(), namespace: ns.to_owned() }
        }
        kube::Error::Api(status) if status.is_not_found() && status.message.contains("namespaces \"") => {
            Error::Usage(format!("{action}: namespace \"{ns}\" does not exist"))
        }
        kube::Error::Api(status) if status.is_not_found() => Error::CrdMissing,
        _ => forbidden::kube_error(e, &Attempt::sessions("create", Some(ns)), action.clone()),
    })
}

/// Runs `new`.
pub async fn run(cluster: &Cluster, args: NewArgs) -> Result<()> {
    let ns = cluster.namespace.clone();
    let file = match &args.file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading -f {}", path.display())))?;
            Some((text, path.display().to_string()))
        }
        None => None,
    };
    let request = build::Request {
        name: args.name.clone(),
        namespace: ns.clone(),
        image_flag: args.image.clone(),
        image_env: std::env::var(IMAGE_ENV).ok(),
        pool: args.pool.clone(),
        viewer_port: args.viewer_port,
        cdp: args.cdp,
        file,
    };
    let object = build::build(&request)?;
    let created = create(cluster, &object, &args.name).await?;
    let image = created.spec.browser.image.as_str();
    println!("browsersession.playpen.dev/{} created in namespace {ns} (image {image})", args.name);
    if !args.wait {
        println!("it becomes Ready in a moment (kubectl playpen ls -n {ns}); then:");
        print!("{}", usage_hints(&ns, &args.name, created.spec.browser.cdp.enabled));
        return Ok(());
    }
    let status = wait::until_ready(cluster, &args.name, args.timeout).await?;
    let pod = status.pod_name.as_deref().unwrap_or("-");
    println!("BrowserSession {ns}/{} is Ready (Pod {pod}):", args.name);
    print!("{}", usage_hints(&ns, &args.name, created.spec.browser.cdp.enabled));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_session_and_namespace() {
        let hints = usage_hints("team-a", "demo", false);
        assert!(hints.contains("kubectl playpen run demo -n team-a -- goto https://example.com"));
        assert!(hints.contains("kubectl playpen view demo -n team-a --open"));
        assert!(!hints.contains("cdp"));
        assert!(usage_hints("team-a", "demo", true).contains("kubectl playpen cdp demo -n team-a"));
    }
}
