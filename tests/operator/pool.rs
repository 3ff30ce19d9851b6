//! BrowserPool: warm Pods kept at minReady, labelled for the claim; a
//! template change replaces them; a claim is replenished at once and never
//! deleted; the scale subresource sizes the pool; deleting the pool lets
//! the garbage collector take its unclaimed Pods.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use playpen_api::naming::{
    POOL_LABEL, POOL_STATE_CLAIMED, POOL_STATE_LABEL, POOL_STATE_WARM, POOL_TEMPLATE_LABEL, WARM_NAME_ANNOTATION,
    WARM_SESSION_NAME_ANNOTATION, WARM_SOCKET_NAMESPACE_ANNOTATION,
};
use playpen_api::v1alpha1::{BrowserPool, BrowserPoolStatus};
use playpen_tests::{client, ensure_crd, eventually, pod_is_ready, RunningOperator, TestNamespace};
use serde_json::json;

use crate::{container, events_once, set_pod_status};

const WAIT: Duration = Duration::from_secs(40);

async fn create_pool(client: &kube::Client, ns: &str, name: &str, spec: serde_json::Value) -> anyhow::Result<()> {
    let pool: BrowserPool = serde_json::from_value(json!({"apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserPool", "metadata": {"name": name}, "spec": spec}))?;
    Api::<BrowserPool>::namespaced(client.clone(), ns).create(&PostParams::default(), &pool).await?;
    Ok(())
}

/// The pool's Pods in `state` (warm or claimed).
async fn pods_in(pods: &Api<Pod>, pool: &str, state: &str) -> anyhow::Result<Vec<Pod>> {
    let params = ListParams::default().labels(&format!("{POOL_LABEL}={pool},{POOL_STATE_LABEL}={state}"));
    Ok(pods.list(&params).await?.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect())
}

/// Marks Pod `name` ready as a kubelet would.
async fn mark_ready(pods: &Api<Pod>, name: &str) -> anyhow::Result<()> {
    let running = json!({"running": {"startedAt": "2026-12-01T12:00:00Z"}});
    set_pod_status(
        pods,
        name,
        json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [container(true, 0, running, json!({}))]}),
    )
    .await
}

async fn status_of(pools: &Api<BrowserPool>, name: &str) -> anyhow::Result<BrowserPoolStatus> {
    pools.get(name).await?.status.context("no status yet")
}

fn ready_condition(s: &BrowserPoolStatus) -> Option<&str> {
    s.conditions.iter().find(|c| c.type_ == "Ready").map(|c| c.status.as_str())
}

