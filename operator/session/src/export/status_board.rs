//! The exporter's status file, kept current while a pass runs: a pass can
//! wait on the store for minutes (an upload retried with backoff while the
//! credentials are wrong), and the operator reads the file (through the
//! runtime's `GET /export`) for the session's `RecordingsExported`
//! condition. A writer task rewrites it every [`WRITE_EVERY`] when it
//! changed; the exporter tells the board what its manifest counts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use playpen_api::export_status::{ExportStatus, EXPORT_STATUS_FILE};

use super::Uploader;

/// How often the status file is brought up to date.
pub const WRITE_EVERY: Duration = Duration::from_secs(2);

/// What the status file says, from the uploader's progress and the
/// manifest's counts.
#[derive(Debug)]
pub struct StatusBoard {
    uploader: Arc<Uploader>,
    destination: String,
    segments: AtomicU64,
    interruptions: AtomicU64,
}

impl StatusBoard {
    /// A board for `uploader`'s uploads to `destination` (`s3://bucket/prefix/`).
    pub fn new(uploader: Arc<Uploader>, destination: String) -> Self {
        Self { uploader, destination, segments: AtomicU64::new(0), interruptions: AtomicU64::new(0) }
    }

    /// The manifest now lists `segments` segments and `interruptions` markers.
    pub fn counts(&self, segments: usize, interruptions: usize) {
        self.segments.store(segments as u64, Ordering::Relaxed);
        self.interruptions.store(interruptions as u64, Ordering::Relaxed);
    }

    /// Where the recordings go.
    pub fn destination(&self) -> &str {
        &self.destination
    }

    /// The status as of now.
    pub fn status(&self) -> ExportStatus {
        let progress = self.uploader.progress();
        ExportStatus {
            destination: self.destination.clone(),
            objects: progress.objects,
            bytes: progress.bytes,
            segments: self.segments.load(Ordering::Relaxed),
            interruptions: self.interruptions.load(Ordering::Relaxed),
            last_upload: progress.last_upload.map(|t| t.to_rfc3339()),
            last_error: progress.last_error,
        }
    }
}

/// Rewrites the status file in `state` whenever the board changed, until
/// dropped (the exporter writes the last one itself).
pub async fn keep_written(board: Arc<StatusBoard>, state: PathBuf) {
    let mut written: Option<ExportStatus> = None;
    loop {
        let now = board.status();
        if written.as_ref() != Some(&now) {
            write(&state, &now);
            written = Some(now);
        }
        tokio::time::sleep(WRITE_EVERY).await;
    }
}

/// Writes `status` to the file in `state`.
pub fn write(state: &Path, status: &ExportStatus) {
    let path = state.join(EXPORT_STATUS_FILE);
    let bytes = serde_json::to_vec_pretty(status).unwrap_or_default();
    if let Err(err) = write_whole(&path, &bytes) {
        tracing::warn!(path = %path.display(), %err, "cannot write the export status");
    }
}

/// Written whole, then renamed: a reader never sees half a file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}
