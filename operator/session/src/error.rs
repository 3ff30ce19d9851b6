//! Fatal errors of the runtime. Each one maps to a termination-message
//! reason the operator shows in the session's status, and its text carries
//! the remedy.

use std::path::PathBuf;

use playpen_api::layout::SocketBudgetExceeded;

use crate::cli_install::HooksError;
use crate::run::browser::BrowserMissing;

/// Why the runtime gave up.
#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    /// The runtime configuration could not be read or is inconsistent.
    #[error("runtime configuration {path}: {message}")]
    Config {
        /// The file read.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The worst-case AF_UNIX socket path does not fit.
    #[error(transparent)]
    SocketBudget(#[from] SocketBudgetExceeded),
    /// A namespace directory could not be made owner-only.
    #[error("socket namespace {path}: {message}")]
    Namespace {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The installed CLI cannot be attributed or lost its socket hooks.
    #[error(transparent)]
    Hooks(#[from] HooksError),
    /// The browser the launch config needs is not installed.
    #[error(transparent)]
    Browser(#[from] BrowserMissing),
    /// Chromium's sandbox could not start.
    #[error(
        "No usable sandbox! Chromium could not start its sandbox: {detail}. Remedy: run the Pod with the seccomp \
         profile the image builder emits (securityContext.seccompProfile type Localhost) so that user namespaces \
         work, or set spec.sandbox: Disabled as an explicit, recorded choice"
    )]
    NoUsableSandbox {
        /// The daemon's own output.
        detail: String,
    },
    /// Chromium refuses its sandbox as root.
    #[error(
        "Chromium refuses to run its sandbox as root ({detail}). Remedy: run the browser container as a non-root \
         user (securityContext runAsNonRoot with runAsUser, as the operator's Pod does), or set spec.sandbox: \
         Disabled as an explicit, recorded choice"
    )]
    SandboxAsRoot {
        /// Chromium's line.
        detail: String,
    },
    /// The pinned viewer port is held by something else.
    #[error(
        "viewer port 127.0.0.1:{port} is already in use ({source}): another process in the Pod holds it; \
         choose another spec.viewer.port or stop that process"
    )]
    ViewerPortTaken {
        /// The pinned port.
        port: u16,
        /// The bind error.
        source: std::io::Error,
    },
    /// The readiness endpoint's port on the Pod's address is held by something else.
    #[error(
        "the readiness endpoint {addr} is already in use ({source}): another process in the Pod (an agent \
         sidecar?) holds it; the kubelet probes this port, so free it"
    )]
    ReadinessPortTaken {
        /// The address bound.
        addr: std::net::SocketAddr,
        /// The bind error.
        source: std::io::Error,
    },
    /// A recording the spec asks for cannot start.
    #[error(
        "the session records ({what}) but {verb} failed: {detail}. Remedy: for video, an image with ffmpeg \
         where Playwright looks for it (playpen-imagebuild's `videoRecorder` links one there), or turn spec.recording.{what} off"
    )]
    RecordingUnavailable {
        /// video or trace.
        what: &'static str,
        /// The CLI verb.
        verb: String,
        /// What the CLI answered (cut short).
        detail: String,
    },
    /// The pinned CDP port is held by something else.
    #[error(
        "CDP port 127.0.0.1:{port} is already in use ({source}): another process in the Pod holds it; \
         choose another spec.cdp.port or stop that process"
    )]
    CdpPortTaken {
        /// The pinned port.
        port: u16,
        /// The bind error.
        source: std::io::Error,
    },
    /// The egress proxy cannot listen on loopback at all.
    #[error(
        "the egress proxy cannot listen on 127.0.0.1 ({source}): no loopback port is free in the Pod (a sidecar \
         holding the ephemeral range?) or no loopback interface; host rules cannot be enforced without it"
    )]
    EgressProxyUnavailable {
        /// The bind error.
        source: std::io::Error,
    },
    /// The snapshot volume is full of files retention may not delete.
    #[error(
        "the snapshot volume {dir} is full: {used} bytes in use of {capacity} after retention (full at {full_at}); \
         what is left is the snapshot the session printed last and files in subdirectories, which retention does \
         not delete. Remedy: give the volume more room (spec.snapshots.volume.emptyDir.sizeLimit or the claim's \
         size), or have the agent remove what it wrote in subdirectories"
    )]
    SnapshotVolumeFull {
        /// The snapshot directory.
        dir: PathBuf,
        /// Bytes in use.
        used: u64,
        /// Bytes above which the volume counts as full.
        full_at: u64,
        /// The volume's size.
        capacity: u64,
    },
    /// The daemon could not be started at all (e.g. the CLI is not runnable).
    #[error("the playwright-cli daemon could not be started: {0}")]
    DaemonStart(String),
}

