//! BrowserSessions as an agent and a human meet them: applied, Ready, driven
//! with plain `playwright-cli` through `kubectl exec`, viewed through
//! `kubectl port-forward`, and deleted.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{eventually, http_get};
use serde_json::json;

use crate::kubectl::{exec, follow_logs, kubectl, sh, tunnel, Pinned};
use crate::network;
use crate::setup::{tolerations, Installed, BROWSER_IMAGE};

/// The browser container's name.
pub const BROWSER: &str = "browser";
/// The viewer's pinned port (the CRD default).
pub const VIEWER_PORT: u16 = 9323;

/// Creates a BrowserSession on the e2e browser image (Debian's Chromium)
/// with `network` as its spec.network.
pub async fn create(
    client: &Client,
    ns: &str,
    name: &str,
    sandbox: &str,
    network: serde_json::Value,
) -> anyhow::Result<()> {
    create_with(client, ns, name, sandbox, network, json!({})).await
}

/// [`create`] with more spec fields (`extra`'s keys replace the defaults').
pub async fn create_with(
    client: &Client,
    ns: &str,
    name: &str,
    sandbox: &str,
    network: serde_json::Value,
    extra: serde_json::Value,
) -> anyhow::Result<()> {
    let mut spec = json!({
        "image": BROWSER_IMAGE,
        "imagePullPolicy": "Never",
        "sandbox": sandbox,
        "launchConfig": {
            "executablePath": "/usr/bin/chromium",
            // This machine's network is closed: no background lookups of Google's hosts.
            "args": ["--disable-background-networking", "--disable-component-update"]
        },
        "pod": {"tolerations": tolerations(), "shmSize": "256Mi"},
        "network": network
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let bs = playpen_tests::fixtures::session(name, spec)?;
    Api::<BrowserSession>::namespaced(client.clone(), ns).create(&PostParams::default(), &bs).await?;
    Ok(())
}

fn condition_true(status: &BrowserSessionStatus, type_: &str) -> bool {
    status.conditions.iter().any(|c| c.type_ == type_ && c.status == "True")
}

/// Waits for phase Ready with the browser and viewer conditions true; returns the status and how long it took.
pub async fn wait_ready(client: &Client, ns: &str, name: &str) -> anyhow::Result<(BrowserSessionStatus, Duration)> {
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let t0 = Instant::now();
    let status = eventually(Duration::from_secs(180), || async {
        let status = api.get(name).await?.status.context("no status yet")?;
        ensure!(
            status.phase == Some(Phase::Ready)
                && condition_true(&status, condition::BROWSER_READY)
                && condition_true(&status, condition::VIEWER_READY),
            "{ns}/{name} not ready: {:?} {:?}",
            status.phase,
            status.conditions.iter().map(|c| (&c.type_, &c.status, &c.message)).collect::<Vec<_>>()
        );
        Ok(status)
    })
    .await?;
    Ok((status, t0.elapsed()))
}

pub fn pod_name(status: &BrowserSessionStatus) -> anyhow::Result<String> {
    status.pod_name.clone().context("status.podName is empty")
}

/// The `[ref=eN]` of the first line of a snapshot that contains `needle`.
fn reference(snapshot: &str, needle: &str) -> anyhow::Result<String> {
    let line = snapshot.lines().find(|l| l.contains(needle)).with_context(|| format!("{needle} in:\n{snapshot}"))?;
    let start = line.find("[ref=").context("no ref")? + "[ref=".len();
    let end = line[start..].find(']').context("unterminated ref")? + start;
    Ok(line[start..end].to_owned())
}

/// The path in "[Snapshot](<path>)".
fn snapshot_path(stdout: &str) -> anyhow::Result<String> {
    let start = stdout.find("[Snapshot](").with_context(|| format!("no snapshot link in:\n{stdout}"))? + 11;
    let end = stdout[start..].find(')').context("unterminated link")? + start;
    Ok(stdout[start..end].to_owned())
}

/// Steps 3–8 on one session: drive, view, sandbox, kill and recover, delete;
/// its network boundary between them.
pub async fn drive_view_recover_delete(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let (ns, fixture_url) = (installed.team_a.name.as_str(), installed.fixture_url.as_str());
    let name = "shop";
    // The default egress (the public internet only) plus the one fixture it drives.
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "fixture"}}]}});
    create(client, ns, name, "Enforced", network).await?;
    let (status, took) = wait_ready(client, ns, name).await.context("step 2: the session becomes Ready")?;
    eprintln!("e2e: {ns}/{name} Ready after {took:?}");
    let pod = pod_name(&status)?;

    // 3. An agent drives it with plain playwright-cli.
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", fixture_url]).await?.ok("playwright-cli goto")?;
    ensure!(out.contains(&format!("Page URL: {fixture_url}")), "goto printed no URL:\n{out}");
    ensure!(out.contains("Page Title: Playpen fixture"), "goto printed no title:\n{out}");
    let path = snapshot_path(&out)?;
    let tree = exec(ns, &pod, BROWSER, &["cat", &path]).await?.ok("reading the snapshot file")?;
    let button = reference(&tree, "button \"Record a click\"")?;
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "click", &button]).await?.ok("playwright-cli click")?;
    ensure!(!out.contains("### Error"), "click failed:\n{out}");
    eventually(Duration::from_secs(20), || async {
        let log = kubectl(&["logs", "-n", ns, "fixture"]).await?.ok("fixture logs")?;
        ensure!(log.contains("click 1"), "the fixture server saw no click:\n{log}");
        Ok(())
    })
    .await
    .context("step 3: the click reaches the fixture server")?;

    // The image's playwright-cli answered those natively (issue 7), not through Node.
    let report = sh(
        ns,
        &pod,
        BROWSER,
        "rm -f /tmp/fast.report; PLAYPEN_CLI_FAST_REPORT=/tmp/fast.report playwright-cli tab-list >/dev/null; \
         PLAYPEN_CLI_NODE_ONLY=1 PLAYPEN_CLI_FAST_REPORT=/tmp/fast.report playwright-cli tab-list >/dev/null; \
         cat /tmp/fast.report",
    )
    .await?;
    let ways: Vec<&str> = report.lines().filter_map(|l| l.split('\t').next()).collect();
    ensure!(ways == ["fast", "node"], "fast path in the image: {report}");

    // The network boundary: the allow-listed fixture only, and no way in.
    let other = (installed.team_b.name.as_str(), installed.other_namespace_url.as_str());
    network::default_egress(client, ns, name, &pod, fixture_url, &installed.internal_url, other)
        .await
        .context("the default egress policy")?;
    network::no_ingress(client, ns, &pod, "internal").await.context("no ingress to the browser Pod")?;

    agent_close_is_no_failure(client, ns, name, &pod, fixture_url).await.context("an agent's own close")?;

    // 4. A human takes over through the tunnel; the Pod IP does not serve the viewer.
    let forward = tunnel(ns, name, Pinned::Viewer(VIEWER_PORT), installed.runtime_class.as_deref()).await?;
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], forward.local_port));
    let (code, _) = http_get(local, "/").await.context("step 4: GET / through port-forward")?;
    ensure!(code == 302, "the dashboard root answered {code}, expected 302");
    let (code, body) = http_get(local, "/index.html").await?;
    ensure!(code == 200 && body.contains("<html"), "the dashboard page answered {code}: {body:.200}");
    drop(forward);

    // 6. The sandbox is enforced: renderers run in a user namespace of their own.
    let namespaces = sh(
        ns,
        &pod,
        BROWSER,
        // Matched on the command's start: this script's own command line contains the pattern too.
        "own=$(readlink /proc/1/ns/user); for p in /proc/[0-9]*; do \
         case \"$(tr '\\0' ' ' <$p/cmdline 2>/dev/null)\" in /usr/lib/chromium/chromium*--type=renderer*) \
         echo \"renderer $(readlink $p/ns/user) runtime $own\";; esac; done",
    )
    .await?;
    let renderers: Vec<&str> = namespaces.lines().collect();
    ensure!(!renderers.is_empty(), "step 6: no renderer process found");
    for line in &renderers {
        let parts: Vec<&str> = line.split_whitespace().collect();
        ensure!(
            parts.len() == 4 && parts[1] != parts[3],
            "step 6: a renderer shares the runtime's user namespace: {line}"
        );
    }

    match installed.runtime_class.as_deref() {
        None => seccomp_allow_list(ns, &pod).await.context("step 6: the seccomp allow-list")?,
        Some(class) => under_gvisor(client, ns, &pod, class).await.context("step 6: the gVisor sandbox")?,
    }

    // 8. Kill the browser: the session recovers and says so.
    let killed = sh(
        ns,
        &pod,
        BROWSER,
        "for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' <$p/cmdline 2>/dev/null); case \"$c\" in \
         /usr/lib/chromium/chromium*) case \"$c\" in *--type=*) ;; *) kill -9 ${p#/proc/} && echo ${p#/proc/};; esac;; esac; done",
    )
    .await?;
    ensure!(!killed.trim().is_empty(), "step 8: no browser process to kill");
    recover_after_kill(client, ns, name, &pod).await.context("step 8: recovery after the browser was killed")?;

    // 7. Delete: the runtime closes the browser through the CLI, and every child goes.
    let logs = follow_logs(ns, &pod, BROWSER)?;
    // A deliberate pause: `kubectl logs -f` is attached before the delete.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete(name, &DeleteParams::default()).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    eventually(Duration::from_secs(90), || async {
        match pods.get_opt(&pod).await? {
            None => Ok(()),
            Some(_) => bail!("{pod} still exists"),
        }
    })
    .await
    .context("step 7: the Pod goes away")?;
    let log = tokio::time::timeout(Duration::from_secs(10), logs).await??;
    ensure!(log.contains("SIGTERM: closing the session"), "step 7: no SIGTERM handling in the log:\n{log}");
    ensure!(
        log.lines().any(|l| l.contains("playwright-cli")
            && l.contains("\"close\"")
            && l.contains("exit status: 0")
            && l.contains(&format!("Browser '{name}' closed"))),
        "step 7: the runtime did not close the browser through playwright-cli:\n{log}"
    );
    no_orphans(client, ns, name).await.context("step 7: no orphaned objects")
}

