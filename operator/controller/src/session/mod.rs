//! A BrowserSession's reconcile: [`plan`] decides (pure, table-tested),
//! `reconcile` reads and applies, `report` writes the status and Events.

mod from;
mod live;
pub mod plan;
mod read;
mod reconcile;
mod report;
mod suspend;

#[cfg(test)]
mod mock_tests;

pub use reconcile::reconcile;
pub(crate) use report::as_reconciled;
