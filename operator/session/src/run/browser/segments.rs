//! Video segments (`videoSegmentSeconds`). Playwright encodes a video into a
//! temporary file and copies it into `recordings/` only at `video-stop`, so
//! without segments no video exists until the session closes. With them,
//! while the browser the supervisor started runs, the runtime rotates the
//! video every N seconds: `video-stop` (the segment is finished and copied
//! into place), a note naming the next file (`in-progress.json`: from then
//! the finished segment is an ordinary recording retention may count, and
//! the next one is the recording in progress), then `video-start
//! <recordings>/video-<ms>.webm`, named after the time of the new start.
//! What the page shows between the stop and the start is not recorded: tens
//! to a few hundred milliseconds per rotation, more with more pages open
//! (the runtime logs each gap; docs/session-runtime.md, Video segments).
//!
//! The verbs go straight to the daemon's socket, as the Node client would
//! send them, not through the client: it opens the session file, which the
//! idle clock counts as an agent's use, and its start-up would add about
//! half a second to every gap.
//!
//! A rotation can also be asked for at once: `playpen-session rotate`
//! (what `kubectl playpen record --rotate` execs in the browser container)
//! sends the runtime SIGUSR1, and the next rotation runs now, with or
//! without segments, so the video so far is a finished file (and, with an
//! export, uploaded at the exporter's next pass). A signal rather than a
//! file or a socket: nothing to create, watch or secure on the shared
//! volume, and only a process of the container's own user (that is, what
//! `kubectl exec` runs there, or an agent with that right anyway) can send
//! it. Signals arriving together are one rotation; rotations are at least
//! [`MIN_SEGMENT`] apart however often it is asked.
//!
//! A rotation never runs beside another recording verb (the recorder's
//! lock), never once the session is closing, and only while the daemon the
//! supervisor started runs (the supervisor drops the rotations with it). A
//! failed rotation is logged and tried again at the next tick; it is never
//! fatal, and readiness does not change.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::cli::fastpath::args::Argv;
use crate::cli::fastpath::socket::{parse_reply, run_request, Reply};
use crate::run::browser::recording::{in_progress, unix_ms, Recorder, Started};
use crate::run::process::supervisor::Unanswered;

/// How long one verb may take on the daemon's socket (`video-stop` waits
/// for the encoder and copies the file). A client that goes away aborts
/// the daemon's command, so this is generous.
const VERB_TIMEOUT: Duration = Duration::from_secs(20);
/// The least time from one rotation to the next, however short the
/// segments or slow the verbs.
pub const MIN_SEGMENT: Duration = Duration::from_secs(1);

/// The segment length `videoSegmentSeconds` asks for: none when absent or 0.
pub fn length(seconds: Option<u32>) -> Option<Duration> {
    seconds.filter(|s| *s > 0).map(|s| Duration::from_secs(u64::from(s)))
}

/// When the next rotation is due: a segment's length after `from` (when the
/// current segment started, or when a failed rotation was tried), and never
/// sooner than [`MIN_SEGMENT`] after `now`.
pub fn next_due(from: Instant, every: Duration, now: Instant) -> Instant {
    (from + every).max(now + MIN_SEGMENT)
}

/// The Unix milliseconds in a video's name, `video-<ms>.webm`.
pub fn video_ms(path: &str) -> Option<u64> {
    let name = Path::new(path).file_stem()?.to_str()?;
    name.strip_prefix("video-")?.parse().ok()
}

/// The milliseconds the next segment is named after: `now_ms`, or one past
/// the current segment's, so that no two segments share a name.
pub fn next_segment_ms(now_ms: u64, current: Option<u64>) -> u64 {
    current.map_or(now_ms, |ms| now_ms.max(ms.saturating_add(1)))
}

/// The daemon's socket from its start-up line, `Daemon listening on <path>`.
pub fn socket_of(line: &str, marker: &str) -> Option<PathBuf> {
    let (_, rest) = line.split_once(marker)?;
    let path = rest.trim();
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// What one rotation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// The segment is finished and the next one records since `started`.
    Rotated {
        /// The finished segment's file.
        finished: String,
        /// The file the next segment goes to.
        next: String,
        /// When the next segment's note was written, after the stop.
        started: Instant,
    },
    /// Nothing to rotate: the session is closing, or no video is noted.
    Skipped,
    /// A verb failed (logged); tried again at the next tick.
    Failed,
}

