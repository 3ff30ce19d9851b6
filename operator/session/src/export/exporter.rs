//! `playpen-session export`: the exporter container, a native sidecar of
//! the browser Pod (docs/recordings-export.md). Every [`SCAN_EVERY`] it
//! uploads what [`super::plan`] picks from the recordings directory on the
//! shared snapshot volume, keeps the manifest in the store current, marks
//! each recording a crash cut short (`interrupted.json`, which the runtime
//! writes at its next start) with an `interrupted` object, and writes its
//! progress to `recordings/.export/status.json`. While it uploads a file,
//! `recordings/.export/uploading.json` names it (retention leaves that file
//! alone; the ledger beside it tells retention what is stored, to delete
//! first). The kubelet stops it after
//! the browser container: on SIGTERM it makes a final pass (the last
//! segment included) within the Pod's grace period and exits.
//!
//! The credentials Secret is mounted into this container alone; the
//! browser and an agent never see it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use playpen_api::export_status::{
    ExportStatus, Uploading, EXPORT_LEDGER_FILE, EXPORT_STATE_DIR, EXPORT_UPLOADING_FILE,
};
use playpen_api::runtime_config::{RecordingExportConfig, RuntimeConfig};
use tokio::signal::unix::{signal, SignalKind};

use super::plan::{self, Item, Listed, Seen};
use super::status_board::{self, write_whole, StatusBoard};
use super::{
    created_at, destination_of, session_of, CredentialsSource, ExportError, InterruptedMarker, Manifest, SegmentKind,
    SessionInfo, UploadOptions, Uploader, MANIFEST_FORMAT,
};
use crate::config::{load, Options};
use crate::error::exit;
use crate::run::browser::recording;

/// How often the recordings directory is looked at.
pub const SCAN_EVERY: Duration = Duration::from_secs(5);
/// How long the final pass may take (the Pod's grace period is longer).
pub const FINAL_PASS_WITHIN: Duration = Duration::from_secs(30);
/// How long SIGTERM waits for the browser's close to finish the last segment.
const CLOSE_WAIT: Duration = Duration::from_secs(25);
/// The most files one pass lists.
const MAX_LISTED: usize = 100_000;
/// A live trace file is sent again at most this often when no segment
/// interval is configured.
const DEFAULT_LIVE_EVERY: Duration = Duration::from_secs(60);

/// Runs the exporter until SIGTERM; the process's exit code.
pub async fn run(opts: Options) -> i32 {
    let Ok(mut sigterm) = signal(SignalKind::terminate()) else {
        eprintln!("playpen-session export: cannot handle SIGTERM");
        return exit::FATAL;
    };
    let config = match load(Path::new(&opts.config)) {
        Ok(config) => config,
        Err(err) => {
            tracing::error!(%err, "cannot read the runtime configuration");
            return exit::FATAL;
        }
    };
    let recordings = recording::dir(Path::new(&config.output_dir));
    let state = recordings.join(EXPORT_STATE_DIR);
    let Some(export) = config.recording_export.clone() else {
        tracing::info!("no recording export configured: idle until stopped");
        sigterm.recv().await;
        return exit::ENDED;
    };
    if let Err(err) = std::fs::create_dir_all(&state) {
        tracing::error!(path = %state.display(), %err, "cannot create the exporter's state directory");
        return exit::FATAL;
    }
    // A previous exporter stopped mid-upload: that file is no longer being read.
    uploading(&state, None);
    let mut exporter = match Exporter::new(&config, &export, &opts.export_credentials_dir, &recordings, &state) {
        Ok(exporter) => exporter,
        Err(err) => {
            // A destination that cannot work is said in the status; restarting would not fix it.
            tracing::error!(%err, "recording export disabled");
            status_board::write(&state, &ExportStatus { last_error: Some(err.to_string()), ..ExportStatus::default() });
            sigterm.recv().await;
            return exit::ENDED;
        }
    };
    tracing::info!(destination = %exporter.board.destination(), "exporting recordings");
    let writer = tokio::spawn(status_board::keep_written(exporter.board.clone(), state.clone()));
    loop {
        tokio::select! {
            () = tokio::time::sleep(SCAN_EVERY) => {}
            _ = sigterm.recv() => break,
        }
        tokio::select! {
            () = exporter.pass(false) => {}
            _ = sigterm.recv() => break,
        }
    }
    // The kubelet stops a native sidecar after the browser container; should
    // both stop at once, the browser's close finishes the last segment
    // first (it removes the note of the recording in progress).
    let closing = std::time::Instant::now();
    while recording::in_progress(&exporter.recordings).is_some() && closing.elapsed() < CLOSE_WAIT {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tracing::info!("stopping: the final pass uploads what is left");
    let before = exporter.uploader.progress().objects;
    if tokio::time::timeout(FINAL_PASS_WITHIN, exporter.pass(true)).await.is_err() {
        tracing::warn!("the final pass did not finish within {FINAL_PASS_WITHIN:?}: what is left stays on the volume");
    }
    // Cut short while sending trace files: the manifest names those stored.
    if exporter.unpublished {
        match tokio::time::timeout(Duration::from_secs(5), exporter.publish_manifest()).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(%err, "cannot write the manifest"),
            Err(_) => tracing::warn!("the manifest could not be written within 5 s"),
        }
    }
    let segments = exporter.manifest.segments.len();
    tracing::info!(objects = exporter.uploader.progress().objects - before, segments, "final pass done");
    writer.abort();
    status_board::write(&state, &exporter.board.status());
    exit::ENDED
}

