//! Suspend and resume on the State path (docs/suspend-resume.md): with
//! `spec.suspended: true` the operator asks the session's runtime for its
//! state (`POST /suspend` on the readiness port, with the session's control
//! token), keeps the document in a `<session>-suspended` Secret and deletes
//! the Pod; with `false` again the Pod is built with that Secret mounted,
//! the runtime reopens the tabs before it reports Ready, and the Secret goes.
//!
//! [`plan`] decides (pure), [`capture`] asks the runtime (a task, never the
//! reconcile itself: it may take seconds), [`book`] holds what the tasks
//! found until the session's status says it.

pub mod book;
pub mod capture;
pub mod plan;

pub use book::{Capture, Failure, Saved, SuspendBook};
pub use plan::{Parking, PodFact, Step};
