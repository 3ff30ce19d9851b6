//! Session recordings against the real playwright-cli and Debian's chromium
//! and ffmpeg: a recorded session, closed gracefully, leaves a WebM that
//! ffprobe decodes and a Playwright trace holding the agent's navigation; a
//! crash leaves the trace written so far and is said to have cut it short.
//! With video segments, finished segments are there while the session runs.
//! Needs `tests/session/setup.sh` (see `support::SETUP`).

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

/// Playwright looks for ffmpeg in its browsers directory; its CDN is out of
/// reach here, so Debian's ffmpeg stands in (what the image builder does too).
fn link_ffmpeg(session: &Session) {
    let browsers: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(session.prefix.join("node_modules/playwright-core/browsers.json")).unwrap(),
    )
    .unwrap();
    let revision = browsers["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "ffmpeg")
        .and_then(|b| b["revision"].as_str())
        .unwrap()
        .to_owned();
    let dir = session.path(&format!("home/.cache/ms-playwright/ffmpeg-{revision}"));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Path::new("/usr/bin/ffmpeg").exists(), "/usr/bin/ffmpeg is missing; run:\n  {SETUP}");
    std::os::unix::fs::symlink("/usr/bin/ffmpeg", dir.join("ffmpeg-linux")).unwrap();
}

fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(suffix)).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// The trace's events, one JSON object per line; panics on a line that is not one.
fn trace_events(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l:.200}", path.display())))
        .collect()
}

#[test]
fn a_recorded_session_leaves_a_decodable_video_and_a_trace_after_a_graceful_close() {
    let fixture = Fixture::start();
    let mut session = Session::new("recorded", None);
    link_ffmpeg(&session);
    session.set_runtime_field("recordVideo", true.into());
    session.set_runtime_field("recordTrace", true.into());
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session.cli_ok(&["goto", &fixture.url("/")]);
    session.cli_ok(&["goto", &fixture.url("/next.html")]);
    std::thread::sleep(Duration::from_secs(2));
    let status = session.terminate(Duration::from_secs(40));
    assert!(status.success(), "{status:?}\n{}", session.log());

    let recordings = session.path("snapshots/recordings");
    assert!(!recordings.join("in-progress.json").exists(), "a graceful close finalises:\n{}", session.log());
    assert!(!recordings.join("interrupted.json").exists());
    let videos = files_in(&recordings, ".webm");
    assert_eq!(videos.len(), 1, "one video per browser start: {videos:?}\n{}", session.log());
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-count_frames",
            "-show_entries",
            "stream=codec_name,nb_read_frames",
        ])
        .args(["-of", "default=noprint_wrappers=1"])
        .arg(&videos[0])
        .output()
        .unwrap();
    let probed = String::from_utf8_lossy(&probe.stdout);
    assert!(probe.status.success(), "ffprobe: {}", String::from_utf8_lossy(&probe.stderr));
    assert!(probed.contains("codec_name=vp8"), "{probed}");
    let frames: u64 = probed.lines().find_map(|l| l.strip_prefix("nb_read_frames=")).unwrap().trim().parse().unwrap();
    // Chromium's screencast sends a frame when the page changes: two pages, at least two frames.
    assert!(frames >= 2, "the video holds both pages' frames: {probed}");

    let traces = files_in(&recordings.join("traces"), ".trace");
    assert_eq!(traces.len(), 1, "{traces:?}");
    let events = trace_events(&traces[0]);
    assert_eq!(events[0]["type"], "context-options", "the trace format's first event: {:.300}", events[0]);
    let text = std::fs::read_to_string(&traces[0]).unwrap();
    assert!(text.contains(&fixture.url("/next.html")), "the agent's navigation is in the trace");
}

/// `ffprobe`'s verdict on a video: its codec and the number of frames it decodes.
fn probe_video(video: &Path) -> (String, u64) {
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-count_frames"])
        .args(["-show_entries", "stream=codec_name,nb_read_frames", "-of", "default=noprint_wrappers=1"])
        .arg(video)
        .output()
        .unwrap_or_else(|e| panic!("ffprobe: {e}; run:\n  {SETUP}"));
    let probed = String::from_utf8_lossy(&probe.stdout).into_owned();
    assert!(probe.status.success(), "ffprobe {}: {}", video.display(), String::from_utf8_lossy(&probe.stderr));
    let field = |name: &str| probed.lines().find_map(|l| l.strip_prefix(name)).unwrap_or_default().trim().to_owned();
    let frames = field("nb_read_frames=").parse().unwrap_or_else(|_| panic!("{}: {probed}", video.display()));
    (field("codec_name="), frames)
}

