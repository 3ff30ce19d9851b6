//! Recordings in S3-compatible object storage (issue 33): each finished
//! segment uploaded while the session runs, a manifest that lists them in
//! order, an `interrupted` marker when a crash cut one short; and the
//! reader that downloads them again. The exporter container
//! (`playpen-session export`) uploads with it, `kubectl playpen record`
//! downloads with it: one key layout, one manifest, one prefix rendering.
//! Portable (no Linux-only dependency): the plugin builds on macOS too.
//!
//! The entry points are the [`Uploader`] and the [`Reader`], built from a
//! checked [`Destination`]. Pure parts, each with its own tests:
//!
//! - `destination`: what is configured, checked field by field;
//! - `prefix`: the per-session prefix template and its rendering;
//! - `keys`: where each object goes under the prefix;
//! - `manifest`: the manifest and the `interrupted` marker;
//! - `session`: a session's destination, identity and creation time from
//!   the runtime configuration's export section;
//! - `backoff`: the waits between attempts;
//! - `answer`: the store's answer to a failed request, masked.
//!
//! I/O at the edges: `credentials` (the mounted Secret's files, read for
//! every request, so that fixing the Secret resumes uploads; or a Secret's
//! data read through the API), `ledger` (what was uploaded, for retention),
//! `store` (the `object_store` client), `upload` (the uploader) and
//! `download` (the reader).

mod answer;
mod backoff;
mod credentials;
mod destination;
mod download;
mod error;
mod keys;
mod ledger;
mod manifest;
mod prefix;
mod session;
mod store;
mod upload;

pub use answer::StoreAnswer;
pub use backoff::Backoff;
pub use credentials::{from_secret_data, read as read_credentials, Credentials, CredentialsError, Secret};
pub use destination::{CredentialsSource, Destination, InvalidDestination, ValidDestination, DEFAULT_REGION};
pub use download::{mismatch, plan as download_plan, relative as key_below_prefix, Fetched, Reader, Wanted};
pub use error::ExportError;
pub use keys::{KeyError, Layout, ObjectKey, SegmentKind};
pub use ledger::{fingerprints as ledger_fingerprints, Fingerprint, Ledger, Uploaded};
pub use manifest::{InterruptedMarker, Manifest, ManifestError, Segment, SessionInfo, MANIFEST_FORMAT};
pub use prefix::{Prefix, PrefixError, PrefixTemplate, SessionId, DEFAULT_PREFIX};
pub use session::{created_at, destination_of, session_of};
pub use upload::{Progress, Upload, UploadOptions, Uploader, MIN_PART_SIZE};
