//! Test scenarios for the plan: files written some seconds before a fixed
//! now, a session's recordings built up step by step, and the policies they meet.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::plan::{plan, Listing, Plan, Policy, SizeBudget};
use super::unit::Entry;
use super::uploaded::{fingerprint, Exported};
use crate::run::browser::recording::Started;

const T0: Duration = Duration::from_secs(1_000_000);

pub(super) fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

pub(super) fn at(secs_ago: u64) -> SystemTime {
    now() - Duration::from_secs(secs_ago)
}

/// Unix milliseconds `secs_ago` seconds before now: how the CLI and the runtime name recordings.
pub(super) fn ms(secs_ago: u64) -> u64 {
    u64::try_from((T0 - Duration::from_secs(secs_ago)).as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn sized(name: &str, secs_ago: u64, bytes: u64) -> Entry {
    Entry { path: PathBuf::from(name), modified: at(secs_ago), bytes, len: bytes }
}

/// A file of one byte.
pub(super) fn e(name: &str, secs_ago: u64) -> Entry {
    sized(name, secs_ago, 1)
}

pub(super) fn names(mut paths: Vec<PathBuf>) -> Vec<String> {
    paths.sort();
    paths.into_iter().map(|p| p.display().to_string()).collect()
}

impl Policy {
    /// Age, count and grace in seconds; no size budget.
    pub(super) fn of(max_age: u64, max_count: usize, grace: u64) -> Policy {
        Policy {
            max_age: Duration::from_secs(max_age),
            max_count,
            grace: Duration::from_secs(grace),
            size: None,
            uploaded_first: false,
        }
    }
}

/// A size budget, a day's age, a count that keeps everything and 5 s of grace.
pub(super) fn budget(keep_under: u64, full_at: u64) -> Policy {
    let mut p = Policy::of(86_400, 10_000, 5);
    p.size = Some(SizeBudget { keep_under, full_at, capacity: full_at + full_at / 19 });
    p
}

/// What a pass decides on `files` directly in the directory and `other_bytes` below it, at now.
pub(super) fn plan_of(files: Vec<Entry>, other_bytes: u64, policy: Policy) -> Plan {
    plan(Listing { files, other_bytes, ..Listing::default() }, now(), policy)
}

/// A session's output directory, laid out as the runtime and the CLI do.
#[derive(Debug, Default)]
pub(super) struct Session(Listing);

impl Session {
    pub(super) fn snapshot(mut self, name: &str, secs_ago: u64, bytes: u64) -> Self {
        self.0.files.push(sized(name, secs_ago, bytes));
        self
    }

    /// `recordings/video-<ms>.webm` of the recording started `started` seconds ago.
    pub(super) fn video(mut self, started: u64, written: u64, bytes: u64) -> Self {
        self.0.recordings.videos.push(sized(&video_path(started), written, bytes));
        self
    }

    /// The `.trace` and `.network` of the trace started `started` seconds ago, each of `bytes`.
    pub(super) fn trace(mut self, started: u64, written: u64, bytes: u64) -> Self {
        for file in trace_files(started) {
            self.0.recordings.traces.push(sized(&file, written, bytes));
        }
        self
    }

    /// A screencast frame written `written` seconds ago.
    pub(super) fn frame(mut self, written: u64, bytes: u64) -> Self {
        self.0.recordings.frames.push(sized(&frame_path(written), written, bytes));
        self
    }

    /// A blob in `recordings/traces/resources/`.
    pub(super) fn resource(mut self, sha1: &str, written: u64, bytes: u64) -> Self {
        self.0.recordings.shared.push(sized(&format!("recordings/traces/resources/{sha1}"), written, bytes));
        self
    }

    /// `in-progress.json`: a recording started `started` seconds ago, with a video and a trace.
    pub(super) fn recording(mut self, started: u64) -> Self {
        let video = Some(format!("/var/lib/playpen/snapshots/{}", video_path(started)));
        self.0.recordings.in_progress = Some(Started { started_ms: ms(started), video, trace: true, recording: true });
        self
    }

    /// `recordings/<file>`, the egress proxy's log or its rotated file.
    pub(super) fn egress_log(mut self, file: &str, written: u64, bytes: u64) -> Self {
        self.0.egress_log.push(sized(&format!("recordings/{file}"), written, bytes));
        self
    }

    /// An export configured: the exporter's ledger read, empty so far.
    pub(super) fn exporting(mut self) -> Self {
        self.0.export.get_or_insert_with(Exported::default);
        self
    }

    /// The ledger says the exporter stored `path` as it now is (listed already).
    pub(super) fn stored(mut self, path: &str) -> Self {
        let r = &self.0.recordings;
        let mut all = self.0.files.iter().chain(&r.videos).chain(&r.traces).chain(&r.frames).chain(&r.shared);
        let entry = all.find(|e| e.path.as_path() == std::path::Path::new(path)).expect("listed");
        let print = fingerprint(entry);
        self.0.export.get_or_insert_with(Exported::default).uploaded.insert(PathBuf::from(path), print);
        self
    }

    /// The ledger has `path`, as it was before it was written to again.
    pub(super) fn stored_before_a_write(mut self, path: &str) -> Self {
        let mut print = fingerprint(&sized(path, 0, 0));
        print.bytes = u64::MAX;
        self.0.export.get_or_insert_with(Exported::default).uploaded.insert(PathBuf::from(path), print);
        self
    }

    /// The exporter is uploading `path` now.
    pub(super) fn uploading(mut self, path: &str) -> Self {
        self.0.export.get_or_insert_with(Exported::default).uploading = Some(PathBuf::from(path));
        self
    }

    /// The listing, as it is.
    pub(super) fn listing(&self) -> Listing {
        self.0.clone()
    }

    /// The walk stopped before it listed everything.
    pub(super) fn cut_short(mut self) -> Self {
        self.0.recordings.cut_short = true;
        self
    }

    pub(super) fn plan(self, policy: Policy) -> Plan {
        plan(self.0, now(), policy)
    }
}

/// The video of the recording started `started` seconds ago.
pub(super) fn video_path(started: u64) -> String {
    format!("recordings/video-{}.webm", ms(started))
}

/// The trace started `started` seconds ago, less the suffix of each of its files.
pub(super) fn trace_path(started: u64) -> String {
    format!("recordings/traces/trace-{}", ms(started))
}

/// The `.trace` and `.network` of the trace started `started` seconds ago.
pub(super) fn trace_files(started: u64) -> [String; 2] {
    [".network", ".trace"].map(|suffix| format!("{}{suffix}", trace_path(started)))
}

/// A screencast frame written `written` seconds ago.
pub(super) fn frame_path(written: u64) -> String {
    format!("recordings/traces/screencast/page@1-{}.jpeg", ms(written))
}

/// `paths`, sorted as [`names`] sorts.
pub(super) fn sorted<S: AsRef<str>>(paths: impl IntoIterator<Item = S>) -> Vec<String> {
    names(paths.into_iter().map(|p| PathBuf::from(p.as_ref())).collect())
}
