//! `playpen.dev/v1alpha1`.

pub mod bounds;
mod browser;
mod pool;
mod spec;
mod status;
mod template;

pub use browser::*;
pub use pool::*;
pub use spec::*;
pub use status::*;
pub use template::*;
