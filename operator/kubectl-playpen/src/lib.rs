//! `kubectl playpen`: Playpen BrowserSessions from the command line, as a
//! kubectl plugin. One module per concern: the command line (`cli`), the
//! connection (`connect`), reading sessions (`sessions`), RBAC rights and
//! denials (`rbac`), API errors worded from them (`forbidden`), tables (`output`), commands in the Pod (`remote`), the
//! port-forward listener (`tunnel`), and one module per subcommand
//! (`commands/`; `suspend` serves `resume` too; `fork` uses `new`'s wait).

pub mod cli;
pub mod commands;
pub mod connect;
pub mod duration;
pub mod error;
pub mod forbidden;
pub mod output;
pub mod rbac;
pub mod remote;
pub mod sessions;
pub mod tunnel;
pub mod via;

use std::io::Write as _;

use cli::{Cli, Command};
use commands::suspend::Want;
use connect::Timeouts;
use error::{Error, Result};

/// Runs the parsed command line; the exit code (the remote one for `run`).
pub async fn run(cli: Cli) -> Result<i32> {
    let Cli { global, command } = cli;
    if let Command::Completion(args) = &command {
        std::io::stdout()
            .write_all(&commands::completion::script(args.shell))
            .map_err(Error::io("writing the completion script"))?;
        return Ok(0);
    }
    if let Command::Complete(args) = &command {
        return commands::complete::run(&global, &args.words).await;
    }
    let timeouts = match command {
        Command::Run(_)
        | Command::View(_)
        | Command::Cdp(_)
        | Command::Logs(_)
        | Command::Snapshot(_)
        | Command::Record(_)
        | Command::Egress(_) => Timeouts::Streams,
        _ => Timeouts::Requests,
    };
    let cluster = connect::connect(&global, timeouts).await?;
    match command {
        Command::Ls(args) => commands::ls::run(&cluster, args).await.map(|()| 0),
        Command::New(args) => commands::new::run(&cluster, args).await.map(|()| 0),
        Command::Run(args) => commands::run::run(&cluster, args).await,
        Command::View(args) => commands::view::run(&cluster, args).await.map(|()| 0),
        Command::Cdp(args) => commands::cdp::run(&cluster, args).await.map(|()| 0),
        Command::Logs(args) => commands::logs::run(&cluster, args).await.map(|()| 0),
        Command::Snapshot(args) => commands::snapshot::run(&cluster, args).await.map(|()| 0),
        Command::Record(args) => commands::record::run(&cluster, args).await.map(|()| 0),
        Command::Egress(args) => commands::egress::run(&cluster, args).await.map(|()| 0),
        Command::Suspend(args) => commands::suspend::run(&cluster, args, Want::Suspend).await.map(|()| 0),
        Command::Resume(args) => commands::suspend::run(&cluster, args, Want::Resume).await.map(|()| 0),
        Command::Fork(args) => commands::fork::run(&cluster, args).await.map(|()| 0),
        Command::Completion(_) | Command::Complete(_) => Ok(0),
    }
}
