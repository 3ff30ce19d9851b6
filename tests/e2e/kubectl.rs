//! The command-line tools a platform team uses, run for real: kubectl (exec,
//! logs, port-forward, auth can-i), the `kubectl playpen` plugin and helm,
//! against the test cluster.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};
use playpen_tests::kubectl::{self as shared, plugin_command, tool_command};
use playpen_tests::run_to_end;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

pub use playpen_tests::Output;

/// `kubectl <args>`.
pub async fn kubectl(args: &[&str]) -> anyhow::Result<Output> {
    shared::run(args).await
}

/// `kubectl playpen <args>`, through kubectl's plugin mechanism.
pub async fn playpen(args: &[&str]) -> anyhow::Result<Output> {
    run_to_end(plugin_command(args)?, shared::TIMEOUT).await
}

/// A `kubectl playpen view|cdp` that serves until dropped.
pub struct Serving {
    /// The first stdout lines it printed.
    pub lines: Vec<String>,
    _child: Child,
}

/// Starts `kubectl playpen <args>` and waits (30 s at most) for its first
/// `lines` lines of stdout; stderr is collected and shown when it ends early.
pub async fn playpen_serving(args: &[&str], lines: usize) -> anyhow::Result<Serving> {
    let mut child = plugin_command(args)?.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let stderr = child.stderr.take().context("stderr")?;
    let errors = tokio::spawn(async move {
        let mut all = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("kubectl playpen: {line}");
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut reader = BufReader::new(stdout).lines();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while got.len() < lines {
            match reader.next_line().await? {
                Some(line) => got.push(line),
                None => break,
            }
        }
        Ok::<_, anyhow::Error>(())
    })
    .await;
    if got.len() < lines {
        let _ = child.kill().await;
        let stderr = errors.await.unwrap_or_default();
        bail!("kubectl playpen {args:?} printed {got:?} and no more ({read:?}); stderr:\n{stderr}");
    }
    // Keep draining stdout so the plugin never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = reader.next_line().await {} });
    Ok(Serving { lines: got, _child: child })
}

/// `helm <args>` (installs wait for rollouts, so the bound is generous).
pub async fn helm(args: &[&str]) -> anyhow::Result<Output> {
    run_to_end(tool_command("PLAYPEN_HELM", args)?, Duration::from_secs(300)).await
}

/// `kubectl exec -n <ns> <pod> -c <container> -- <command>`.
pub async fn exec(ns: &str, pod: &str, container: &str, command: &[&str]) -> anyhow::Result<Output> {
    let mut args = vec!["exec", "-n", ns, pod, "-c", container, "--"];
    args.extend_from_slice(command);
    kubectl(&args).await
}

/// `kubectl exec … -- sh -c <script>`, which must succeed.
pub async fn sh(ns: &str, pod: &str, container: &str, script: &str) -> anyhow::Result<String> {
    exec(ns, pod, container, &["sh", "-c", script]).await?.ok(&format!("sh -c {script:?} in {ns}/{pod}"))
}

/// A running `kubectl port-forward`; stopped on drop.
pub struct PortForward {
    /// The local port kubectl chose.
    pub local_port: u16,
    _child: Child,
}

/// `kubectl port-forward -n <ns> <target> :<port>`: waits for kubectl's
/// "Forwarding from 127.0.0.1:<local> -> <port>" line.
pub async fn port_forward(ns: &str, target: &str, port: u16) -> anyhow::Result<PortForward> {
    let remote = format!(":{port}");
    let mut child = shared::command(&["port-forward", "-n", ns, target, &remote, "--address", "127.0.0.1"])?
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().context("port-forward stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let local_port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await? {
            // "Forwarding from 127.0.0.1:41234 -> 9323"
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                let port = rest.split_whitespace().next().context("no local port")?;
                return Ok::<u16, anyhow::Error>(port.parse()?);
            }
        }
        bail!("kubectl port-forward exited without forwarding")
    })
    .await
    .context("kubectl port-forward did not start within 30 s")??;
    // Keep draining stdout so kubectl never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(PortForward { local_port, _child: child })
}

/// A pinned port of a session.
#[derive(Debug, Clone, Copy)]
pub enum Pinned<'a> {
    /// The viewer, behind Service `<session>-view` on `port`.
    Viewer(u16),
    /// The CDP port, behind `service` on `port` (as `status.cdp` names them).
    Cdp { service: &'a str, port: u16 },
}

/// A local tunnel to `pinned` of session `name`, the way its users open one:
/// `kubectl port-forward` to the Service on the node's default runtime;
/// under a `runtime_class` (gVisor, whose own network stack port-forward
/// cannot reach) `kubectl playpen view|cdp`, which relays through exec there.
pub async fn tunnel(
    ns: &str,
    name: &str,
    pinned: Pinned<'_>,
    runtime_class: Option<&str>,
) -> anyhow::Result<PortForward> {
    let (service, port, command) = match pinned {
        Pinned::Viewer(port) => (format!("{name}-view"), port, "view"),
        Pinned::Cdp { service, port } => (service.to_owned(), port, "cdp"),
    };
    if runtime_class.is_none() {
        return port_forward(ns, &format!("svc/{service}"), port).await;
    }
    let Serving { lines, _child } = playpen_serving(&[command, name, "-n", ns], 1).await?;
    // "http://127.0.0.1:<local>/" (view) or "http://127.0.0.1:<local>" (cdp).
    let local_port = lines[0]
        .strip_prefix("http://127.0.0.1:")
        .map(|rest| rest.trim_end_matches('/'))
        .with_context(|| format!("kubectl playpen {command} printed {lines:?}"))?
        .parse()?;
    Ok(PortForward { local_port, _child })
}

/// Follows `kubectl logs -f` into a buffer until the container ends.
pub fn follow_logs(ns: &str, pod: &str, container: &str) -> anyhow::Result<tokio::task::JoinHandle<String>> {
    let mut child = shared::command(&["logs", "-f", "-n", ns, pod, "-c", container])?
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("logs stdout")?;
    Ok(tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let mut all = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push_str(&line);
            all.push('\n');
        }
        let _ = child.wait().await;
        all
    }))
}
