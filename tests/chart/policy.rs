//! The chart's opt-in ValidatingAdmissionPolicies on the real API server: a
//! BrowserSession, and a BrowserPool's template, may reference only the
//! Secrets and ServiceAccount its namespace's annotations allow, and every
//! refusal names the field; and (on by default) a session starts from a
//! BrowserSnapshot only for whoever may `use` that snapshot.

use std::time::Duration;

use anyhow::{bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use playpen_api::v1alpha1::BrowserPool;
use playpen_api::BrowserSession;
use playpen_tests::{client, client_as, ensure_crd, eventually, TestNamespace};
use serde_json::{json, Value};

use crate::{helm, kubectl, CHART};

/// Creates (dry run: admission runs, nothing is stored) a session with `spec`.
async fn admit(api: &Api<BrowserSession>, name: &str, spec: Value) -> anyhow::Result<Result<(), String>> {
    let bs = playpen_tests::fixtures::session(name, spec)?;
    match api.create(&PostParams { dry_run: true, ..PostParams::default() }, &bs).await {
        Ok(_) => Ok(Ok(())),
        Err(kube::Error::Api(status)) if status.code == 422 || status.code == 403 => Ok(Err(status.message)),
        Err(other) => Err(other.into()),
    }
}

/// Creates (dry run) a pool with `template`.
async fn admit_pool(api: &Api<BrowserPool>, template: Value) -> anyhow::Result<Result<(), String>> {
    let pool: BrowserPool = serde_json::from_value(json!({"apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserPool", "metadata": {"name": "pool"}, "spec": {"template": template}}))?;
    match api.create(&PostParams { dry_run: true, ..PostParams::default() }, &pool).await {
        Ok(_) => Ok(Ok(())),
        Err(kube::Error::Api(status)) if status.code == 422 || status.code == 403 => Ok(Err(status.message)),
        Err(other) => Err(other.into()),
    }
}

/// Renders the chart's `template` (a policy and its binding) with `sets`,
/// its binding scoped to namespaces labelled for namespace `ns` (the policy
/// is cluster-wide; `values` is where the template takes its
/// `namespaceSelector`), and applies it. Returns what was applied, to delete it.
async fn apply_scoped(prefix: &str, ns: &str, template: &str, values: &str, sets: &[&str]) -> anyhow::Result<String> {
    let release = format!("{prefix}-{}", &ns[ns.len() - 6..]);
    let selector = json!({"matchLabels": {"playpen.dev/test-policy": ns}}).to_string();
    let show = format!("templates/{template}");
    let scoped = format!("{values}.namespaceSelector={selector}");
    let mut argv = vec!["template", release.as_str(), CHART, "--show-only", show.as_str(), "--set-json", &scoped];
    for set in sets {
        argv.extend(["--set", set]);
    }
    let rendered = helm(&argv)?;
    kubectl(&["apply", "--server-side", "--field-manager", "playpen-tests", "-f", "-"], &rendered).await?;
    Ok(rendered)
}

#[tokio::test]
async fn the_admission_policy_allows_only_the_references_the_namespace_lists() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let guarded = TestNamespace::new(&client, "vap").await?;
    let open = TestNamespace::new(&client, "novap").await?;
    let g = guarded.name.as_str();
    let rendered =
        apply_scoped("pol", g, "admission-policy.yaml", "admissionPolicy", &["admissionPolicy.enabled=true"]).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let meta = json!({"metadata": {"labels": {"playpen.dev/test-policy": g}, "annotations": {
        "playpen.dev/allowed-secrets": "launch-ok, auth-ok,pull-ok,token-ok",
        "playpen.dev/allowed-service-accounts": "agent-sa"}}});
    namespaces.patch(g, &PatchParams::default(), &Patch::Merge(meta)).await?;

    let api: Api<BrowserSession> = Api::namespaced(client.clone(), g);
    let launch = |name: &str| json!({"image": "i", "launchConfig": {"secretRef": {"name": name}}});
    // The API server picks the policy up within a few seconds.
    let message = eventually(Duration::from_secs(30), || async {
        match admit(&api, "bad-launch", launch("launch-bad")).await? {
            Ok(()) => bail!("not refused yet (policy not active?)"),
            Err(message) => Ok(message),
        }
    })
    .await?;
    assert!(
        message.contains("spec.launchConfig.secretRef.name: Secret launch-bad is not allowed")
            && message.contains("playpen.dev/allowed-secrets"),
        "{message}"
    );
    let allowed = json!({"image": "i", "launchConfig": {"secretRef": {"name": "launch-ok"}},
        "authState": {"secretRef": {"name": "auth-ok"}}, "imagePullSecrets": [{"name": "pull-ok"}],
        "pod": {"serviceAccountName": "agent-sa"},
        "agent": {"image": "a", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "token-ok", "key": "t"}}}]}});
    let verdict = admit(&api, "allowed", allowed).await?;
    ensure!(verdict.is_ok(), "every listed reference is allowed: {verdict:?}");
    let refused: Vec<(Value, &str)> = vec![
        (
            json!({"image": "i", "authState": {"secretRef": {"name": "other"}}}),
            "spec.authState.secretRef.name: Secret other",
        ),
        (
            json!({"image": "i", "imagePullSecrets": [{"name": "pull-ok"}, {"name": "x"}]}),
            "spec.imagePullSecrets[].name: Secret x is",
        ),
        (
            json!({"image": "i", "agent": {"image": "a", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}}]}}),
            "spec.agent.env[].valueFrom.secretKeyRef.name: Secret db",
        ),
        (
            json!({"image": "i", "pod": {"serviceAccountName": "default"}}),
            "spec.pod.serviceAccountName: ServiceAccount default",
        ),
    ];
    for (spec, want) in refused {
        match admit(&api, "refused", spec.clone()).await? {
            Ok(()) => bail!("accepted, expected {want:?}: {spec}"),
            Err(message) => ensure!(message.contains(want), "expected {want:?} in {message}"),
        }
    }
    // A pool's template becomes browser Pods too: the same references are checked there.
    let pools: Api<BrowserPool> = Api::namespaced(client.clone(), g);
    let template = |extra: Value| {
        let mut t = json!({"image": "i"});
        if let Some(o) = t.as_object_mut() {
            o.extend(extra.as_object().cloned().unwrap_or_default());
        }
        t
    };
    // The pools' policy is a policy of its own, picked up on its own time.
    eventually(Duration::from_secs(30), || async {
        match admit_pool(&pools, template(json!({"launchConfig": {"secretRef": {"name": "launch-bad"}}}))).await? {
            Ok(()) => bail!("pool not refused yet (its policy not active?)"),
            Err(_) => Ok(()),
        }
    })
    .await?;
    let verdict = admit_pool(
        &pools,
        template(json!({"launchConfig": {"secretRef": {"name": "launch-ok"}},
        "imagePullSecrets": [{"name": "pull-ok"}], "pod": {"serviceAccountName": "agent-sa"}})),
    )
    .await?;
    ensure!(verdict.is_ok(), "a pool with listed references is allowed: {verdict:?}");
    for (extra, want) in [
        (
            json!({"launchConfig": {"secretRef": {"name": "launch-bad"}}}),
            "spec.template.launchConfig.secretRef.name: Secret launch-bad",
        ),
        (json!({"imagePullSecrets": [{"name": "x"}]}), "spec.template.imagePullSecrets[].name: Secret x"),
        (
            json!({"pod": {"serviceAccountName": "default"}}),
            "spec.template.pod.serviceAccountName: ServiceAccount default",
        ),
    ] {
        match admit_pool(&pools, template(extra.clone())).await? {
            Ok(()) => bail!("pool accepted, expected {want:?}: {extra}"),
            Err(message) => {
                ensure!(message.contains(want) && message.contains("BrowserPools"), "expected {want:?} in {message}")
            }
        }
    }
    // A namespace the binding does not select is not restricted.
    let unguarded: Api<BrowserSession> = Api::namespaced(client.clone(), &open.name);
    let verdict = admit(&unguarded, "free", launch("launch-bad")).await?;
    ensure!(verdict.is_ok(), "the policy must apply only where its binding selects: {verdict:?}");
    kubectl(&["delete", "--ignore-not-found", "-f", "-"], &rendered).await?;
    Ok(())
}

