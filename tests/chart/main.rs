//! The Helm chart with a real `helm` against the real API server: lint,
//! render and server-side dry-run several value sets, install, upgrade,
//! uninstall, and RBAC as the chart grants it.

mod access;
mod install;
mod policy;
mod render;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use anyhow::{bail, Context as _};

/// The chart's folder.
pub const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/playpen");

/// Runs a command with `stdin`, returning its output whatever the exit code.
pub fn run(program: &str, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())?;
    }
    Ok(child.wait_with_output()?)
}

/// Runs a command and requires success; returns stdout.
pub fn ok(program: &str, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    let out = run(program, args, stdin)?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// `helm` with the test control plane's kubeconfig.
pub fn helm(args: &[&str]) -> anyhow::Result<String> {
    let helm = playpen_tests::tool("PLAYPEN_HELM")?;
    let kubeconfig = playpen_tests::kubeconfig_path()?;
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    ok(&helm, &all, None)
}

/// `kubectl <args>` fed `stdin` (the shared helper: binary, kubeconfig,
/// timeout); requires success and returns stdout.
pub async fn kubectl(args: &[&str], stdin: &str) -> anyhow::Result<String> {
    let out = playpen_tests::kubectl::run_with_stdin(args, stdin).await?;
    out.ok(&format!("kubectl {}", args.join(" ")))
}
