//! `playpen-node-agent`: see the library's documentation. One per node
//! (a DaemonSet the chart installs with `suspend.live.enabled`).

use anyhow::Context;
use clap::Parser;
use playpen_node_agent::agent::{self, Config};
use playpen_node_agent::runsc::Runsc;
use playpen_node_agent::store::Store;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "playpen-node-agent",
    version,
    about = "Checkpoints and stages restores of gVisor sandboxes on its node"
)]
struct Cli {
    /// The node this agent serves (the downward API's spec.nodeName).
    #[arg(long, env = "NODE_NAME")]
    node: String,
    /// The node's runsc binary (the same build the shim runs).
    #[arg(long, env = "PLAYPEN_RUNSC", default_value = "/usr/local/bin/runsc")]
    runsc: PathBuf,
    /// runsc's state root for containerd's Pods.
    #[arg(long, env = "PLAYPEN_RUNSC_ROOT", default_value = "/run/containerd/runsc/k8s.io")]
    runsc_root: PathBuf,
    /// The store on the node's disk; the patched shim reads restore images
    /// from its `restore/` only when it is /var/lib/playpen.
    #[arg(long, env = "PLAYPEN_STATE_DIR", default_value = "/var/lib/playpen")]
    state_dir: PathBuf,
    /// No checkpoint is kept longer than this (its session's suspend bound
    /// is 7 days by default).
    #[arg(long, default_value_t = 8 * 86_400)]
    max_age_seconds: u64,
    /// How often checkpoints and restore images no one needs are removed.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    collect_every_seconds: u64,
    /// Human-readable logs instead of JSON.
    #[arg(long)]
    log_text: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    if cli.log_text {
        logs.init();
    } else {
        logs.json().init();
    }
    let client = kube::Client::try_default().await.context("connecting to the Kubernetes API")?;
    let config = Config {
        node: cli.node,
        store: Store::new(cli.state_dir),
        runsc: Runsc { binary: cli.runsc, root: cli.runsc_root },
        max_age: Duration::from_secs(cli.max_age_seconds),
        collect_every: Duration::from_secs(cli.collect_every_seconds),
    };
    agent::run(client, config).await.context("running the node agent")
}
