//! `kubectl playpen` against a real kube-apiserver (no kubelet: Pods stay
//! Pending), run through kubectl's plugin mechanism: the built
//! `kubectl-playpen` first on PATH, `kubectl playpen …` as a user types it.
//! What needs a running Pod (run, view, cdp, logs, snapshot, record) is the
//! end-to-end scenario `tests/e2e/plugin.rs`. For `fork` the test plays the
//! operator: it writes the snapshot's status itself.

use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::{BrowserSnapshot, PullPolicy};
use playpen_api::BrowserSession;
use playpen_tests::fixtures::session;
use playpen_tests::kubectl::{plugin_command, with_plugin};
use playpen_tests::{
    client, ensure_crd, eventually, kubeconfig_path, run_to_end, Output, RunningOperator, TestNamespace,
};
use serde_json::json;

/// Runs `command` (at most 60 s) and collects what it printed.
async fn output(command: tokio::process::Command) -> anyhow::Result<Output> {
    run_to_end(command, Duration::from_secs(60)).await
}

/// `kubectl playpen <args>` with `env` set (`None` removes a variable).
async fn playpen_with(args: &[&str], env: &[(&str, Option<&str>)]) -> anyhow::Result<Output> {
    let mut command = plugin_command(args)?;
    command.env_remove("PLAYPEN_IMAGE");
    for (key, value) in env {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    output(command).await
}

async fn playpen(args: &[&str]) -> anyhow::Result<Output> {
    playpen_with(args, &[]).await
}

async fn create_session(client: &Client, ns: &str, name: &str, spec: serde_json::Value) -> anyhow::Result<()> {
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &session(name, spec)?).await?;
    Ok(())
}

/// A file holding `text`, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> anyhow::Result<Self> {
        let path = std::env::temp_dir().join(format!("playpen-plugin-{}-{name}", std::process::id()));
        std::fs::write(&path, text)?;
        Ok(Self(path))
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap_or_default()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn ls_lists_the_sessions_with_phase_and_pool() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-ls").await?;
    let n = ns.name.as_str();
    let empty = playpen(&["ls", "-n", n]).await?;
    ensure!(
        empty.code == 0 && empty.stderr.contains(&format!("No BrowserSessions found in namespace {n}")),
        "{empty:?}"
    );

    let _operator = RunningOperator::start(&client, n, None).await?;
    for name in ["alpha", "beta"] {
        create_session(&client, n, name, json!({"image": "playpen/browser:test"})).await?;
    }
    let table = eventually(Duration::from_secs(30), || async {
        let table = playpen(&["ls", "-n", n]).await?.ok("ls")?;
        let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
        ensure!(
            rows.first().map(Vec::as_slice) == Some(&["NAME", "PHASE", "READY", "AGE", "POD", "POOL"][..]),
            "{table}"
        );
        ensure!(rows.len() == 3, "two sessions expected:\n{table}");
        for (row, name) in rows[1..].iter().zip(["alpha", "beta"]) {
            // Without a kubelet the Pod is never scheduled: Pending, not Ready, no pool.
            ensure!(row[0] == name && row[1] == "Pending" && row[5] == "-", "{table}");
            ensure!(row[4] == format!("{name}-browser"), "{table}");
        }
        Ok(table)
    })
    .await?;
    eprintln!("{table}");

    let all = playpen(&["ls", "-A"]).await?.ok("ls -A")?;
    ensure!(all.starts_with("NAMESPACE"), "{all}");
    ensure!(all.lines().any(|l| l.starts_with(n) && l.contains("alpha")), "{all}");
    let wide = playpen(&["ls", "-n", n, "-o", "wide"]).await?.ok("ls -o wide")?;
    ensure!(wide.lines().next().is_some_and(|h| h.contains("VIEWER-PORT") && h.contains("IMAGE")), "{wide}");
    ensure!(wide.contains("playpen/browser:test") && wide.contains("9323"), "{wide}");
    let list: serde_json::Value =
        serde_json::from_str(&playpen(&["ls", "-n", n, "-o", "json"]).await?.ok("ls -o json")?)?;
    let names: Vec<_> =
        list["items"].as_array().context("items")?.iter().map(|i| i["metadata"]["name"].clone()).collect();
    ensure!(list["kind"] == "List" && names == [json!("alpha"), json!("beta")], "{list}");
    let yaml = playpen(&["ls", "-n", n, "-o", "yaml"]).await?.ok("ls -o yaml")?;
    ensure!(yaml.contains("kind: List") && yaml.contains("name: beta"), "{yaml}");

    // Without -n: the kubeconfig context's namespace; --context picks another context.
    let kubeconfig = kubeconfig_in(n)?;
    let here =
        playpen_with(&["ls"], &[("KUBECONFIG", Some(kubeconfig.path()))]).await?.ok("ls in the context's namespace")?;
    ensure!(here.contains("alpha") && here.contains("beta"), "{here}");
    let there = playpen_with(&["ls", "--context", "elsewhere"], &[("KUBECONFIG", Some(kubeconfig.path()))]).await?;
    ensure!(there.code == 0 && there.stderr.contains("in namespace kube-public"), "{there:?}");
    Ok(())
}

