//! Session recordings with the CLI's own verbs: after each browser start,
//! `video-start <recordings>/video-<ms>.webm` and `tracing-start`; on a
//! graceful close, `video-stop` and `tracing-stop` before `close`. Files live
//! in `<output dir>/recordings/` on the snapshot volume: videos directly,
//! traces under `traces/` (the CLI writes them to `<output dir>/traces`,
//! which the runtime makes a symlink into `recordings/`). The trace is
//! "live": written as actions happen, so a crash keeps what came before it.
//!
//! A recording in progress is noted in `recordings/in-progress.json` (the
//! readiness probe waits for it, so no agent command goes unrecorded); a
//! note found at the next start names a recording a crash cut short, which
//! is then said so (`interrupted.json`, kept, and a warning in the log).
//! With video segments ([`crate::run::browser::segments`]) the note names
//! the segment being recorded; the ones before it are finished videos.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use playpen_api::layout::RECORDINGS_SUBDIR;
use serde::{Deserialize, Serialize};

use crate::error::Fatal;
use crate::run::process::reaper::Managed;
use crate::run::process::supervisor::{run_for_answer, run_to_end, ChildSpec, Unanswered};

/// How long one recording command may take (`video-stop` finishes the file).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest a start verb may take once earlier tries ran out of time.
const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(300);
/// The note of the recording in progress.
const IN_PROGRESS: &str = "in-progress.json";
/// Recordings a crash cut short, newest last.
const INTERRUPTED: &str = "interrupted.json";
/// Where traces go inside the recordings directory (and the name of the
/// symlink to it in the output directory, where the CLI writes them).
pub const TRACES: &str = "traces";

/// What a session records, and how the CLI is run for it.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Record a video.
    pub video: bool,
    /// Record a trace.
    pub trace: bool,
    /// `<output dir>/recordings`.
    pub dir: PathBuf,
    /// The session name (`-s=`).
    pub session: String,
    /// `playwright-cli` with the session's environment; its args are replaced.
    pub cli: ChildSpec,
    /// With video, the length of a video segment (`videoSegmentSeconds`).
    pub segments: Option<Duration>,
    /// Held while recording verbs run: a rotation of the video, the start
    /// after a browser start and the stop at the close never interleave.
    pub verbs: Arc<tokio::sync::Mutex<()>>,
    /// Notified when a rotation of the video is asked for now (SIGUSR1,
    /// `playpen-session rotate`; `segments.rs`).
    pub on_demand: Arc<tokio::sync::Notify>,
}

/// One recording: what was started, when, into which files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// Unix milliseconds at the start (of the recording, not of a video
    /// segment: the trace in progress is the one started since then).
    pub started_ms: u64,
    /// The video file being written, when recording video (with segments,
    /// the current segment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<String>,
    /// Whether a trace was started.
    #[serde(default)]
    pub trace: bool,
    /// The start commands have run: the session is being recorded. Until
    /// then the readiness probe fails, so no agent acts unrecorded.
    #[serde(default)]
    pub recording: bool,
}

/// Where recordings go inside the CLI's output directory.
pub fn dir(output_dir: &Path) -> PathBuf {
    output_dir.join(RECORDINGS_SUBDIR)
}

/// The recording in progress, noted in the recordings directory `recordings`.
pub fn in_progress(recordings: &Path) -> Option<Started> {
    read_json(&recordings.join(IN_PROGRESS))
}

/// The recordings a crash cut short, noted in the recordings directory
/// `recordings`, oldest first (what the exporter marks `interrupted`).
pub fn interrupted(recordings: &Path) -> Vec<Started> {
    read_json(&recordings.join(INTERRUPTED)).unwrap_or_default()
}

/// Whether `file_name` in the recordings directory is one of the runtime's
/// notes (or a note being written), not a recording.
pub fn is_note(file_name: &std::ffi::OsStr) -> bool {
    [IN_PROGRESS, INTERRUPTED].iter().any(|note| file_name == *note || temporary(Path::new(note)) == file_name)
}

/// Why the readiness probe must wait, when the session records.
pub fn not_yet_recording(output_dir: &Path) -> Option<String> {
    let note = dir(output_dir).join(IN_PROGRESS);
    match in_progress(&dir(output_dir)) {
        Some(started) if started.recording => None,
        Some(_) => Some("the recordings are starting".into()),
        None => Some(format!("no recording in progress ({} is missing)", note.display())),
    }
}

impl Recorder {
    /// `<dir>/video-<ms>.webm`.
    pub fn video_file(&self, started_ms: u64) -> PathBuf {
        self.dir.join(format!("video-{started_ms}.webm"))
    }

