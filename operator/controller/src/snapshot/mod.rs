//! BrowserSnapshots on the State path (docs/suspend-resume.md): the
//! operator asks the source session's runtime for its pages with the same
//! `POST /suspend` a suspend uses ([`crate::suspend::capture`]), but the
//! session keeps running; the document goes to a Secret `<snapshot>-state`
//! owned by the snapshot (deleting the snapshot deletes its bytes).
//! Sessions start from it with `spec.from.snapshot` (`crate::session`'s
//! `from` stage copies it, then the resume path reopens it).
//!
//! [`plan`] decides (pure), [`status`] says it (pure), [`policy`] builds
//! the NetworkPolicy that admits the operator to the source's runtime
//! while it is taken (pure), [`reconcile`] reads and writes, [`run`] wires
//! the controller. What a take found waits in [`crate::context::Context`]'s
//! `snapshots` book until the status says it.

pub mod plan;
pub mod policy;
mod reconcile;
mod run;
pub mod status;

pub use run::run;
