//! `playpen-session`: the in-Pod session runtime, PID 1 of the browser
//! container. See `docs/session-runtime.md`. The binary is a thin `main`; the
//! modules are a library so that benchmarks and tests can reach them.
//!
//! One module per subcommand, its helpers below it:
//!
//! - [`run`]: the container's entrypoint, the supervisor of the browser
//!   daemon, the dashboard and the viewer relay, snapshot retention, the idle
//!   clock, the graceful close and the orphan reaper.
//! - [`probe`]: the readiness verdict (the `probe` subcommand, and the kubelet's `GET /readyz`).
//! - [`cli`]: the `playwright-cli` wrapper, with its native fast path.
//!
//! What more than one of them reads sits beside them: [`config`] (options and
//! `runtime.json`), [`error`] (fatal errors and exit codes), `cli_install`
//! (the playwright-core install that serves the CLI, and its socket hooks),
//! and the two files the commands leave each other in the socket namespace
//! directory: [`restarts`] (unexpected daemon exits, for the probe) and
//! [`agent_close`] (an agent's own close, for the runtime).
//!
//! [`export`] uploads recordings to S3-compatible object storage (the
//! uploader library; the runtime does not call it yet).

pub mod agent_close;
pub mod cli;
pub(crate) mod cli_install;
pub mod config;
pub mod error;
pub mod export;
pub mod pipe;
pub mod probe;
pub mod restarts;
pub mod rotate;
pub mod run;