/// A Role in `ns` granting `verbs` on `resource` (only `names`, when given), bound to `user`.
async fn grant(client: &kube::Client, ns: &str, user: &str, rule: Value) -> anyhow::Result<()> {
    let name = format!("{user}-{}", rule["verbs"][0].as_str().unwrap_or("x"));
    let role: Role = serde_json::from_value(json!({"metadata": {"name": name}, "rules": [rule]}))?;
    Api::<Role>::namespaced(client.clone(), ns).create(&PostParams::default(), &role).await?;
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}))?;
    Api::<RoleBinding>::namespaced(client.clone(), ns).create(&PostParams::default(), &binding).await?;
    Ok(())
}

#[tokio::test]
async fn starting_a_session_from_a_snapshot_needs_use_on_that_snapshot() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let guarded = TestNamespace::new(&client, "snapuse").await?;
    let g = guarded.name.as_str();
    let rendered = apply_scoped("use", g, "snapshot-use-policy.yaml", "snapshots.usePolicy", &[]).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let label = json!({"metadata": {"labels": {"playpen.dev/test-policy": g}}});
    namespaces.patch(g, &PatchParams::default(), &Patch::Merge(label)).await?;
    // Carol may create sessions, and nothing about snapshots.
    let sessions = json!({"apiGroups": ["playpen.dev"], "resources": ["browsersessions"], "verbs": ["create"]});
    grant(&client, g, "carol", sessions).await?;
    let carol: Api<BrowserSession> = Api::namespaced(client_as("carol", &["system:authenticated"]).await?, g);
    let from = |snapshot: &str| json!({"image": "i", "from": {"snapshot": snapshot}});
    let message = eventually(Duration::from_secs(30), || async {
        match admit(&carol, "fork", from("snap")).await? {
            Ok(()) => bail!("not refused yet (policy not active?)"),
            Err(message) => Ok(message),
        }
    })
    .await?;
    ensure!(
        message.contains("spec.from.snapshot: carol may not use BrowserSnapshot snap") && message.contains("verb use"),
        "{message}"
    );
    let verdict = admit(&carol, "plain", json!({"image": "i"})).await?;
    ensure!(verdict.is_ok(), "a session from no snapshot is not this policy's business: {verdict:?}");
    // `use` on one snapshot by name: that one, and no other.
    let one = json!({"apiGroups": ["playpen.dev"], "resources": ["browsersnapshots"], "verbs": ["use"], "resourceNames": ["snap"]});
    grant(&client, g, "carol", one).await?;
    eventually(Duration::from_secs(30), || async {
        let verdict = admit(&carol, "fork", from("snap")).await?;
        ensure!(verdict.is_ok(), "use on snap is granted: {verdict:?}");
        Ok(())
    })
    .await?;
    match admit(&carol, "fork", from("other")).await? {
        Ok(()) => bail!("use on snap gave carol every snapshot"),
        Err(message) => ensure!(message.contains("BrowserSnapshot other"), "{message}"),
    }
    kubectl(&["delete", "--ignore-not-found", "-f", "-"], &rendered).await?;
    Ok(())
}
