//! Lint, and every value set rendered and accepted by the API server
//! (server-side dry run); values typos and unsafe combinations refused.

use playpen_tests::{client, TestNamespace};
use serde::Deserialize as _;

use crate::{helm, kubectl, run, CHART};

const VALUE_SETS: &[(&str, &[&str])] = &[
    ("defaults", &[]),
    ("ha", &["--set", "replicaCount=3"]),
    (
        "text-logs-no-roles",
        &["--set", "logFormat=text", "--set", "userRoles.enabled=false", "--set", "crds.install=false"],
    ),
    ("seccomp-installer", &["--set", "seccompProfileInstaller.enabled=true"]),
    (
        "admission-policy-warn",
        &["--set", "admissionPolicy.enabled=true", "--set", "admissionPolicy.validationActions={Warn,Audit}"],
    ),
    ("unconfined", &["--set", "sessions.enforcedSeccomp=unconfined", "--set", "leaderElection.enabled=false"]),
    ("live-suspend", &["--set", "suspend.live.enabled=true", "--set", "suspend.live.agent.nodeSelector.gvisor=yes"]),
];

#[test]
fn chart_lints_strictly() -> anyhow::Result<()> {
    helm(&["lint", "--strict", CHART])?;
    helm(&["lint", "--strict", CHART, "--set", "watchNamespaces={a,b}", "--set", "replicaCount=2"])?;
    Ok(())
}

#[test]
fn chart_crds_are_the_generated_crds() -> anyhow::Result<()> {
    for file in ["browsersession.yaml", "browserpool.yaml", "browsersnapshot.yaml"] {
        let committed = std::fs::read_to_string(format!("{}/../crds/{file}", env!("CARGO_MANIFEST_DIR")))?;
        let chart = std::fs::read_to_string(format!("{CHART}/files/crds/{file}"))?;
        assert!(committed == chart, "charts/playpen/files/crds/{file} differs from crds/: copy it");
    }
    Ok(())
}

#[test]
fn the_chart_installs_every_crd() -> anyhow::Result<()> {
    let manifest = helm(&["template", "pp", CHART])?;
    for name in ["browsersessions.playpen.dev", "browserpools.playpen.dev", "browsersnapshots.playpen.dev"] {
        assert!(manifest.contains(&format!("name: {name}")), "the chart renders no CRD {name}");
    }
    Ok(())
}

#[tokio::test]
async fn every_value_set_is_accepted_by_the_api_server() -> anyhow::Result<()> {
    let client = client().await?;
    let release_ns = TestNamespace::new(&client, "render").await?;
    let watched = TestNamespace::new(&client, "watched").await?;
    let mut sets: Vec<(String, Vec<String>)> =
        VALUE_SETS.iter().map(|(n, a)| ((*n).to_owned(), a.iter().map(|s| (*s).to_owned()).collect())).collect();
    sets.push(("namespaced".into(), vec!["--set".into(), format!("watchNamespaces={{{}}}", watched.name)]));
    for (name, args) in sets {
        let mut argv = vec!["template", "pp", CHART, "--namespace", release_ns.name.as_str()];
        argv.extend(args.iter().map(String::as_str));
        let manifest = helm(&argv)?;
        assert!(manifest.contains("kind: Deployment"), "{name}: no Deployment rendered");
        // A dry run: --force-conflicts so cluster-wide objects that another
        // release (the demo, the install test) manages are not conflicts.
        kubectl(
            &[
                "apply",
                "--server-side",
                "--dry-run=server",
                "--force-conflicts",
                "--field-manager=playpen-tests",
                "-f",
                "-",
            ],
            &manifest,
        )
        .await
        .map_err(|e| e.context(format!("value set {name} refused by the API server")))?;
    }
    Ok(())
}