/// Rotates the video every `every` (never without segments) and whenever
/// `recorder.on_demand` is notified, from now until the future is dropped
/// (the supervisor drops it when its daemon exits).
pub(crate) async fn rotate_every(
    recorder: &Recorder,
    socket: &Path,
    every: Option<Duration>,
    stop: &watch::Receiver<bool>,
) -> Infallible {
    let mut due = every.map(|every| next_due(Instant::now(), every, Instant::now()));
    let mut last: Option<Instant> = None;
    // An ask while no browser ran (a restart) is moot: this video just began.
    drain(&recorder.on_demand).await;
    loop {
        let scheduled = async {
            match due {
                Some(due) => tokio::time::sleep_until(due).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = scheduled => {}
            () = recorder.on_demand.notified() => {
                if let Some(last) = last {
                    tokio::time::sleep_until(last + MIN_SEGMENT).await;
                }
                tracing::info!("a video rotation was asked for (playpen-session rotate)");
            }
        }
        // Whoever asked before this rotation starts is served by it.
        drain(&recorder.on_demand).await;
        let tried = Instant::now();
        let from = match rotate(recorder, socket, stop).await {
            Rotation::Rotated { started, .. } => started,
            Rotation::Skipped | Rotation::Failed => tried,
        };
        last = Some(Instant::now());
        due = every.map(|every| next_due(from, every, Instant::now()));
    }
}

/// Takes the ask `notify` holds, if any, without waiting.
async fn drain(notify: &Notify) {
    tokio::select! {
        biased;
        () = notify.notified() => {}
        () = std::future::ready(()) => {}
    }
}

/// Turns each SIGUSR1 the runtime gets into a rotation asked for
/// (`on_demand`). Installed at the start, before any child: from then on
/// the signal never meets its default action (terminate).
pub(crate) fn rotate_on_sigusr1(on_demand: Arc<Notify>) -> std::io::Result<()> {
    let mut signals = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        while signals.recv().await.is_some() {
            on_demand.notify_one();
        }
    });
    Ok(())
}

