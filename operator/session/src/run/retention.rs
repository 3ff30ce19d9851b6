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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::sync::Notify;

/// A file in the snapshot directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// Its modification time.
    pub modified: SystemTime,
    /// The disk space it takes (allocated blocks, as `du` and the kubelet count).
    pub bytes: u64,
}

/// What the snapshot volume holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Regular files directly in the directory: retention's to delete.
    pub files: Vec<Entry>,
    /// Everything else (subdirectories' contents): counted, never deleted.
    pub other_bytes: u64,
}

/// The size limits derived from the volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeBudget {
    /// Totals are kept at or under this.
    pub keep_under: u64,
    /// Above this the volume counts as full.
    pub full_at: u64,
    /// The volume's size.
    pub capacity: u64,
}

/// How much to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Files older than this go.
    pub max_age: Duration,
    /// At most this many files stay (the newest).
    pub max_count: usize,
    /// Files younger than this stay (unless the volume would be full).
    pub grace: Duration,
    /// The size limits, when the volume's size is known.
    pub size: Option<SizeBudget>,
}

/// What one pass decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files to delete.
    pub delete: Vec<PathBuf>,
    /// Of those, files inside the grace period (the volume was nearly full).
    pub young: Vec<PathBuf>,
    /// Bytes the volume holds afterwards.
    pub kept_bytes: u64,
    /// Whether the volume is still full afterwards.
    pub full: bool,
}

/// The size limits: the volume's size is the smaller of what the spec states
/// and what the filesystem has (either may be unknown); the budget is
/// `max_total` if given, else 80%, and never above 90%; full is 95%.
pub fn size_budget(volume: Option<u64>, filesystem: Option<u64>, max_total: Option<u64>) -> Option<SizeBudget> {
    let capacity = match (volume, filesystem) {
        (Some(v), Some(f)) => v.min(f),
        (v, f) => v.or(f)?,
    };
    if capacity == 0 {
        return None;
    }
    let ceiling = capacity - capacity / 10;
    let keep_under = max_total.unwrap_or(capacity - capacity / 5).min(ceiling);
    Some(SizeBudget { keep_under, full_at: capacity - capacity / 20, capacity })
}

fn is_snapshot(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yml" || e == "yaml")
}

/// What to delete, given what is there at `now`.
pub fn plan(listing: Listing, now: SystemTime, policy: Policy) -> Plan {
    let Listing { mut files, other_bytes } = listing;
    // Newest first; equal times: the greater name first (timestamped names sort by time).
    files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.path.cmp(&a.path)));
    let last_printed = files.iter().position(|e| is_snapshot(&e.path));
    let age = |e: &Entry| now.duration_since(e.modified).unwrap_or(Duration::ZERO);
    let young = |rank: usize, e: &Entry| Some(rank) != last_printed && age(e) < policy.grace;
    let protected = |rank: usize, e: &Entry| Some(rank) == last_printed || age(e) < policy.grace;
    let mut used = other_bytes
        .saturating_add(files.iter().enumerate().filter(|(r, e)| protected(*r, e)).map(|(_, e)| e.bytes).sum());
    let budget = policy.size.map_or(u64::MAX, |s| s.keep_under);
    let mut out = Plan::default();
    let mut overflowed = false;
    for (rank, e) in files.iter().enumerate() {
        if protected(rank, e) {
            continue;
        }
        if age(e) > policy.max_age || rank >= policy.max_count {
            out.delete.push(e.path.clone());
        } else if overflowed || used.saturating_add(e.bytes) > budget {
            // Past the budget, every older file goes too: the newest are kept, as with the count.
            overflowed = true;
            out.delete.push(e.path.clone());
        } else {
            used = used.saturating_add(e.bytes);
        }
    }
    if let Some(size) = policy.size.filter(|s| used > s.full_at) {
        // A file still being written would fill the volume: the kubelet would
        // evict the Pod, losing everything. The biggest young files go first.
        let mut growing: Vec<&Entry> = files.iter().enumerate().filter(|(r, e)| young(*r, e)).map(|(_, e)| e).collect();
        growing.sort_by_key(|e| std::cmp::Reverse(e.bytes));
        for e in growing {
            if used <= size.keep_under {
                break;
            }
            used = used.saturating_sub(e.bytes);
            out.delete.push(e.path.clone());
            out.young.push(e.path.clone());
        }
    }
    out.full = policy.size.is_some_and(|s| used > s.full_at);
    out.kept_bytes = used;
    out
}

/// The most entries counted below the directory: a tree the agent made
/// cannot make a pass slow.
const MAX_WALK: usize = 100_000;

fn allocated(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512)
}

