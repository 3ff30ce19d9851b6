//! The I/O half of retention: what the snapshot volume holds. Symlinks are
//! never followed (`traces` beside the snapshots is one, into `recordings/`),
//! and at most `MAX_WALK` entries below the directory are read.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use playpen_api::layout::{EGRESS_LOG_FILE, EGRESS_LOG_ROTATED_FILE};

use super::plan::Listing;
use super::recordings::RecordingFiles;
use super::unit::{total, Entry};
use crate::run::browser::recording;

/// The most entries read below the directory: a tree the agent made
/// cannot make a pass slow.
const MAX_WALK: usize = 100_000;
/// Playwright's subdirectory of a traces directory for screencast frames.
const SCREENCAST: &str = "screencast";

/// Lists the regular files directly in `dir` and the recordings, and counts
/// what else is there.
pub fn scan(dir: &Path) -> std::io::Result<Listing> {
    let mut out = Listing::default();
    let mut walk = Walk { left: MAX_WALK, cut_short: false };
    let recordings = recording::dir(dir);
    if recordings.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        // First, so that a tree the agent made cannot use up the walk before them.
        out.recordings = list_recordings(&recordings, &mut walk, &mut out.egress_log, &mut out.other_bytes);
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Ok(meta) = path.symlink_metadata() else { continue };
        if let Some(file) = regular_file(&path, &meta) {
            out.files.push(file);
        } else if meta.is_dir() && path != recordings {
            out.other_bytes = out.other_bytes.saturating_add(walk.bytes_below(&path));
        }
    }
    Ok(out)
}

/// The size of the filesystem holding `dir`, in bytes.
pub fn filesystem_bytes(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    stat.blocks().checked_mul(stat.fragment_size())
}

fn list_recordings(dir: &Path, walk: &mut Walk, egress_log: &mut Vec<Entry>, other_bytes: &mut u64) -> RecordingFiles {
    // Read before the files: a recording that starts later has only files inside the grace period.
    let mut out = RecordingFiles { in_progress: recording::in_progress(dir), ..RecordingFiles::default() };
    for (path, meta) in walk.children(dir) {
        let name = path.file_name().unwrap_or_default();
        match regular_file(&path, &meta) {
            Some(log) if is_egress_log(name) => egress_log.push(log),
            Some(video) if !recording::is_note(name) => out.videos.push(video),
            None if meta.is_dir() && name == recording::TRACES => list_traces(&path, walk, other_bytes, &mut out),
            _ => *other_bytes = other_bytes.saturating_add(walk.bytes_of(&path, &meta)),
        }
    }
    out.cut_short = walk.cut_short;
    out
}

/// Whether `file_name` in `recordings/` is the egress proxy's log or its rotated file.
fn is_egress_log(file_name: &std::ffi::OsStr) -> bool {
    file_name == EGRESS_LOG_FILE || file_name == EGRESS_LOG_ROTATED_FILE
}

fn list_traces(dir: &Path, walk: &mut Walk, other_bytes: &mut u64, out: &mut RecordingFiles) {
    for (path, meta) in walk.children(dir) {
        if let Some(file) = regular_file(&path, &meta) {
            out.traces.push(file);
            continue;
        }
        *other_bytes = other_bytes.saturating_add(allocated(&meta));
        if meta.is_dir() {
            let files = walk.files_below(&path, other_bytes);
            if path.file_name().is_some_and(|n| n == SCREENCAST) {
                out.frames.extend(files);
            } else {
                out.shared.extend(files);
            }
        }
    }
}

fn allocated(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512)
}

fn regular_file(path: &Path, meta: &Metadata) -> Option<Entry> {
    let modified = meta.modified().ok().filter(|_| meta.is_file())?;
    Some(Entry { path: path.to_owned(), modified, bytes: allocated(meta), len: meta.len() })
}

/// A walk that reads at most `left` more entries.
struct Walk {
    left: usize,
    cut_short: bool,
}

impl Walk {
    /// The entries directly in `dir`, each with its own metadata (a
    /// symlink's, not its target's).
    fn children(&mut self, dir: &Path) -> Vec<(PathBuf, Metadata)> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            if self.left == 0 {
                self.cut_short = true;
                break;
            }
            self.left -= 1;
            let path = entry.path();
            if let Ok(meta) = path.symlink_metadata() {
                out.push((path, meta));
            }
        }
        out
    }

    /// The regular files below `dir`, at any depth; the bytes of what else
    /// is there are added to `other_bytes`.
    fn files_below(&mut self, dir: &Path, other_bytes: &mut u64) -> Vec<Entry> {
        let mut files = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for (path, meta) in self.children(&dir) {
                if let Some(file) = regular_file(&path, &meta) {
                    files.push(file);
                    continue;
                }
                *other_bytes = other_bytes.saturating_add(allocated(&meta));
                if meta.is_dir() {
                    pending.push(path);
                }
            }
        }
        files
    }

    /// The bytes below `dir`.
    fn bytes_below(&mut self, dir: &Path) -> u64 {
        let mut other = 0;
        let files = self.files_below(dir, &mut other);
        other.saturating_add(total(&files))
    }

    /// The bytes of `path` itself and, for a directory, below it.
    fn bytes_of(&mut self, path: &Path, meta: &Metadata) -> u64 {
        let below = if meta.is_dir() { self.bytes_below(path) } else { 0 };
        allocated(meta).saturating_add(below)
    }
}