/// An agent's own `playwright-cli close` through the image's CLI: the runtime
/// opens a fresh browser and neither the Pod's readiness nor the session's
/// status reports a failure.
async fn agent_close_is_no_failure(
    client: &Client,
    ns: &str,
    name: &str,
    pod: &str,
    fixture_url: &str,
) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let ready_since = |pod: Pod| {
        pod.status
            .and_then(|s| s.conditions)
            .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Ready"))
            .map(|c| (c.status, c.last_transition_time))
    };
    let before = ready_since(pods.get(pod).await?);
    let out = exec(ns, pod, BROWSER, &["playwright-cli", "close"]).await?.ok("playwright-cli close")?;
    ensure!(out.contains(&format!("Browser '{name}' closed")), "close printed:\n{out}");
    // The fresh browser serves the agent again.
    eventually(Duration::from_secs(30), || async {
        let out = exec(ns, pod, BROWSER, &["playwright-cli", "goto", fixture_url]).await?.ok("goto after close")?;
        ensure!(out.contains("Page Title: Playpen fixture"), "goto after the close:\n{out}");
        Ok(())
    })
    .await?;
    // Two probe periods later, readiness never flipped and the status reports nothing.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = ready_since(pods.get(pod).await?);
    ensure!(before == after, "the Pod's Ready condition moved: {before:?} -> {after:?}");
    let status = Api::<BrowserSession>::namespaced(client.clone(), ns).get(name).await?.status.context("no status")?;
    let browser = status.conditions.iter().find(|c| c.type_ == condition::BROWSER_READY).context("no condition")?;
    ensure!(
        browser.status == "True" && !browser.reason.contains("Recover"),
        "BrowserReady after the close: {browser:?}"
    );
    let log = kubectl(&["logs", "-n", ns, pod, "-c", BROWSER]).await?.ok("runtime log")?;
    ensure!(log.contains("an agent closed the browser"), "the runtime did not see the agent's close:\n{log}");
    Ok(())
}

