//! Recordings exported to S3-compatible object storage while the session
//! runs (issue 33). The library (key layout, manifest, prefix template,
//! uploader, reader) is the `playpen-export` crate, shared with `kubectl
//! playpen record`, which downloads with it; re-exported here whole. What
//! is the container's alone stays here: `plan` (pure) picks what one pass
//! uploads from the recordings directory; `exporter` is the
//! `playpen-session export` container around it.

pub mod exporter;
pub mod plan;

pub use playpen_export::*;
