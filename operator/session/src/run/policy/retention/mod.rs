//! Retention on the snapshot volume: snapshots and recordings are pruned by
//! age, by count and by total size, on a schedule and whenever a file is
//! written directly in the output directory (a live trace and its frames are
//! written many times a second: their growth is met on the schedule). What
//! it deletes, each whole:
//!
//! * a regular file directly in the output directory (snapshots,
//!   screenshots, logs: the snapshot files);
//! * a video: a regular file directly in `recordings/` but the notes;
//! * a trace: the files in `recordings/traces/` the CLI names after it, with
//!   the screencast frames it wrote (see `recordings.rs`).
//!
//! Age and size treat them alike: a unit goes when its newest file is older
//! than the age limit, and the size budget walks one newest-first order of
//! all of them (the oldest go first, whatever their kind). The count applies
//! per kind: the snapshot files keep their `maxCount` newest and the
//! recordings (videos and traces) theirs, so an agent that takes many
//! snapshots never pushes a recording out by count.
//!
//! Never deleted for age, count or the size budget:
//!
//! * the **last-printed snapshot**: the `*.yml` file with the newest
//!   modification time (ties broken by the greater name). The CLI writes a
//!   snapshot and then prints its path, so the newest snapshot is the one an
//!   agent was handed last and may still be reading;
//! * the **recording in progress** (`recordings/in-progress.json`): the video
//!   it names and the trace being written;
//! * the notes `in-progress.json` and `interrupted.json`;
//! * the egress proxy's log `recordings/egress.jsonl` and its rotated
//!   `egress.jsonl.1` (host rules, docs/egress-hosts.md): not recordings,
//!   never counted toward `maxCount`; the proxy's rotation bounds them (two
//!   files of at most 4 MiB), and their bytes count toward the size budget;
//! * the blobs in `recordings/traces/resources/`, shared by every trace,
//!   while a trace is left or starting; once none is, they go;
//! * anything younger than the **grace period**: the CLI may still be writing it.
//!
//! Screencast frames of a trace already deleted go. Other directories are
//! counted, never deleted; symlinks are neither followed nor deleted.
//!
//! The size budget exists because the kubelet evicts a Pod whose emptyDir
//! grows past its limit, and a full claim fails every later command. Totals
//! keep under the budget (80% of the volume by default); when one young file
//! would still take the volume past 95%, it goes too, so the kubelet never
//! sees the limit. What retention may not delete (the last-printed snapshot,
//! the recording in progress, the notes, the shared trace blobs, other
//! subdirectories) past 95% is a full volume: the runtime says so and stops.
//!
//! **With a recording export** (`recordingExport` in `runtime.json`) the
//! exporter, another container on the same volume, keeps a ledger of what
//! it stored (`recordings/.export/ledger.jsonl`, read bounded and
//! untrusted: see `export_state.rs`). When the count or the size budget
//! must delete, recordings stored as they now are go first, oldest first;
//! recordings not yet stored stay as long as a stored one can go (see
//! `uploaded.rs`). What is still over afterwards is met as without an
//! export: the oldest of the rest go, stored or not (each recording lost
//! unstored is logged), so an upload backlog never fills the volume, and
//! the runtime stops with `SnapshotVolumeFull` only when what it may not
//! delete fills it, nothing stored being left by then. Age deletes as
//! without an export. Never deleted either: the file the exporter is
//! uploading (`recordings/.export/uploading.json` names it) and the
//! exporter's state directory (a subdirectory: counted, never deleted).

mod export_state;
#[cfg(test)]
mod fixtures;
mod plan;
mod recordings;
mod scan;
mod schedule;
mod unit;
mod uploaded;
mod watch;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::run::browser::recording;

pub use plan::{plan, size_budget, Listing, Plan, Policy, SizeBudget};
pub use scan::{filesystem_bytes, scan};
pub(crate) use schedule::retain;
pub use unit::Entry;
pub use uploaded::Exported;
pub use watch::watch_writes;

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Files deleted.
    pub deleted: usize,
    /// Files deleted inside the grace period because the volume was nearly full.
    pub young: Vec<PathBuf>,
    /// Bytes the volume holds afterwards.
    pub kept_bytes: u64,
    /// Whether the volume is still full.
    pub full: bool,
    /// With an export, recordings deleted before the exporter stored them.
    pub not_uploaded: Vec<PathBuf>,
}

