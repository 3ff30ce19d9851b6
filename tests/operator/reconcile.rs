//! Apply → children; change → children follow; Pod status → session status;
//! delete → garbage collection.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use playpen_api::naming::APPLIED_ANNOTATION;
use playpen_api::runtime_config::RuntimeConfig;
use playpen_api::v1alpha1::Phase;
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, eventually, http_get, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{after_scheduler_verdict, condition, container, create, events_for, events_once, session};

const WAIT: Duration = Duration::from_secs(30);

async fn status_of(api: &Api<BrowserSession>, name: &str) -> anyhow::Result<playpen_api::BrowserSessionStatus> {
    api.get(name).await?.status.context("no status yet")
}

#[tokio::test]
async fn session_becomes_children_and_follows_changes() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "rec").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    create(
        &client,
        n,
        session(
            "demo",
            json!({"image": "playpen/browser:test", "imagePullPolicy": "Never",
                "launchConfig": {"executablePath": "/usr/bin/chromium", "args": ["--disable-quic"]},
                "snapshots": {"volume": {"persistentVolumeClaim": {"size": "2Gi"}}, "retention": {"maxCount": 50}},
                "idleTimeoutSeconds": 600,
                "agent": {"image": "playpen/browser:test", "command": ["sleep", "infinity"]}}),
        ),
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pod = eventually(WAIT, || async { Ok(pods.get("demo-browser").await?) }).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let uid = sessions.get("demo").await?.metadata.uid.context("uid")?;
    let socket_ns = playpen_api::naming::socket_namespace(&uid);

    // Pod: runtime as PID 1, session env, restricted, no token, owned.
    let spec = pod.spec.clone().context("pod spec")?;
    let browser = &spec.containers[0];
    assert_eq!(browser.command.as_deref(), Some(&["/usr/local/bin/playpen-session".to_owned()][..]));
    let env: std::collections::BTreeMap<_, _> =
        browser.env.iter().flatten().map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())).collect();
    assert_eq!(env["PLAYWRIGHT_CLI_SESSION"], "demo");
    assert_eq!(env["PWTEST_SOCKETS_DIR"], format!("/var/lib/playpen/pw/{socket_ns}/s"));
    assert_eq!(env["PWTEST_DAEMON_SESSION_DIR"], format!("/var/lib/playpen/pw/{socket_ns}/d"));
    assert_eq!(env["PLAYWRIGHT_MCP_CONFIG"], "/etc/playpen/launch/config.json");
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(spec.containers.len(), 2, "agent sidecar");
    let owner = &pod.metadata.owner_references.clone().context("owner")?[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("BrowserSession", uid.as_str(), Some(true))
    );
    let seccomp = spec.security_context.and_then(|s| s.seccomp_profile).context("seccomp")?;
    assert_eq!(seccomp.type_, "Localhost");
    // Server-side apply with one field manager.
    let managers: Vec<_> = pod.metadata.managed_fields.iter().flatten().filter_map(|m| m.manager.clone()).collect();
    assert!(managers.contains(&"playpen-operator".to_owned()), "{managers:?}");

    // Launch config Secret in the nested form.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), n);
    let secret = secrets.get("demo-launch").await?;
    let data = secret.data.context("data")?;
    let config: serde_json::Value = serde_json::from_slice(&data["config.json"].0)?;
    assert_eq!(config["browser"]["browserName"], "chromium");
    assert_eq!(config["browser"]["launchOptions"]["chromiumSandbox"], true);
    assert_eq!(config["browser"]["launchOptions"]["executablePath"], "/usr/bin/chromium");

    // Service, NetworkPolicy, PVC, runtime ConfigMap.
    let svc = Api::<Service>::namespaced(client.clone(), n).get("demo-view").await?;
    let port = &svc.spec.clone().context("svc")?.ports.context("ports")?[0];
    assert_eq!(port.port, 9323);
    assert_eq!(svc.spec.as_ref().and_then(|s| s.type_.as_deref()), Some("ClusterIP"));
    assert_eq!(svc.spec.and_then(|s| s.cluster_ip).as_deref(), Some("None"), "headless");
    let np = Api::<NetworkPolicy>::namespaced(client.clone(), n).get("demo-isolate").await?;
    // The session's, and its Pod's: the policy outlives the session until the Pod stopped.
    let owners: Vec<(String, Option<bool>)> =
        np.metadata.owner_references.iter().flatten().map(|o| (o.uid.clone(), o.controller)).collect();
    let pod_uid = pod.metadata.uid.clone().context("pod uid")?;
    assert_eq!(owners, [(uid.clone(), Some(true)), (pod_uid, None)], "the policy's owners");
    let np_spec = np.spec.context("netpol spec")?;
    assert_eq!(np_spec.policy_types, Some(vec!["Ingress".to_owned(), "Egress".to_owned()]));
    assert!(np_spec.ingress.unwrap_or_default().is_empty(), "no ingress rule: deny all");
    let egress = np_spec.egress.context("the default egress: DNS and the internet")?;
    let except = egress[1].to.as_ref().and_then(|t| t[0].ip_block.as_ref()).and_then(|b| b.except.clone());
    assert!(
        except.is_some_and(|e| e.contains(&"169.254.0.0/16".to_owned())),
        "metadata range stored by the API server"
    );
    let pvc = Api::<PersistentVolumeClaim>::namespaced(client.clone(), n).get("demo-snapshots").await?;
    assert!(pvc.metadata.owner_references.is_some());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), n);
    let runtime = |cm: ConfigMap| -> anyhow::Result<RuntimeConfig> {
        Ok(serde_json::from_str(&cm.data.context("data")?["runtime.json"])?)
    };
    let rc = runtime(cms.get("demo-runtime").await?)?;
    assert_eq!((rc.snapshot_max_count, rc.idle_timeout_seconds), (50, Some(600)));

    // Status tells how to connect.
    let status = eventually(WAIT, || async {
        let s = status_of(&sessions, "demo").await?;
        ensure!(s.pod_name.is_some(), "no pod in status yet");
        Ok(s)
    })
    .await?;
    assert_eq!(status.session_name.as_deref(), Some("demo"));
    assert_eq!(status.socket_namespace.as_deref(), Some(socket_ns.as_str()));
    let viewer = status.viewer.context("viewer")?;
    assert_eq!(viewer.command, format!("kubectl -n {n} port-forward svc/demo-view 9323:9323"));
    assert_eq!(status.phase, Some(Phase::Pending), "no scheduler in this tier");
    let events = events_for(&client, n, "demo").await?;
    // The status names the Pod; no Event per created Pod (a write each, in a burst).
    assert!(events.iter().all(|(r, _)| r != "Created"), "{events:?}");

    // A mutable policy field changes: the runtime ConfigMap follows.
    sessions
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"idleTimeoutSeconds": 30,
            "snapshots": {"retention": {"maxCount": 5}}}})),
        )
        .await?;
    eventually(WAIT, || async {
        let rc = runtime(cms.get("demo-runtime").await?)?;
        ensure!(
            rc.idle_timeout_seconds == Some(30) && rc.snapshot_max_count == 5,
            "runtime config not updated: {rc:?}"
        );
        Ok(())
    })
    .await?;
    // The egress policy changes on the running session: the NetworkPolicy and the status follow.
    sessions
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"network": {"egress": {"mode": "DenyAll"}}}})),
        )
        .await?;
    let np_api: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    eventually(WAIT, || async {
        let spec = np_api.get("demo-isolate").await?.spec.context("spec")?;
        ensure!(spec.egress.unwrap_or_default().is_empty(), "egress rules left under DenyAll");
        let s = status_of(&sessions, "demo").await?;
        let c = condition(&s, playpen_api::v1alpha1::condition::EGRESS_POLICY).context("no EgressPolicy")?;
        ensure!(c.1 == "DenyAll", "EgressPolicy not updated: {c:?}");
        Ok(())
    })
    .await?;
    // Drift is repaired: a hand edit of the Service port is put back.
    let svcs: Api<Service> = Api::namespaced(client.clone(), n);
    let ports = |svc: Service| -> Vec<i32> {
        svc.spec.and_then(|s| s.ports).unwrap_or_default().iter().map(|p| p.port).collect()
    };
    let edit = json!({"spec": {"ports": [{"name": "viewer", "port": 1111, "targetPort": 9323, "protocol": "TCP"}]}});
    let edited = svcs.patch("demo-view", &PatchParams::default(), &Patch::Merge(edit)).await?;
    assert_eq!(ports(edited), vec![1111], "the hand edit took");
    eventually(WAIT, || async {
        let now = ports(svcs.get("demo-view").await?);
        ensure!(now == vec![9323], "the viewer port was not put back: {now:?}");
        Ok(())
    })
    .await?;
    // A hand edit that keeps the operator's digest stamp is put back too: the
    // operator caches this child as metadata and reads it whole once its
    // resourceVersion is not the one it last saw as wanted.
    let stamp = |cm: &ConfigMap| cm.metadata.annotations.as_ref().and_then(|a| a.get(APPLIED_ANNOTATION)).cloned();
    let built = cms.get("demo-runtime").await?;
    let edited = cms
        .patch("demo-runtime", &PatchParams::default(), &Patch::Merge(json!({"data": {"runtime.json": "{}"}})))
        .await?;
    assert_eq!(stamp(&edited), stamp(&built), "the edit kept the stamp");
    eventually(WAIT, || async {
        let now = cms.get("demo-runtime").await?;
        ensure!(now.data == built.data, "the runtime ConfigMap's data was not put back: {:?}", now.data);
        Ok(())
    })
    .await?;
    np_api.delete("demo-isolate", &DeleteParams::default()).await?;
    eventually(WAIT, || async { Ok(np_api.get("demo-isolate").await?) }).await?;

    // Idempotent: with nothing to change, a reconcile rewrites no child (a
    // rewrite would be a watch event, hence another reconcile: a hot loop).
    let versions = || async {
        Ok::<_, anyhow::Error>([
            pods.get("demo-browser").await?.metadata.resource_version,
            cms.get("demo-runtime").await?.metadata.resource_version,
            svcs.get("demo-view").await?.metadata.resource_version,
            np_api.get("demo-isolate").await?.metadata.resource_version,
            secrets.get("demo-launch").await?.metadata.resource_version,
        ])
    };
    let before = versions().await?;
    let reconciles_before = op.reconciles();
    sessions
        .patch("demo", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"poke": "1"}}})))
        .await?;
    eventually(WAIT, || async {
        ensure!(op.reconciles() > reconciles_before, "the annotation did not trigger a reconcile");
        Ok(())
    })
    .await?;
    // Deliberate pauses, to prove nothing happens: no rewrite, no reconcile loop.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(versions().await?, before, "a no-op reconcile rewrote a child");
    let settled = op.reconciles();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(op.reconciles() <= settled + 1, "reconciles keep coming: {} -> {}", settled, op.reconciles());

    // The service endpoints.
    let addr = op.handles.http_addr;
    assert_eq!(http_get(addr, "/healthz").await?.0, 200);
    assert_eq!(http_get(addr, "/readyz").await?.0, 200);
    let (code, metrics) = http_get(addr, "/metrics").await?;
    assert_eq!(code, 200);
    let reconciles: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("playpen_reconciles_total "))
        .context("playpen_reconciles_total")?
        .trim()
        .parse()?;
    assert!(reconciles >= 2.0, "{metrics}");
    assert!(metrics.contains("playpen_reconcile_duration_seconds_bucket"), "{metrics}");
    eventually(WAIT, || async {
        let (_, m) = http_get(addr, "/metrics").await?;
        ensure!(m.contains("playpen_sessions{phase=\"Pending\"} 1"), "sessions gauge not updated: {m}");
        Ok(())
    })
    .await?;
    Ok(())
}