    /// The argv of each start command.
    pub fn start_args(&self, started: &Started) -> Vec<Vec<String>> {
        let s = format!("-s={}", self.session);
        let mut all = Vec::new();
        if let Some(video) = &started.video {
            all.push(vec![s.clone(), "video-start".into(), video.clone()]);
        }
        if started.trace {
            all.push(vec![s, "tracing-start".into()]);
        }
        all
    }

    /// The argv of each stop command (the reverse order of the starts).
    pub fn stop_args(&self) -> Vec<Vec<String>> {
        let s = format!("-s={}", self.session);
        let mut all = Vec::new();
        if self.trace {
            all.push(vec![s.clone(), "tracing-stop".into()]);
        }
        if self.video {
            all.push(vec![s, "video-stop".into()]);
        }
        all
    }

    /// Creates `recordings/` and `traces` → `recordings/traces` beside it;
    /// says so of a recording the last container left in progress.
    pub fn prepare(&self, output_dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(self.dir.join(TRACES))?;
        let link = output_dir.join(TRACES);
        match link.symlink_metadata() {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::os::unix::fs::symlink(Path::new(RECORDINGS_SUBDIR).join(TRACES), &link)?;
            }
            Err(err) => return Err(err),
        }
        if let Some(cut) = self.take_in_progress() {
            tracing::warn!(started_ms = cut.started_ms, video = ?cut.video, trace = cut.trace,
                "a recording was cut short: the browser container ended without a graceful close");
            self.note_interrupted(cut)?;
        }
        Ok(())
    }

    /// Starts recording in the running browser; a recording that cannot
    /// start is fatal (the spec asked for it; the session must not go on unrecorded).
    pub async fn start(&self, managed: &Managed) -> Result<(), Fatal> {
        let _verbs = self.verbs.lock().await;
        let started_ms = unix_ms(SystemTime::now());
        let started = Started {
            started_ms,
            video: self.video.then(|| self.video_file(started_ms).display().to_string()),
            trace: self.trace,
            recording: false,
        };
        // Noted first: a crash during the start still leaves the note.
        if let Some(cut) = self.take_in_progress() {
            // A daemon restart inside this container: the last recording ended with its browser.
            if let Err(err) = self.note_interrupted(cut) {
                tracing::warn!(%err, "cannot note an interrupted recording");
            }
        }
        if let Err(err) = write_json(&self.dir.join(IN_PROGRESS), &started) {
            tracing::warn!(%err, "cannot note the recording in progress");
        }
        for args in self.start_args(&started) {
            let verb = args.get(1).cloned().unwrap_or_default();
            let command = self.with_args(args);
            // A verb that answers no is the session's to fix; one that ran
            // out of time is a slow node: tried again, with longer each time.
            let mut timeout = COMMAND_TIMEOUT;
            loop {
                match run_for_answer(&command, timeout, managed).await {
                    Ok(_) => break,
                    Err(Unanswered::TimedOut(why)) => {
                        timeout = (timeout * 2).min(MAX_COMMAND_TIMEOUT);
                        tracing::warn!(%why, next_timeout = ?timeout, "a recording verb ran out of time: a slow node; trying again");
                    }
                    Err(Unanswered::Failed(why)) => {
                        let what = if verb == "video-start" { "video" } else { "trace" };
                        return Err(Fatal::RecordingUnavailable {
                            what,
                            verb,
                            detail: playpen_api::text::truncate(&why, 1024),
                        });
                    }
                }
            }
        }
        let recording = Started { recording: true, ..started };
        if let Err(err) = write_json(&self.dir.join(IN_PROGRESS), &recording) {
            tracing::warn!(%err, "cannot note the recording in progress");
        }
        Ok(())
    }

    /// Stops recording, finishing the files (bounded by `budget`).
    pub async fn stop(&self, managed: &Managed, budget: Duration) {
        let began = tokio::time::Instant::now();
        // A rotation under way finishes first (it starts no new segment once
        // the session is closing); one that takes too long is not waited for.
        let _verbs = tokio::time::timeout(budget / 2, self.verbs.lock()).await.ok();
        let per_command = budget.saturating_sub(began.elapsed()).min(COMMAND_TIMEOUT);
        for args in self.stop_args() {
            run_to_end(&self.with_args(args), per_command, managed).await;
        }
        match std::fs::remove_file(self.dir.join(IN_PROGRESS)) {
            Ok(()) => tracing::info!(dir = %self.dir.display(), "recordings finalised"),
            Err(err) => tracing::warn!(%err, "no recording in progress to finalise"),
        }
    }

    /// Notes `started` as the recording in progress.
    pub(crate) fn note_in_progress(&self, started: &Started) -> std::io::Result<()> {
        write_json(&self.dir.join(IN_PROGRESS), started)
    }

    fn with_args(&self, args: Vec<String>) -> ChildSpec {
        ChildSpec { args, ..self.cli.clone() }
    }

    fn take_in_progress(&self) -> Option<Started> {
        let taken = in_progress(&self.dir);
        let _ = std::fs::remove_file(self.dir.join(IN_PROGRESS));
        taken
    }

    fn note_interrupted(&self, cut: Started) -> std::io::Result<()> {
        let path = self.dir.join(INTERRUPTED);
        let mut all: Vec<Started> = read_json(&path).unwrap_or_default();
        all.push(cut);
        write_json(&path, &all)
    }
}