/// A copy of the admin kubeconfig whose current context has namespace
/// `ns`, plus a context `elsewhere` in kube-public.
fn kubeconfig_in(ns: &str) -> anyhow::Result<TempFile> {
    let text = std::fs::read_to_string(kubeconfig_path()?)?;
    let mut config: serde_yaml::Value = serde_yaml::from_str(&text)?;
    let current = config["current-context"].as_str().context("current-context")?.to_owned();
    let contexts = config["contexts"].as_sequence_mut().context("contexts")?;
    let mut elsewhere = None;
    for entry in contexts.iter_mut() {
        if entry["name"].as_str() == Some(current.as_str()) {
            entry["context"]["namespace"] = ns.into();
            let mut copy = entry.clone();
            copy["name"] = "elsewhere".into();
            copy["context"]["namespace"] = "kube-public".into();
            elsewhere = Some(copy);
        }
    }
    contexts.push(elsewhere.context("the current context")?);
    TempFile::new(&format!("kubeconfig-{ns}"), &serde_yaml::to_string(&config)?)
}

#[tokio::test]
async fn new_creates_a_valid_session_from_flags_and_a_file() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-new").await?;
    let n = ns.name.as_str();
    let extra = TempFile::new(
        "extra.yaml",
        "imagePullPolicy: Never\nidleTimeoutSeconds: 600\nviewer:\n  port: 9400\nsnapshots:\n  retention:\n    maxCount: 7\n",
    )?;
    let out = playpen(&[
        "new",
        "demo",
        "-n",
        n,
        "--image",
        "playpen/browser:test",
        "--viewer-port",
        "9500",
        "-f",
        extra.path(),
    ])
    .await?
    .ok("new")?;
    ensure!(out.contains(&format!("browsersession.playpen.dev/demo created in namespace {n}")), "{out}");
    ensure!(out.contains(&format!("kubectl playpen run demo -n {n} -- goto")), "{out}");

    let api: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let created = api.get("demo").await?;
    ensure!(created.spec.browser.image == "playpen/browser:test", "{:?}", created.spec.browser.image);
    ensure!(
        created.spec.browser.viewer.port == 9500 && created.spec.browser.viewer.enabled,
        "the flag wins over the file"
    );
    ensure!(created.spec.idle_timeout_seconds == Some(600), "{:?}", created.spec.idle_timeout_seconds);
    ensure!(created.spec.browser.image_pull_policy == Some(PullPolicy::Never));
    ensure!(created.spec.browser.snapshots.retention.max_count == 7);
    let managers: Vec<_> = created.metadata.managed_fields.iter().flatten().filter_map(|m| m.manager.clone()).collect();
    ensure!(managers.contains(&"kubectl-playpen".to_owned()), "{managers:?}");

    // --cdp turns the CDP endpoint on (default port), and the hints say how to reach it.
    let out = playpen(&["new", "with-cdp", "-n", n, "--image", "i", "--cdp"]).await?.ok("new --cdp")?;
    ensure!(out.contains(&format!("kubectl playpen cdp with-cdp -n {n}")), "{out}");
    let cdp = api.get("with-cdp").await?.spec.browser.cdp;
    ensure!(cdp.enabled && cdp.port == 9222, "{cdp:?}");
    let wide = playpen(&["ls", "-n", n, "-o", "wide"]).await?.ok("ls -o wide")?;
    ensure!(wide.lines().any(|l| l.starts_with("with-cdp") && l.contains(" 9222 ")), "{wide}");

    // $PLAYPEN_IMAGE stands in for --image.
    playpen_with(&["new", "from-env", "-n", n], &[("PLAYPEN_IMAGE", Some("playpen/browser:env"))])
        .await?
        .ok("new with $PLAYPEN_IMAGE")?;
    ensure!(api.get("from-env").await?.spec.browser.image == "playpen/browser:env");

    // Again: refused by name; a field the CRD lacks is refused, not dropped.
    let again = playpen(&["new", "demo", "-n", n, "--image", "i"]).await?.failed("new of an existing name")?;
    ensure!(again.contains(&format!("BrowserSession \"demo\" already exists in namespace \"{n}\"")), "{again}");
    let typo = TempFile::new("typo.yaml", "idleTimeoutSecond: 5\n")?;
    let refused =
        playpen(&["new", "typo", "-n", n, "--image", "i", "-f", typo.path()]).await?.failed("new with a typo")?;
    ensure!(refused.contains("unknown field \"spec.idleTimeoutSecond\""), "{refused}");
    ensure!(api.get_opt("typo").await?.is_none());
    // The CRD's own rules answer in their words.
    let bad = TempFile::new("bad.yaml", "idleTimeoutSeconds: -1\n")?;
    let refused = playpen(&["new", "bad", "-n", n, "--image", "i", "-f", bad.path()]).await?.failed("new, negative")?;
    ensure!(refused.contains("spec.idleTimeoutSeconds must be positive"), "{refused}");
    // A warm pool instead of an image; never both.
    let both =
        playpen(&["new", "clash", "-n", n, "--image", "i", "--pool", "warm"]).await?.failed("new --pool --image")?;
    ensure!(both.contains("--pool warm and --image exclude each other"), "{both}");
    ensure!(api.get_opt("clash").await?.is_none());
    playpen(&["new", "pooled", "-n", n, "--pool", "warm"]).await?.ok("new --pool")?;
    let pooled = api.get("pooled").await?;
    ensure!(pooled.spec.pool.map(|p| p.name).as_deref() == Some("warm") && pooled.spec.browser.image.is_empty());
    let table = playpen(&["ls", "-n", n]).await?.ok("ls")?;
    ensure!(table.lines().any(|l| l.starts_with("pooled") && l.trim_end().ends_with("warm")), "{table}");
    Ok(())
}