#[tokio::test]
async fn pool_keeps_warm_pods_and_replaces_them_on_a_template_change() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "pool").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(
        &client,
        n,
        "shop",
        json!({"minReady": 2,
        "template": {"image": "playpen/browser:1", "imagePullPolicy": "Never"}}),
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), n);
    let uid = pools.get("shop").await?.metadata.uid.context("uid")?;

    // Two warm Pods, labelled, annotated, owned by the pool, with their children.
    let warm = eventually(WAIT, || async {
        let warm = pods_in(&pods, "shop", POOL_STATE_WARM).await?;
        ensure!(warm.len() == 2, "{} warm Pods", warm.len());
        Ok(warm)
    })
    .await?;
    let first_hash = warm[0].labels()[POOL_TEMPLATE_LABEL].clone();
    for pod in &warm {
        let name = pod.name_any();
        let annotations = pod.annotations();
        let warm_name = annotations[WARM_NAME_ANNOTATION].clone();
        assert_eq!(name, format!("{warm_name}-browser"));
        assert!(warm_name.starts_with(&format!("shop-{first_hash}.")), "{warm_name}");
        assert_eq!(warm_name.len(), "shop-".len() + 6 + 1 + 5, "{warm_name}");
        assert_eq!(annotations[WARM_SESSION_NAME_ANNOTATION], "shop");
        assert_eq!(annotations[WARM_SOCKET_NAMESPACE_ANNOTATION].len(), 8);
        assert_eq!(pod.labels()[POOL_TEMPLATE_LABEL], first_hash);
        let owner = &pod.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("BrowserPool", uid.as_str(), Some(true))
        );
        let spec = pod.spec.as_ref().context("spec")?;
        assert_eq!(spec.containers[0].image.as_deref(), Some("playpen/browser:1"));
        Api::<Secret>::namespaced(client.clone(), n).get(&format!("{warm_name}-launch")).await?;
        Api::<ConfigMap>::namespaced(client.clone(), n).get(&format!("{warm_name}-runtime")).await?;
    }
    let np = Api::<NetworkPolicy>::namespaced(client.clone(), n).get("shop-warm").await?;
    let np_spec = np.spec.context("spec")?;
    assert_eq!(np_spec.policy_types, Some(vec!["Ingress".to_owned(), "Egress".to_owned()]));
    assert!(np_spec.ingress.unwrap_or_default().is_empty() && np_spec.egress.unwrap_or_default().is_empty());
    let selector = np_spec.pod_selector.and_then(|s| s.match_labels).context("selector")?;
    // The pool's Pods, warm or claimed: a claimed Pod keeps its pool label.
    assert_eq!(selector, [(POOL_LABEL.to_owned(), "shop".to_owned())].into());

    // Not ready yet; then ready.
    let s = eventually(WAIT, || async {
        let s = status_of(&pools, "shop").await?;
        ensure!(s.warming == 2, "{s:?}");
        Ok(s)
    })
    .await?;
    assert_eq!((s.ready, ready_condition(&s)), (0, Some("False")));
    assert_eq!(s.selector.as_deref(), Some("playpen.dev/pool=shop,playpen.dev/pool-state=warm"));
    assert_eq!(s.template_hash.as_deref(), Some(first_hash.as_str()));
    for pod in &warm {
        mark_ready(&pods, &pod.name_any()).await?;
    }
    eventually(WAIT, || async {
        let s = status_of(&pools, "shop").await?;
        ensure!(s.ready == 2 && s.warming == 0 && ready_condition(&s) == Some("True"), "{s:?}");
        Ok(())
    })
    .await?;

    // A template change: new Pods with the new hash; each old one goes once
    // a new one is ready; never more than maxSize (minReady + 1) unclaimed.
    pools
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"image": "playpen/browser:2"}}})),
        )
        .await?;
    let old: BTreeSet<String> = warm.iter().map(ResourceExt::name_any).collect();
    let violations = std::sync::Mutex::new(Vec::new());
    eventually(Duration::from_secs(90), || async {
        let now = pods_in(&pods, "shop", POOL_STATE_WARM).await?;
        let ready_now = now.iter().filter(|p| pod_is_ready(p)).count();
        if now.len() > 3 || ready_now < 2 {
            let names: Vec<String> = now.iter().map(ResourceExt::name_any).collect();
            violations.lock().map(|mut v| v.push(format!("{ready_now} ready of {names:?}"))).ok();
        }
        for pod in now.iter().filter(|p| !pod_is_ready(p)) {
            mark_ready(&pods, &pod.name_any()).await?;
        }
        let names: BTreeSet<String> = now.iter().map(ResourceExt::name_any).collect();
        ensure!(now.len() == 2 && names.is_disjoint(&old), "still replacing: {names:?}");
        ensure!(now.iter().all(|p| p.labels()[POOL_TEMPLATE_LABEL] != first_hash), "old hash left");
        ensure!(now.iter().all(pod_is_ready), "not all ready yet");
        Ok(())
    })
    .await?;
    let violations = violations.into_inner().unwrap_or_default();
    assert!(violations.is_empty(), "over maxSize or under minReady ready during the replacement: {violations:?}");
    let s = eventually(WAIT, || async {
        let s = status_of(&pools, "shop").await?;
        ensure!(s.ready == 2 && s.template_hash.as_deref() != Some(first_hash.as_str()), "{s:?}");
        Ok(s)
    })
    .await?;
    assert_eq!(ready_condition(&s), Some("True"));
    // The old Pods' children went with them.
    for pod in &warm {
        let warm_name = &pod.annotations()[WARM_NAME_ANNOTATION];
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), n);
        eventually(WAIT, || async {
            ensure!(cms.get_opt(&format!("{warm_name}-runtime")).await?.is_none(), "{warm_name}-runtime left");
            Ok(())
        })
        .await?;
    }
    events_once(&client, n, "shop", "WarmPodReplaced").await?;
    Ok(())
}

