//! Snapshot retention on the snapshot volume: by age, by count and by total
//! size, on a schedule and whenever a file is written. Two kinds of file are
//! never deleted for age, count or the size budget:
//!
//! * the **last-printed snapshot**: the `*.yml` file with the newest
//!   modification time (ties broken by the greater name). The CLI writes a
//!   snapshot and then prints its path, so the newest snapshot is the one an
//!   agent was handed last and may still be reading;
//! * any file younger than the **grace period**: the CLI may still be writing it.
//!
//! Only regular files directly in the directory are deleted; directories and
//! symlinks are left alone (their bytes still count towards the size).
//!
//! The size budget exists because the kubelet evicts a Pod whose emptyDir
//! grows past its limit, and a full claim fails every later command. Totals
//! keep under the budget (80% of the volume by default); when one young file
//! would still take the volume past 95%, it goes too, so the kubelet never
//! sees the limit. What retention may not delete (the last-printed snapshot,
//! subdirectories) past 95% is a full volume: the runtime says so and stops.

mod plan;
mod scan;
mod watch;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use plan::{plan, size_budget, Entry, Listing, Plan, Policy, SizeBudget};
pub use scan::{filesystem_bytes, scan};
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
}

/// One pass: scan, plan, delete.
pub fn prune(dir: &Path, policy: Policy) -> std::io::Result<Outcome> {
    let plan = plan(scan(dir)?, SystemTime::now(), policy);
    let mut deleted = 0;
    for path in &plan.delete {
        match std::fs::remove_file(path) {
            Ok(()) => deleted += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), %e, "cannot prune"),
        }
    }
    Ok(Outcome { deleted, young: plan.young, kept_bytes: plan.kept_bytes, full: plan.full })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_real_directory_is_kept_under_its_byte_budget_counting_allocated_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        for i in 0..20u64 {
            let p = tmp.path().join(format!("shot-{i:02}.png"));
            std::fs::write(&p, vec![7u8; 64 << 10]).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(now - Duration::from_secs(1000 - i)).unwrap();
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
            let p = tmp.path().join(format!("page-{i:05}.yml"));
            std::fs::write(&p, "x").unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(now - Duration::from_secs(ages(i))).unwrap();
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
}