#[tokio::test]
async fn new_without_an_image_names_the_flag() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-noimg").await?;
    let err = playpen(&["new", "demo", "-n", &ns.name]).await?.failed("new without an image")?;
    ensure!(err.contains("pass --image IMAGE") && err.contains("PLAYPEN_IMAGE"), "{err}");
    ensure!(Api::<BrowserSession>::namespaced(client, &ns.name).get_opt("demo").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn new_wait_reports_the_phase_it_saw() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-wait").await?;
    let n = ns.name.as_str();

    // No operator: no status at all, and the message says what to check.
    let err =
        playpen(&["new", "orphan", "-n", n, "--image", "i", "--wait", "--timeout", "2s"]).await?.failed("--wait")?;
    ensure!(err.contains("timed out after 2s") && err.contains("no phase yet"), "{err}");
    ensure!(err.contains(&format!("watching namespace {n}")), "{err}");

    // With the operator and no kubelet: Pending, and the message says so.
    let _operator = RunningOperator::start(&client, n, None).await?;
    let err =
        playpen(&["new", "slow", "-n", n, "--image", "i", "--wait", "--timeout", "8s"]).await?.failed("--wait")?;
    ensure!(
        err.contains("timed out after 8s waiting for BrowserSession") && err.contains("its phase is Pending"),
        "{err}"
    );

    // A session that cannot start fails at once with the operator's reason.
    let missing = TempFile::new("missing.yaml", "launchConfig:\n  secretRef:\n    name: not-there\n")?;
    let started = std::time::Instant::now();
    let err = playpen(&["new", "broken", "-n", n, "--image", "i", "--wait", "--timeout", "60s", "-f", missing.path()])
        .await?
        .failed("--wait on a failing session")?;
    ensure!(err.contains(&format!("BrowserSession {n}/broken is Failed")), "{err}");
    ensure!(err.contains("SecretNotFound") && err.contains("not-there"), "{err}");
    ensure!(started.elapsed() < Duration::from_secs(50), "it waited for the timeout instead of the failure");
    Ok(())
}

/// A Role that may read sessions and Pods and nothing else, bound to `user`.
async fn reader_role(client: &Client, ns: &str, user: &str) -> anyhow::Result<()> {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "session-reader"},
        "rules": [
            {"apiGroups": ["playpen.dev"], "resources": ["browsersessions"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
        ]
    }))?;
    Api::<Role>::namespaced(client.clone(), ns).create(&PostParams::default(), &role).await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "session-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "session-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    }))?;
    Api::<RoleBinding>::namespaced(client.clone(), ns).create(&PostParams::default(), &binding).await?;
    Ok(())
}

