//! Recordings as units retention keeps or deletes whole (pure).
//!
//! A video is a unit of its own. A trace is a unit of the files in `traces/`
//! the CLI names after it (`trace-<ms>.trace`, `.network`, `.stacks`,
//! `-chunk<n>.trace`, `-pwnetcopy-<n>.network`) and of the screencast frames
//! written in `traces/screencast/` while it ran: from the `<ms>` in its name
//! (`Date.now()` at `tracing-start`) until the next trace started. A frame
//! older than every trace left belongs to one already deleted: an orphan.
//! The blobs in `traces/resources/` are content-addressed and written once for
//! every trace that needs them: shared.
//!
//! The recording in progress (`in-progress.json`) is the video it names, with
//! the `-<n>` the CLI adds for each further page, and the newest trace started
//! since it began (the runtime writes the note before `tracing-start`).

use std::collections::btree_map::{BTreeMap, Entry as Slot};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::unit::{Entry, Kind, Unit};
use crate::run::browser::recording::Started;

/// How the CLI's trace names begin; `Date.now()` at `tracing-start` follows.
const TRACE_PREFIX: &str = "trace-";

/// What `recordings/` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecordingFiles {
    /// Regular files directly in `recordings/` but the notes: videos.
    pub videos: Vec<Entry>,
    /// Regular files directly in `recordings/traces/`.
    pub traces: Vec<Entry>,
    /// Files in `recordings/traces/screencast/`: each written by one trace.
    pub frames: Vec<Entry>,
    /// Files below the other subdirectories of `recordings/traces/`
    /// (`resources/`): shared by every trace.
    pub shared: Vec<Entry>,
    /// The recording in progress.
    pub in_progress: Option<Started>,
    /// The listing stopped early: a trace may be missing from it.
    pub cut_short: bool,
}

/// Recordings as units.
#[derive(Debug, Default)]
pub(crate) struct Grouped {
    /// Videos and traces.
    pub units: Vec<Unit>,
    /// Files any trace may read.
    pub shared: Vec<Entry>,
    /// Frames of traces no longer there.
    pub orphans: Vec<Entry>,
    /// Whether `shared` may go once no trace is left: every trace was
    /// listed, and none is starting (its first files may not be written yet).
    pub shared_may_go: bool,
}

/// The recording files as units, the recording in progress marked.
pub(crate) fn group(files: RecordingFiles) -> Grouped {
    let RecordingFiles { videos, traces, frames, mut shared, in_progress, cut_short } = files;
    let mut traces = group_traces(traces);
    let mut orphans = attach_frames(&mut traces, frames);
    if cut_short {
        // Their trace may be there, unlisted: kept as long as the shared files.
        shared.append(&mut orphans);
    }
    let live_video = in_progress.as_ref().and_then(|note| note.video.as_deref()).map(Path::new);
    let live_trace = in_progress.as_ref().filter(|note| note.trace);
    if let Some(note) = live_trace {
        pin_live_trace(&mut traces, note.started_ms);
    }
    let videos = videos.into_iter().map(|entry| Unit {
        in_progress: live_video.is_some_and(|noted| is_video_of(&entry.path, noted)),
        ..Unit::file(Kind::Video, entry)
    });
    Grouped {
        units: videos.chain(traces.into_iter().map(|t| t.unit)).collect(),
        shared,
        orphans,
        shared_may_go: !cut_short && live_trace.is_none(),
    }
}

/// A trace, and when it started if its name says.
struct Trace {
    started_ms: Option<u64>,
    unit: Unit,
}

fn group_traces(files: Vec<Entry>) -> Vec<Trace> {
    let mut by_name: BTreeMap<String, Unit> = BTreeMap::new();
    for entry in files {
        let file_name = entry.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match by_name.entry(trace_name(&file_name).to_owned()) {
            Slot::Occupied(mut trace) => trace.get_mut().add(entry),
            Slot::Vacant(slot) => {
                let name = entry.path.with_file_name(slot.key());
                slot.insert(Unit { name, ..Unit::file(Kind::Trace, entry) });
            }
        }
    }
    by_name.into_iter().map(|(name, unit)| Trace { started_ms: started_ms(&name), unit }).collect()
}

