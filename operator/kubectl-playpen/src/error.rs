//! The plugin's typed errors. Each one's message is what the user reads;
//! `anyhow` is used only in `main`.

use crate::rbac::Forbidden;

/// Result with the plugin's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, worded for the person at the terminal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No kubeconfig could be loaded, or it names no usable cluster.
    #[error("{0}")]
    Config(String),
    /// The API server refused the request for lack of RBAC rights.
    #[error("{0}")]
    Forbidden(Box<Forbidden>),
    /// A 403 that is not an RBAC decision (admission, quota, a terminating namespace).
    #[error("forbidden by the API server: {0}")]
    Refused(String),
    /// The named session does not exist.
    #[error("no BrowserSession \"{name}\" in namespace \"{namespace}\" (kubectl playpen ls -n {namespace})")]
    SessionNotFound {
        /// Session name.
        name: String,
        /// Namespace.
        namespace: String,
    },
    /// A BrowserSession with this name already exists.
    #[error(
        "BrowserSession \"{name}\" already exists in namespace \"{namespace}\" (kubectl playpen ls -n {namespace})"
    )]
    AlreadyExists {
        /// Session name.
        name: String,
        /// Namespace.
        namespace: String,
    },
    /// The API server did not find the BrowserSession type at all.
    #[error(
        "the API server does not serve BrowserSessions (browsersessions.playpen.dev): \
         install Playpen's CRD first (helm install playpen charts/playpen)"
    )]
    CrdMissing,
    /// The user asked for something this command line cannot do as given.
    #[error("{0}")]
    Usage(String),
    /// The session (or its spec) does not offer what was asked.
    #[error("{0}")]
    Unavailable(String),
    /// A `--wait` (`new`, `suspend`, `resume`) saw the session fail, end or go.
    #[error("{0}")]
    SessionFailed(String),
    /// `fork`'s snapshot failed, or went, before it was Ready.
    #[error("{0}")]
    SnapshotFailed(String),
    /// A `--wait` ran out of time.
    #[error("{0}")]
    Timeout(String),
    /// The API server refused a request (other than for RBAC): its own words.
    #[error("{action}: {message}")]
    Api {
        /// What was attempted, e.g. `create BrowserSession team-a/demo`.
        action: String,
        /// The server's message.
        message: String,
    },
    /// Any other API call failed.
    #[error("{action}: {source}")]
    Kube {
        /// What was attempted, e.g. `get BrowserSession team-a/demo`.
        action: String,
        /// The client error (boxed: it is large and errors are rare).
        #[source]
        source: Box<kube::Error>,
    },
    /// The session's Pod is not there (not yet, or no longer).
    #[error("the Pod {pod} of BrowserSession {session} does not exist (yet): see kubectl playpen ls -n {namespace}")]
    PodMissing {
        /// The Pod.
        pod: String,
        /// `namespace/name` of the BrowserSession.
        session: String,
        /// Its namespace.
        namespace: String,
    },
    /// Reading the recordings from the object store failed: what was being
    /// done, and the store's answer (credentials masked).
    #[error("{context}: {source}")]
    Store {
        /// What was being done.
        context: String,
        /// The store's answer, or what else went wrong (boxed: errors are rare).
        #[source]
        source: Box<playpen_export::ExportError>,
    },
    /// A command in the browser container failed or misbehaved.
    #[error("{0}")]
    Remote(String),
    /// Local I/O failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}