#[tokio::test]
async fn forbidden_names_the_missing_verb_resource_and_namespace() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-rbac").await?;
    let n = ns.name.as_str();
    create_session(&client, n, "demo", json!({"image": "i"})).await?;

    // kubectl hands no flag placed before the plugin's name to it; --as goes after `playpen`.
    let out = output(with_plugin(&["--as=someone", "playpen", "ls", "-n", n])?).await?;
    ensure!(out.code != 0 && out.stderr.contains("flags cannot be placed before plugin name"), "{out:?}");

    let err = playpen(&["ls", "-n", n, "--as", "someone"]).await?.failed("ls as someone")?;
    ensure!(
        err.contains(&format!(
            "forbidden: someone may not \"list\" \"browsersessions.playpen.dev\" in namespace \"{n}\""
        )),
        "{err}"
    );
    ensure!(err.contains(&format!("kubectl auth can-i list browsersessions.playpen.dev -n {n}")), "{err}");
    let err = playpen(&["ls", "-A", "--as", "someone", "--as-group", "system:authenticated"]).await?.failed("ls -A")?;
    ensure!(err.contains("\"list\" \"browsersessions.playpen.dev\" in all namespaces"), "{err}");
    let err = playpen(&["new", "x", "-n", n, "--image", "i", "--as", "someone"]).await?.failed("new as someone")?;
    ensure!(err.contains(&format!("may not \"create\" \"browsersessions.playpen.dev\" in namespace \"{n}\"")), "{err}");
    ensure!(err.contains("playpen-admin role"), "{err}");

    // May read sessions and Pods, may not exec, read logs or port-forward.
    reader_role(&client, n, "reader").await?;
    let as_reader = ["-n", n, "--as", "reader"];
    eventually(Duration::from_secs(10), || async {
        playpen(&[&["ls"][..], &as_reader].concat()).await?.ok("ls as reader").map(drop)
    })
    .await
    .context("the reader's binding takes effect")?;
    // Exec and port-forward over WebSockets are authorized as "get" (and,
    // where AuthorizePodWebsocketUpgradeCreatePermission is on, "create").
    let cases: [(&[&str], &[&str], &str); 6] = [
        (&["run", "demo", "--", "goto", "https://example.com"], &["get", "create"], "pods/exec"),
        (&["snapshot", "demo"], &["get", "create"], "pods/exec"),
        (&["egress", "demo"], &["get", "create"], "pods/exec"),
        (&["logs", "demo"], &["get"], "pods/log"),
        (&["view", "demo"], &["get", "create"], "pods/portforward"),
        (&["new", "other", "--image", "i"], &["create"], "browsersessions.playpen.dev"),
    ];
    for (args, verbs, resource) in cases {
        let err = playpen(&[&as_reader[..], args].concat()).await?.failed(&format!("{args:?} as reader"))?;
        let verb = verbs
            .iter()
            .find(|verb| err.contains(&format!("may not \"{verb}\" \"{resource}\" in namespace \"{n}\"")))
            .with_context(|| format!("{args:?} does not name {verbs:?} {resource} in {n}: {err}"))?;
        ensure!(
            err.starts_with("error: forbidden: reader may not") || err.starts_with("error: forbidden: you may not"),
            "{err}"
        );
        if let Some(sub) = resource.strip_prefix("pods/") {
            ensure!(err.contains(&format!("kubectl auth can-i {verb} pods --subresource={sub} -n {n}")), "{err}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_missing_session_says_how_to_list_them() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-missing").await?;
    let n = ns.name.as_str();
    let want = format!("error: no BrowserSession \"nope\" in namespace \"{n}\" (kubectl playpen ls -n {n})");
    for args in [
        &["run", "nope", "-n", n, "--", "goto", "https://example.com"][..],
        &["view", "nope", "-n", n],
        &["cdp", "nope", "-n", n],
        &["logs", "nope", "-n", n],
        &["snapshot", "nope", "-n", n],
        &["record", "nope", "-n", n],
        &["egress", "nope", "-n", n],
    ] {
        let err = playpen(args).await?.failed(&format!("{args:?}"))?;
        ensure!(err.trim() == want, "{args:?}: {err}");
    }
    Ok(())
}

#[tokio::test]
async fn sessions_without_a_viewer_or_cdp_are_refused_clearly() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-off").await?;
    let n = ns.name.as_str();
    create_session(&client, n, "blind", json!({"image": "i", "viewer": {"enabled": false}})).await?;
    let err = playpen(&["view", "blind", "-n", n]).await?.failed("view without a viewer")?;
    ensure!(err.contains(&format!("BrowserSession {n}/blind has no viewer (spec.viewer.enabled is false)")), "{err}");
    let err = playpen(&["cdp", "blind", "-n", n]).await?.failed("cdp without CDP")?;
    ensure!(err.contains(&format!("BrowserSession {n}/blind has CDP disabled")), "{err}");
    let err = playpen(&["logs", "blind", "-n", n, "-c", "agent"]).await?.failed("logs of a missing sidecar")?;
    ensure!(err.contains("has no agent sidecar"), "{err}");
    Ok(())
}

