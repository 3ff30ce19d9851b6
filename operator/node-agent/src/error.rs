//! The agent's errors: each names what it was doing.

use std::path::PathBuf;

/// What went wrong, with the step and the object it concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
    #[error("checkpoint {0} is not on this node")]
    NoCheckpoint(String),
    #[error("checkpoint {from} may not be restored into this Pod: {why}")]
    Refused { from: String, why: String },
    #[error("reading the metadata of checkpoint {path}: {source}")]
    Meta { path: PathBuf, source: serde_json::Error },
    #[error("no running gVisor sandbox for Pod {0} on this node")]
    NoSandbox(String),
    #[error("runsc {action}: {detail}")]
    Runsc { action: &'static str, detail: String },
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { action, path, source }
    }
}
