//! `playpen.dev/v1alpha1`.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
