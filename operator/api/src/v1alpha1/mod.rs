//! `playpen.dev/v1alpha1`.

pub mod bounds;
mod browser;
mod browser_spec;
mod export_check;
mod pool;
mod snapshot;
mod spec;
mod status;

pub use browser::*;
pub use browser_spec::*;
pub use pool::*;
pub use snapshot::*;
pub use spec::*;
pub use status::*;
