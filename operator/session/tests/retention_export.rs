//! Retention beside a recording export, on real files: the exporter's own
//! ledger code notes what was stored, the exporter's note names the file it
//! is uploading, and a retention pass deletes the stored recordings first,
//! then, with nothing stored left, the oldest of the rest; never the file
//! being uploaded, the recording in progress nor the exporter's state.

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::Utc;
use playpen_api::export_status::{
    Uploading, EXPORT_LEDGER_FILE, EXPORT_STATE_DIR, EXPORT_STATUS_FILE, EXPORT_UPLOADING_FILE,
};
use playpen_session::export::{Fingerprint, Ledger, Uploaded};
use playpen_session::run::policy::retention::{prune, Outcome, Policy, SizeBudget};

const KIB: u64 = 1024;
/// Each video: a whole number of blocks, so that its allocated size is its length.
const VIDEO: u64 = 64 * KIB;

/// A session's snapshot volume as the runtime and the exporter leave it.
struct Volume {
    _tmp: tempfile::TempDir,
    out: PathBuf,
    now: SystemTime,
}

impl Volume {
    fn recordings(&self) -> PathBuf {
        self.out.join("recordings")
    }

    fn state(&self) -> PathBuf {
        self.recordings().join(EXPORT_STATE_DIR)
    }

    /// `recordings/video-<name>.webm`, last written `secs_ago` seconds before now.
    fn video(&self, name: &str) -> PathBuf {
        self.recordings().join(format!("video-{name}.webm"))
    }

    fn write(&self, path: &Path, bytes: u64, secs_ago: u64) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![7u8; usize::try_from(bytes).unwrap()]).unwrap();
        self.age(path, secs_ago);
    }

    fn age(&self, path: &Path, secs_ago: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(self.now - Duration::from_secs(secs_ago)).unwrap();
    }

    /// What the exporter's uploader notes once a file is stored.
    fn store(&self, ledger: &mut Ledger, path: &Path) {
        let now = Fingerprint::of(&std::fs::metadata(path).unwrap());
        let key =
            serde_json::from_str(&format!("\"p/video/{}\"", path.file_name().unwrap().to_string_lossy())).unwrap();
        let sha256 = "ab".repeat(32);
        let entry = Uploaded {
            path: path.to_owned(),
            bytes: now.bytes,
            modified_ns: now.modified_ns,
            key,
            sha256,
            at: Utc::now(),
        };
        ledger.record(entry).unwrap();
    }
}

/// Six videos, the oldest first: `e` (being uploaded), `a`, `b` (stored,
/// then written to again), `c`, `d` (stored), and the one in progress; the
/// last-printed snapshot; the exporter's state.
fn session() -> Volume {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("snapshots");
    let v = Volume { out, _tmp: tmp, now: SystemTime::now() };
    v.write(&v.out.join("page.yml"), 4 * KIB, 100);
    for (name, secs_ago) in [("e", 6000), ("a", 5000), ("b", 4100), ("c", 3000), ("d", 2000), ("live", 500)] {
        v.write(&v.video(name), VIDEO, secs_ago);
    }
    let started = u64::try_from(v.now.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap() - 500_000;
    let note =
        serde_json::json!({"startedMs": started, "video": v.video("live").display().to_string(), "recording": true});
    std::fs::write(v.recordings().join("in-progress.json"), note.to_string()).unwrap();

    let mut ledger = Ledger::open(&v.state().join(EXPORT_LEDGER_FILE)).unwrap();
    v.store(&mut ledger, &v.video("b"));
    v.age(&v.video("b"), 4000); // written to since: stored no more
    v.store(&mut ledger, &v.video("d"));
    v.write(&v.state().join(EXPORT_STATUS_FILE), 4 * KIB, 9000);
    v.write(&v.state().join("manifest.json"), 4 * KIB, 9000);
    let uploading = Uploading { path: v.video("e").display().to_string() };
    std::fs::write(v.state().join(EXPORT_UPLOADING_FILE), serde_json::to_vec(&uploading).unwrap()).unwrap();
    v
}

/// A day's age, counts that keep everything, 5 s of grace, `keep_under` bytes.
fn policy(keep_under: Option<u64>, uploaded_first: bool) -> Policy {
    Policy {
        max_age: Duration::from_secs(86_400),
        max_count: 10_000,
        grace: Duration::from_secs(5),
        size: keep_under.map(|keep_under| SizeBudget { keep_under, full_at: 1 << 40, capacity: 1 << 41 }),
        uploaded_first,
    }
}

fn left(v: &Volume) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(v.recordings())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("video-"))
        .collect();
    names.sort();
    names
}