#[tokio::test]
async fn completion_scripts_name_every_subcommand() -> anyhow::Result<()> {
    let script = playpen(&["completion", "bash"]).await?.ok("completion bash")?;
    ensure!(script.contains("complete -F") && script.contains("kubectl-playpen"), "{script:.300}");
    // The top level's candidates: the `opts="…"` that offers the connection flags.
    let top = script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("opts=\""))
        .find(|opts| opts.contains("--namespace") && opts.contains(" ls "))
        .context("no top-level opts in the script")?;
    let words: Vec<&str> = top.trim_end_matches('"').split_whitespace().collect();
    let subs = ["ls", "new", "run", "view", "cdp", "logs", "snapshot", "record", "egress", "fork", "completion"];
    for sub in subs.into_iter().chain(["--namespace"]) {
        ensure!(words.contains(&sub), "{sub} is not completed at the top level: {top}");
    }
    for shell in ["zsh", "fish"] {
        ensure!(playpen(&["completion", shell]).await?.ok(shell)?.contains("snapshot"), "{shell}");
    }
    Ok(())
}

/// `kubectl __complete playpen <words>` (what kubectl's shell completion
/// runs) with the `kubectl_complete-playpen` script the plugin prints on PATH.
async fn kubectl_completes(script_dir: &std::path::Path, words: &[&str]) -> anyhow::Result<Vec<String>> {
    let mut args = vec!["__complete", "playpen"];
    args.extend_from_slice(words);
    let mut command = with_plugin(&args)?;
    let path = command
        .as_std()
        .get_envs()
        .find(|(key, _)| *key == "PATH")
        .and_then(|(_, value)| value.map(std::ffi::OsStr::to_owned))
        .context("with_plugin sets PATH")?;
    let path = std::env::join_paths(std::iter::once(script_dir.to_owned()).chain(std::env::split_paths(&path)))?;
    command.env("PATH", path);
    let out = output(command).await?.ok("kubectl __complete playpen")?;
    Ok(out.lines().map(str::to_owned).collect())
}