/// The Localhost profile is in force (filter mode), and refuses what it does
/// not list: a mount namespace (the argument filter on unshare: a user
/// namespace alone works) and io_uring_setup (not listed at all).
async fn seccomp_allow_list(ns: &str, pod: &str) -> anyhow::Result<()> {
    let mode = sh(ns, pod, BROWSER, "grep '^Seccomp:' /proc/self/status").await?;
    ensure!(mode.split_whitespace().nth(1) == Some("2"), "no seccomp filter: {mode}");
    let user = sh(ns, pod, BROWSER, "unshare --user --map-root-user id -u 2>&1; echo rc=$?").await?;
    ensure!(user.contains("rc=0") && user.starts_with('0'), "a user namespace (the sandbox's) must work: {user}");
    let mount = sh(ns, pod, BROWSER, "unshare --user --map-root-user --mount true 2>&1; echo rc=$?").await?;
    ensure!(
        mount.contains("Operation not permitted") && !mount.contains("rc=0"),
        "a mount namespace must be refused: {mount}"
    );
    // io_uring_setup is syscall 425 on x86_64 and arm64.
    let uring = sh(
        ns,
        pod,
        BROWSER,
        "perl -e '$p = \"\\0\" x 120; $r = syscall(425, 1, $p); print $r < 0 ? \"errno=\" . ($!+0) . \"\\n\" : \"fd=$r\\n\"'",
    )
    .await?;
    ensure!(uring.trim() == "errno=1", "io_uring_setup must fail with EPERM: {uring}");
    Ok(())
}