/// One rotation: `video-stop`, the note of the next segment, `video-start`.
pub(crate) async fn rotate(recorder: &Recorder, socket: &Path, stop: &watch::Receiver<bool>) -> Rotation {
    let _verbs = recorder.verbs.lock().await;
    let Some(current) = in_progress(&recorder.dir).filter(|note| note.recording) else {
        tracing::warn!(dir = %recorder.dir.display(), "no video segment to rotate: no recording is noted in progress");
        return Rotation::Skipped;
    };
    let Some(finished) = current.video.clone() else { return Rotation::Skipped };
    if *stop.borrow() {
        return Rotation::Skipped;
    }
    let cwd = &recorder.cli.cwd;
    let began = Instant::now();
    if let Err(why) = ask(socket, &["video-stop"], cwd, VERB_TIMEOUT).await {
        tracing::warn!(%why, segment = %finished, "cannot finish the video segment; trying again at the next tick");
        return Rotation::Failed;
    }
    let stopped = Instant::now();
    if !Path::new(&finished).exists() {
        tracing::warn!(segment = %finished, "video-stop answered but the segment is not there (no page to record?)");
    }
    if *stop.borrow() {
        // The close's own video-stop finds nothing left to finish.
        tracing::info!(segment = %finished, "video segment finished; the session is closing, no next one");
        return Rotation::Skipped;
    }
    let ms = next_segment_ms(unix_ms(SystemTime::now()), video_ms(&finished));
    let next = recorder.video_file(ms).display().to_string();
    // Noted before the start: a crash during it names the segment it cut short.
    let note = Started { video: Some(next.clone()), ..current };
    if let Err(err) = recorder.note_in_progress(&note) {
        tracing::warn!(%err, "cannot note the video segment in progress");
    }
    if let Err(why) = ask(socket, &["video-start", &next], cwd, VERB_TIMEOUT).await {
        tracing::warn!(%why, segment = %next, "cannot start the next video segment; trying again at the next tick");
        return Rotation::Failed;
    }
    let (stop_ms, start_ms) = (millis(stopped - began), millis(stopped.elapsed()));
    tracing::info!(finished = %finished, next = %next, stop_ms, start_ms, gap_ms = stop_ms + start_ms,
        "video segment finished; the next one records (the gap between them is not recorded)");
    Rotation::Rotated { finished, next, started: stopped }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs the CLI verb `args` in the daemon listening on `socket`, as the Node
/// client sends it (`cwd` resolves relative names); its answer, or why none.
async fn ask(socket: &Path, args: &[&str], cwd: &Path, timeout: Duration) -> Result<String, Unanswered> {
    let argv = Argv { positional: args.iter().map(|a| (*a).to_owned()).collect(), options: Vec::new() };
    let request = run_request(&argv, &cwd.display().to_string(), false, false);
    let what = args.join(" ");
    let exchange = async {
        let mut stream = UnixStream::connect(socket).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut line = Vec::with_capacity(1024);
        BufReader::new(stream).read_until(b'\n', &mut line).await?;
        Ok::<_, std::io::Error>(line)
    };
    let line = match tokio::time::timeout(timeout, exchange).await {
        Err(_) => return Err(Unanswered::TimedOut(format!("{what} did not finish within {timeout:?}"))),
        Ok(Err(err)) => return Err(Unanswered::Failed(format!("{what}: {}: {err}", socket.display()))),
        Ok(Ok(line)) => line,
    };
    let Some(line) = line.strip_suffix(b"\n") else {
        return Err(Unanswered::Failed(format!("{what}: the daemon closed the connection without replying")));
    };
    match parse_reply(line) {
        Ok(Reply::Result { is_error: false, text }) if !text.as_deref().unwrap_or_default().contains("### Error") => {
            Ok(text.unwrap_or_default())
        }
        Ok(Reply::Result { text, .. }) => Err(Unanswered::Failed(format!("{what}: {}", text.unwrap_or_default()))),
        Ok(Reply::Error(error)) => Err(Unanswered::Failed(format!("{what}: {error}"))),
        Err(err) => Err(Unanswered::Failed(format!("{what}: {err}"))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::net::UnixListener;

    use super::*;
    use crate::run::browser::recording;
    use crate::run::policy::retention::{prune, Policy};
    use crate::run::process::supervisor::ChildSpec;

    #[test]
    fn segments_are_asked_for_in_whole_seconds_and_zero_is_none() {
        assert_eq!(length(None), None);
        assert_eq!(length(Some(0)), None);
        assert_eq!(length(Some(60)), Some(Duration::from_secs(60)));
    }

    #[test]
    fn the_next_rotation_is_a_segment_after_the_last_start_and_never_at_once() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(next_due(t0, s(60), t0), t0 + s(60));
        assert_eq!(next_due(t0 + s(60), s(60), t0 + s(61)), t0 + s(120), "from the new segment's start");
        assert_eq!(next_due(t0, s(1), t0 + s(30)), t0 + s(31), "verbs slower than a segment: a second's pause");
    }

    #[test]
    fn segments_are_named_after_their_start_and_never_twice_the_same() {
        assert_eq!(video_ms("/r/video-1700000000123.webm"), Some(1_700_000_000_123));
        assert_eq!(video_ms("/r/video-17-1.webm"), None, "a further page's file is no segment's name");
        assert_eq!(video_ms("/r/clip.webm"), None);
        assert_eq!(next_segment_ms(2000, Some(1000)), 2000);
        assert_eq!(next_segment_ms(1000, Some(1000)), 1001, "the same millisecond");
        assert_eq!(next_segment_ms(900, Some(1000)), 1001, "a clock stepped back");
        assert_eq!(next_segment_ms(900, None), 900);
    }

    #[test]
    fn the_daemon_says_where_it_listens() {
        let marker = crate::run::browser::daemon::READY_MARKER;
        assert_eq!(
            socket_of("Daemon listening on /d/pw/1a2b3c4d/s/cli/5f14-demo.sock\n", marker),
            Some(PathBuf::from("/d/pw/1a2b3c4d/s/cli/5f14-demo.sock"))
        );
        assert_eq!(socket_of("Daemon listening on ", marker), None);
        assert_eq!(socket_of("booting", marker), None);
    }

    /// A daemon on a socket that answers the video verbs as Playwright does:
    /// `video-stop` copies the video started last into place. Records each
    /// request's arguments; refuses `video-start` while `refuse_start`.
    struct FakeDaemon {
        socket: PathBuf,
        seen: Arc<Mutex<Vec<Vec<String>>>>,
        refuse_start: Arc<Mutex<bool>>,
    }

    impl FakeDaemon {
        fn start(dir: &Path, first_video: &str) -> Self {
            let socket = dir.join("daemon.sock");
            let listener = UnixListener::bind(&socket).unwrap();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let refuse_start = Arc::new(Mutex::new(false));
            let (log, refuse) = (seen.clone(), refuse_start.clone());
            let mut recording = Some(first_video.to_owned());
            tokio::spawn(async move {
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let mut reader = BufReader::new(stream);
                    let mut line = String::new();
                    reader.read_line(&mut line).await.unwrap();
                    let request: serde_json::Value = serde_json::from_str(&line).unwrap();
                    let args: Vec<String> = serde_json::from_value(request["params"]["args"]["_"].clone()).unwrap();
                    log.lock().unwrap().push(args.clone());
                    let (is_error, text) = match args[0].as_str() {
                        "video-stop" => match recording.take() {
                            Some(file) => {
                                std::fs::write(&file, b"webm").unwrap();
                                (false, format!("### Result\n- [Video]({file})"))
                            }
                            None => (false, "### Result\nNo videos were recorded.".to_owned()),
                        },
                        "video-start" if *refuse.lock().unwrap() => (true, "### Error\nboom".to_owned()),
                        "video-start" if recording.is_some() => {
                            (true, "### Error\nVideo recording has already been started.".to_owned())
                        }
                        "video-start" => {
                            recording = Some(args[1].clone());
                            (false, "### Result\nVideo recording started.".to_owned())
                        }
                        other => panic!("unexpected verb {other}"),
                    };
                    let reply = serde_json::json!({"id": 1, "result": {"isError": is_error, "text": text}});
                    let mut stream = reader.into_inner();
                    stream.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
                }
            });
            Self { socket, seen, refuse_start }
        }

        fn verbs(&self) -> Vec<String> {
            self.seen.lock().unwrap().iter().map(|a| a[0].clone()).collect()
        }
    }

    fn recorder(out: &Path) -> Recorder {
        let recorder = Recorder {
            video: true,
            trace: true,
            dir: recording::dir(out),
            session: "demo".into(),
            cli: ChildSpec {
                name: "recording",
                program: "/bin/true".into(),
                args: vec![],
                env: vec![],
                cwd: out.into(),
            },
            segments: Some(Duration::from_secs(60)),
            verbs: Arc::default(),
            on_demand: Arc::default(),
        };
        recorder.prepare(out).unwrap();
        recorder
    }

    fn noted_video(recorder: &Recorder) -> String {
        in_progress(&recorder.dir).unwrap().video.unwrap()
    }

    #[tokio::test]
    async fn a_rotation_finishes_the_segment_for_retention_and_notes_the_next_as_in_progress() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path());
        let first = Started {
            started_ms: 1000,
            video: Some(r.video_file(1000).display().to_string()),
            trace: true,
            recording: true,
        };
        r.note_in_progress(&first).unwrap();
        let daemon = FakeDaemon::start(tmp.path(), first.video.as_deref().unwrap());
        let (_closing, stop) = watch::channel(false);

        let Rotation::Rotated { finished, next, .. } = rotate(&r, &daemon.socket, &stop).await else { panic!() };
        assert_eq!(Some(finished.as_str()), first.video.as_deref());
        assert!(Path::new(&finished).exists(), "the finished segment is in recordings/");
        let note = in_progress(&r.dir).unwrap();
        assert_eq!(note, Started { video: Some(next.clone()), ..first.clone() }, "the recording's start stays");
        assert!(video_ms(&next).unwrap() > 1000);
        let Rotation::Rotated { next: third, .. } = rotate(&r, &daemon.socket, &stop).await else { panic!() };
        assert_eq!(daemon.verbs(), ["video-stop", "video-start", "video-stop", "video-start"]);
        assert_eq!(daemon.seen.lock().unwrap()[1], ["video-start", next.as_str()]);
        assert!(video_ms(&third) > video_ms(&next), "{third} after {next}");

        // Retention: the finished segments go by age like any video, the one
        // in progress (its file appearing as a stop copies it) stays.
        let old = SystemTime::now() - Duration::from_secs(7200);
        std::fs::write(&third, b"being copied").unwrap();
        for file in [&finished, &next, &third] {
            std::fs::File::options().write(true).open(file).unwrap().set_modified(old).unwrap();
        }
        let policy = Policy {
            max_age: Duration::from_secs(60),
            max_count: 500,
            grace: Duration::ZERO,
            size: None,
            uploaded_first: false,
        };
        let outcome = prune(tmp.path(), policy).unwrap();
        assert_eq!(outcome.deleted, 2, "{outcome:?}");
        assert!(!Path::new(&finished).exists() && !Path::new(&next).exists());
        assert!(Path::new(&third).exists(), "the segment in progress is kept");
    }

    #[tokio::test]
    async fn a_failed_start_is_tried_again_at_the_next_rotation_and_a_closing_session_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path());
        let first = r.video_file(1000).display().to_string();
        r.note_in_progress(&Started { started_ms: 1000, video: Some(first.clone()), trace: false, recording: true })
            .unwrap();
        let daemon = FakeDaemon::start(tmp.path(), &first);
        let (closing, stop) = watch::channel(false);
        *daemon.refuse_start.lock().unwrap() = true;
        assert_eq!(rotate(&r, &daemon.socket, &stop).await, Rotation::Failed);
        assert!(Path::new(&first).exists(), "the stop went through");
        assert!(in_progress(&r.dir).unwrap().recording, "readiness does not change");
        *daemon.refuse_start.lock().unwrap() = false;
        // The next tick: nothing records, so the stop answers that, and the start goes through.
        assert!(matches!(rotate(&r, &daemon.socket, &stop).await, Rotation::Rotated { .. }));
        let recording = noted_video(&r);
        assert_eq!(daemon.verbs(), ["video-stop", "video-start", "video-stop", "video-start"]);

        closing.send(true).unwrap();
        assert_eq!(rotate(&r, &daemon.socket, &stop).await, Rotation::Skipped);
        assert_eq!(daemon.verbs().len(), 4, "no verb once the session is closing");
        assert_eq!(noted_video(&r), recording);
    }

    #[tokio::test]
    async fn sigusr1_asks_for_a_rotation_at_once_even_without_segments_and_rotations_stay_a_second_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path());
        let first = r.video_file(1000).display().to_string();
        r.note_in_progress(&Started { started_ms: 1000, video: Some(first.clone()), trace: false, recording: true })
            .unwrap();
        let daemon = FakeDaemon::start(tmp.path(), &first);
        let (_closing, stop) = watch::channel(false);
        rotate_on_sigusr1(r.on_demand.clone()).unwrap();
        let rotations = {
            let (r, socket) = (r.clone(), daemon.socket.clone());
            tokio::spawn(async move { rotate_every(&r, &socket, None, &stop).await })
        };
        let verbs_reach = |n: usize| {
            let seen = daemon.seen.clone();
            async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                while seen.lock().unwrap().len() < n {
                    assert!(Instant::now() < deadline, "no rotation: {:?}", seen.lock().unwrap());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(daemon.verbs().is_empty(), "without segments nothing rotates on its own");

        let asked = Instant::now();
        nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGUSR1).unwrap();
        verbs_reach(2).await;
        assert_eq!(daemon.verbs(), ["video-stop", "video-start"]);
        assert!(Path::new(&first).exists(), "the segment so far is a finished file");
        let second = noted_video(&r);
        assert_ne!(second, first, "the note names the next segment");

        // Asked again at once (twice: one rotation): it waits out the second.
        for _ in 0..2 {
            nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGUSR1).unwrap();
        }
        verbs_reach(4).await;
        assert!(asked.elapsed() >= MIN_SEGMENT, "{:?}", asked.elapsed());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(daemon.verbs().len(), 4, "signals arriving together are one rotation");
        assert!(Path::new(&second).exists());
        rotations.abort();
    }

    #[tokio::test]
    async fn a_daemon_that_is_gone_fails_the_rotation_without_touching_the_note() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path());
        let note = Started {
            started_ms: 5,
            video: Some(r.video_file(5).display().to_string()),
            trace: false,
            recording: true,
        };
        r.note_in_progress(&note).unwrap();
        let (_closing, stop) = watch::channel(false);
        assert_eq!(rotate(&r, &tmp.path().join("gone.sock"), &stop).await, Rotation::Failed);
        assert_eq!(in_progress(&r.dir), Some(note));
    }

    #[tokio::test]
    async fn a_rotation_waits_for_the_verbs_under_way_and_then_leaves_a_closing_session_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recorder(tmp.path());
        let note = Started {
            started_ms: 5,
            video: Some(r.video_file(5).display().to_string()),
            trace: false,
            recording: true,
        };
        r.note_in_progress(&note).unwrap();
        // The close's stop holds the verbs.
        let held = r.verbs.clone().lock_owned().await;
        let (closing, stop) = watch::channel(false);
        let rotation = {
            let r = r.clone();
            let socket = tmp.path().join("daemon.sock");
            tokio::spawn(async move { rotate(&r, &socket, &stop).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!rotation.is_finished(), "waits for the verbs under way");
        closing.send(true).unwrap();
        drop(held);
        assert_eq!(rotation.await.unwrap(), Rotation::Skipped);
        assert_eq!(in_progress(&r.dir), Some(note));
    }
}