#[test]
fn rendered_objects_follow_the_values() -> anyhow::Result<()> {
    let defaults = helm(&["template", "pp", CHART, "--namespace", "ops"])?;
    assert!(defaults.lines().any(|l| l == "kind: ClusterRoleBinding"), "cluster-wide by default");
    assert!(!defaults.contains("kind: PodDisruptionBudget"), "no PDB for one replica");
    assert!(defaults.contains("helm.sh/resource-policy: keep"), "the CRD is kept on uninstall");
    for needle in [
        "runAsNonRoot: true",
        "readOnlyRootFilesystem: true",
        "allowPrivilegeEscalation: false",
        "type: RuntimeDefault",
        "path: /healthz",
        "path: /readyz",
    ] {
        assert!(defaults.contains(needle), "{needle} missing from the Deployment");
    }
    assert!(!defaults.contains("kind: DaemonSet"), "the seccomp installer is off by default");
    assert!(
        defaults.contains("name: PLAYPEN_LIVE_SUSPEND_RUNTIME_CLASSES\n              value: \"\""),
        "no live suspend without the node agent"
    );
    let live = helm(&["template", "pp", CHART, "--namespace", "ops", "--set", "suspend.live.enabled=true"])?;
    for needle in [
        "name: pp-playpen-node-agent",
        "hostPID: true",
        "add: [\"KILL\"]",
        "mountPath: /var/lib/playpen",
        "mountPath: /run/containerd/runsc/k8s.io",
        "image: playpen/node-agent:0.1.0",
        "name: PLAYPEN_LIVE_SUSPEND_RUNTIME_CLASSES\n              value: \"gvisor\"",
    ] {
        assert!(live.contains(needle), "{needle} missing from the node agent");
    }
    assert_eq!(live.matches("kind: DaemonSet").count(), 1, "the node agent, and only with suspend.live.enabled");
    let ha = helm(&["template", "pp", CHART, "--namespace", "ops", "--set", "replicaCount=2"])?;
    assert!(ha.contains("kind: PodDisruptionBudget"));
    let listed = helm(&["template", "pp", CHART, "--namespace", "ops", "--set", "watchNamespaces={team-a,team-b}"])?;
    assert_eq!(
        listed.lines().filter(|l| *l == "kind: Role").count(),
        3,
        "a Role per watched namespace plus the Lease role"
    );
    assert!(listed.contains("namespace: team-a") && listed.contains("namespace: team-b"));
    assert!(listed.contains("value: \"team-a,team-b\""));
    assert!(!listed.contains("kind: ClusterRoleBinding"), "no cluster-wide grant when namespaces are listed");
    assert!(defaults.contains("name: PLAYPEN_DNS_POD_LABELS\n              value: \"k8s-app=kube-dns\""));
    // The operator's own Pod labels, which sessions with host rules admit to their egress report.
    assert!(defaults.contains(
        "name: PLAYPEN_OPERATOR_POD_LABELS\n              value: \"app.kubernetes.io/instance=pp,app.kubernetes.io/name=playpen-operator\""
    ));
    let network = helm(&[
        "template",
        "pp",
        CHART,
        "--set",
        "network.clusterCIDRs={10.244.0.0/16,10.96.0.0/12},network.denyCIDRs={192.0.2.0/24}",
        "--set",
        "network.dns.namespace=dns,network.dns.podLabels.app=resolver,network.dns.podLabels.tier=a",
        "--set",
        "network.allowHosts={sso.corp.test:443,*.example.com},network.denyHosts={ads.example.com}",
    ])?;
    for needle in [
        "name: PLAYPEN_CLUSTER_CIDRS\n              value: \"10.244.0.0/16,10.96.0.0/12\"",
        "name: PLAYPEN_DENY_CIDRS\n              value: \"192.0.2.0/24\"",
        "name: PLAYPEN_DNS_NAMESPACE\n              value: \"dns\"",
        "name: PLAYPEN_ALLOW_HOSTS\n              value: \"sso.corp.test:443,*.example.com\"",
        "name: PLAYPEN_DENY_HOSTS\n              value: \"ads.example.com\"",
        // Helm merges maps: the default k8s-app label stays unless set to null.
        "name: PLAYPEN_DNS_POD_LABELS\n              value: \"app=resolver,k8s-app=kube-dns,tier=a\"",
    ] {
        assert!(network.contains(needle), "{needle} missing from the Deployment");
    }
    Ok(())
}

/// The operator's environment variable `name` as the Deployment in `manifest` sets it.
fn operator_env(manifest: &str, name: &str) -> anyhow::Result<String> {
    for doc in serde_yaml::Deserializer::from_str(manifest) {
        let value = serde_yaml::Value::deserialize(doc)?;
        if value["kind"].as_str() != Some("Deployment") {
            continue;
        }
        let env = value["spec"]["template"]["spec"]["containers"][0]["env"].as_sequence().cloned().unwrap_or_default();
        if let Some(var) = env.iter().find(|e| e["name"].as_str() == Some(name)) {
            return Ok(var["value"].as_str().unwrap_or_default().to_owned());
        }
    }
    anyhow::bail!("the Deployment sets no {name}")
}