/// Writes the demo session's Pod status as a kubelet would.
async fn set_pod_status(pods: &Api<Pod>, status: serde_json::Value) -> anyhow::Result<()> {
    crate::set_pod_status(pods, "demo-browser", status).await
}

#[tokio::test]
async fn pod_status_drives_phase_and_conditions_then_gc_cleans_up() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "life").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create(&client, n, session("demo", json!({"image": "i", "sandbox": "Disabled"}))).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    eventually(WAIT, || async { Ok(pods.get("demo-browser").await?) }).await?;
    let phase_is = |want: Phase| {
        let sessions = sessions.clone();
        async move {
            eventually(WAIT, || async {
                let s = status_of(&sessions, "demo").await?;
                ensure!(s.phase == Some(want), "phase {:?}, want {want:?}", s.phase);
                Ok(s)
            })
            .await
        }
    };
    after_scheduler_verdict(&pods, "demo-browser").await;
    let scheduled = json!([{"type": "PodScheduled", "status": "True"}]);
    set_pod_status(
        &pods,
        json!({"phase": "Running", "conditions": scheduled,
        "containerStatuses": [container(true, 0, json!({"running": {}}), json!({}))]}),
    )
    .await?;
    let s = phase_is(Phase::Ready).await?;
    assert_eq!(condition(&s, "Ready").map(|c| c.0), Some("True".into()));
    assert_eq!(condition(&s, "SandboxEnforced").map(|c| (c.0, c.1)), Some(("False".into(), "Disabled".into())));
    events_once(&client, n, "demo", "SandboxDisabled").await?;

    let report = r#"{"reason":"NoUsableSandbox","message":"No usable sandbox! Install the playpen seccomp profile"}"#;
    set_pod_status(
        &pods,
        json!({"phase": "Running", "conditions": scheduled,
        "containerStatuses": [container(false, 2, json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            json!({"terminated": {"exitCode": 70, "message": report}}))]}),
    )
    .await?;
    let s = phase_is(Phase::Degraded).await?;
    let browser = condition(&s, "BrowserReady").context("BrowserReady")?;
    assert_eq!((browser.0.as_str(), browser.1.as_str()), ("False", "NoUsableSandbox"));
    assert!(browser.2.contains("seccomp profile"));
    assert_eq!(s.restarts, Some(2));

    // Delete: kube-controller-manager's garbage collector removes every child.
    sessions.delete("demo", &DeleteParams::foreground()).await?;
    eventually(Duration::from_secs(60), || async {
        let left = [
            pods.get_opt("demo-browser").await?.is_some(),
            Api::<Secret>::namespaced(client.clone(), n).get_opt("demo-launch").await?.is_some(),
            Api::<ConfigMap>::namespaced(client.clone(), n).get_opt("demo-runtime").await?.is_some(),
            Api::<Service>::namespaced(client.clone(), n).get_opt("demo-view").await?.is_some(),
            Api::<NetworkPolicy>::namespaced(client.clone(), n).get_opt("demo-isolate").await?.is_some(),
            sessions.get_opt("demo").await?.is_some(),
        ];
        if left.iter().any(|l| *l) {
            bail!("still present (pod, secret, configmap, service, netpol, session): {left:?}");
        }
        Ok(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn missing_secret_is_a_condition_not_a_crash_loop() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "miss").await?;
    let n = ns.name.as_str();
    let op = RunningOperator::start(&client, n, None).await?;
    create(&client, n, session("demo", json!({"image": "i", "launchConfig": {"secretRef": {"name": "my-config"}}})))
        .await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let s = eventually(WAIT, || async {
        let s = status_of(&sessions, "demo").await?;
        ensure!(s.phase == Some(Phase::Failed), "phase {:?}", s.phase);
        Ok(s)
    })
    .await?;
    let resolved = condition(&s, "ConfigResolved").context("ConfigResolved")?;
    assert_eq!((resolved.0.as_str(), resolved.1.as_str()), ("False", "SecretNotFound"));
    assert!(
        resolved.2.contains(&format!("spec.launchConfig.secretRef: Secret {n}/my-config not found")),
        "{}",
        resolved.2
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    assert!(pods.get_opt("demo-browser").await?.is_none(), "no Pod while a reference is missing");
    assert_eq!(
        op.handles
            .metrics
            .failures
            .get_or_create(&playpen_operator::runtime::metrics::ErrorLabels { error: "apply".into() })
            .get(),
        0
    );
    // The user's own Secret appears: the Pod follows, mounting it unmodified.
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "my-config"},
        "stringData": {"config.json": "{\"browser\":{\"browserName\":\"chromium\"}}"}}))?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), n);
    secrets.create(&PostParams::default(), &secret).await?;
    let pod = eventually(WAIT, || async { Ok(pods.get("demo-browser").await?) }).await?;
    let vols = pod.spec.and_then(|s| s.volumes).context("volumes")?;
    let launch = vols.iter().find(|v| v.name == "launch-config").context("launch-config volume")?;
    // Projected: the launch Secret first, then the optional control token.
    let sources = launch.projected.as_ref().and_then(|p| p.sources.clone()).unwrap_or_default();
    let projected: Vec<_> =
        sources.iter().filter_map(|s| s.secret.as_ref()).map(|s| (s.name.as_str(), s.optional)).collect();
    assert_eq!(projected[0], ("my-config", Some(false)));
    assert!(projected[1].0.ends_with("-control") && projected[1].1 == Some(true), "{projected:?}");
    assert!(Api::<Secret>::namespaced(client.clone(), n).get_opt("demo-launch").await?.is_none());
    let mine = secrets.get("my-config").await?;
    assert!(mine.metadata.owner_references.is_none(), "the user's Secret is not adopted");
    assert!(
        mine.metadata.managed_fields.iter().flatten().all(|m| m.manager.as_deref() != Some("playpen-operator")),
        "the operator wrote nothing to the user's Secret"
    );
    Ok(())
}

