//! The I/O half of uploaded-first retention: the exporter's state directory
//! (`recordings/.export/`), written by another container on the shared
//! volume, read here without trusting it. Never fails: a missing, unreadable,
//! oversized or garbled file, a symlink or a FIFO in its place, says nothing
//! is uploaded (retention then behaves as without an export). A ledger that
//! lies can only make retention delete early what the browser container
//! could delete itself; every claim must still match the file's size and
//! modification time.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use playpen_api::export_status::{Uploading, EXPORT_LEDGER_FILE, EXPORT_STATE_DIR, EXPORT_UPLOADING_FILE};

use super::uploaded::Exported;
use crate::export::ledger_fingerprints;

/// The most of the ledger read: its newest lines (later lines win, and the
/// oldest name files long deleted). About 25,000 uploads.
pub const MAX_LEDGER_BYTES: u64 = 8 << 20;
/// The most of the note naming the file being uploaded.
const MAX_UPLOADING_BYTES: u64 = 8 << 10;

/// What the exporter's state directory in `recordings` says.
pub fn read(recordings: &Path) -> Exported {
    let state = recordings.join(EXPORT_STATE_DIR);
    if !state.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Exported::default();
    }
    let uploaded = tail(&state.join(EXPORT_LEDGER_FILE), MAX_LEDGER_BYTES)
        .map(|text| ledger_fingerprints(&text))
        .unwrap_or_default();
    let uploading = tail(&state.join(EXPORT_UPLOADING_FILE), MAX_UPLOADING_BYTES)
        .and_then(|text| serde_json::from_str::<Uploading>(&text).ok())
        .map(|note| PathBuf::from(note.path));
    Exported { uploaded, uploading }
}

/// The last `max` bytes of the regular file at `path` (a symlink is not
/// followed), from the first whole line when cut; invalid UTF-8 replaced.
fn tail(path: &Path, max: u64) -> Option<String> {
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let mut file = File::options().read(true).custom_flags(flags.bits()).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let skip = meta.len().saturating_sub(max);
    file.seek(SeekFrom::Start(skip)).ok()?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).ok()?;
    if skip > 0 {
        // The first line is cut (or whole by chance): either way, one line.
        let first_end = bytes.iter().position(|b| *b == b'\n').map_or(bytes.len(), |at| at + 1);
        bytes.drain(..first_end);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn state(recordings: &Path) -> PathBuf {
        let state = recordings.join(EXPORT_STATE_DIR);
        std::fs::create_dir_all(&state).unwrap();
        state
    }

    fn line(path: &str, bytes: u64) -> String {
        format!(
            "{{\"path\":\"{path}\",\"bytes\":{bytes},\"modifiedNs\":7,\"key\":\"p/video/000001.webm\",\"sha256\":\"ab\",\"at\":\"2026-12-01T00:00:00Z\"}}\n"
        )
    }

    #[test]
    fn nothing_there_is_nothing_uploaded() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read(tmp.path()), Exported::default());
        state(tmp.path());
        assert_eq!(read(tmp.path()), Exported::default());
    }

    #[test]
    fn the_ledger_and_the_upload_in_progress_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let state = state(tmp.path());
        std::fs::write(state.join(EXPORT_LEDGER_FILE), line("/r/video-1.webm", 3) + &line("/r/video-2.webm", 4))
            .unwrap();
        std::fs::write(state.join(EXPORT_UPLOADING_FILE), r#"{"path":"/r/video-3.webm"}"#).unwrap();
        let seen = read(tmp.path());
        assert_eq!(seen.uploaded.len(), 2);
        assert_eq!(seen.uploaded[Path::new("/r/video-2.webm")].bytes, 4);
        assert_eq!(seen.uploading.as_deref(), Some(Path::new("/r/video-3.webm")));
    }

    #[test]
    fn garbage_symlinks_fifos_and_directories_say_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let state = state(tmp.path());
        std::fs::write(state.join(EXPORT_LEDGER_FILE), b"\xff\xfe not json\n{\"path\":1}\n[]\n").unwrap();
        std::fs::write(state.join(EXPORT_UPLOADING_FILE), b"{\"path\":").unwrap();
        assert_eq!(read(tmp.path()), Exported::default());

        let real = tmp.path().join("real.jsonl");
        std::fs::write(&real, line("/r/video-1.webm", 3)).unwrap();
        std::fs::remove_file(state.join(EXPORT_LEDGER_FILE)).unwrap();
        std::os::unix::fs::symlink(&real, state.join(EXPORT_LEDGER_FILE)).unwrap();
        assert!(read(tmp.path()).uploaded.is_empty(), "a symlink is not followed");

        std::fs::remove_file(state.join(EXPORT_UPLOADING_FILE)).unwrap();
        nix::unistd::mkfifo(&state.join(EXPORT_UPLOADING_FILE), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(read(tmp.path()).uploading, None, "a FIFO neither blocks nor counts");

        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(other.path().join(EXPORT_STATE_DIR)).unwrap();
        std::fs::create_dir(other.path().join(EXPORT_STATE_DIR).join(EXPORT_LEDGER_FILE)).unwrap();
        assert_eq!(read(other.path()), Exported::default(), "a directory where the ledger goes");
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&state, linked.path().join(EXPORT_STATE_DIR)).unwrap();
        assert_eq!(read(linked.path()), Exported::default(), "a state directory elsewhere");
    }

    #[test]
    fn a_huge_ledger_is_read_from_its_newest_whole_line() {
        let tmp = tempfile::tempdir().unwrap();
        let file = state(tmp.path()).join(EXPORT_LEDGER_FILE);
        let mut out = std::io::BufWriter::new(File::create(&file).unwrap());
        out.write_all(line("/r/oldest.webm", 1).as_bytes()).unwrap();
        let filler = line("/r/filler.webm", 2);
        for _ in 0..=MAX_LEDGER_BYTES / filler.len() as u64 {
            out.write_all(filler.as_bytes()).unwrap();
        }
        out.write_all(line("/r/newest.webm", 3).as_bytes()).unwrap();
        drop(out);
        let seen = read(tmp.path()).uploaded;
        assert_eq!(seen.len(), 2, "the oldest line is past the bound: {:?}", seen.keys());
        assert!(seen.contains_key(Path::new("/r/newest.webm")));

        // Cut mid-line: the torn first line is dropped, not misread.
        let cut = tail(&file, line("/r/newest.webm", 3).len() as u64 + 5).unwrap();
        assert_eq!(cut, line("/r/newest.webm", 3));
    }
}