/// The bytes the volume holds: a pass that deletes nothing says.
fn total(v: &Volume) -> u64 {
    let Outcome { deleted, kept_bytes, .. } = prune(&v.out, policy(None, true)).unwrap();
    assert_eq!(deleted, 0);
    kept_bytes
}

#[test]
fn stored_recordings_go_first_then_the_oldest_never_the_upload_in_progress() {
    let v = session();
    let all = total(&v);

    // One video must go: the stored one, though four are older.
    let first = prune(&v.out, policy(Some(all - VIDEO), true)).unwrap();
    assert_eq!(first.deleted, 1, "{first:?}");
    assert!(first.not_uploaded.is_empty() && !first.full);
    assert_eq!(left(&v), ["video-a.webm", "video-b.webm", "video-c.webm", "video-e.webm", "video-live.webm"]);

    // Two more must go, and nothing stored is left (b changed since its upload): the oldest of
    // the rest, as without an export, but not e, which the exporter is reading.
    let second = prune(&v.out, policy(Some(all - 3 * VIDEO), true)).unwrap();
    assert_eq!(second.deleted, 2, "{second:?}");
    assert_eq!(second.kept_bytes, all - 3 * VIDEO);
    let mut lost: Vec<_> = second.not_uploaded.iter().map(|p| p.file_name().unwrap().to_owned()).collect();
    lost.sort();
    assert_eq!(lost, ["video-a.webm", "video-b.webm"], "each loss reported");
    assert_eq!(left(&v), ["video-c.webm", "video-e.webm", "video-live.webm"]);

    // The exporter's state and the notes are never touched.
    for kept in [EXPORT_LEDGER_FILE, EXPORT_STATUS_FILE, EXPORT_UPLOADING_FILE, "manifest.json"] {
        assert!(v.state().join(kept).is_file(), "{kept}");
    }
    assert!(v.recordings().join("in-progress.json").is_file() && v.out.join("page.yml").is_file());
}

#[test]
fn without_an_export_the_oldest_go_whatever_the_ledger_says() {
    let v = session();
    let all = total(&v);
    let outcome = prune(&v.out, policy(Some(all - VIDEO), false)).unwrap();
    assert_eq!((outcome.deleted, outcome.not_uploaded.len()), (1, 0), "{outcome:?}");
    assert_eq!(left(&v), ["video-a.webm", "video-b.webm", "video-c.webm", "video-d.webm", "video-live.webm"]);
}

#[test]
fn a_garbled_ledger_is_a_ledger_that_knows_nothing() {
    let v = session();
    let all = total(&v);
    let ledger = v.state().join(EXPORT_LEDGER_FILE);
    std::fs::write(&ledger, b"\xff{\"path\":\n[]\n").unwrap();
    std::fs::write(v.state().join(EXPORT_UPLOADING_FILE), b"{").unwrap();
    let outcome = prune(&v.out, policy(Some(all - VIDEO), true)).unwrap();
    assert_eq!(outcome.deleted, 1, "{outcome:?}");
    assert_eq!(outcome.not_uploaded.len(), 1);
    assert!(!v.video("e").exists(), "the oldest, as without an export");
}
