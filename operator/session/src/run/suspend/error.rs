//! Why a suspend or resume of the State path failed. Each variant names the
//! step and the fix; none carries a cookie or a form value.

use std::path::PathBuf;
use std::time::Duration;

/// A failed `suspend-state` or `resume-state`.
#[derive(Debug, thiserror::Error)]
pub enum SuspendError {
    /// No session file of the session: no browser is open.
    #[error(
        "no daemon of session '{session}' is registered under {dir}: the browser is not open (is the session \
         Ready? `playpen-session probe` says)"
    )]
    NotOpen {
        /// The session.
        session: String,
        /// The daemon session directory searched.
        dir: PathBuf,
    },
    /// The session's daemon is another version than this runtime speaks to.
    #[error("{0}; suspend-state and resume-state need the pinned daemon (the image's CLI and this runtime disagree: rebuild the image)")]
    Version(#[from] crate::cli::fastpath::compat::Mismatch),
    /// The session file lacks its socket.
    #[error("session file {0} names no socketPath: the daemon is starting or broken; retry once the session is Ready")]
    NoSocket(PathBuf),
    /// Talking to the daemon failed.
    #[error("{command}: the daemon's socket {socket}: {source} (is the session Ready? a daemon that restarts drops its socket)")]
    Socket {
        /// The daemon command.
        command: &'static str,
        /// The socket.
        socket: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The daemon did not answer in time.
    #[error("{command} did not finish within {after:?}: the browser is busy or hung; retry, or suspend without it")]
    TimedOut {
        /// The daemon command.
        command: &'static str,
        /// How long was waited.
        after: Duration,
    },
    /// The daemon answered with an error.
    #[error("{command}: the daemon answered with an error: {message}")]
    Daemon {
        /// The daemon command.
        command: &'static str,
        /// Its message (cut short).
        message: String,
    },
    /// An answer this runtime does not understand.
    #[error(
        "{command}: unexpected answer from the daemon ({detail}); the daemon and this runtime disagree on the protocol"
    )]
    Protocol {
        /// The daemon command.
        command: &'static str,
        /// What was wrong with it.
        detail: String,
    },
    /// A private file could not be made, written or read.
    #[error("{what} {path}: {source}")]
    File {
        /// What the file is for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The saved storage state is not Playwright's.
    #[error("the storage state the daemon saved is not Playwright's JSON ({0}); nothing was written")]
    StorageShape(String),
    /// The document to resume from is not one.
    #[error(transparent)]
    Document(#[from] playpen_api::suspend::ParseError),
}

impl SuspendError {
    /// The step that failed, as `POST /suspend` names it to the operator:
    /// a fixed word, never a path, a message or a value.
    pub fn step(&self) -> &'static str {
        match self {
            Self::NotOpen { .. } | Self::Version(_) | Self::NoSocket(_) => "find-daemon",
            Self::Socket { command, .. }
            | Self::TimedOut { command, .. }
            | Self::Daemon { command, .. }
            | Self::Protocol { command, .. } => command,
            Self::File { .. } => "private-file",
            Self::StorageShape(_) => "state-save",
            Self::Document(_) => "document",
        }
    }
}
