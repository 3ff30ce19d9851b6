//! Recordings exported to S3-compatible object storage while the session
//! runs (issue 33): each finished segment uploaded at once, a manifest that
//! lists them in order, an `interrupted` marker when a crash cut one short.
//!
//! The entry point is the [`Uploader`], built from a checked
//! [`Destination`]. Pure parts, each with its own tests:
//!
//! - `destination`: what is configured, checked field by field;
//! - `prefix`: the per-session prefix template and its rendering;
//! - `keys`: where each object goes under the prefix;
//! - `manifest`: the manifest and the `interrupted` marker;
//! - `backoff`: the waits between attempts;
//! - `answer`: the store's answer to a failed request, masked.
//!
//! I/O at the edges: `credentials` (the mounted Secret's files, read for
//! every request, so that fixing the Secret resumes uploads), `ledger`
//! (what was uploaded, for retention, which reads it with
//! [`ledger_fingerprints`]), `store` (the `object_store` client)
//! and `upload` (the uploader). `plan` (pure) picks what one pass uploads;
//! `exporter` is the `playpen-session export` container around all of it.

mod answer;
mod backoff;
mod credentials;
mod destination;
mod error;
pub mod exporter;
mod keys;
mod ledger;
mod manifest;
pub mod plan;
mod prefix;
mod status_board;
mod store;
mod upload;

pub use answer::StoreAnswer;
pub use backoff::Backoff;
pub use credentials::{read as read_credentials, Credentials, CredentialsError, Secret};
pub use destination::{CredentialsSource, Destination, InvalidDestination, ValidDestination, DEFAULT_REGION};
pub use error::ExportError;
pub use keys::{KeyError, Layout, ObjectKey, SegmentKind};
pub use ledger::{fingerprints as ledger_fingerprints, Fingerprint, Ledger, Uploaded};
pub use manifest::{InterruptedMarker, Manifest, ManifestError, Segment, SessionInfo, MANIFEST_FORMAT};
pub use prefix::{Prefix, PrefixError, PrefixTemplate, SessionId, DEFAULT_PREFIX};
pub use upload::{Progress, Upload, UploadOptions, Uploader, MIN_PART_SIZE};