#[test]
fn the_chart_default_browser_resources_are_the_operators() -> anyhow::Result<()> {
    let rendered = |sets: &[&str]| -> anyhow::Result<serde_json::Value> {
        let mut argv = vec!["template", "pp", CHART];
        argv.extend(sets);
        let text = operator_env(&helm(&argv)?, "PLAYPEN_BROWSER_RESOURCES")?;
        Ok(serde_json::from_str(&text)?)
    };
    let shipped: serde_json::Value = serde_json::from_str(playpen_operator::children::DEFAULT_BROWSER_RESOURCES)?;
    assert_eq!(rendered(&[])?, shipped, "values.yaml sessions.resources and the operator's default differ");
    let none = rendered(&["--set", "sessions.resources=null"])?;
    assert_eq!(none, serde_json::json!({}), "null sets none");
    let small = rendered(&["--set", "sessions.resources.requests.cpu=25m"])?;
    assert_eq!(small["requests"]["cpu"], "25m");
    assert_eq!(small["requests"]["memory"], shipped["requests"]["memory"], "the other defaults stay");
    let typo = run(
        &playpen_tests::tool("PLAYPEN_HELM")?,
        &["template", "pp", CHART, "--set", "sessions.resources.requests.gpu=1"],
        None,
    )?;
    assert!(!typo.status.success(), "an unknown resource name is refused by the values schema");
    Ok(())
}

#[test]
fn a_values_typo_fails_with_the_key_name() -> anyhow::Result<()> {
    let helm_bin = playpen_tests::tool("PLAYPEN_HELM")?;
    let out = run(&helm_bin, &["template", "pp", CHART, "--set", "imagee.tag=x"], None)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("imagee"), "the error names the unknown key: {err}");
    let out = run(&helm_bin, &["template", "pp", CHART, "--set", "sessions.enforcedSeccomp=off"], None)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("enforcedSeccomp"), "{err}");
    let out = run(&helm_bin, &["template", "pp", CHART, "--set", "network.clusterCIDRs={pods}"], None)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("clusterCIDRs"), "{err}");
    let out = run(
        &helm_bin,
        &["template", "pp", CHART, "--set", "replicaCount=2", "--set", "leaderElection.enabled=false"],
        None,
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("replicaCount > 1 needs leaderElection.enabled=true"), "{err}");
    Ok(())
}

#[test]
fn the_values_schema_checks_host_rules_as_admission_does() -> anyhow::Result<()> {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{CHART}/values.schema.json"))?)?;
    for list in ["allowHosts", "denyHosts"] {
        let items = &schema["properties"]["network"]["properties"][list]["items"];
        assert_eq!(items["pattern"], playpen_api::egress_hosts::HOST_RULE_PATTERN, "network.{list}");
        assert_eq!(items["maxLength"], playpen_api::v1alpha1::MAX_HOST_RULE_LEN, "network.{list}");
    }
    Ok(())
}

#[test]
fn the_cluster_recordings_destination_reaches_the_operator_as_it_checks_it() -> anyhow::Result<()> {
    let env = |sets: &[&str]| -> anyhow::Result<String> {
        let mut argv = vec!["template", "pp", CHART];
        argv.extend(sets);
        operator_env(&helm(&argv)?, "PLAYPEN_RECORDING_EXPORT")
    };
    assert_eq!(env(&[])?, "", "no destination by default");
    let set = env(&[
        "--set",
        "recordings.export.s3.endpoint=http://store.rec.svc:8333,recordings.export.s3.bucket=agent-recordings",
        "--set",
        "recordings.export.s3.credentialsSecret.name=recordings-s3,recordings.export.s3.pathStyle=true",
    ])?;
    let export: playpen_api::v1alpha1::RecordingExport = serde_json::from_str(&set)?;
    assert_eq!(export.check(), Ok(()), "{set}");
    assert!(export.s3.path_style && export.s3.bucket == "agent-recordings", "{set}");
    let out = run(
        &playpen_tests::tool("PLAYPEN_HELM")?,
        &["template", "pp", CHART, "--set", "recordings.export.s3.bucket=Agent"],
        None,
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bucket"), "the values schema refuses it: {err}");
    Ok(())
}
