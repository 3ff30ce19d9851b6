//! The installation a platform team would make: the chart (operator in a Pod,
//! seccomp-profile installer DaemonSet) from the images `tests/e2e/images.sh`
//! built and imported, plus fixture web servers inside the cluster: the one
//! the main session allow-lists, an "internal" one beside it and one in the
//! second team's namespace, which no session may reach.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use playpen_tests::{eventually, eventually_every, TestNamespace};
use serde_json::json;

use crate::kubectl::{helm, kubectl};

/// The browser image tests/e2e/images.sh builds with playpen-imagebuild.
pub const BROWSER_IMAGE: &str = "playpen/browser:dev";
/// The node taint tests/run.sh sets, so that only these tests' Pods run on
/// the node (the other suites' sessions stay Pending, as they expect).
pub const NODE_TAINT_KEY: &str = "playpen.dev/e2e";
const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/playpen");
const FIXTURE_SERVER: &str = include_str!("fixture-server.js");

/// The installed product and the namespaces the scenarios use.
pub struct Installed {
    /// The helm release.
    pub release: String,
    /// Where the chart is installed.
    pub system: TestNamespace,
    /// The main session's namespace (also serves the fixture).
    pub team_a: TestNamespace,
    /// A second team's namespace.
    pub team_b: TestNamespace,
    /// `http://<fixture ClusterIP>:8080/`: Pod `fixture` (app=fixture) in team A.
    pub fixture_url: String,
    /// Pod `internal` (app=internal) in team A, not allow-listed.
    pub internal_url: String,
    /// Pod `fixture` (app=fixture) in team B.
    pub other_namespace_url: String,
    /// The chart's `sessions.runtimeClassName`, when the release sets one.
    pub runtime_class: Option<String>,
}

/// The cluster's Pod and Service ranges (tests/cluster/lib.sh), given to the chart.
pub const CLUSTER_CIDRS: &str = "network.clusterCIDRs={10.244.0.0/24,10.96.0.0/12}";

/// The suites run 20 and more sessions at once on the 2-core node: the
/// default CPU request (100m) would admit about 17 beside the rest. Only the
/// overload test relies on requests filling the node, and sets its own.
pub const SESSION_CPU_REQUEST: &str = "sessions.resources.requests.cpu=20m";

/// Tolerations for the node taint, as JSON.
pub fn tolerations() -> serde_json::Value {
    json!([{"key": NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}])
}

/// `helm install` of the chart as release `e2e`, the operator watching the two team namespaces.
pub async fn install(client: &Client) -> anyhow::Result<Installed> {
    install_release(client, "e2e", &[]).await
}