/// One session's export.
struct Exporter {
    uploader: Arc<Uploader>,
    recordings: PathBuf,
    manifest: Manifest,
    manifest_copy: PathBuf,
    session: SessionInfo,
    board: Arc<StatusBoard>,
    sent: HashMap<PathBuf, Instant>,
    live_every: Duration,
    state: PathBuf,
    /// Trace files stored since the manifest was last written.
    unpublished: bool,
}

impl Exporter {
    fn new(
        config: &RuntimeConfig,
        export: &RecordingExportConfig,
        credentials: &Path,
        recordings: &Path,
        state: &Path,
    ) -> Result<Self, ExportError> {
        let destination =
            destination_of(export, CredentialsSource::Files { dir: credentials.to_owned() }).validate()?;
        let session = session_of(export);
        let created = created_at(config.session_started_at.as_deref()).unwrap_or_else(Utc::now);
        let uploader =
            Uploader::new(&destination, &session, created, &state.join(EXPORT_LEDGER_FILE), UploadOptions::default())?;
        let manifest_copy = state.join("manifest.json");
        let info = SessionInfo::from(&session);
        let manifest = std::fs::read(&manifest_copy)
            .ok()
            .and_then(|bytes| Manifest::from_json(&bytes).ok())
            .unwrap_or_else(|| Manifest::new(info.clone(), Utc::now()));
        let destination_text = format!("s3://{}/{}/", destination.bucket, uploader.layout().prefix().as_str());
        let uploader = Arc::new(uploader);
        let board = Arc::new(StatusBoard::new(uploader.clone(), destination_text));
        board.counts(manifest.segments.len(), manifest.interruptions.len());
        Ok(Self {
            uploader,
            recordings: recordings.to_owned(),
            manifest,
            manifest_copy,
            session: info,
            board,
            sent: HashMap::new(),
            live_every: DEFAULT_LIVE_EVERY,
            state: state.to_owned(),
            unpublished: false,
        })
    }

    /// One pass: the planned files, the manifest once if trace files were
    /// stored, then the `interrupted` markers.
    async fn pass(&mut self, final_pass: bool) {
        let listed = list(&self.recordings);
        let in_progress = recording::in_progress(&self.recordings).and_then(|s| s.video);
        let in_progress_name = in_progress.as_deref().and_then(|p| Path::new(p).file_name()).and_then(|n| n.to_str());
        let uploader = self.uploader.clone();
        let recordings = self.recordings.clone();
        let stored = |rel: &Path| uploader.is_uploaded(&recordings.join(rel));
        let now = Instant::now();
        let live_every = self.live_every;
        let sent = &self.sent;
        let lately = |rel: &Path| sent.get(rel).is_some_and(|at| now.duration_since(*at) < live_every);
        let seen = Seen { video_in_progress: in_progress_name, final_pass, stored: &stored, sent_lately: &lately };
        let items = plan::plan(&listed, &seen);
        for item in items {
            let (Item::Video { rel, .. } | Item::Trace { rel, .. }) = &item;
            uploading(&self.state, Some(&self.recordings.join(rel)));
            if let Err(err) = self.send(&item).await {
                tracing::warn!(%err, "recording upload failed; it stays on the volume and is tried again");
            }
        }
        uploading(&self.state, None);
        if self.unpublished {
            if let Err(err) = self.publish_manifest().await {
                tracing::warn!(%err, "cannot write the manifest; trying again at the next pass");
            }
        }
        self.mark_interruptions().await;
    }

