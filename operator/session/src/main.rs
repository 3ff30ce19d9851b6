//! `playpen-session`: the browser container's PID 1. See
//! `docs/session-runtime.md`.

use clap::Parser;
use tracing_subscriber::EnvFilter;

use playpen_session::config::{load, Cli, Command};
use playpen_session::error::exit;
use playpen_session::{probe, run};

fn main() {
    // `playpen-session cli <args…>`: the playwright-cli wrapper; its arguments
    // are the CLI's own, so clap never sees them.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("cli") {
        std::process::exit(playpen_session::cli::exec(&argv[2..]));
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_env("PLAYPEN_LOG").unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // One thread: children are spawned from the thread that lives as long as
    // the process, which is what PR_SET_PDEATHSIG keys on.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("playpen-session: cannot start the async runtime: {err}");
            std::process::exit(exit::FATAL);
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Run => run::run(cli.options).await,
            Command::Pipe { port } => playpen_session::pipe::run(port).await,
            Command::Export => playpen_session::export::exporter::run(cli.options).await,
            Command::Rotate { pid, within } => {
                let config = std::path::Path::new(&cli.options.config);
                playpen_session::rotate::run(config, pid, std::time::Duration::from_secs(within)).await
            }
            Command::SuspendState { out } => {
                run::suspend::run_suspend(std::path::Path::new(&cli.options.config), &out).await
            }
            Command::ResumeState { from } => {
                run::suspend::run_resume(std::path::Path::new(&cli.options.config), &from).await
            }
            Command::Probe => match load(std::path::Path::new(&cli.options.config)) {
                Ok(config) => match probe::check_waiting(&config, probe::startup_wait()).await {
                    Ok(()) => exit::ENDED,
                    Err(why) => {
                        println!("not ready: {why}");
                        exit::NOT_READY
                    }
                },
                Err(err) => {
                    println!("not ready: {err}");
                    exit::NOT_READY
                }
            },
        }
    });
    std::process::exit(code);
}