/// Adds each frame to the trace that ran when it was written; returns the
/// frames no listed trace ran for.
fn attach_frames(traces: &mut [Trace], frames: Vec<Entry>) -> Vec<Entry> {
    let mut starts: Vec<(u64, usize)> =
        traces.iter().enumerate().filter_map(|(i, t)| Some((t.started_ms?, i))).collect();
    starts.sort_unstable();
    let mut orphans = Vec::new();
    for frame in frames {
        let written = unix_ms(frame.modified);
        let started_before = starts.partition_point(|(started, _)| *started <= written);
        match started_before.checked_sub(1).map(|k| starts[k].1) {
            Some(running) => traces[running].unit.add(frame),
            None => orphans.push(frame),
        }
    }
    orphans
}

/// The trace being written: the newest started since the recording began.
fn pin_live_trace(traces: &mut [Trace], recording_started_ms: u64) {
    let since = traces.iter_mut().filter(|t| t.started_ms.is_some_and(|s| s >= recording_started_ms));
    if let Some(live) = since.max_by_key(|t| t.started_ms) {
        live.unit.in_progress = true;
    }
}

/// The trace a file in `traces/` belongs to: `trace-<ms>` whatever the CLI
/// adds after it; another name by what comes before its first dot.
fn trace_name(file_name: &str) -> &str {
    let digits = file_name.strip_prefix(TRACE_PREFIX).map_or(0, |ms| ms.bytes().take_while(u8::is_ascii_digit).count());
    if digits > 0 {
        &file_name[..TRACE_PREFIX.len() + digits]
    } else {
        file_name.split_once('.').map_or(file_name, |(stem, _)| stem)
    }
}