/// `helm install` of the chart as `release` (also the namespaces' prefix),
/// with more `--set` values.
pub async fn install_release(client: &Client, release: &str, sets: &[&str]) -> anyhow::Result<Installed> {
    let system = TestNamespace::new(client, &format!("{release}-sys")).await?;
    let team_a = TestNamespace::new(client, &format!("{release}-a")).await?;
    let team_b = TestNamespace::new(client, &format!("{release}-b")).await?;
    let watch = format!("watchNamespaces={{{},{}}}", team_a.name, team_b.name);
    let tolerations = format!("tolerations={}", tolerations());
    let installer_tolerations = format!("seccompProfileInstaller.tolerations={}", self::tolerations());
    let mut args = vec![
        "install",
        release,
        CHART,
        "-n",
        &system.name,
        "--take-ownership",
        "--wait",
        "--timeout",
        "240s",
        "--set",
        "image.repository=playpen/operator,image.tag=dev,image.pullPolicy=Never",
        "--set",
        &watch,
        "--set-json",
        &tolerations,
        "--set",
        "seccompProfileInstaller.enabled=true,seccompProfileInstaller.image.repository=playpen/base",
        "--set",
        "seccompProfileInstaller.image.tag=bookworm,seccompProfileInstaller.image.pullPolicy=Never",
        "--set-json",
        &installer_tolerations,
        "--set",
        "logFormat=text",
        "--set",
        CLUSTER_CIDRS,
        "--set",
        SESSION_CPU_REQUEST,
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let installed = helm(&args).await?.ok("helm install");
    if let Err(failed) = installed {
        // helm says only "context deadline exceeded": what did not become
        // ready, and why, is in the release namespace's Pods and Events.
        let why = what_is_not_ready(&system.name).await;
        return Err(failed.context(format!("the release namespace {} at the timeout:\n{why}", system.name)));
    }
    let (fixture_url, internal_url, other_namespace_url) = tokio::try_join!(
        start_fixture(client, &team_a.name, "fixture"),
        start_fixture(client, &team_a.name, "internal"),
        start_fixture(client, &team_b.name, "fixture"),
    )?;
    Ok(Installed {
        release: release.to_owned(),
        system,
        team_a,
        team_b,
        fixture_url,
        internal_url,
        other_namespace_url,
        runtime_class: None,
    })
}

/// [`install_release`] with every browser Pod under `runtime_class` (the
/// chart value `sessions.runtimeClassName`) and more `--set` values; the
/// fixtures keep the node's default.
#[allow(dead_code)] // the gvisor suite's (tests/gvisor includes this file)
pub async fn install_under(
    client: &Client,
    release: &str,
    runtime_class: &str,
    sets: &[&str],
) -> anyhow::Result<Installed> {
    let class = format!("sessions.runtimeClassName={runtime_class}");
    let sets: Vec<&str> = std::iter::once(class.as_str()).chain(sets.iter().copied()).collect();
    let installed = install_release(client, release, &sets).await?;
    Ok(Installed { runtime_class: Some(runtime_class.to_owned()), ..installed })
}

/// The node, the Pods of `namespace` and its Events: why a rollout did not
/// finish. Best effort: a failure to read them is printed instead.
async fn what_is_not_ready(namespace: &str) -> String {
    let mut report = String::new();
    let commands: [&[&str]; 3] = [
        &["get", "nodes", "-o", "wide"],
        &["get", "pods,daemonsets,deployments", "-o", "wide", "-n", namespace],
        &["get", "events", "--sort-by=.lastTimestamp", "-n", namespace],
    ];
    for args in commands {
        let printed = match kubectl(args).await {
            Ok(out) => format!("{}{}", out.stdout, out.stderr),
            Err(e) => format!("{e:#}"),
        };
        report.push_str(&format!("$ kubectl {}\n{printed}\n", args.join(" ")));
    }
    report
}

/// `helm uninstall` (the CRD stays: resource-policy keep), then the
/// namespaces go, awaited here: a test process that ends drops its
/// background deletions, and the next suite would share the node with
/// leftover browsers.
pub async fn uninstall(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let uninstalled =
        helm(&["uninstall", &installed.release, "-n", &installed.system.name, "--wait", "--timeout", "120s"])
            .await?
            .ok("helm uninstall");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names = [&installed.team_a.name, &installed.team_b.name, &installed.system.name];
    for name in names {
        namespaces.delete(name, &DeleteParams::background()).await?;
    }
    // The next suite (cargo runs the gVisor one after this) starts on a quiet
    // node: browsers closing and exporters' final passes take their grace
    // periods. Not a failure of its own when slow: it is said and the run goes on.
    let gone = eventually_every(Duration::from_secs(2), Duration::from_secs(300), || async {
        for name in names {
            ensure!(namespaces.get_opt(name).await?.is_none(), "namespace {name} is still terminating");
        }
        Ok(())
    })
    .await;
    if let Err(err) = gone {
        eprintln!("e2e: WARNING: the suite's namespaces did not go within 300 s: {err:#}");
    }
    uninstalled.map(drop)
}

/// Pod, ConfigMap and Service `name` (label app=`name`) serving the fixture page; its URL.
pub(crate) async fn start_fixture(client: &Client, ns: &str, name: &str) -> anyhow::Result<String> {
    let apply = PatchParams::apply("playpen-e2e").force();
    let config: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"server.js": FIXTURE_SERVER}}))?;
    Api::<ConfigMap>::namespaced(client.clone(), ns).patch(name, &apply, &Patch::Apply(&config)).await?;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "tolerations": tolerations(),
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "server",
                "image": BROWSER_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["/opt/playpen/node/bin/node", "/fixture/server.js"],
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "server", "mountPath": "/fixture"}]
            }],
            "volumes": [{"name": "server", "configMap": {"name": name}}]
        }
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.patch(name, &apply, &Patch::Apply(&pod)).await?;
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 8080, "targetPort": 8080}]}
    }))?;
    let service = Api::<Service>::namespaced(client.clone(), ns).patch(name, &apply, &Patch::Apply(&service)).await?;
    let ip = service.spec.and_then(|s| s.cluster_ip).context("the fixture Service has no ClusterIP")?;
    eventually(Duration::from_secs(90), || async {
        let pod = pods.get(name).await?;
        let ready = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        ensure!(ready.iter().any(|c| c.type_ == "Ready" && c.status == "True"), "{name} not ready: {ready:?}");
        Ok(())
    })
    .await
    .with_context(|| format!("the fixture server Pod {ns}/{name}"))?;
    Ok(format!("http://{ip}:8080/"))
}