/// One pass: scan (with `uploaded_first`, the exporter's state too), plan, delete.
pub fn prune(dir: &Path, policy: Policy) -> std::io::Result<Outcome> {
    // The exporter's state first: a file it stores later is only not known stored yet.
    let export = policy.uploaded_first.then(|| export_state::read(&recording::dir(dir)));
    let listing = Listing { export, ..scan(dir)? };
    let plan = plan(listing, SystemTime::now(), policy);
    let mut deleted = 0;
    for path in &plan.delete {
        match std::fs::remove_file(path) {
            Ok(()) => deleted += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), %e, "cannot prune"),
        }
    }
    Ok(Outcome {
        deleted,
        young: plan.young,
        kept_bytes: plan.kept_bytes,
        full: plan.full,
        not_uploaded: plan.not_uploaded,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::run::browser::recording::Started;

    /// Writes `bytes` bytes to `path`, creating its directory, last modified `secs_ago` seconds before `now`.
    fn write_aged(path: &Path, bytes: usize, now: SystemTime, secs_ago: u64) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![7u8; bytes]).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(now - Duration::from_secs(secs_ago)).unwrap();
    }

    #[test]
    fn a_real_directory_is_kept_under_its_byte_budget_counting_allocated_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        for i in 0..20u64 {
            write_aged(&tmp.path().join(format!("shot-{i:02}.png")), 64 << 10, now, 1000 - i);
        }
        std::fs::create_dir(tmp.path().join("traces")).unwrap();
        std::fs::write(tmp.path().join("traces/t.zip"), vec![1u8; 128 << 10]).unwrap();
        let listing = scan(tmp.path()).unwrap();
        assert_eq!(listing.files.len(), 20);
        assert!(listing.other_bytes >= 128 << 10, "the subdirectory's file counts: {}", listing.other_bytes);
        let mut p = Policy::of(86_400, 10_000, 5);
        p.size = Some(SizeBudget { keep_under: 600 << 10, full_at: 900 << 10, capacity: 1 << 20 });
        let outcome = prune(tmp.path(), p).unwrap();
        let left = scan(tmp.path()).unwrap();
        let total: u64 = left.other_bytes + left.files.iter().map(|e| e.bytes).sum::<u64>();
        assert!(total <= 600 << 10, "{total} bytes left");
        assert_eq!(outcome.kept_bytes, total);
        assert!(outcome.deleted >= 13, "at most 7 files of 64 KiB fit beside 128 KiB: {outcome:?}");
        let newest = left.files.iter().map(|e| e.path.display().to_string()).max().unwrap();
        assert!(newest.ends_with("shot-19.png"), "the newest stays: {newest}");
        assert!(tmp.path().join("traces/t.zip").exists(), "subdirectories are never pruned");
    }

    /// 3,000 files written `ages[i]` seconds ago into a fresh directory.
    fn real_directory(ages: impl Fn(u64) -> u64) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        for i in 0..3000 {
            write_aged(&tmp.path().join(format!("page-{i:05}.yml")), 1, now, ages(i));
        }
        std::fs::create_dir(tmp.path().join("subdir")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", tmp.path().join("link.yml")).unwrap();
        tmp
    }

    #[test]
    fn a_real_directory_of_thousands_of_young_files_is_cut_to_the_count() {
        // Every file is well within the age limit: only the count can delete.
        let tmp = real_directory(|i| 3600 - i);
        let deleted = prune(tmp.path(), Policy::of(86_400, 100, 5)).unwrap().deleted;
        assert_eq!(deleted, 2900, "the count keeps the newest 100");
        let mut left: Vec<String> =
            scan(tmp.path()).unwrap().files.iter().map(|e| e.path.display().to_string()).collect();
        left.sort();
        assert_eq!(left.len(), 100);
        assert!(left[0].ends_with("page-02900.yml") && left[99].ends_with("page-02999.yml"), "{left:?}");
        assert!(tmp.path().join("subdir").is_dir() && tmp.path().join("link.yml").exists());
    }

    #[test]
    fn a_real_directory_of_thousands_of_old_files_is_cut_by_age() {
        // Fewer than the count would keep: only age can delete.
        let tmp = real_directory(|i| 7200 - i);
        let deleted = prune(tmp.path(), Policy::of(60, 10_000, 5)).unwrap().deleted;
        assert_eq!(deleted, 2999, "all are too old but the last printed");
        let left = scan(tmp.path()).unwrap().files;
        assert_eq!(left.len(), 1);
        assert!(left[0].path.ends_with("page-02999.yml"));
    }

    #[test]
    fn a_real_session_keeps_the_recording_in_progress_and_prunes_the_rest_of_the_recordings_by_age() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("snapshots");
        let now = SystemTime::now();
        let ms = |secs_ago: u64| (now - Duration::from_secs(secs_ago)).duration_since(UNIX_EPOCH).unwrap().as_millis();
        let recordings = recording::dir(&out);
        let traces = recordings.join(recording::TRACES);
        // As the runtime lays it out: `traces` beside the snapshots is a symlink into recordings/.
        std::fs::create_dir_all(&traces).unwrap();
        std::os::unix::fs::symlink("recordings/traces", out.join("traces")).unwrap();
        write_aged(&out.join("page-old.yml"), 100, now, 7200);
        write_aged(&out.join("page-new.yml"), 100, now, 100);
        // A recording a crash cut short long ago, and the one in progress, silent for two hours.
        let (old, current) = (ms(20_000), ms(8000));
        let video = |started| recordings.join(format!("video-{started}.webm"));
        let trace = |started, suffix| traces.join(format!("trace-{started}{suffix}"));
        let frame = |secs_ago| traces.join(format!("screencast/page@1-{}.jpeg", ms(secs_ago)));
        write_aged(&video(old), 4096, now, 15_000);
        write_aged(&video(current), 4096, now, 7200);
        for suffix in [".trace", ".network"] {
            write_aged(&trace(old, suffix), 4096, now, 15_000);
        }
        for suffix in [".trace", ".network", ".stacks"] {
            write_aged(&trace(current, suffix), 4096, now, 7200);
        }
        write_aged(&frame(19_000), 4096, now, 19_000);
        write_aged(&frame(7500), 4096, now, 7500);
        write_aged(&traces.join("resources/da39a3ee5e6b4b0d"), 4096, now, 19_000);
        write_aged(&recordings.join("interrupted.json"), 10, now, 15_000);
        let note = Started {
            started_ms: u64::try_from(current).unwrap(),
            video: Some(video(current).display().to_string()),
            trace: true,
            recording: true,
        };
        std::fs::write(recordings.join("in-progress.json"), serde_json::to_vec(&note).unwrap()).unwrap();
        // Outside the volume, reached only through symlinks: neither followed nor deleted.
        let outside = tmp.path().join("outside");
        write_aged(&outside.join("old.bin"), 4096, now, 50_000);
        std::os::unix::fs::symlink(&outside, traces.join("resources/elsewhere")).unwrap();
        std::os::unix::fs::symlink(outside.join("old.bin"), recordings.join("video-0.webm")).unwrap();

        let listing = scan(&out).unwrap();
        assert_eq!(listing.files.len(), 2);
        assert_eq!(listing.recordings.traces.len(), 5, "listed once, not again through the symlink");
        assert_eq!((listing.recordings.videos.len(), listing.recordings.frames.len()), (2, 2));
        let there = |path: &Path| path.symlink_metadata().is_ok();
        let policy = Policy::of(3600, 500, 5);

        let outcome = prune(&out, policy).unwrap();
        assert_eq!(outcome.deleted, 5, "the old snapshot, video, trace and frame: {outcome:?}");
        assert!(!there(&out.join("page-old.yml")) && !there(&video(old)) && !there(&frame(19_000)));
        assert!(!there(&trace(old, ".trace")) && !there(&trace(old, ".network")));
        for kept in [video(current), trace(current, ".trace"), trace(current, ".stacks"), frame(7500)] {
            assert!(there(&kept), "in progress: {}", kept.display());
        }
        assert!(there(&traces.join("resources/da39a3ee5e6b4b0d")), "a trace is left to read it");
        assert!(there(&recordings.join("interrupted.json")) && there(&recordings.join("in-progress.json")));

        // The recording ends (its note goes): nothing holds it any more.
        std::fs::remove_file(recordings.join("in-progress.json")).unwrap();
        let outcome = prune(&out, policy).unwrap();
        assert_eq!(outcome.deleted, 6, "the video, the trace's three files and frame, the blob: {outcome:?}");
        assert!(!there(&video(current)) && !there(&frame(7500)) && !there(&traces.join("resources/da39a3ee5e6b4b0d")));
        for kept in [out.join("page-new.yml"), out.join("traces"), recordings.join("interrupted.json")] {
            assert!(there(&kept), "{}", kept.display());
        }
        assert!(
            there(&recordings.join("video-0.webm")) && outside.join("old.bin").exists(),
            "symlinks stay, unfollowed"
        );
    }

    #[test]
    fn a_real_egress_log_and_its_rotation_are_listed_apart_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let recordings = recording::dir(tmp.path());
        write_aged(&recordings.join("egress.jsonl"), 4096, now, 50_000);
        write_aged(&recordings.join("egress.jsonl.1"), 8192, now, 60_000);
        write_aged(&recordings.join("egress.jsonl.2"), 10, now, 60_000);
        write_aged(&recordings.join("video-1.webm"), 4096, now, 100);
        let listing = scan(tmp.path()).unwrap();
        let logged: Vec<_> = listing.egress_log.iter().map(|e| e.path.file_name().unwrap().to_owned()).collect();
        assert_eq!(logged.len(), 2, "{logged:?}");
        assert!(logged.iter().all(|name| name == "egress.jsonl" || name == "egress.jsonl.1"));
        assert_eq!(listing.recordings.videos.len(), 2, "a name the proxy never writes is an ordinary file");

        // A count of one and an hour's age: the log is neither, the newest video stays.
        let outcome = prune(tmp.path(), Policy::of(3600, 1, 5)).unwrap();
        assert_eq!(outcome.deleted, 1, "{outcome:?}");
        assert!(!recordings.join("egress.jsonl.2").exists());
        for kept in ["egress.jsonl", "egress.jsonl.1", "video-1.webm"] {
            assert!(recordings.join(kept).exists(), "{kept}");
        }
    }
}
