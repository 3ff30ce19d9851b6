//! helm install → the operator runs as the chart's ServiceAccount → RBAC as
//! the chart grants it → helm upgrade → helm uninstall keeps CRD and sessions.
//! One test: the chart's ClusterRoles are cluster-wide names.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use playpen_api::BrowserSession;
use playpen_operator::runtime::leader::LeaseConfig;
use playpen_tests::{
    client, client_as, client_as_service_account, eventually, wait_crd_established, RunningOperator, TestNamespace,
};
use serde_json::json;

use crate::access::can;
use crate::{helm, CHART};

/// (verb, API group, resource, subresource, namespace) of one access check.
type Check<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Option<&'a str>);

const RELEASE: &str = "pp";
const FULLNAME: &str = "pp-playpen";

async fn create_session(client: &kube::Client, ns: &str, name: &str) -> anyhow::Result<BrowserSession> {
    let bs = playpen_tests::fixtures::session(name, json!({"image": "playpen/browser:test"}))?;
    Ok(Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &bs).await?)
}

fn bind(name: &str, role: &str, user: &str) -> anyhow::Result<RoleBinding> {
    Ok(serde_json::from_value(json!({"metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}))?)
}

#[tokio::test]
async fn install_run_as_chart_account_upgrade_uninstall() -> anyhow::Result<()> {
    let admin = client().await?;
    let release_ns = TestNamespace::new(&admin, "rel").await?;
    let watched = TestNamespace::new(&admin, "team").await?;
    let other = TestNamespace::new(&admin, "other").await?;
    let (rel, w) = (release_ns.name.as_str(), watched.name.as_str());
    let watch_set = format!("watchNamespaces={{{w}}}");
    helm(&["install", RELEASE, CHART, "-n", rel, "--take-ownership", "--set", &watch_set])?;

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), rel);
    let deployment = deployments.get(FULLNAME).await?;
    assert_eq!(deployment.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    wait_crd_established(&admin).await?;
    create_session(&admin, w, "kept").await?;

    // The operator, as the chart's ServiceAccount, reconciles fully.
    let sa = client_as_service_account(rel, FULLNAME).await?;
    let lease = LeaseConfig {
        name: FULLNAME.into(),
        namespace: rel.into(),
        identity: "chart-test".into(),
        lease_duration: Duration::from_secs(15),
        retry_period: Duration::from_secs(1),
    };
    let _operator = RunningOperator::start_watching(&sa, &[w], Some(lease)).await?;
    create_session(&admin, w, "s").await?;
    let sessions: Api<BrowserSession> = Api::namespaced(admin.clone(), w);
    eventually(Duration::from_secs(40), || async {
        let s = sessions.get("s").await?.status.context("no status")?;
        ensure!(s.pod_name.is_some(), "no pod yet: {s:?}");
        Ok(())
    })
    .await?;
    Api::<Pod>::namespaced(admin.clone(), w).get("s-browser").await?;
    Api::<Secret>::namespaced(admin.clone(), w).get("s-launch").await?;

    // What the operator must not be able to do.
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "not-yours"}, "stringData": {"k": "v"}}))?;
    Api::<Secret>::namespaced(admin.clone(), &other.name).create(&PostParams::default(), &secret).await?;
    let denied = Api::<Secret>::namespaced(sa.clone(), &other.name).get("not-yours").await;
    assert!(matches!(denied, Err(kube::Error::Api(ref s)) if s.code == 403), "read a Secret elsewhere: {denied:?}");
    let forbidden: &[Check<'_>] = &[
        ("list", "", "secrets", None, Some(w)),
        ("watch", "", "secrets", None, Some(w)),
        ("get", "", "secrets", None, Some(other.name.as_str())),
        ("delete", "", "nodes", None, None),
        ("create", "", "pods", Some("exec"), Some(w)),
        ("create", "", "pods", Some("portforward"), Some(w)),
        ("delete", "", "pods", None, Some(other.name.as_str())),
        ("delete", "", "configmaps", None, Some(other.name.as_str())),
        ("delete", "", "secrets", None, Some(other.name.as_str())),
        ("create", "", "pods", None, Some(other.name.as_str())),
        ("list", "playpen.dev", "browsersessions", None, Some(other.name.as_str())),
        ("create", "rbac.authorization.k8s.io", "rolebindings", None, Some(w)),
        ("update", "coordination.k8s.io", "leases", None, Some(w)),
        ("patch", "playpen.dev", "browsersessions", None, Some(w)),
    ];
    for (verb, group, resource, sub, ns) in forbidden {
        assert!(
            !can(&sa, verb, group, resource, *sub, *ns).await?,
            "the operator may {verb} {resource}/{sub:?} in {ns:?}"
        );
    }
    assert!(can(&sa, "create", "", "pods", None, Some(w)).await?, "sanity: it may create Pods where it watches");
    assert!(can(&sa, "delete", "", "pods", None, Some(w)).await?, "it replaces failed browser Pods where it watches");
    for resource in ["configmaps", "secrets"] {
        // A pool's replaced warm browser takes its ConfigMap and Secret along.
        assert!(can(&sa, "delete", "", resource, None, Some(w)).await?, "it deletes warm {resource} where it watches");
    }
    assert!(can(&sa, "watch", "playpen.dev", "browserpools", None, Some(w)).await?, "it watches pools");
    assert!(can(&sa, "patch", "playpen.dev", "browserpools", Some("status"), Some(w)).await?, "pool status");
    assert!(can(&sa, "watch", "playpen.dev", "browsersnapshots", None, Some(w)).await?, "it watches snapshots");
    assert!(can(&sa, "patch", "playpen.dev", "browsersnapshots", Some("status"), Some(w)).await?, "snapshot status");
    assert!(!can(&sa, "create", "playpen.dev", "browsersnapshots", None, Some(w)).await?, "it never takes one itself");

    // People: viewer may port-forward, driver may also exec; neither reads Secrets.
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), w);
    bindings.create(&PostParams::default(), &bind("alice-views", "playpen-viewer", "alice")?).await?;
    bindings.create(&PostParams::default(), &bind("bob-drives", "playpen-driver", "bob")?).await?;
    let alice = client_as("alice", &["system:authenticated"]).await?;
    let bob = client_as("bob", &["system:authenticated"]).await?;
    assert!(can(&alice, "create", "", "pods", Some("portforward"), Some(w)).await?);
    assert!(!can(&alice, "create", "", "pods", Some("exec"), Some(w)).await?);
    assert!(can(&alice, "get", "playpen.dev", "browsersessions", None, Some(w)).await?);
    assert!(!can(&alice, "delete", "playpen.dev", "browsersessions", None, Some(w)).await?);
    assert!(can(&bob, "create", "", "pods", Some("portforward"), Some(w)).await?);
    assert!(can(&bob, "create", "", "pods", Some("exec"), Some(w)).await?);
    // kubectl playpen logs: the driver reads the runtime's log, the viewer does not.
    assert!(can(&bob, "get", "", "pods", Some("log"), Some(w)).await?);
    assert!(!can(&alice, "get", "", "pods", Some("log"), Some(w)).await?);
    // Snapshots hold cookies: the viewer does not see them, the driver
    // sees but neither takes one nor starts a session from one (`use`).
    assert!(!can(&alice, "get", "playpen.dev", "browsersnapshots", None, Some(w)).await?);
    assert!(can(&bob, "get", "playpen.dev", "browsersnapshots", None, Some(w)).await?);
    for verb in ["create", "use"] {
        assert!(!can(&bob, verb, "playpen.dev", "browsersnapshots", None, Some(w)).await?, "the driver may {verb}");
    }
    assert!(
        !can(&alice, "create", "", "pods", Some("portforward"), Some(&other.name)).await?,
        "bound in one namespace only"
    );
    for user in [&alice, &bob] {
        assert!(
            !can(user, "get", "", "secrets", None, Some(w)).await?,
            "a viewer or driver read the launch-config Secret"
        );
        let read = Api::<Secret>::namespaced(user.clone(), w).get("s-launch").await;
        assert!(matches!(read, Err(kube::Error::Api(ref s)) if s.code == 403), "{read:?}");
    }

    // Upgrade: changed values and a changed CRD both apply.
    let upgraded_chart = tempdir_copy_of_chart_with_crd_label()?;
    helm(&[
        "upgrade",
        RELEASE,
        upgraded_chart.to_str().context("path")?,
        "-n",
        rel,
        "--reuse-values",
        "--set",
        "replicaCount=2",
    ])?;
    let deployment = deployments.get(FULLNAME).await?;
    assert_eq!(deployment.spec.and_then(|s| s.replicas), Some(2));
    Api::<PodDisruptionBudget>::namespaced(admin.clone(), rel).get(FULLNAME).await?;
    let crd = crds.get("browsersessions.playpen.dev").await?;
    assert_eq!(crd.metadata.labels.unwrap_or_default().get("playpen.dev/upgraded").map(String::as_str), Some("yes"));

    // Uninstall: the operator goes, the CRD and every session stay.
    helm(&["uninstall", RELEASE, "-n", rel, "--wait", "--timeout", "60s"])?;
    assert!(deployments.get_opt(FULLNAME).await?.is_none());
    assert!(crds.get_opt("browsersessions.playpen.dev").await?.is_some(), "the CRD survives uninstall");
    assert!(sessions.get_opt("kept").await?.is_some(), "sessions survive uninstall");
    std::fs::remove_dir_all(&upgraded_chart).ok();
    Ok(())
}

/// A copy of the chart whose CRD carries one more label: a stand-in for a
/// new chart version with a changed CRD.
fn tempdir_copy_of_chart_with_crd_label() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("playpen-chart-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    crate::ok("cp", &["-r", CHART, dir.to_str().context("path")?], None)?;
    let crd = dir.join("files/crds/browsersession.yaml");
    let text = std::fs::read_to_string(&crd)?;
    let changed = text.replacen(
        "metadata:\n  annotations:",
        "metadata:\n  labels:\n    playpen.dev/upgraded: \"yes\"\n  annotations:",
        1,
    );
    ensure!(changed != text, "could not add the label");
    std::fs::write(&crd, changed)?;
    Ok(dir)
}