    async fn send(&mut self, item: &Item) -> Result<(), ExportError> {
        let (rel, kind, key, started) = match item {
            Item::Video { rel, started_ms } => {
                let seq = self.manifest.segments.iter().filter(|s| s.kind == SegmentKind::Video).count() + 1;
                let key = self.uploader.layout().video(u32::try_from(seq).unwrap_or(u32::MAX))?;
                (rel, SegmentKind::Video, key, Some(millis(*started_ms)))
            }
            Item::Trace { rel, under_traces } => {
                (rel, SegmentKind::Trace, self.uploader.layout().trace(under_traces)?, None)
            }
        };
        let path = self.recordings.join(rel);
        let modified: DateTime<Utc> =
            std::fs::metadata(&path).and_then(|m| m.modified()).map_or_else(|_| Utc::now(), DateTime::from);
        let upload = self.uploader.upload_file(&path, &key).await?;
        tracing::info!(file = %rel.display(), %key, bytes = upload.bytes, "stored");
        self.sent.insert(rel.clone(), Instant::now());
        self.manifest.record(upload.segment(kind, started.unwrap_or(modified), modified), Utc::now());
        if publish_after(kind) {
            self.publish_manifest().await
        } else {
            self.unpublished = true;
            Ok(())
        }
    }

    /// One `interrupted` object for each recording the runtime found cut
    /// short and no marker names yet.
    async fn mark_interruptions(&mut self) {
        let cut = recording::interrupted(&self.recordings);
        for started in cut.iter().skip(self.manifest.interruptions.len()) {
            let last_segment =
                self.manifest.segments.iter().rev().find(|s| s.kind == SegmentKind::Video).map(|s| s.key.clone());
            let marker = InterruptedMarker {
                format: MANIFEST_FORMAT,
                session: self.session.clone(),
                recording_started: Some(millis(started.started_ms)),
                detected: Utc::now(),
                last_segment,
                reason: "the browser container ended without finishing this recording (a crash, a kill or an \
                         eviction): what it recorded after the last uploaded segment is lost"
                    .into(),
            };
            match self.uploader.put_interrupted(&marker).await {
                Ok(key) => {
                    self.manifest.interrupted(key, Utc::now());
                    if let Err(err) = self.publish_manifest().await {
                        tracing::warn!(%err, "cannot write the manifest");
                    }
                }
                Err(err) => {
                    tracing::warn!(%err, "cannot write an interrupted marker; trying again at the next pass");
                    return;
                }
            }
        }
    }

    /// The manifest to the store, and its local copy (an exporter
    /// restarted in the same Pod goes on from it).
    async fn publish_manifest(&mut self) -> Result<(), ExportError> {
        self.board.counts(self.manifest.segments.len(), self.manifest.interruptions.len());
        self.uploader.put_manifest(&self.manifest).await?;
        self.unpublished = false;
        let copy = self.manifest.to_json();
        if let Err(err) = write_whole(&self.manifest_copy, &copy) {
            tracing::warn!(path = %self.manifest_copy.display(), %err, "cannot keep the manifest's copy");
        }
        Ok(())
    }
}

/// Whether the manifest is written at once after storing a file of `kind`.
/// A video segment: yes, so that the store's manifest names it as soon as
/// it is there. A trace file: at the end of the pass (a trace with
/// screenshots stores a resource for every screencast frame, and writing
/// the whole manifest after each was quadratic; the benchmark's figures
/// are in docs/recordings-export.md).
fn publish_after(kind: SegmentKind) -> bool {
    kind == SegmentKind::Video
}

fn millis(ms: u64) -> DateTime<Utc> {
    DateTime::from(SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

/// The files directly in `recordings` and under its `traces/`, relative to
/// it (at most [`MAX_LISTED`]; symlinks are not followed).
fn list(recordings: &Path) -> Vec<Listed> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(recordings.join(&rel)) else { continue };
        for entry in entries.flatten() {
            if out.len() >= MAX_LISTED {
                return out;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let child = rel.join(entry.file_name());
            // Below the top only `traces/` is walked (the exporter's own state and notes stay).
            let walked = !rel.as_os_str().is_empty() || entry.file_name() == recording::TRACES;
            if kind.is_dir() && walked {
                dirs.push(child);
            } else if kind.is_file() {
                out.push(Listed { rel: child });
            }
        }
    }
    out
}

/// Names the file being uploaded now in the state directory, for retention
/// (`None`: no upload runs). Best effort: without the note retention may
/// delete the file mid-upload only when nothing uploaded is left to delete.
fn uploading(state: &Path, path: Option<&Path>) {
    let note = state.join(EXPORT_UPLOADING_FILE);
    let done = match path {
        Some(path) => {
            let bytes = serde_json::to_vec(&Uploading { path: path.display().to_string() }).unwrap_or_default();
            write_whole(&note, &bytes)
        }
        None => {
            std::fs::remove_file(&note)
                .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
        }
    };
    if let Err(err) = done {
        tracing::debug!(path = %note.display(), %err, "cannot note the upload in progress");
    }
}
