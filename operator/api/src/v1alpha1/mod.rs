//! `playpen.dev/v1alpha1`.

pub mod bounds;
mod pool;
mod spec;
mod status;

pub use pool::*;
pub use spec::*;
pub use status::*;