/// The Pod runs in a gVisor sandbox of RuntimeClass `class`: its processes
/// see gVisor's kernel, its seccomp is the chart's choice for the class
/// (RuntimeDefault: runsc applies no OCI profile), and on the host every
/// gVisor sandbox runs under runsc's own seccomp filter.
async fn under_gvisor(client: &Client, ns: &str, pod: &str, class: &str) -> anyhow::Result<()> {
    let spec = Api::<Pod>::namespaced(client.clone(), ns).get(pod).await?.spec.context("no Pod spec")?;
    ensure!(spec.runtime_class_name.as_deref() == Some(class), "runtimeClassName: {:?}", spec.runtime_class_name);
    let seccomp = spec.security_context.and_then(|s| s.seccomp_profile).context("no Pod seccomp profile")?;
    ensure!(seccomp.type_ == "RuntimeDefault", "seccomp under {class}: {seccomp:?}");
    let kernel = sh(ns, pod, BROWSER, "dmesg 2>&1 | head -n 3").await?;
    ensure!(kernel.contains("gVisor"), "the browser container does not run on gVisor's kernel:\n{kernel}");
    let sandboxes = host_processes_named("runsc-sandbox")?;
    ensure!(!sandboxes.is_empty(), "no runsc-sandbox process on the host");
    for (pid, status) in &sandboxes {
        let mode = status.lines().find(|l| l.starts_with("Seccomp:")).unwrap_or_default();
        ensure!(mode.split_whitespace().nth(1) == Some("2"), "runsc-sandbox {pid} runs without its filter: {mode}");
    }
    Ok(())
}