/// The gaps between segments the runtime logged, in milliseconds.
fn logged_gaps(log: &str) -> Vec<u64> {
    log.lines()
        .filter(|l| l.contains("video segment finished; the next one records"))
        .filter_map(|l| l.split("gap_ms=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn video_segments_are_finished_while_the_session_runs_and_the_last_one_at_the_close() {
    let fixture = Fixture::start();
    let mut session = Session::new("segmented", None);
    link_ffmpeg(&session);
    session.set_runtime_field("recordVideo", true.into());
    session.set_runtime_field("recordTrace", true.into());
    session.set_runtime_field("videoSegmentSeconds", 5.into());
    session.start();
    session.wait_ready(Duration::from_secs(90));
    let ready = std::time::Instant::now();
    let recordings = session.path("snapshots/recordings");
    // Driven for 13 s: past two segments of five.
    let mut pages = ["/", "/next.html"].into_iter().cycle();
    while ready.elapsed() < Duration::from_secs(13) {
        session.cli_ok(&["goto", &fixture.url(pages.next().unwrap())]);
        assert!(session.probe_ok(), "readiness holds through the rotations:\n{}", session.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    let in_progress = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(recordings.join("in-progress.json")).unwrap()).unwrap()
    };
    wait_until("two finished segments", Duration::from_secs(10), || files_in(&recordings, ".webm").len() >= 2);
    assert!(session.child.as_mut().unwrap().try_wait().unwrap().is_none(), "the session still runs");
    let finished = files_in(&recordings, ".webm");
    let note = in_progress();
    let current = PathBuf::from(note["video"].as_str().unwrap());
    assert!(!finished.contains(&current), "the segment in progress is not finished yet: {note}");
    for video in &finished {
        let (codec, frames) = probe_video(video);
        assert!(codec == "vp8" && frames >= 1, "{}: {codec}, {frames} frames", video.display());
    }
    let gaps = logged_gaps(&session.log());
    assert!(gaps.len() >= 2, "a logged gap for each rotation: {gaps:?}\n{}", session.log());
    eprintln!("gaps between segments (video-stop sent to video-start answered), ms: {gaps:?}");

    let status = session.terminate(Duration::from_secs(40));
    assert!(status.success(), "{status:?}\n{}", session.log());
    assert!(!recordings.join("in-progress.json").exists(), "a graceful close finalises:\n{}", session.log());
    assert!(!recordings.join("interrupted.json").exists());
    let all = files_in(&recordings, ".webm");
    assert!(all.contains(&current), "the last segment is finalised at the close: {all:?}\n{}", session.log());
    assert_eq!(all.len(), logged_gaps(&session.log()).len() + 1, "one file per segment: {all:?}");
    for video in &all {
        let (codec, frames) = probe_video(video);
        assert!(codec == "vp8" && frames >= 1, "{}: {codec}, {frames} frames", video.display());
    }
    let traces = files_in(&recordings.join("traces"), ".trace");
    assert_eq!(traces.len(), 1, "the trace is not segmented: {traces:?}");
}

/// `playpen-session rotate` (what `kubectl playpen record --rotate` execs):
/// the video so far is a finished, decodable file at once, without segments.
#[test]
fn playpen_session_rotate_finishes_the_video_so_far_at_once_without_segments() {
    let fixture = Fixture::start();
    let mut session = Session::new("rotated", None);
    link_ffmpeg(&session);
    session.set_runtime_field("recordVideo", true.into());
    session.start();
    session.wait_ready(Duration::from_secs(90));
    let recordings = session.path("snapshots/recordings");
    session.cli_ok(&["goto", &fixture.url("/")]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(files_in(&recordings, ".webm").is_empty(), "without segments nothing is finished while it runs");

    let rotate = |session: &Session| {
        let pid = session.runtime_pid().to_string();
        session.runtime_command("rotate").args(["--pid", &pid, "--within", "60"]).output().unwrap()
    };
    let out = rotate(&session);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}\n{}", session.log());
    let ms = playpen_api::rotate::finished_ms(&stdout).unwrap_or_else(|| panic!("no segment named: {stdout}"));
    let finished = recordings.join(format!("video-{ms}.webm"));
    assert_eq!(files_in(&recordings, ".webm"), std::slice::from_ref(&finished), "{stdout}");
    let (codec, frames) = probe_video(&finished);
    assert!(codec == "vp8" && frames >= 1, "{codec}, {frames} frames");
    assert!(session.log().contains("a video rotation was asked for"), "{}", session.log());
    assert!(session.probe_ok(), "readiness holds:\n{}", session.log());

    // Recording goes on into the next segment, finished at the close.
    session.cli_ok(&["goto", &fixture.url("/next.html")]);
    let status = session.terminate(Duration::from_secs(40));
    assert!(status.success(), "{status:?}\n{}", session.log());
    assert_eq!(files_in(&recordings, ".webm").len(), 2, "{}", session.log());
}

#[test]
fn rotations_are_no_use_of_the_session_so_an_unused_one_still_ends_at_its_idle_timeout() {
    let fixture = Fixture::start();
    let mut session = Session::new("idlesegs", None);
    link_ffmpeg(&session);
    session.set_runtime_field("recordVideo", true.into());
    session.set_runtime_field("videoSegmentSeconds", 2.into());
    session.set_runtime_field("idleTimeoutSeconds", 7.into());
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session.cli_ok(&["goto", &fixture.url("/")]);
    let last_command = std::time::Instant::now();
    let status = session.wait_exit(Duration::from_secs(40));
    let log = session.log();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("idle timeout") && last_command.elapsed() >= Duration::from_secs(6), "{log}");
    let rotations = logged_gaps(&log).len();
    assert!(rotations >= 2, "rotations ran while it was idle ({rotations}):\n{log}");
    let recordings = session.path("snapshots/recordings");
    assert!(!recordings.join("in-progress.json").exists(), "the close finalises the last segment:\n{log}");
    assert_eq!(files_in(&recordings, ".webm").len(), rotations + 1, "{log}");
}

#[test]
fn a_crash_keeps_the_trace_so_far_and_the_next_start_says_it_was_cut_short() {
    let fixture = Fixture::start();
    let mut session = Session::new("crashed", None);
    session.set_runtime_field("recordTrace", true.into());
    session.start();
    session.wait_ready(Duration::from_secs(90));
    session.cli_ok(&["goto", &fixture.url("/next.html")]);
    // The container dies: the runtime first (so nothing reacts), then everything under it.
    let runtime = session.runtime_pid();
    let kill = |pid: u32| {
        // Children may already be gone (they die with their parent).
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
    };
    kill(runtime);
    for process in session.processes() {
        kill(process.pid);
    }
    session.wait_exit(Duration::from_secs(10));
    let recordings = session.path("snapshots/recordings");
    assert!(recordings.join("in-progress.json").exists(), "the note of the recording survives the crash");
    let traces = files_in(&recordings.join("traces"), ".trace");
    assert_eq!(traces.len(), 1);
    let text = std::fs::read_to_string(&traces[0]).unwrap();
    assert!(text.contains(&fixture.url("/next.html")), "what came before the crash is kept");

    // The next container says so, and records anew.
    session.start();
    session.wait_ready(Duration::from_secs(90));
    let noted = std::fs::read_to_string(recordings.join("interrupted.json"))
        .unwrap_or_else(|e| panic!("interrupted.json: {e}; runtime log:\n{}", session.log()));
    let interrupted: serde_json::Value = serde_json::from_str(&noted).unwrap();
    assert_eq!(interrupted.as_array().map(Vec::len), Some(1), "{interrupted}");
    assert!(session.log().contains("a recording was cut short"), "{}", session.log());
    wait_until("a new trace", Duration::from_secs(20), || files_in(&recordings.join("traces"), ".trace").len() == 2);
}

#[test]
fn a_video_the_image_cannot_record_stops_the_session_with_the_remedy() {
    // No ffmpeg where Playwright looks for it: what an image built without
    // recording support gives.
    let mut session = Session::new("novideo", None);
    session.set_runtime_field("recordVideo", true.into());
    let (code, report) = session.run_to_exit(Duration::from_secs(90));
    assert_ne!(code, 0, "a session that cannot record must not go on unrecorded");
    let report: serde_json::Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}"));
    assert_eq!(report["reason"], "RecordingUnavailable", "{report}");
    let message = report["message"].as_str().unwrap();
    assert!(message.contains("no ffmpeg at") && message.contains("ffmpeg-linux"), "{message}");
    assert!(message.contains("spec.recording.video"), "the remedy names the field: {message}");
}