impl Fatal {
    /// The CamelCase reason of the termination message.
    pub fn reason(&self) -> &'static str {
        match self {
            Fatal::Config { .. } => "RuntimeConfigInvalid",
            Fatal::SocketBudget(_) => "SocketBudgetExceeded",
            Fatal::Namespace { .. } => "SocketNamespaceUnsafe",
            Fatal::Hooks(HooksError::Missing { .. }) => "SocketHooksMissing",
            Fatal::Hooks(_) => "PlaywrightCliNotFound",
            Fatal::Browser(_) => "BrowserRevisionAbsent",
            Fatal::NoUsableSandbox { .. } => "NoUsableSandbox",
            Fatal::SandboxAsRoot { .. } => "SandboxRequiresNonRoot",
            Fatal::ViewerPortTaken { .. } => "ViewerPortTaken",
            Fatal::CdpPortTaken { .. } => "CdpPortTaken",
            Fatal::EgressProxyUnavailable { .. } => "EgressProxyUnavailable",
            Fatal::ReadinessPortTaken { .. } => "ReadinessPortTaken",
            Fatal::RecordingUnavailable { .. } => "RecordingUnavailable",
            Fatal::SnapshotVolumeFull { .. } => "SnapshotVolumeFull",
            Fatal::DaemonStart(_) => "DaemonStartFailed",
        }
    }
}

/// Process exit codes.
pub mod exit {
    /// The session ended on purpose (SIGTERM, maximum lifetime): the Pod may complete.
    pub const ENDED: i32 = 0;
    /// A fatal error; the termination message says which.
    pub const FATAL: i32 = 1;
    /// The probe found the session not ready. (Usage errors exit 2, from clap.)
    pub const NOT_READY: i32 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_one_the_operator_knows_as_the_sessions_own() {
        let io = || std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let path = PathBuf::from("/x");
        let text = String::new;
        let all = [
            Fatal::Config { path: path.clone(), message: text() },
            Fatal::SocketBudget(SocketBudgetExceeded { len: 1, sockets_dir: text(), session: text() }),
            Fatal::Namespace { path: path.clone(), message: text() },
            Fatal::Hooks(HooksError::Missing { core: path.clone(), missing: vec![] }),
            Fatal::Hooks(HooksError::NoPackage { launcher: path.clone(), why: text() }),
            Fatal::Browser(BrowserMissing::Nothing(text())),
            Fatal::NoUsableSandbox { detail: text() },
            Fatal::SandboxAsRoot { detail: text() },
            Fatal::ViewerPortTaken { port: 1, source: io() },
            Fatal::CdpPortTaken { port: 1, source: io() },
            Fatal::EgressProxyUnavailable { source: io() },
            Fatal::ReadinessPortTaken { addr: "127.0.0.1:1".parse().unwrap(), source: io() },
            Fatal::RecordingUnavailable { what: "video", verb: text(), detail: text() },
            Fatal::SnapshotVolumeFull { dir: path, used: 1, full_at: 1, capacity: 1 },
            Fatal::DaemonStart(text()),
        ];
        for fatal in &all {
            assert!(
                playpen_api::runtime_config::RUNTIME_FAILURE_REASONS.contains(&fatal.reason()),
                "{} is missing from RUNTIME_FAILURE_REASONS",
                fatal.reason()
            );
        }
    }
}
