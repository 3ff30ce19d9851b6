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
pub use plan::{Live, Parking, PodFact, Step};

use std::collections::BTreeMap;

use playpen_api::naming::{ChildNames, WARM_NAME_ANNOTATION};

/// The control Secret of a session's browser Pod (its `annotations`): a
/// claimed warm Pod's launch-config volume names its warm name's; any
/// other, the session's own (`own_control_secret`).
pub fn control_secret_of(annotations: Option<&BTreeMap<String, String>>, own_control_secret: &str) -> String {
    match annotations.and_then(|a| a.get(WARM_NAME_ANNOTATION)) {
        Some(warm_name) => ChildNames::for_session(warm_name).control_secret,
        None => own_control_secret.to_owned(),
    }
}
