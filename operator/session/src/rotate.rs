//! `playpen-session rotate`: asks the running runtime for a video rotation
//! now and waits until it finished the segment in progress, so that the
//! video so far is a whole file in `recordings/` (and, with an export, the
//! exporter uploads it at its next pass). `kubectl playpen record --rotate`
//! execs it in the browser container.
//!
//! The ask is SIGUSR1 to the runtime (PID 1 of the container; see
//! `run::browser::segments` for why a signal). The answer is read where
//! the runtime writes it anyway: the note of the recording in progress
//! names the next segment once the current one is finished. The runtime
//! answers on stdout with `finished video-<ms>.webm` and exits 0, or with
//! [`EXIT_NOTHING_RECORDING`] / [`EXIT_CLOSING`] (`playpen_api::rotate`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use playpen_api::rotate::{finished_line, EXIT_CLOSING, EXIT_NOTHING_RECORDING};

use crate::config::load;
use crate::error::exit;
use crate::run::browser::recording::{self, in_progress};

/// What the runtime's process is called (`/proc/<pid>/comm`).
const RUNTIME_COMM: &str = "playpen-session";
/// How often the note is looked at.
const POLL: Duration = Duration::from_millis(100);

/// How a rotation asked for went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotated {
    /// The segment in progress, this file, is finished.
    Finished(PathBuf),
    /// No video records.
    NothingRecording,
    /// The session is closing: its close finishes the video.
    Closing,
}

/// Why no answer came.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    /// The process to ask is not the runtime.
    #[error("process {pid} is {comm:?}, not the session runtime ({RUNTIME_COMM}); nothing was signalled")]
    NotTheRuntime {
        /// The PID.
        pid: i32,
        /// What it is called.
        comm: String,
    },
    /// The signal could not be sent.
    #[error("cannot signal the session runtime (pid {pid}): {errno}")]
    Signal {
        /// The PID.
        pid: i32,
        /// Why.
        errno: nix::errno::Errno,
    },
    /// The runtime did not finish the segment in time.
    #[error(
        "the runtime did not finish the video segment {segment} within {within:?}: \
         its log says why (kubectl playpen logs <session>)"
    )]
    TimedOut {
        /// The segment that was in progress.
        segment: String,
        /// How long was waited.
        within: Duration,
    },
}

/// What the note says of the video in progress (pure): its file, while the
/// recording runs.
pub fn video_in_progress(note: Option<&recording::Started>) -> Option<&str> {
    note.filter(|n| n.recording).and_then(|n| n.video.as_deref())
}

/// The outcome once the note is `now`, the rotation having been asked for
/// while `before` was in progress (pure); `None`: not yet.
pub fn outcome(before: &str, now: Option<&recording::Started>) -> Option<Rotated> {
    match now {
        None => Some(Rotated::Closing),
        Some(note) if note.video.as_deref() != Some(before) => Some(Rotated::Finished(PathBuf::from(before))),
        Some(_) => None,
    }
}

/// Asks the runtime `pid` to rotate the video recorded into `recordings`
/// and waits up to `within` for the segment in progress to be finished.
pub async fn rotate(recordings: &Path, pid: i32, within: Duration) -> Result<Rotated, RotateError> {
    let note = in_progress(recordings);
    let Some(before) = video_in_progress(note.as_ref()).map(str::to_owned) else {
        return Ok(Rotated::NothingRecording);
    };
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != RUNTIME_COMM {
        return Err(RotateError::NotTheRuntime { pid, comm: comm.trim().to_owned() });
    }
    kill(Pid::from_raw(pid), Signal::SIGUSR1).map_err(|errno| RotateError::Signal { pid, errno })?;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(done) = outcome(&before, in_progress(recordings).as_ref()) {
            return Ok(done);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(RotateError::TimedOut { segment: before, within });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Runs `playpen-session rotate`; the exit code.
pub async fn run(config: &Path, pid: i32, within: Duration) -> i32 {
    let config = match load(config) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("playpen-session rotate: {err}");
            return exit::FATAL;
        }
    };
    let recordings = recording::dir(Path::new(&config.output_dir));
    match rotate(&recordings, pid, within).await {
        Ok(Rotated::Finished(file)) => {
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            println!("{}", finished_line(&name));
            exit::ENDED
        }
        Ok(Rotated::NothingRecording) => {
            println!("no video is recording (the session records none, or its browser has not started yet)");
            EXIT_NOTHING_RECORDING
        }
        Ok(Rotated::Closing) => {
            println!("the session is closing: its close finishes the video");
            EXIT_CLOSING
        }
        Err(err) => {
            eprintln!("playpen-session rotate: {err}");
            exit::FATAL
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recording::Started;

    fn note(video: &str, recording: bool) -> Started {
        Started { started_ms: 1, video: Some(video.into()), trace: false, recording }
    }

    #[test]
    fn only_a_running_video_can_be_rotated() {
        assert_eq!(video_in_progress(Some(&note("/r/video-1.webm", true))), Some("/r/video-1.webm"));
        assert_eq!(video_in_progress(Some(&note("/r/video-1.webm", false))), None, "still starting");
        assert_eq!(video_in_progress(Some(&Started { video: None, ..note("", true) })), None, "a trace only");
        assert_eq!(video_in_progress(None), None);
    }

    #[test]
    fn the_segment_is_finished_once_the_note_names_another_and_a_closing_session_takes_it_over() {
        let before = "/r/video-1.webm";
        assert_eq!(outcome(before, Some(&note(before, true))), None);
        assert_eq!(
            outcome(before, Some(&note("/r/video-2.webm", true))),
            Some(Rotated::Finished(PathBuf::from(before)))
        );
        assert_eq!(outcome(before, None), Some(Rotated::Closing));
    }

    #[tokio::test]
    async fn nothing_is_signalled_without_a_video_nor_to_a_process_that_is_not_the_runtime() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(rotate(tmp.path(), 1, Duration::from_secs(1)).await.unwrap(), Rotated::NothingRecording);
        let recorder_note = serde_json::to_vec(&note("/r/video-1.webm", true)).unwrap();
        std::fs::write(tmp.path().join("in-progress.json"), recorder_note).unwrap();
        // This test process is no session runtime: refused before any signal.
        let err = rotate(tmp.path(), std::process::id() as i32, Duration::from_secs(1)).await.unwrap_err();
        assert!(matches!(err, RotateError::NotTheRuntime { .. }), "{err}");
    }
}
