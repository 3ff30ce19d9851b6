//! The crate's top-level error: any module error, with its failure class.

use crate::failure::{Classify, FailureClass};

/// Any failure of a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the spec.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    /// Validating the spec.
    #[error(transparent)]
    Invalid(#[from] crate::validate::InvalidSpec),
    /// Reading the lock.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// Downloads.
    #[error(transparent)]
    Fetch(#[from] crate::fetch::FetchError),
    /// Resolving pins.
    #[error(transparent)]
    Resolve(#[from] crate::resolve::ResolveError),
    /// The base's OS family.
    #[error(transparent)]
    OsFamily(#[from] crate::os_release::UnknownOsFamily),
    /// Docker Engine.
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    /// Verification of the built image.
    #[error(transparent)]
    Verify(#[from] crate::verify::VerifyError),
    /// Writing the OCI layout.
    #[error(transparent)]
    Oci(#[from] crate::oci_layout::OciError),
    /// Pushing the verified tag.
    #[error(transparent)]
    Push(#[from] crate::push::PushError),
    /// Assembling the layer or the context.
    #[error("layer: {0}")]
    Layer(#[from] crate::layer::LayerError),
    /// Writing an output file.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Classify for Error {
    fn class(&self) -> FailureClass {
        match self {
            Error::Spec(e) => e.class(),
            Error::Invalid(e) => e.class(),
            Error::Lock(e) => e.class(),
            Error::Fetch(e) => e.class(),
            Error::Resolve(e) => e.class(),
            Error::OsFamily(e) => e.class(),
            Error::Engine(e) => e.class(),
            Error::Verify(e) => e.class(),
            Error::Oci(e) => e.class(),
            Error::Push(e) => e.class(),
            Error::Layer(e) => e.class(),
            Error::Io { .. } => FailureClass::Io,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
