//! `playpen.dev/v1alpha1`.

pub mod bounds;
mod spec;
mod status;

pub use spec::*;
pub use status::*;