/// Unix milliseconds of `time` (0 before the epoch).
pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A note, if it is there and whole.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Written whole, then renamed: a reader never sees half a file.
fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let tmp = temporary(path);
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?)?;
    std::fs::rename(tmp, path)
}

/// Where a note is written before it is renamed into place.
fn temporary(note: &Path) -> PathBuf {
    note.with_extension("json.tmp")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(dir: &Path, video: bool, trace: bool) -> Recorder {
        Recorder {
            video,
            trace,
            dir: super::dir(dir),
            session: "demo".into(),
            cli: ChildSpec {
                name: "recording",
                program: "/bin/true".into(),
                args: vec![],
                env: vec![],
                cwd: dir.to_owned(),
            },
            segments: None,
            verbs: Arc::default(),
            on_demand: Arc::default(),
        }
    }

    #[test]
    fn starts_and_stops_name_the_session_and_stop_in_reverse() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path(), true, true);
        let started = Started {
            started_ms: 42,
            video: Some(r.video_file(42).display().to_string()),
            trace: true,
            recording: false,
        };
        let video = tmp.path().join("recordings/video-42.webm").display().to_string();
        assert_eq!(
            r.start_args(&started),
            [vec!["-s=demo".to_owned(), "video-start".into(), video], vec!["-s=demo".into(), "tracing-start".into()]]
        );
        assert_eq!(r.stop_args(), [["-s=demo", "tracing-stop"], ["-s=demo", "video-stop"]]);
        let trace_only = recorder(tmp.path(), false, true);
        assert_eq!(trace_only.stop_args(), [["-s=demo", "tracing-stop"]]);
        assert!(recorder(tmp.path(), false, false).stop_args().is_empty());
    }

    #[test]
    fn the_notes_and_the_files_they_are_written_to_are_notes_not_recordings() {
        for name in ["in-progress.json", "interrupted.json", "in-progress.json.tmp", "interrupted.json.tmp"] {
            assert!(is_note(name.as_ref()), "{name}");
        }
        for name in ["video-1.webm", "in-progress.jsonl", "notes.json", "trace-1.trace"] {
            assert!(!is_note(name.as_ref()), "{name}");
        }
    }

    #[test]
    fn traces_land_in_recordings_and_an_existing_traces_entry_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path(), false, true);
        r.prepare(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("traces/t.trace"), "x").unwrap();
        assert!(tmp.path().join("recordings/traces/t.trace").exists(), "through the symlink");
        // Again (a restarted container): the link is kept, not an error.
        r.prepare(tmp.path()).unwrap();
    }

    #[tokio::test]
    async fn a_recording_left_in_progress_is_said_to_be_cut_short() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path(), true, true);
        r.prepare(tmp.path()).unwrap();
        assert!(not_yet_recording(tmp.path()).is_some(), "not ready before the recordings start");
        let managed = Managed::default();
        r.start(&managed).await.unwrap();
        assert_eq!(not_yet_recording(tmp.path()), None, "ready once they run");
        let note = r.dir.join(IN_PROGRESS);
        let first: Started = serde_json::from_str(&std::fs::read_to_string(&note).unwrap()).unwrap();
        assert!(first.video.as_deref().is_some_and(|v| v.ends_with(".webm")) && first.trace && first.recording);
        // The container dies (no stop); the next one prepares.
        r.prepare(tmp.path()).unwrap();
        assert!(!note.exists());
        let cut: Vec<Started> =
            serde_json::from_str(&std::fs::read_to_string(r.dir.join(INTERRUPTED)).unwrap()).unwrap();
        assert_eq!(cut, [first]);
        // A graceful stop leaves no note and adds nothing to the cut list.
        r.start(&managed).await.unwrap();
        r.stop(&managed, Duration::from_secs(5)).await;
        assert!(!note.exists());
        let cut: Vec<Started> =
            serde_json::from_str(&std::fs::read_to_string(r.dir.join(INTERRUPTED)).unwrap()).unwrap();
        assert_eq!(cut.len(), 1);
    }
}
