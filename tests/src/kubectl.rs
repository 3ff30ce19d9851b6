//! Running kubectl (and the runner's other tools) against the test control
//! plane: the one place that decides the binary, its environment and the
//! kubeconfig, for the test suites and the benchmarks alike.

use std::time::Duration;

use anyhow::Context as _;
use tokio::process::Command;

use crate::{kubeconfig_path, run_feeding, tool, Output};

/// How long [`run`] and [`run_with_stdin`] wait for kubectl to end.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// `<tool> <args>` for the tool the runner exported as `var` (kubectl,
/// helm): the test control plane's kubeconfig, stdin closed, killed on drop.
pub fn tool_command(var: &str, args: &[&str]) -> anyhow::Result<Command> {
    let mut command = Command::new(tool(var)?);
    command.args(args).env("KUBECONFIG", kubeconfig_path()?).stdin(std::process::Stdio::null()).kill_on_drop(true);
    Ok(command)
}

/// `kubectl <args>` (the runner's `PLAYPEN_KUBECTL`), not started.
pub fn command(args: &[&str]) -> anyhow::Result<Command> {
    tool_command("PLAYPEN_KUBECTL", args)
}

/// `kubectl <args>` to its end (at most [`TIMEOUT`]), whatever its exit code.
pub async fn run(args: &[&str]) -> anyhow::Result<Output> {
    run_feeding(command(args)?, None, TIMEOUT).await
}

/// [`run`] with `stdin` fed to kubectl (`-f -`).
pub async fn run_with_stdin(args: &[&str], stdin: &str) -> anyhow::Result<Output> {
    run_feeding(command(args)?, Some(stdin), TIMEOUT).await
}

/// `kubectl <args>` able to run the plugin: the plugin the runner built
/// (`PLAYPEN_KUBECTL_PLUGIN`, named `kubectl-playpen`) has its directory
/// first on PATH, where kubectl finds it.
pub fn with_plugin(args: &[&str]) -> anyhow::Result<Command> {
    let plugin = std::path::PathBuf::from(tool("PLAYPEN_KUBECTL_PLUGIN")?);
    anyhow::ensure!(
        plugin.file_name() == Some(std::ffi::OsStr::new("kubectl-playpen")) && plugin.is_file(),
        "PLAYPEN_KUBECTL_PLUGIN={} is not a built kubectl-playpen (cargo build -p kubectl-playpen)",
        plugin.display()
    );
    let dir = plugin.parent().context("the plugin's directory")?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&path)))?;
    let mut command = command(args)?;
    command.env("PATH", path);
    Ok(command)
}

/// `kubectl playpen <args>`, through kubectl's plugin mechanism ([`with_plugin`]).
pub fn plugin_command(args: &[&str]) -> anyhow::Result<Command> {
    let mut command = with_plugin(&["playpen"])?;
    command.args(args);
    Ok(command)
}
