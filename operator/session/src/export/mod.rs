//! Recordings exported to S3-compatible object storage while the session
//! runs (issue 33). The library (key layout, manifest, prefix template,
//! uploader, reader) is the `playpen-export` crate, shared with `kubectl
//! playpen record`, which downloads with it; re-exported here whole. What
//! is the container's alone stays here: `plan` (pure) picks what one pass
//! uploads from the recordings directory; `status_board` keeps the status
//! file current; `exporter` is the `playpen-session export` container
//! around them.

pub mod exporter;
pub mod plan;
mod status_board;

pub use playpen_export::*;
