//! Why an upload did not happen. No variant holds a credential: the store's
//! answer is cut and masked (`answer.rs`), credential errors name files only.

use std::path::PathBuf;

use crate::answer::StoreAnswer;
use crate::credentials::CredentialsError;
use crate::destination::InvalidDestination;
use crate::keys::{KeyError, ObjectKey};
use crate::manifest::ManifestError;
use crate::prefix::PrefixError;

/// An export failure.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The destination cannot work as configured.
    #[error(transparent)]
    Destination(#[from] InvalidDestination),
    /// The prefix rendered for this session is not usable.
    #[error("recording export prefix: {0}")]
    Prefix(#[from] PrefixError),
    /// An object key could not be made.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The credentials Secret's files cannot be used.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// The store client could not be set up.
    #[error("the object store client for {endpoint} cannot be built: {message}")]
    Client {
        /// The configured endpoint.
        endpoint: String,
        /// The client's reason, masked.
        message: String,
    },
    /// The file to upload could not be read.
    #[error("reading {path} to upload it: {source}")]
    Local {
        /// The file.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// The store refused the request or never answered, after the client's own retries.
    #[error("{operation} s3://{bucket}/{key}: {answer}")]
    Store {
        /// `PUT`, `multipart upload`, `GET` …
        operation: &'static str,
        /// The bucket.
        bucket: String,
        /// The object.
        key: ObjectKey,
        /// What the store said.
        answer: StoreAnswer,
    },
    /// The object is not in the store (`404`).
    #[error("s3://{bucket}/{key} is not in the store")]
    Missing {
        /// The bucket.
        bucket: String,
        /// The object.
        key: ObjectKey,
    },
    /// A downloaded object is not what the manifest lists.
    #[error("s3://{bucket}/{key}: {what}; the download was discarded")]
    Mismatch {
        /// The bucket.
        bucket: String,
        /// The object.
        key: ObjectKey,
        /// Sizes or digests, expected and got.
        what: String,
    },
    /// The manifest in the store cannot be read.
    #[error("s3://{bucket}/{key}: {source}")]
    Manifest {
        /// The bucket.
        bucket: String,
        /// The manifest's key.
        key: ObjectKey,
        /// Why.
        source: ManifestError,
    },
    /// A downloaded object could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The local file.
        path: PathBuf,
        /// The write error.
        source: std::io::Error,
    },
    /// The ledger of uploaded files could not be written.
    #[error("recording the upload of {path} in {ledger}: {source}")]
    Ledger {
        /// The uploaded file.
        path: PathBuf,
        /// The ledger file.
        ledger: PathBuf,
        /// The write error.
        source: std::io::Error,
    },
}

impl ExportError {
    /// S3's error code when the store gave one (`SignatureDoesNotMatch`),
    /// for a status condition's message.
    pub fn store_code(&self) -> Option<&str> {
        match self {
            ExportError::Store { answer, .. } => answer.code.as_deref(),
            _ => None,
        }
    }

    /// Whether trying again can succeed without a change to the
    /// configuration: a store error or a credential file being fixed can;
    /// a destination, a key, a file gone from the volume cannot.
    pub fn is_retryable(&self) -> bool {
        match self {
            ExportError::Store { .. }
            | ExportError::Credentials(_)
            | ExportError::Ledger { .. }
            | ExportError::Missing { .. }
            | ExportError::Mismatch { .. } => true,
            ExportError::Manifest { .. } | ExportError::Write { .. } => false,
            ExportError::Local { source, .. } => source.kind() != std::io::ErrorKind::NotFound,
            ExportError::Destination(_) | ExportError::Prefix(_) | ExportError::Key(_) | ExportError::Client { .. } => {
                false
            }
        }
    }
}