#[tokio::test]
async fn kubectl_completes_commands_and_session_names_through_the_plugin() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "complete").await?;
    for name in ["alpha", "beta"] {
        create_session(&client, &ns.name, name, json!({"image": "i"})).await?;
    }
    // The script the docs tell users to install, as the plugin prints it.
    let script = playpen(&["completion", "kubectl"]).await?.ok("completion kubectl")?;
    let dir = std::env::temp_dir().join(format!("playpen-complete-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("kubectl_complete-playpen");
    std::fs::write(&file, script)?;
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;

    let commands = kubectl_completes(&dir, &["v"]).await;
    let sessions = kubectl_completes(&dir, &["view", "-n", &ns.name, ""]).await;
    let prefixed = kubectl_completes(&dir, &["run", "-n", &ns.name, "a"]).await;
    let _ = std::fs::remove_dir_all(&dir);
    let (commands, sessions, prefixed) = (commands?, sessions?, prefixed?);
    ensure!(commands.first().map(String::as_str) == Some("view"), "commands after v: {commands:?}");
    ensure!(sessions.iter().any(|l| l == "alpha") && sessions.iter().any(|l| l == "beta"), "{sessions:?}");
    ensure!(sessions.last().map(String::as_str) == Some(":4"), "cobra's no-file directive last: {sessions:?}");
    ensure!(prefixed.iter().any(|l| l == "alpha") && !prefixed.iter().any(|l| l == "beta"), "{prefixed:?}");
    Ok(())
}

/// Plays the operator: once BrowserSnapshot `name` exists, writes `status`
/// to its status subresource.
async fn answer_snapshot(client: &Client, ns: &str, name: &str, status: serde_json::Value) -> anyhow::Result<()> {
    let api: Api<BrowserSnapshot> = Api::namespaced(client.clone(), ns);
    eventually(Duration::from_secs(30), || async { Ok(api.get(name).await?) })
        .await
        .with_context(|| format!("fork created no BrowserSnapshot {ns}/{name}"))?;
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await?;
    Ok(())
}

#[tokio::test]
async fn fork_starts_sessions_from_a_ready_snapshot_of_the_source() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-fork").await?;
    let n = ns.name.as_str();
    let spec = json!({"image": "playpen/browser:fork", "suspended": true, "idleTimeoutSeconds": 600});
    create_session(&client, n, "source", spec).await?;

    let fork =
        tokio::spawn(output(plugin_command(&["fork", "source", "-n", n, "--count", "2", "--snapshot", "snap"])?));
    answer_snapshot(
        &client,
        n,
        "snap",
        json!({"phase": "Ready", "stateSecret": "snap-state", "tabs": 1, "path": "State"}),
    )
    .await?;
    let out = fork.await??.ok("fork")?;
    ensure!(out.contains(&format!("browsersnapshot.playpen.dev/snap created in namespace {n}")), "{out}");
    for name in ["snap-1", "snap-2"] {
        ensure!(out.contains(&format!("browsersession.playpen.dev/{name} created in namespace {n}")), "{out}");
    }
    ensure!(out.contains(&format!("kubectl playpen run snap-1 -n {n} -- goto")), "{out}");

    let snapshot = Api::<BrowserSnapshot>::namespaced(client.clone(), n).get("snap").await?;
    ensure!(snapshot.spec.source.session == "source", "{:?}", snapshot.spec);
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    for name in ["snap-1", "snap-2"] {
        let fork = sessions.get(name).await?;
        ensure!(fork.spec.from.as_ref().map(|f| f.snapshot.as_str()) == Some("snap"), "{name}: {:?}", fork.spec.from);
        ensure!(fork.spec.browser.image == "playpen/browser:fork", "{name}: {:?}", fork.spec.browser.image);
        ensure!(!fork.spec.suspended, "{name}: a fork runs");
        ensure!(fork.spec.idle_timeout_seconds == Some(600), "{name}: the rest of the spec is copied");
        let label = fork.metadata.labels.as_ref().and_then(|l| l.get("playpen.dev/forked-from"));
        ensure!(label.map(String::as_str) == Some("source"), "{name}: {:?}", fork.metadata.labels);
        let managers: Vec<_> =
            fork.metadata.managed_fields.iter().flatten().filter_map(|m| m.manager.clone()).collect();
        ensure!(managers.contains(&"kubectl-playpen".to_owned()), "{name}: {managers:?}");
    }
    ensure!(sessions.get_opt("snap-3").await?.is_none(), "--count 2 makes two");
    Ok(())
}

#[tokio::test]
async fn fork_stops_at_a_failed_snapshot_and_at_names_too_long() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "plugin-fork-fail").await?;
    let n = ns.name.as_str();
    create_session(&client, n, "source", json!({"image": "playpen/browser:fork"})).await?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let snapshots: Api<BrowserSnapshot> = Api::namespaced(client.clone(), n);

    let fork = tokio::spawn(output(plugin_command(&["fork", "source", "-n", n, "--count", "2", "--snapshot", "bad"])?));
    answer_snapshot(&client, n, "bad", json!({"phase": "Failed", "message": "the runtime answered 503"})).await?;
    let err = fork.await??.failed("fork of a failed snapshot")?;
    ensure!(err.contains(&format!("BrowserSnapshot {n}/bad failed: the runtime answered 503")), "{err}");
    for name in ["bad-1", "bad-2"] {
        ensure!(sessions.get_opt(name).await?.is_none(), "{name} was created from a failed snapshot");
    }

    // Names that cannot be sessions are refused before anything is created.
    let long = "s".repeat(56);
    let err =
        playpen(&["fork", "source", "-n", n, "--count", "10", "--snapshot", &long]).await?.failed("long names")?;
    ensure!(err.contains("pass --snapshot with a shorter name"), "{err}");
    ensure!(snapshots.get_opt(&long).await?.is_none(), "a snapshot was created for forks that cannot exist");

    // A missing source reads as for every other command.
    let err = playpen(&["fork", "nope", "-n", n]).await?.failed("fork of a missing session")?;
    ensure!(
        err.trim() == format!("error: no BrowserSession \"nope\" in namespace \"{n}\" (kubectl playpen ls -n {n})"),
        "{err}"
    );
    Ok(())
}
