//! `playpen-session`: the in-Pod session runtime, PID 1 of the browser
//! container. See `docs/session-runtime.md`. The binary is a thin `main`; the
//! modules are a library so that benchmarks and tests can reach them.

pub mod agent_close;
pub mod config;
pub mod daemon;
pub mod dashboard;
pub mod error;
pub mod fastpath;
pub mod hooks;
pub mod idle;
pub mod namespace;
pub mod output;
pub mod probe;
pub mod profile;
pub mod readiness;
pub mod reaper;
pub mod relay;
pub mod report;
pub mod restarts;
pub mod retention;
pub mod run;
pub mod shutdown;
pub mod supervisor;
pub mod wrapper;
