//! What retention handles: files, and the units it keeps or deletes whole.

use std::path::PathBuf;
use std::time::SystemTime;

/// A file on the snapshot volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// Its modification time.
    pub modified: SystemTime,
    /// The disk space it takes (allocated blocks, as `du` and the kubelet count).
    pub bytes: u64,
    /// Its length (what the exporter's ledger records of it).
    pub len: u64,
}

/// The disk space `entries` take.
pub(crate) fn total(entries: &[Entry]) -> u64 {
    entries.iter().map(|e| e.bytes).fold(0, u64::saturating_add)
}

/// What a unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file directly in the output directory: a snapshot, a screenshot, a log.
    Snapshot,
    /// A video in `recordings/`.
    Video,
    /// A trace in `recordings/traces/`: its files and the screencast frames it wrote.
    Trace,
}

impl Kind {
    /// Which `maxCount` a unit counts against: snapshot files and recordings
    /// each keep their own newest, so many snapshots never push a recording out.
    pub(crate) fn count_group(self) -> usize {
        match self {
            Kind::Snapshot => 0,
            Kind::Video | Kind::Trace => 1,
        }
    }
}

/// What retention keeps or deletes whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    pub kind: Kind,
    /// The path that names it: equal times are ordered by it.
    pub name: PathBuf,
    /// Its files.
    pub files: Vec<PathBuf>,
    /// The newest of its files' modification times.
    pub modified: SystemTime,
    /// The disk space its files take.
    pub bytes: u64,
    /// Part of the recording in progress, or being uploaded: never deleted.
    pub in_progress: bool,
    /// A recording every file of which the exporter has stored, as it now
    /// is: deleted first (always false without an export).
    pub uploaded: bool,
}

impl Unit {
    /// A unit of one file.
    pub(crate) fn file(kind: Kind, entry: Entry) -> Unit {
        Unit {
            kind,
            name: entry.path.clone(),
            files: vec![entry.path],
            modified: entry.modified,
            bytes: entry.bytes,
            in_progress: false,
            uploaded: false,
        }
    }

    /// Adds a file: its bytes count, and its write if it is the newest.
    pub(crate) fn add(&mut self, entry: Entry) {
        self.modified = self.modified.max(entry.modified);
        self.bytes = self.bytes.saturating_add(entry.bytes);
        self.files.push(entry.path);
    }
}
