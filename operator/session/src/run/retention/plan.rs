//! The pure half of retention: what to delete, given what the directory holds.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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

#[cfg(test)]
impl Policy {
    /// Age, count and grace in seconds; no size budget.
    pub(super) fn of(max_age: u64, max_count: usize, grace: u64) -> Policy {
        Policy { max_age: Duration::from_secs(max_age), max_count, grace: Duration::from_secs(grace), size: None }
    }
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
        assert_eq!(names(deletes(files, now(), Policy::of(3600, 100, 5))), ["c.log", "d.yml"]);
    }

    #[test]
    fn the_count_keeps_the_newest() {
        let files = (0..10).map(|i| e(&format!("page-{i}.yml"), 100 + i)).collect();
        let doomed = names(deletes(files, now(), Policy::of(3600, 3, 5)));
        assert_eq!(doomed, (3..10).map(|i| format!("page-{i}.yml")).collect::<Vec<_>>());
    }

    #[test]
    fn the_last_printed_snapshot_survives_age_and_count() {
        // Everything is ancient; the newest snapshot stays, even behind newer non-snapshot files.
        let files = vec![e("console-1.log", 7000), e("page-a.yml", 8000), e("page-b.yml", 9000), e("shot.png", 7500)];
        let doomed = names(deletes(files, now(), Policy::of(3600, 1, 5)));
        assert_eq!(doomed, ["console-1.log", "page-b.yml", "shot.png"]);
    }

    #[test]
    fn equal_times_are_broken_by_name() {
        let files = vec![e("page-2026-01-01T00-00-01.yml", 9000), e("page-2026-01-01T00-00-02.yml", 9000)];
        assert_eq!(names(deletes(files, now(), Policy::of(3600, 10, 5))), ["page-2026-01-01T00-00-01.yml"]);
    }

    #[test]
    fn files_inside_the_grace_period_are_never_deleted() {
        let files = (0..5).map(|i| e(&format!("f{i}.png"), i)).collect();
        assert!(deletes(files, now(), Policy::of(0, 1, 10)).is_empty());
        // A clock that went backwards makes a file look new, hence kept.
        let future = Entry { path: "future.yml".into(), modified: now() + Duration::from_secs(60), bytes: 1 };
        assert!(deletes(vec![future], now(), Policy::of(1, 0, 0)).is_empty());
    }

    #[test]
    fn nothing_to_do_on_an_empty_or_small_directory() {
        assert!(deletes(vec![], now(), Policy::of(1, 1, 0)).is_empty());
        assert!(deletes(vec![e("a.yml", 1)], now(), Policy::of(3600, 5, 0)).is_empty());
    }

    fn budget(keep_under: u64, full_at: u64) -> Policy {
        let mut p = Policy::of(86_400, 10_000, 5);
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
}