fn started_ms(trace_name: &str) -> Option<u64> {
    trace_name.strip_prefix(TRACE_PREFIX)?.parse().ok()
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whether `path` is one of the videos of a recording whose note names
/// `noted`: the CLI adds `-<n>` before the extension for each page after the first.
fn is_video_of(path: &Path, noted: &Path) -> bool {
    let (Some(name), Some(stem)) =
        (path.file_name().and_then(|n| n.to_str()), noted.file_stem().and_then(|s| s.to_str()))
    else {
        return false;
    };
    let extension = noted.extension().and_then(|e| e.to_str()).map(|e| format!(".{e}")).unwrap_or_default();
    let Some(page) = name.strip_prefix(stem).and_then(|rest| rest.strip_suffix(extension.as_str())) else {
        return false;
    };
    page.is_empty() || page.strip_prefix('-').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    /// A file written at `ms` (Unix milliseconds).
    fn at_ms(path: &str, ms: u64, bytes: u64) -> Entry {
        Entry { path: PathBuf::from(path), modified: UNIX_EPOCH + Duration::from_millis(ms), bytes, len: bytes }
    }

    fn note(started_ms: u64, video: Option<&str>, trace: bool) -> Started {
        Started { started_ms, video: video.map(str::to_owned), trace, recording: true }
    }

    fn names(units: &[Unit]) -> Vec<(String, Vec<String>, bool)> {
        let mut all: Vec<_> = units
            .iter()
            .map(|u| {
                let mut files: Vec<String> = u.files.iter().map(|f| f.display().to_string()).collect();
                files.sort();
                (u.name.display().to_string(), files, u.in_progress)
            })
            .collect();
        all.sort();
        all
    }

    #[test]
    fn the_cli_s_trace_files_group_by_the_trace_they_belong_to() {
        assert_eq!(trace_name("trace-1700000000000.trace"), "trace-1700000000000");
        assert_eq!(trace_name("trace-1700000000000-chunk1.trace"), "trace-1700000000000");
        assert_eq!(trace_name("trace-1700000000000-pwnetcopy-1.network"), "trace-1700000000000");
        assert_eq!(trace_name("trace-1700000000000.stacks"), "trace-1700000000000");
        assert_eq!(trace_name("mine.trace"), "mine", "a name the CLI did not give");
        assert_eq!(trace_name("trace-x.trace"), "trace-x");
        assert_eq!(started_ms("trace-1700000000000"), Some(1_700_000_000_000));
        assert_eq!(started_ms("mine"), None);

        let traces = vec![
            at_ms("t/trace-100.trace", 500, 10),
            at_ms("t/trace-100.network", 400, 20),
            at_ms("t/trace-100-chunk1.trace", 450, 5),
            at_ms("t/trace-900.trace", 950, 1),
        ];
        let grouped = group(RecordingFiles { traces, ..RecordingFiles::default() });
        let first = grouped.units.iter().find(|u| u.name == Path::new("t/trace-100")).unwrap();
        assert_eq!((first.files.len(), first.bytes, first.modified), (3, 35, UNIX_EPOCH + Duration::from_millis(500)));
        assert_eq!(grouped.units.len(), 2);
        assert!(grouped.units.iter().all(|u| u.kind == Kind::Trace && !u.in_progress));
    }

    #[test]
    fn a_frame_goes_with_the_trace_that_ran_when_it_was_written_and_older_frames_are_orphans() {
        let files = RecordingFiles {
            traces: vec![at_ms("t/trace-100.trace", 150, 1), at_ms("t/trace-200.trace", 250, 1)],
            frames: vec![
                at_ms("t/screencast/page@a-50.jpeg", 50, 7),
                at_ms("t/screencast/page@a-120.jpeg", 120, 7),
                at_ms("t/screencast/page@a-260.jpeg", 260, 7),
            ],
            ..RecordingFiles::default()
        };
        let grouped = group(files);
        let units = names(&grouped.units);
        assert_eq!(units[0].1, ["t/screencast/page@a-120.jpeg", "t/trace-100.trace"]);
        assert_eq!(units[1].1, ["t/screencast/page@a-260.jpeg", "t/trace-200.trace"]);
        let last = grouped.units.iter().find(|u| u.name == Path::new("t/trace-200")).unwrap();
        assert_eq!(last.modified, UNIX_EPOCH + Duration::from_millis(260), "a frame's write makes the trace newer");
        assert_eq!(grouped.orphans, [at_ms("t/screencast/page@a-50.jpeg", 50, 7)]);
        assert!(grouped.shared_may_go);
    }

    #[test]
    fn the_recording_in_progress_is_its_videos_and_the_newest_trace_since_it_began() {
        let files = RecordingFiles {
            videos: vec![
                at_ms("r/video-1000.webm", 1, 1),
                at_ms("r/video-1000-1.webm", 1, 1),
                at_ms("r/video-10000.webm", 1, 1),
                at_ms("r/video-1000-x.webm", 1, 1),
                at_ms("r/video-500.webm", 1, 1),
            ],
            traces: vec![
                at_ms("r/traces/trace-400.trace", 1, 1),
                at_ms("r/traces/trace-1001.trace", 1, 1),
                at_ms("r/traces/trace-1200.trace", 1, 1),
                at_ms("r/traces/trace-1200.network", 1, 1),
            ],
            in_progress: Some(note(1000, Some("/var/lib/playpen/snapshots/recordings/video-1000.webm"), true)),
            ..RecordingFiles::default()
        };
        let live: Vec<String> = names(&group(files.clone()).units)
            .into_iter()
            .filter(|(_, _, in_progress)| *in_progress)
            .map(|(name, _, _)| name)
            .collect();
        assert_eq!(live, ["r/traces/trace-1200", "r/video-1000-1.webm", "r/video-1000.webm"]);

        let video_only = RecordingFiles { in_progress: Some(note(1000, None, false)), ..files.clone() };
        assert!(group(video_only).units.iter().all(|u| !u.in_progress), "nothing noted, nothing pinned");
        let before_its_trace = RecordingFiles { in_progress: Some(note(1300, None, true)), ..files };
        assert!(group(before_its_trace).units.iter().all(|u| !u.in_progress), "tracing-start has not run yet");
    }

    #[test]
    fn a_trace_being_recorded_keeps_the_shared_files_before_its_own_are_written() {
        let starting = RecordingFiles { in_progress: Some(note(1000, None, true)), ..RecordingFiles::default() };
        assert!(!group(starting).shared_may_go);
        let video_only =
            RecordingFiles { in_progress: Some(note(1000, Some("v.webm"), false)), ..RecordingFiles::default() };
        assert!(group(video_only).shared_may_go);
    }

    #[test]
    fn a_listing_cut_short_takes_nothing_for_orphaned() {
        let files = RecordingFiles {
            frames: vec![at_ms("t/screencast/f.jpeg", 50, 7)],
            shared: vec![at_ms("t/resources/abc", 50, 3)],
            cut_short: true,
            ..RecordingFiles::default()
        };
        let grouped = group(files);
        assert!(grouped.orphans.is_empty() && !grouped.shared_may_go);
        assert_eq!(grouped.shared.len(), 2);
    }
}
