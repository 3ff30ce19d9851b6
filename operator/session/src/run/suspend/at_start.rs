//! Resume at start: a resumed session's Pod mounts its suspended state and
//! `runtime.json` names it (`resumeStateFile`). Once the daemon first runs,
//! the runtime reopens the document ([`super::resume`]), and until that
//! finished (or gave up after [`RESUME_BOUND`]) a marker in the socket
//! namespace keeps the readiness probe from passing, so the operator and
//! agents see Ready only with the tabs back.
//!
//! Once per container: a later daemon restart does not reopen the document
//! again (the session has moved on since). A container restart does, as a
//! cold start would: its browser is fresh, and the document is what the
//! session was. A file that is not a document is logged by reason and
//! skipped; nothing here is fatal.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use playpen_api::runtime_config::RuntimeConfig;
use tokio::sync::watch;

use super::{read_document, resume, tab_line, SuspendError};
use crate::run::browser::daemon::DaemonState;

/// The marker, in the socket namespace, that holds readiness back.
pub const PENDING_FILE: &str = "resume-pending";
/// The longest the probe is held back: then it passes and the log says the
/// tabs did not all come back (each tab's load has 30 s of it).
pub const RESUME_BOUND: Duration = Duration::from_secs(60);

/// Why the probe must wait, if a reopen is pending in `namespace`.
pub fn pending(namespace: &Path) -> Option<String> {
    namespace.join(PENDING_FILE).exists().then(|| "the suspended state is being reopened (tabs and storage)".to_owned())
}

/// The marker while it exists; removed on drop, so every way out of the
/// reopen (done, refused, given up, the runtime closing) lets the probe pass.
#[derive(Debug)]
pub struct Pending(Option<PathBuf>);

impl Pending {
    /// Writes the marker when `file` is set, and clears one a previous
    /// container left when it is not. Without a namespace the probe cannot be
    /// held: the reopen still runs.
    pub fn mark(namespace: Option<&Path>, file: Option<&str>) -> Self {
        let Some(marker) = namespace.map(|dir| dir.join(PENDING_FILE)) else { return Self(None) };
        if file.is_none() {
            let _ = std::fs::remove_file(&marker);
            return Self(None);
        }
        match std::fs::write(&marker, b"") {
            Ok(()) => Self(Some(marker)),
            Err(err) => {
                tracing::warn!(marker = %marker.display(), %err, "cannot hold readiness for the resume; it still runs");
                Self(None)
            }
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(marker) = self.0.take() {
            let _ = std::fs::remove_file(marker);
        }
    }
}

/// Reopens `file` into the session once its daemon first runs, then
/// releases `held`.
pub async fn reopen_once(config: RuntimeConfig, file: PathBuf, held: Pending, mut state: watch::Receiver<DaemonState>) {
    let _held = held;
    let (doc, dropped) = match read_document(&file) {
        Ok(read) => read,
        Err(err) => {
            let reason = refusal(&err);
            tracing::warn!(file = %file.display(), %reason, "resume: the suspended state is not reopened; the session starts without it");
            return;
        }
    };
    for note in &dropped {
        tracing::info!(%note, "resume: left out of the reopen");
    }
    let first = state.wait_for(|s| matches!(s, DaemonState::Running { .. } | DaemonState::Stopped)).await.map(|s| *s);
    if !matches!(first, Ok(DaemonState::Running { .. })) {
        return;
    }
    let started = Instant::now();
    match tokio::time::timeout(RESUME_BOUND, resume(&config, &doc)).await {
        Ok(Ok(reopened)) => {
            for (index, tab) in reopened.tabs.iter().enumerate() {
                tracing::info!("resume: {}", tab_line(index, tab));
            }
            let loaded = reopened.tabs.iter().filter(|t| t.loaded).count();
            tracing::info!(
                tabs = reopened.tabs.len(),
                loaded,
                cookies = doc.storage.cookies.len(),
                took_ms = started.elapsed().as_millis() as u64,
                "resume: the suspended state is reopened"
            );
        }
        Ok(Err(err)) => {
            tracing::warn!(step = err.step(), %err, "resume: the reopen failed; the session runs without (all of) it");
        }
        Err(_) => tracing::warn!(
            after = ?RESUME_BOUND,
            "resume: the reopen did not finish in time; the session turns ready and the tabs did not all come back"
        ),
    }
}

/// Why a document was refused, without serde's quote of the offending
/// value (a garbled document may hold a cookie where a number belongs).
fn refusal(err: &SuspendError) -> String {
    match err {
        SuspendError::Document(e) => e.without_values(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use playpen_api::suspend::ParseError;

    use super::*;

    #[test]
    fn the_marker_holds_until_dropped_and_a_stale_one_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let held = Pending::mark(Some(dir.path()), Some("/etc/playpen/resume/state.json"));
        assert!(pending(dir.path()).is_some());
        drop(held);
        assert!(pending(dir.path()).is_none());
        std::fs::write(dir.path().join(PENDING_FILE), b"").unwrap();
        let none = Pending::mark(Some(dir.path()), None);
        assert!(pending(dir.path()).is_none(), "a previous container's marker is gone");
        drop(none);
        drop(Pending::mark(None, Some("x")));
    }

    #[tokio::test]
    async fn a_broken_document_releases_the_probe_without_waiting_for_the_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        std::fs::write(&file, b"{not json").unwrap();
        let held = Pending::mark(Some(dir.path()), Some("set"));
        let (_tell, state) = watch::channel(DaemonState::Starting);
        let reopen = reopen_once(crate::config::tests::sample(), file, held, state);
        tokio::time::timeout(Duration::from_secs(5), reopen).await.unwrap();
        assert!(pending(dir.path()).is_none());
        let quoted = serde_json::from_str::<u32>("\"s3ssion-cookie\"").unwrap_err();
        let reason = refusal(&SuspendError::Document(ParseError::Shape(quoted)));
        assert!(reason.contains("expected u32 (at line 1") && !reason.contains("s3ssion"), "{reason}");
    }
}
