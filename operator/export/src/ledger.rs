//! What has been uploaded: a JSON-lines file on the volume, one line per
//! upload, so that retention can delete uploaded files first, and a
//! restarted runtime knows what is already in the store.
//!
//! A file counts as uploaded while its size and modification time are
//! those it had when it was read for the upload: a file written to since
//! (the live trace) is not, until it is uploaded again. A torn last line
//! (a crash mid-write) is skipped when the ledger is read.

use std::collections::HashMap;
use std::fs::Metadata;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::keys::ObjectKey;

/// One upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Uploaded {
    /// The local file.
    pub path: PathBuf,
    /// Its size when read.
    pub bytes: u64,
    /// Its modification time when read, nanoseconds since the epoch.
    pub modified_ns: u64,
    /// Where it went.
    pub key: ObjectKey,
    /// SHA-256 of what was uploaded, lowercase hex.
    pub sha256: String,
    /// When the upload finished.
    pub at: DateTime<Utc>,
}

/// A file's identity for the ledger: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the epoch (0 when unknown).
    pub modified_ns: u64,
}

impl Fingerprint {
    /// The fingerprint of a file's metadata.
    pub fn of(meta: &Metadata) -> Self {
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Self { bytes: meta.len(), modified_ns }
    }
}

impl Uploaded {
    /// Whether this upload is of the file as it now is.
    pub fn matches(&self, now: Fingerprint) -> bool {
        self.bytes == now.bytes && self.modified_ns == now.modified_ns
    }
}

/// The uploads read back from a ledger's text, later lines winning.
fn parse(text: &str) -> HashMap<PathBuf, Uploaded> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Uploaded>(line).ok())
        .map(|entry| (entry.path.clone(), entry))
        .collect()
}

/// What a ledger's text says is uploaded: each file's fingerprint when it
/// was read for its last upload (later lines winning, torn or foreign lines
/// skipped). The reader's side: retention in the browser container reads
/// the exporter's file with this, never trusting more than a fingerprint
/// that still matches the file on disk.
pub fn fingerprints(text: &str) -> HashMap<PathBuf, Fingerprint> {
    parse(text)
        .into_iter()
        .map(|(path, entry)| (path, Fingerprint { bytes: entry.bytes, modified_ns: entry.modified_ns }))
        .collect()
}

/// The ledger of one session's uploads.
#[derive(Debug)]
pub struct Ledger {
    file: PathBuf,
    entries: HashMap<PathBuf, Uploaded>,
}

impl Ledger {
    /// Reads the ledger at `file`, or starts an empty one (the file is made
    /// at the first upload).
    pub fn open(file: &Path) -> std::io::Result<Self> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        Ok(Self { file: file.to_owned(), entries: parse(&text) })
    }

    /// The ledger file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The last upload of `path`, whether or not the file changed since.
    pub fn entry(&self, path: &Path) -> Option<&Uploaded> {
        self.entries.get(path)
    }

    /// Whether `path`, as it now is on disk, is in the store.
    pub fn is_uploaded(&self, path: &Path) -> bool {
        let Some(entry) = self.entries.get(path) else { return false };
        std::fs::symlink_metadata(path).is_ok_and(|meta| entry.matches(Fingerprint::of(&meta)))
    }

    /// Notes an upload (appended and synced before it counts).
    pub fn record(&mut self, entry: Uploaded) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.file)?;
        file.write_all(&line)?;
        file.sync_data()?;
        self.entries.insert(entry.path.clone(), entry);
        Ok(())
    }

    /// Drops the entries of files no longer on the volume (retention deleted
    /// them) and rewrites the file with one line per upload left.
    pub fn forget_missing(&mut self) -> std::io::Result<usize> {
        let before = self.entries.len();
        self.entries.retain(|path, _| std::fs::symlink_metadata(path).is_ok());
        let gone = before - self.entries.len();
        if gone == 0 {
            return Ok(0);
        }
        let mut entries: Vec<&Uploaded> = self.entries.values().collect();
        entries.sort_by_key(|e| e.at);
        let mut text = Vec::new();
        for entry in entries {
            text.extend(serde_json::to_vec(entry).map_err(std::io::Error::other)?);
            text.push(b'\n');
        }
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.file)?;
        Ok(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &Path, bytes: u64, modified_ns: u64) -> Uploaded {
        Uploaded {
            path: path.to_owned(),
            bytes,
            modified_ns,
            key: serde_json::from_str("\"p/video/000001.webm\"").unwrap(),
            sha256: "ab".repeat(32),
            at: DateTime::<Utc>::from_timestamp(1_765_350_309, 0).unwrap(),
        }
    }

    #[test]
    fn a_file_counts_as_uploaded_only_as_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let video = dir.path().join("video-1.webm");
        std::fs::write(&video, b"webm").unwrap();
        let mut ledger = Ledger::open(&dir.path().join(".export/uploaded.jsonl")).unwrap();
        assert!(!ledger.is_uploaded(&video));
        let now = Fingerprint::of(&std::fs::metadata(&video).unwrap());
        ledger.record(entry(&video, now.bytes, now.modified_ns)).unwrap();
        assert!(ledger.is_uploaded(&video));
        std::fs::write(&video, b"webm, longer").unwrap();
        assert!(!ledger.is_uploaded(&video), "written to since its upload");
        assert!(ledger.entry(&video).is_some());
    }

    #[test]
    fn the_ledger_is_read_back_skipping_a_torn_line_later_lines_winning() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("uploaded.jsonl");
        let a = dir.path().join("a");
        let mut ledger = Ledger::open(&file).unwrap();
        ledger.record(entry(&a, 1, 1)).unwrap();
        ledger.record(entry(&a, 2, 2)).unwrap();
        std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"path\": \"/b\", \"byt").unwrap();
        let again = Ledger::open(&file).unwrap();
        assert_eq!(again.entries.len(), 1);
        assert_eq!(again.entry(&a).unwrap().bytes, 2);
    }

    #[test]
    fn the_reader_s_side_sees_each_file_s_last_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("uploaded.jsonl");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let mut ledger = Ledger::open(&file).unwrap();
        ledger.record(entry(&a, 1, 10)).unwrap();
        ledger.record(entry(&b, 2, 20)).unwrap();
        ledger.record(entry(&a, 3, 30)).unwrap();
        let text = format!("not json\n{}{{\"path\":", std::fs::read_to_string(&file).unwrap());
        let seen = fingerprints(&text);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[&a], Fingerprint { bytes: 3, modified_ns: 30 });
        assert_eq!(seen[&b], Fingerprint { bytes: 2, modified_ns: 20 });
        assert!(fingerprints("").is_empty() && fingerprints("\u{0}\n[]\n{}").is_empty());
    }

    #[test]
    fn entries_of_deleted_files_are_forgotten_and_the_file_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("uploaded.jsonl");
        let (kept, gone) = (dir.path().join("kept"), dir.path().join("gone"));
        std::fs::write(&kept, b"k").unwrap();
        let mut ledger = Ledger::open(&file).unwrap();
        ledger.record(entry(&kept, 1, 1)).unwrap();
        ledger.record(entry(&gone, 1, 1)).unwrap();
        assert_eq!(ledger.forget_missing().unwrap(), 1);
        assert_eq!(ledger.forget_missing().unwrap(), 0);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(Ledger::open(&file).unwrap().entry(&kept).is_some());
    }
}