/// `(pid, /proc/<pid>/status)` of this host's processes started as `argv0`
/// (the tests run on the node; runsc re-executes itself as `runsc-sandbox`,
/// so its command name is `exe`).
fn host_processes_named(argv0: &str) -> anyhow::Result<Vec<(u32, String)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        if cmdline.split(|b| *b == 0).next() != Some(argv0.as_bytes()) {
            continue;
        }
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            found.push((pid, status));
        }
    }
    Ok(found)
}

async fn recover_after_kill(client: &Client, ns: &str, name: &str, pod: &str) -> anyhow::Result<()> {
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    eventually(Duration::from_secs(60), || async {
        let status = api.get(name).await?.status.context("no status")?;
        let browser = status.conditions.iter().find(|c| c.type_ == condition::BROWSER_READY).context("no condition")?;
        ensure!(browser.status == "True", "not recovered yet: {browser:?}");
        ensure!(
            browser.message.contains("restart"),
            "recovered, but the status does not say what happened: {browser:?}"
        );
        Ok(())
    })
    .await?;
    let out = exec(ns, pod, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("tab-list after recovery")?;
    ensure!(out.contains("about:blank") || out.contains("http"), "tab-list after recovery:\n{out}");
    Ok(())
}

/// Names of the `K`s in `ns` carrying `selector`, as "Kind/name".
async fn labelled<K>(client: &Client, ns: &str, lp: &ListParams) -> anyhow::Result<Vec<String>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let items = Api::<K>::namespaced(client.clone(), ns).list(lp).await?.items;
    Ok(items.iter().map(|o| format!("{}/{}", K::kind(&()), o.meta().name.as_deref().unwrap_or_default())).collect())
}

async fn no_orphans(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let selector = format!("app.kubernetes.io/instance={name}");
    let lp = ListParams::default().labels(&selector);
    eventually(Duration::from_secs(60), || async {
        let mut left = labelled::<Pod>(client, ns, &lp).await?;
        left.extend(labelled::<Secret>(client, ns, &lp).await?);
        left.extend(labelled::<ConfigMap>(client, ns, &lp).await?);
        left.extend(labelled::<Service>(client, ns, &lp).await?);
        left.extend(labelled::<NetworkPolicy>(client, ns, &lp).await?);
        ensure!(left.is_empty(), "left behind: {left:?}");
        Ok(())
    })
    .await
}

/// Two sessions of one name on one node, in two namespaces: each has a
/// socket namespace of its own, sees no other one's directory, and lists only
/// the page it opened itself. Were the Pods' data homes one directory (a
/// hostPath, say), each would see the other's socket namespace; were the
/// socket namespace also derived from the name rather than the UID, both
/// clients would reach one daemon and one session would list the other's page.
async fn share_nothing(
    client: &Client,
    a: (&str, &BrowserSessionStatus),
    b: (&str, &BrowserSessionStatus),
) -> anyhow::Result<()> {
    let mut nodes = vec![];
    for (ns, status) in [a, b] {
        let pod = Api::<Pod>::namespaced(client.clone(), ns).get(&pod_name(status)?).await?;
        nodes.push(pod.spec.and_then(|s| s.node_name).context("the Pod is not on a node")?);
    }
    ensure!(nodes[0] == nodes[1], "the two Pods run on different nodes: {nodes:?}");
    ensure!(
        a.1.session_name.is_some() && a.1.session_name == b.1.session_name,
        "the two sessions' names differ: {:?} {:?}",
        a.1.session_name,
        b.1.session_name
    );
    let socket_ns = |status: &BrowserSessionStatus| status.socket_namespace.clone().context("no socket namespace");
    let (sockets_a, sockets_b) = (socket_ns(a.1)?, socket_ns(b.1)?);
    ensure!(sockets_a != sockets_b, "both sessions got socket namespace {sockets_a}");
    let title = |ns: &str| format!("isolation-{ns}");
    for (ns, status) in [a, b] {
        let url = format!("data:text/html,<title>{}</title>", title(ns));
        exec(ns, &pod_name(status)?, BROWSER, &["playwright-cli", "goto", &url]).await?.ok("goto a page of its own")?;
    }
    for ((ns, status), (other, _)) in [(a, b), (b, a)] {
        let pod = pod_name(status)?;
        let tabs = exec(ns, &pod, BROWSER, &["playwright-cli", "tab-list"]).await?.ok("playwright-cli tab-list")?;
        ensure!(tabs.contains(&format!("[{}]", title(ns))), "{ns}'s session does not list its own page:\n{tabs}");
        ensure!(!tabs.contains(&title(other)), "{ns}'s session lists the page opened in {other}:\n{tabs}");
        let own = socket_ns(status)?;
        let dirs = sh(ns, &pod, BROWSER, "ls /var/lib/playpen/pw").await?;
        ensure!(
            dirs.split_whitespace().eq([own.as_str()]),
            "{ns}'s session sees socket namespaces {dirs}, not only {own}"
        );
    }
    Ok(())
}

