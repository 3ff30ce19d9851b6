//! Uploaded recordings first (pure). With a recording export, the
//! exporter's ledger says which files are in the store, each by the size
//! and modification time it had when read for its upload: a recording is
//! stored while every file of it still has them. When the count or the size
//! budget must delete, the stored recordings go first, oldest first; only
//! what is still over afterwards is met as without an export (the oldest of
//! what is left go, whatever their kind, stored or not). The file the
//! exporter is uploading now is never deleted.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::unit::{Entry, Kind, Unit};
use crate::export::Fingerprint;

/// What the exporter says of the recordings (read from its state directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Files in the store, by path, each as it was when read for its upload.
    pub uploaded: HashMap<PathBuf, Fingerprint>,
    /// The file being uploaded now.
    pub uploading: Option<PathBuf>,
}

impl Exported {
    /// Whether `entry`, as it now is, is in the store.
    pub fn stored(&self, entry: &Entry) -> bool {
        self.uploaded.get(&entry.path).is_some_and(|f| *f == fingerprint(entry))
    }

    /// The paths of `entries` in the store as they now are.
    pub(crate) fn stored_paths<'a>(&self, entries: impl IntoIterator<Item = &'a Entry>) -> HashSet<PathBuf> {
        entries.into_iter().filter(|e| self.stored(e)).map(|e| e.path.clone()).collect()
    }

    /// Whether the exporter is uploading `path` now.
    pub(crate) fn is_uploading(&self, path: &Path) -> bool {
        self.uploading.as_deref() == Some(path)
    }

    /// Marks the recordings every file of which is in `stored`, and pins the
    /// unit holding the file being uploaded.
    pub(crate) fn mark(&self, units: &mut [Unit], stored: &HashSet<PathBuf>) {
        for unit in units {
            let recording = unit.kind != Kind::Snapshot;
            unit.uploaded = recording && !unit.files.is_empty() && unit.files.iter().all(|f| stored.contains(f));
            unit.in_progress |= unit.files.iter().any(|f| self.is_uploading(f));
        }
    }
}

/// An entry's fingerprint as the ledger records one: its length and its
/// modification time in nanoseconds (0 before the epoch).
pub(crate) fn fingerprint(entry: &Entry) -> Fingerprint {
    let modified_ns =
        entry.modified.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Fingerprint { bytes: entry.len, modified_ns }
}

/// A unit the count or the size budget may delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The `maxCount` it counts against.
    pub group: usize,
    /// The disk space it takes.
    pub bytes: u64,
    /// In the store as it now is.
    pub uploaded: bool,
}

/// What goes before the rest is walked as without an export: of
/// `candidates` (newest first), the uploaded ones, oldest first, each while
/// the total `bytes` (everything kept so far, the candidates included) is
/// over `budget` or its group's count over `max_count`. Returns their
/// indexes, oldest first.
pub(crate) fn first(
    candidates: &[Candidate],
    mut bytes: u64,
    mut counts: [usize; 2],
    budget: u64,
    max_count: usize,
) -> Vec<usize> {
    let mut gone = Vec::new();
    for (i, c) in candidates.iter().enumerate().rev().filter(|(_, c)| c.uploaded) {
        let group = c.group.min(1);
        if bytes > budget || counts[group] > max_count {
            bytes = bytes.saturating_sub(c.bytes);
            counts[group] = counts[group].saturating_sub(1);
            gone.push(i);
        }
    }
    gone
}

#[cfg(test)]
mod tests;
