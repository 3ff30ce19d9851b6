//! What both controllers run on: [`Shared`] state (the client, settings,
//! metrics, [`events`], failure streaks and the leadership fence), [`run`],
//! the one loop that drives kube-rs `Controller`s until shutdown, the
//! [`guard`]s around every reconcile, [`leader`] election and [`metrics`].

pub mod events;
pub mod guard;
pub mod leader;
pub mod metrics;
mod runner;
mod shared;

pub use runner::{api, run, targets, Reconciled};
pub use shared::Shared;