#[tokio::test]
async fn a_claim_is_replenished_at_once_never_deleted_and_the_pool_scales_and_is_collected() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "claim").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    create_pool(&client, n, "p", json!({"minReady": 1, "template": {"image": "playpen/browser:1"}})).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), n);
    let first = eventually(WAIT, || async {
        let warm = pods_in(&pods, "p", POOL_STATE_WARM).await?;
        ensure!(warm.len() == 1, "{} warm Pods", warm.len());
        Ok(warm[0].clone())
    })
    .await?;
    mark_ready(&pods, &first.name_any()).await?;
    eventually(WAIT, || async {
        ensure!(status_of(&pools, "p").await?.ready == 1, "not ready");
        Ok(())
    })
    .await?;

    // The claim, simulated: relabelled claimed, owned by someone else (a
    // ConfigMap standing in for the session).
    let owner_cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "claimer"}}))?;
    let owner_cm = Api::<ConfigMap>::namespaced(client.clone(), n).create(&PostParams::default(), &owner_cm).await?;
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "claimer",
        "uid": owner_cm.metadata.uid.clone().context("uid")?, "controller": true});
    let claimed_name = first.name_any();
    let claimed_uid = first.metadata.uid.clone().context("uid")?;
    pods.patch(
        &claimed_name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"labels": {POOL_STATE_LABEL: POOL_STATE_CLAIMED}, "ownerReferences": [owner]}}),
        ),
    )
    .await?;
    // Replenished at once (the watch, not the 10 s requeue), and counted.
    let started = std::time::Instant::now();
    eventually(WAIT, || async {
        let warm = pods_in(&pods, "p", POOL_STATE_WARM).await?;
        ensure!(warm.len() == 1 && warm[0].name_any() != claimed_name, "no replacement yet");
        Ok(())
    })
    .await?;
    assert!(started.elapsed() < Duration::from_secs(8), "replenished after {:?}", started.elapsed());
    eventually(WAIT, || async {
        let s = status_of(&pools, "p").await?;
        ensure!(s.claimed == 1 && s.warming == 1 && s.ready == 0, "{s:?}");
        Ok(())
    })
    .await?;

    // The scale subresource sets minReady.
    pools.patch_scale("p", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await?;
    assert_eq!(pools.get("p").await?.spec.min_ready, 3);
    eventually(WAIT, || async {
        let warm = pods_in(&pods, "p", POOL_STATE_WARM).await?;
        ensure!(warm.len() == 3, "{} warm Pods", warm.len());
        Ok(())
    })
    .await?;
    let scale = pools.get_scale("p").await?;
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));

    // A template change and a scale to zero: the claimed Pod stays.
    pools
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"image": "playpen/browser:2"}}})),
        )
        .await?;
    pools.patch_scale("p", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 0}}))).await?;
    eventually(WAIT, || async {
        let warm = pods_in(&pods, "p", POOL_STATE_WARM).await?;
        ensure!(warm.is_empty(), "{} warm Pods left", warm.len());
        let s = status_of(&pools, "p").await?;
        ensure!(s.claimed == 1 && s.ready == 0 && s.warming == 0, "{s:?}");
        Ok(())
    })
    .await?;
    let still = pods.get(&claimed_name).await?;
    assert_eq!(still.metadata.uid.as_deref(), Some(claimed_uid.as_str()), "the claimed Pod was replaced");
    assert!(still.metadata.deletion_timestamp.is_none(), "the claimed Pod is being deleted");

    // Deleting the pool: the garbage collector takes the unclaimed Pods and
    // the pool's NetworkPolicy; the claimed Pod is its session's.
    pools.patch_scale("p", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 2}}))).await?;
    let warm = eventually(WAIT, || async {
        let warm = pods_in(&pods, "p", POOL_STATE_WARM).await?;
        ensure!(warm.len() == 2, "{} warm Pods", warm.len());
        Ok(warm)
    })
    .await?;
    pools.delete("p", &DeleteParams::background()).await?;
    let nps: Api<NetworkPolicy> = Api::namespaced(client.clone(), n);
    eventually(Duration::from_secs(60), || async {
        for pod in &warm {
            ensure!(pods.get_opt(&pod.name_any()).await?.is_none(), "{} not collected yet", pod.name_any());
        }
        ensure!(nps.get_opt("p-warm").await?.is_none(), "p-warm not collected yet");
        Ok(())
    })
    .await?;
    assert!(pods.get_opt(&claimed_name).await?.is_some(), "the claimed Pod went with the pool");
    Ok(())
}

#[tokio::test]
async fn a_pool_whose_pods_the_api_server_refuses_says_why_in_its_status_until_it_takes_them() -> anyhow::Result<()> {
    use k8s_openapi::api::node::v1::RuntimeClass;
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "poolrtc").await?;
    let n = ns.name.as_str();
    let _op = RunningOperator::start(&client, n, None).await?;
    // Cluster-scoped: named after the namespace, created late and deleted at the end.
    let class = format!("{n}-late");
    create_pool(
        &client,
        n,
        "shop",
        json!({"minReady": 1, "template": {"image": "i", "pod": {"runtimeClassName": class}}}),
    )
    .await?;
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), n);
    let refused = eventually(WAIT, || async {
        let s = status_of(&pools, "shop").await?;
        let c = s.conditions.iter().find(|c| c.type_ == "Ready").context("Ready")?.clone();
        ensure!(c.reason == "CreateRefused", "Ready {c:?}");
        Ok((s, c))
    })
    .await?;
    assert!(refused.1.message.contains(&format!("RuntimeClass \"{class}\" not found")), "{}", refused.1.message);
    assert_eq!((refused.0.ready, refused.0.warming), (0, 0), "a refused Pod is not warming");
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    assert!(pods_in(&pods, "shop", POOL_STATE_WARM).await?.is_empty());
    // The RuntimeClass appears: the pool's next try (its backoff) creates the Pod.
    let classes: Api<RuntimeClass> = Api::all(client.clone());
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": class}, "handler": "runc"}))?,
        )
        .await?;
    let warm = eventually(Duration::from_secs(90), || async {
        let s = status_of(&pools, "shop").await?;
        let c = s.conditions.iter().find(|c| c.type_ == "Ready").context("Ready")?;
        ensure!(c.reason == "Warming" && s.warming == 1, "status {s:?}");
        pods_in(&pods, "shop", POOL_STATE_WARM).await
    })
    .await;
    classes.delete(&class, &DeleteParams::default()).await?;
    assert_eq!(warm?.len(), 1, "one warm Pod once the RuntimeClass exists");
    Ok(())
}
