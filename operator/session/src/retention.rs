//! Snapshot retention on the snapshot volume: by age and by count, on a
//! schedule. Two kinds of file are never deleted:
//!
//! * the **last-printed snapshot**: the `*.yml` file with the newest
//!   modification time (ties broken by the greater name). The CLI writes a
//!   snapshot and then prints its path, so the newest snapshot is the one an
//!   agent was handed last and may still be reading;
//! * any file younger than the **grace period**: the CLI may still be writing it.
//!
//! Only regular files directly in the directory are considered; directories
//! and symlinks are left alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file in the snapshot directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// Its modification time.
    pub modified: SystemTime,
}

/// How much to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Files older than this go.
    pub max_age: Duration,
    /// At most this many files stay (the newest).
    pub max_count: usize,
    /// Files younger than this always stay.
    pub grace: Duration,
}

fn is_snapshot(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yml" || e == "yaml")
}

/// The files to delete, given what is there at `now`.
pub fn plan(mut entries: Vec<Entry>, now: SystemTime, policy: Policy) -> Vec<PathBuf> {
    // Newest first; equal times: the greater name first (timestamped names sort by time).
    entries.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.path.cmp(&a.path)));
    let last_printed = entries.iter().position(|e| is_snapshot(&e.path));
    let age = |e: &Entry| now.duration_since(e.modified).unwrap_or(Duration::ZERO);
    entries
        .into_iter()
        .enumerate()
        .filter(|(rank, e)| {
            let protected = Some(*rank) == last_printed || age(e) < policy.grace;
            !protected && (age(e) > policy.max_age || *rank >= policy.max_count)
        })
        .map(|(_, e)| e.path)
        .collect()
}

/// Lists the regular files directly in `dir`.
pub fn scan(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = vec![];
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_file() {
            if let Ok(modified) = meta.modified() {
                out.push(Entry { path: entry.path(), modified });
            }
        }
    }
    Ok(out)
}

/// One pass: scan, plan, delete. Returns how many files were deleted.
pub fn prune(dir: &Path, policy: Policy) -> std::io::Result<usize> {
    let doomed = plan(scan(dir)?, SystemTime::now(), policy);
    let mut deleted = 0;
    for path in doomed {
        match std::fs::remove_file(&path) {
            Ok(()) => deleted += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), %e, "cannot prune"),
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Duration = Duration::from_secs(1_000_000);

    fn at(secs_ago: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + T0 - Duration::from_secs(secs_ago)
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + T0
    }

    fn e(name: &str, secs_ago: u64) -> Entry {
        Entry { path: PathBuf::from(name), modified: at(secs_ago) }
    }

    fn policy(max_age: u64, max_count: usize, grace: u64) -> Policy {
        Policy { max_age: Duration::from_secs(max_age), max_count, grace: Duration::from_secs(grace) }
    }

    fn names(mut paths: Vec<PathBuf>) -> Vec<String> {
        paths.sort();
        paths.into_iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn old_files_go_by_age() {
        let files = vec![e("a.yml", 10), e("b.yml", 100), e("c.log", 5000), e("d.yml", 4000)];
        assert_eq!(names(plan(files, now(), policy(3600, 100, 5))), ["c.log", "d.yml"]);
    }

    #[test]
    fn the_count_keeps_the_newest() {
        let files = (0..10).map(|i| e(&format!("page-{i}.yml"), 100 + i)).collect();
        let doomed = names(plan(files, now(), policy(3600, 3, 5)));
        assert_eq!(doomed, (3..10).map(|i| format!("page-{i}.yml")).collect::<Vec<_>>());
    }

    #[test]
    fn the_last_printed_snapshot_survives_age_and_count() {
        // Everything is ancient; the newest snapshot stays, even behind newer non-snapshot files.
        let files = vec![e("console-1.log", 7000), e("page-a.yml", 8000), e("page-b.yml", 9000), e("shot.png", 7500)];
        let doomed = names(plan(files, now(), policy(3600, 1, 5)));
        assert_eq!(doomed, ["console-1.log", "page-b.yml", "shot.png"]);
    }

    #[test]
    fn equal_times_are_broken_by_name() {
        let files = vec![e("page-2026-01-01T00-00-01.yml", 9000), e("page-2026-01-01T00-00-02.yml", 9000)];
        assert_eq!(names(plan(files, now(), policy(3600, 10, 5))), ["page-2026-01-01T00-00-01.yml"]);
    }

    #[test]
    fn files_inside_the_grace_period_are_never_deleted() {
        let files = (0..5).map(|i| e(&format!("f{i}.png"), i)).collect();
        assert!(plan(files, now(), policy(0, 1, 10)).is_empty());
        // A clock that went backwards makes a file look new, hence kept.
        let future = Entry { path: "future.yml".into(), modified: now() + Duration::from_secs(60) };
        assert!(plan(vec![future], now(), policy(1, 0, 0)).is_empty());
    }

    #[test]
    fn nothing_to_do_on_an_empty_or_small_directory() {
        assert!(plan(vec![], now(), policy(1, 1, 0)).is_empty());
        assert!(plan(vec![e("a.yml", 1)], now(), policy(3600, 5, 0)).is_empty());
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
        let deleted = prune(tmp.path(), policy(86_400, 100, 5)).unwrap();
        assert_eq!(deleted, 2900, "the count keeps the newest 100");
        let mut left: Vec<String> = scan(tmp.path()).unwrap().iter().map(|e| e.path.display().to_string()).collect();
        left.sort();
        assert_eq!(left.len(), 100);
        assert!(left[0].ends_with("page-02900.yml") && left[99].ends_with("page-02999.yml"), "{left:?}");
        assert!(tmp.path().join("subdir").is_dir() && tmp.path().join("link.yml").exists());
    }

    #[test]
    fn a_real_directory_of_thousands_of_old_files_is_cut_by_age() {
        // Fewer than the count would keep: only age can delete.
        let tmp = real_directory(|i| 7200 - i);
        let deleted = prune(tmp.path(), policy(60, 10_000, 5)).unwrap();
        assert_eq!(deleted, 2999, "all are too old but the last printed");
        let left = scan(tmp.path()).unwrap();
        assert_eq!(left.len(), 1);
        assert!(left[0].path.ends_with("page-02999.yml"));
    }
}