/// Bytes below `dir` (not following symlinks), counting at most `budget` entries.
fn tree_bytes(dir: &Path, budget: &mut usize) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if *budget == 0 {
                return total;
            }
            *budget -= 1;
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            total = total.saturating_add(allocated(&meta));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

/// Lists the regular files directly in `dir`, and counts what else is there.
pub fn scan(dir: &Path) -> std::io::Result<Listing> {
    let mut out = Listing::default();
    let mut budget = MAX_WALK;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.file_type().is_file() {
            if let Ok(modified) = meta.modified() {
                out.files.push(Entry { path: entry.path(), modified, bytes: allocated(&meta) });
            }
        } else if meta.is_dir() {
            out.other_bytes = out.other_bytes.saturating_add(tree_bytes(&entry.path(), &mut budget));
        }
    }
    Ok(out)
}

/// The size of the filesystem holding `dir`, in bytes.
pub fn filesystem_bytes(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    stat.blocks().checked_mul(stat.fragment_size())
}

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

/// Wakes `written` whenever a file in `dir` is created, written or moved in,
/// so a burst of writes meets the size budget before the kubelet measures the
/// volume. Runs on a thread of its own; fails when inotify cannot be set up.
pub fn watch_writes(dir: &Path, written: Arc<Notify>) -> std::io::Result<()> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC)?;
    let events = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_ONLYDIR;
    inotify.add_watch(dir, events)?;
    std::thread::Builder::new().name("retention-watch".into()).spawn(move || {
        while inotify.read_events().is_ok() {
            written.notify_one();
        }
    })?;
    Ok(())
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
        sized(name, secs_ago, 1)
    }

    fn sized(name: &str, secs_ago: u64, bytes: u64) -> Entry {
        Entry { path: PathBuf::from(name), modified: at(secs_ago), bytes }
    }

    fn policy(max_age: u64, max_count: usize, grace: u64) -> Policy {
        Policy { max_age: Duration::from_secs(max_age), max_count, grace: Duration::from_secs(grace), size: None }
    }

    /// The files a pass deletes, with no size budget and nothing but these files.
    fn deletes(files: Vec<Entry>, now: SystemTime, policy: Policy) -> Vec<PathBuf> {
        plan(Listing { files, other_bytes: 0 }, now, policy).delete
    }

    fn names(mut paths: Vec<PathBuf>) -> Vec<String> {
        paths.sort();
        paths.into_iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn old_files_go_by_age() {
        let files = vec![e("a.yml", 10), e("b.yml", 100), e("c.log", 5000), e("d.yml", 4000)];
        assert_eq!(names(deletes(files, now(), policy(3600, 100, 5))), ["c.log", "d.yml"]);
    }

    #[test]
    fn the_count_keeps_the_newest() {
        let files = (0..10).map(|i| e(&format!("page-{i}.yml"), 100 + i)).collect();
        let doomed = names(deletes(files, now(), policy(3600, 3, 5)));
        assert_eq!(doomed, (3..10).map(|i| format!("page-{i}.yml")).collect::<Vec<_>>());
    }

    #[test]
    fn the_last_printed_snapshot_survives_age_and_count() {
        // Everything is ancient; the newest snapshot stays, even behind newer non-snapshot files.
        let files = vec![e("console-1.log", 7000), e("page-a.yml", 8000), e("page-b.yml", 9000), e("shot.png", 7500)];
        let doomed = names(deletes(files, now(), policy(3600, 1, 5)));
        assert_eq!(doomed, ["console-1.log", "page-b.yml", "shot.png"]);
    }

    #[test]
    fn equal_times_are_broken_by_name() {
        let files = vec![e("page-2026-01-01T00-00-01.yml", 9000), e("page-2026-01-01T00-00-02.yml", 9000)];
        assert_eq!(names(deletes(files, now(), policy(3600, 10, 5))), ["page-2026-01-01T00-00-01.yml"]);
    }

    #[test]
    fn files_inside_the_grace_period_are_never_deleted() {
        let files = (0..5).map(|i| e(&format!("f{i}.png"), i)).collect();
        assert!(deletes(files, now(), policy(0, 1, 10)).is_empty());
        // A clock that went backwards makes a file look new, hence kept.
        let future = Entry { path: "future.yml".into(), modified: now() + Duration::from_secs(60), bytes: 1 };
        assert!(deletes(vec![future], now(), policy(1, 0, 0)).is_empty());
    }

    #[test]
    fn nothing_to_do_on_an_empty_or_small_directory() {
        assert!(deletes(vec![], now(), policy(1, 1, 0)).is_empty());
        assert!(deletes(vec![e("a.yml", 1)], now(), policy(3600, 5, 0)).is_empty());
    }

    fn budget(keep_under: u64, full_at: u64) -> Policy {
        let mut p = policy(86_400, 10_000, 5);
        p.size = Some(SizeBudget { keep_under, full_at, capacity: full_at + full_at / 19 });
        p
    }

    #[test]
    fn the_budget_is_derived_from_the_smaller_known_size() {
        let gib = 1u64 << 30;
        let b = size_budget(Some(gib), Some(100 * gib), None).unwrap();
        assert_eq!((b.capacity, b.keep_under, b.full_at), (gib, gib - gib / 5, gib - gib / 20));
        assert_eq!(size_budget(None, Some(10 * gib), None).unwrap().capacity, 10 * gib, "an existing claim: measured");
        assert_eq!(size_budget(Some(10 * gib), Some(gib), None).unwrap().capacity, gib, "a smaller disk wins");
        assert_eq!(size_budget(Some(gib), None, Some(1000)).unwrap().keep_under, 1000, "maxTotalSize");
        assert_eq!(size_budget(Some(1000), None, Some(5000)).unwrap().keep_under, 900, "never above 90%");
        assert_eq!(size_budget(None, None, Some(5)), None, "no size known: count and age only");
        assert_eq!(size_budget(Some(0), None, None), None);
    }

    #[test]
    fn the_size_budget_keeps_the_newest_files_that_fit_and_drops_every_older_one() {
        // Age and count keep everything: only the size decides.
        let files = vec![
            sized("a.png", 100, 400),
            sized("b.png", 200, 400),
            sized("c.png", 300, 400),
            sized("d.png", 400, 10),
            sized("e.yml", 50, 100),
        ];
        let plan = plan(Listing { files, other_bytes: 0 }, now(), budget(1000, 2000));
        // e.yml (last printed, 100) + a (400) + b (400) = 900; c does not fit, so c and the older d go.
        assert_eq!(names(plan.delete), ["c.png", "d.png"]);
        assert_eq!((plan.kept_bytes, plan.full), (900, false));
    }

    #[test]
    fn protected_files_and_subdirectories_count_against_the_budget() {
        let files = vec![sized("young.png", 1, 500), sized("last.yml", 100, 300), sized("old.png", 200, 300)];
        let plan = plan(Listing { files, other_bytes: 250 }, now(), budget(1200, 5000));
        // 250 (subdirectories) + 500 (young) + 300 (last printed) = 1050; old.png would make 1350.
        assert_eq!(names(plan.delete), ["old.png"]);
        assert_eq!(plan.kept_bytes, 1050);
        assert!(plan.young.is_empty());
    }

    #[test]
    fn a_young_file_that_would_fill_the_volume_goes_biggest_first() {
        let files = vec![
            sized("growing.bin", 1, 900),
            sized("small.png", 2, 50),
            sized("last.yml", 100, 100),
            sized("old.png", 200, 10),
        ];
        let plan = plan(Listing { files, other_bytes: 0 }, now(), budget(800, 950));
        // Protected: 900 + 50 + 100 = 1050 > 950 (full): the biggest young file goes, then 150 <= 800.
        assert_eq!(names(plan.young.clone()), ["growing.bin"]);
        // old.png was past the budget before the young file went; it is not brought back.
        assert_eq!(names(plan.delete), ["growing.bin", "old.png"]);
        assert_eq!((plan.kept_bytes, plan.full), (150, false));
    }

    #[test]
    fn a_last_printed_snapshot_that_fills_the_volume_makes_it_full() {
        let files = vec![sized("huge.yml", 100, 990), sized("x.png", 200, 5)];
        let plan = plan(Listing { files, other_bytes: 0 }, now(), budget(800, 950));
        assert_eq!(names(plan.delete), ["x.png"]);
        assert!(plan.full, "only the last-printed snapshot is left, above the full mark");
        let subdirs = plan_of(vec![], 960, budget(800, 950));
        assert!(subdirs.full, "subdirectories retention does not delete can fill it too");
    }

    fn plan_of(files: Vec<Entry>, other_bytes: u64, policy: Policy) -> Plan {
        plan(Listing { files, other_bytes }, now(), policy)
    }

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
        let mut p = policy(86_400, 10_000, 5);
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
        let deleted = prune(tmp.path(), policy(86_400, 100, 5)).unwrap().deleted;
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
        let deleted = prune(tmp.path(), policy(60, 10_000, 5)).unwrap().deleted;
        assert_eq!(deleted, 2999, "all are too old but the last printed");
        let left = scan(tmp.path()).unwrap().files;
        assert_eq!(left.len(), 1);
        assert!(left[0].path.ends_with("page-02999.yml"));
    }
}