#[tokio::test]
async fn the_runtime_class_reaches_the_pod_and_a_missing_one_is_a_condition_until_it_exists() -> anyhow::Result<()> {
    use k8s_openapi::api::node::v1::RuntimeClass;
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "rtc").await?;
    let n = ns.name.as_str();
    // Cluster-scoped: named after the namespace, deleted at the end.
    let name = format!("{n}-sandboxed");
    let classes: Api<RuntimeClass> = Api::all(client.clone());
    let class: RuntimeClass = serde_json::from_value(json!({"metadata": {"name": name}, "handler": "runc"}))?;
    classes.create(&PostParams::default(), &class).await?;
    let _op = RunningOperator::start(&client, n, None).await?;
    create(&client, n, session("demo", json!({"image": "i", "pod": {"runtimeClassName": name}}))).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pod = eventually(WAIT, || async { Ok(pods.get("demo-browser").await?) }).await;
    classes.delete(&name, &DeleteParams::default()).await?;
    let spec = pod?.spec.context("pod spec")?;
    assert_eq!(spec.runtime_class_name.as_deref(), Some(name.as_str()));
    // A RuntimeClass that does not exist: the API server's RuntimeClass admission refuses such a Pod.
    let orphan: Pod = serde_json::from_value(json!({"metadata": {"name": "x"},
        "spec": {"runtimeClassName": format!("{n}-absent"), "containers": [{"name": "c", "image": "i"}]}}))?;
    let err = pods.create(&PostParams::default(), &orphan).await.expect_err("an absent RuntimeClass");
    assert!(err.to_string().contains("not found"), "{err}");
    // So the operator looks it up first: a condition the tenant reads, and no Pod, until it exists.
    let absent = format!("{n}-absent");
    create(&client, n, session("late", json!({"image": "i", "pod": {"runtimeClassName": absent}}))).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let s = eventually(WAIT, || async {
        let s = status_of(&sessions, "late").await?;
        let resolved = condition(&s, "ConfigResolved").context("ConfigResolved")?;
        ensure!(resolved.1 == "RuntimeClassNotFound", "ConfigResolved {resolved:?}");
        Ok(s)
    })
    .await?;
    let (_, _, message) = condition(&s, "ConfigResolved").context("ConfigResolved")?;
    assert!(message.starts_with(&format!("spec.pod.runtimeClassName: RuntimeClass {absent} not found")), "{message}");
    assert!(pods.get_opt("late-browser").await?.is_none(), "no Pod the API server would refuse");
    let class: RuntimeClass = serde_json::from_value(json!({"metadata": {"name": absent}, "handler": "runc"}))?;
    classes.create(&PostParams::default(), &class).await?;
    let pod = eventually(WAIT, || async { Ok(pods.get("late-browser").await?) }).await;
    classes.delete(&absent, &DeleteParams::default()).await?;
    assert_eq!(pod?.spec.context("pod spec")?.runtime_class_name, Some(absent), "created once it exists");
    Ok(())
}