/// Step 5 and the Disabled half of step 6: a second team's session shares
/// nothing with a first team's session of the same name, and a Disabled
/// sandbox runs and is recorded. It denies all egress, and reaches nothing.
pub async fn isolation_and_disabled(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let (ns_b, ns_a) = (installed.team_b.name.as_str(), installed.team_a.name.as_str());
    let name = "nosandbox";
    // Team A's twin: the same name and spec, so the same session name on the same node.
    for ns in [ns_b, ns_a] {
        create(client, ns, name, "Disabled", json!({"egress": {"mode": "DenyAll"}})).await?;
    }
    let ((status, _), (twin, _)) = tokio::try_join!(wait_ready(client, ns_b, name), wait_ready(client, ns_a, name))
        .context("the Disabled sessions become Ready")?;
    ensure!(!condition_true(&status, condition::SANDBOX_ENFORCED), "SandboxEnforced is true for a Disabled session");
    let events = Api::<Event>::namespaced(client.clone(), ns_b)
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await?;
    ensure!(
        events.items.iter().any(|e| e.reason.as_deref() == Some("SandboxDisabled")),
        "no SandboxDisabled Event: {:?}",
        events.items.iter().map(|e| &e.reason).collect::<Vec<_>>()
    );
    let pod = pod_name(&status)?;
    let urls = [installed.fixture_url.as_str(), installed.internal_url.as_str(), crate::network::API_SERVER_URL];
    let own_fixture = (installed.other_namespace_url.as_str(), ns_b, "fixture");
    network::deny_all(client, ns_b, name, &pod, &urls, own_fixture).await.context("the DenyAll session")?;
    share_nothing(client, (ns_a, &twin), (ns_b, &status)).await.context("two sessions of one name on one node")?;
    Api::<BrowserSession>::namespaced(client.clone(), ns_a).delete(name, &DeleteParams::background()).await?;
    // Nor can team B's driver reach into team A: exec is granted per namespace.
    let user = "driver-b";
    kubectl(&[
        "create",
        "rolebinding",
        "e2e-driver-b",
        "-n",
        ns_b,
        "--clusterrole=playpen-driver",
        &format!("--user={user}"),
    ])
    .await?
    .ok("create rolebinding e2e-driver-b")?;
    let can = |ns: String| async move {
        let out = kubectl(&["auth", "can-i", "create", "pods", "--subresource=exec", "-n", &ns, "--as", user]).await?;
        Ok::<_, anyhow::Error>(out.stdout.trim() == "yes")
    };
    // The RBAC authorizer sees a new binding through its informer, a moment later.
    eventually(Duration::from_secs(10), || async {
        ensure!(can(ns_b.to_owned()).await?, "team B's driver cannot exec in its own namespace");
        Ok(())
    })
    .await?;
    ensure!(!can(ns_a.to_owned()).await?, "team B's driver can exec in team A's namespace");
    Ok(())
}
