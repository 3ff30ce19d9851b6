//! `kubectl-playpen`: run as `kubectl playpen <command>` when on PATH.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use kubectl_playpen::cli::Cli;

fn run(cli: Cli) -> anyhow::Result<i32> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    Ok(runtime.block_on(kubectl_playpen::run(cli))?)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            // Errors quote the cluster (condition messages, termination logs).
            eprintln!("error: {}", kubectl_playpen::output::untrusted(&e.to_string(), true));
            ExitCode::FAILURE
        }
    }
}
