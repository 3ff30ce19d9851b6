//! The pure half of retention: what to delete, given what the directory holds.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::recordings::{self, RecordingFiles};
use super::unit::{total, Entry, Kind, Unit};
use super::uploaded::{self, Candidate, Exported};

/// What the snapshot volume holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Regular files directly in the directory.
    pub files: Vec<Entry>,
    /// What `recordings/` holds.
    pub(crate) recordings: RecordingFiles,
    /// The egress proxy's log and its rotated file in `recordings/`: a kind
    /// of their own, neither a video nor a snapshot. Counted, never deleted
    /// (the proxy's rotation bounds them), never toward `maxCount`.
    pub egress_log: Vec<Entry>,
    /// Everything else (the notes, other subdirectories' contents): counted, never deleted.
    pub other_bytes: u64,
    /// With a recording export: what the exporter says it stored and is
    /// storing. `None`: no export, retention as it always was.
    pub export: Option<Exported>,
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
    /// Files older than this go (a trace by its newest file).
    pub max_age: Duration,
    /// At most this many of each kind stay (the newest): files in the
    /// directory, and recordings (videos and traces).
    pub max_count: usize,
    /// Files younger than this stay (unless the volume would be full).
    pub grace: Duration,
    /// The size limits, when the volume's size is known.
    pub size: Option<SizeBudget>,
    /// Recordings are exported: the exporter's ledger is read, and what it
    /// stored goes first when the count or the size budget must delete.
    pub uploaded_first: bool,
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
    /// With an export, the recordings (a video's path, a trace's name)
    /// deleted before the exporter stored them: nothing stored was left to
    /// delete in their place, or age took them.
    pub not_uploaded: Vec<PathBuf>,
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

/// What to delete, given what is there at `now`.
pub fn plan(listing: Listing, now: SystemTime, policy: Policy) -> Plan {
    let Listing { files, recordings, egress_log, other_bytes, export } = listing;
    let stored = export.as_ref().map(|x| {
        let r = &recordings;
        x.stored_paths(r.videos.iter().chain(&r.traces).chain(&r.frames))
    });
    let recordings = recordings::group(recordings);
    let mut units: Vec<Unit> =
        files.into_iter().map(|f| Unit::file(Kind::Snapshot, f)).chain(recordings.units).collect();
    if let (Some(export), Some(stored)) = (&export, &stored) {
        export.mark(&mut units, stored);
    }
    // Newest first; equal times: the greater name first (timestamped names sort by time).
    units.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.name.cmp(&a.name)));
    let uploading = export.and_then(|x| x.uploading);
    let rules = Rules {
        now,
        grace: policy.grace,
        last_printed: units.iter().position(is_snapshot),
        exported: stored.is_some(),
        uploading,
    };

    let mut out = Plan::default();
    let protected = units.iter().enumerate().filter(|(rank, u)| rules.protected(*rank, u)).map(|(_, u)| u.bytes);
    out.kept_bytes = [other_bytes, total(&egress_log), total(&recordings.shared), total(&recordings.orphans)]
        .into_iter()
        .chain(protected)
        .fold(0, u64::saturating_add);
    // Frames no trace left will show.
    out.delete_old(recordings.orphans, &rules);
    let a_trace_is_left = out.keep_the_newest(&units, &rules, policy);
    if recordings.shared_may_go && !a_trace_is_left {
        // No trace is left to read them.
        out.delete_old(recordings.shared, &rules);
    }
    if let Some(size) = policy.size {
        out.make_room(&units, &rules, size);
        out.full = out.kept_bytes > size.full_at;
    }
    out
}

/// A snapshot the CLI printed: a `*.yml` file directly in the directory.
fn is_snapshot(unit: &Unit) -> bool {
    unit.kind == Kind::Snapshot && unit.name.extension().is_some_and(|e| e == "yml" || e == "yaml")
}

/// What keeps a unit, at `now`.
struct Rules {
    now: SystemTime,
    grace: Duration,
    /// The rank of the last-printed snapshot among the units, newest first.
    last_printed: Option<usize>,
    /// Recordings are exported: a recording deleted unstored is reported.
    exported: bool,
    /// The file the exporter is uploading now.
    uploading: Option<PathBuf>,
}

impl Rules {
    fn age(&self, modified: SystemTime) -> Duration {
        self.now.duration_since(modified).unwrap_or(Duration::ZERO)
    }

    fn young(&self, modified: SystemTime) -> bool {
        self.age(modified) < self.grace
    }

    /// Never deleted, not even to keep the volume from filling.
    fn pinned(&self, rank: usize, unit: &Unit) -> bool {
        Some(rank) == self.last_printed || unit.in_progress
    }

    /// Never deleted for age, count or the size budget.
    fn protected(&self, rank: usize, unit: &Unit) -> bool {
        self.pinned(rank, unit) || self.young(unit.modified)
    }

    /// Too old to keep, unless protected.
    fn too_old(&self, unit: &Unit, policy: Policy) -> bool {
        self.age(unit.modified) > policy.max_age
    }
}

impl Plan {
    /// Deletes what is too old, past the count of its kind, or past the size
    /// budget beside the newer units (`kept_bytes` counts the protected ones
    /// already). Returns whether a trace is kept.
    fn keep_the_newest(&mut self, units: &[Unit], rules: &Rules, policy: Policy) -> bool {
        let budget = policy.size.map_or(u64::MAX, |s| s.keep_under);
        let first = self.uploaded_first(units, rules, policy, budget);
        let mut newer_of_kind = [0usize; 2];
        let mut overflowed = false;
        let mut a_trace_is_left = false;
        for (rank, u) in units.iter().enumerate() {
            if first[rank] {
                self.drop_unit(u, rules);
                continue;
            }
            let of_kind = &mut newer_of_kind[u.kind.count_group()];
            let newer = *of_kind;
            *of_kind += 1;
            let keep = if rules.protected(rank, u) {
                true
            } else if rules.too_old(u, policy) || newer >= policy.max_count {
                false
            } else if overflowed || self.kept_bytes.saturating_add(u.bytes) > budget {
                // Past the budget, every older one goes too: the newest are kept, as with the count.
                overflowed = true;
                false
            } else {
                self.kept_bytes = self.kept_bytes.saturating_add(u.bytes);
                true
            };
            if keep {
                a_trace_is_left |= u.kind == Kind::Trace;
            } else {
                self.drop_unit(u, rules);
            }
        }
        a_trace_is_left
    }

    /// With an export, which units the count and the size budget take
    /// before the walk: the uploaded ones, oldest first, while the total or
    /// their kind's count is over (see `uploaded::first`). By rank.
    fn uploaded_first(&self, units: &[Unit], rules: &Rules, policy: Policy, budget: u64) -> Vec<bool> {
        let mut first = vec![false; units.len()];
        if !units.iter().any(|u| u.uploaded) {
            return first;
        }
        let (mut bytes, mut counts) = (self.kept_bytes, [0usize; 2]);
        let (mut ranks, mut candidates) = (Vec::new(), Vec::new());
        for (rank, u) in units.iter().enumerate() {
            let group = u.kind.count_group();
            if rules.protected(rank, u) {
                counts[group] += 1;
            } else if !rules.too_old(u, policy) {
                counts[group] += 1;
                bytes = bytes.saturating_add(u.bytes);
                ranks.push(rank);
                candidates.push(Candidate { group, bytes: u.bytes, uploaded: u.uploaded });
            }
        }
        for i in uploaded::first(&candidates, bytes, counts, budget, policy.max_count) {
            first[ranks[i]] = true;
        }
        first
    }

    /// Deletes a unit's files; with an export, reports a recording not stored.
    fn drop_unit(&mut self, u: &Unit, rules: &Rules) {
        self.delete.extend(u.files.iter().cloned());
        if rules.exported && u.kind != Kind::Snapshot && !u.uploaded {
            self.not_uploaded.push(u.name.clone());
        }
    }

    /// Deletes `files` but those inside the grace period or being uploaded.
    fn delete_old(&mut self, files: Vec<Entry>, rules: &Rules) {
        for e in files.into_iter().filter(|e| !rules.young(e.modified) && rules.uploading.as_ref() != Some(&e.path)) {
            self.kept_bytes = self.kept_bytes.saturating_sub(e.bytes);
            self.delete.push(e.path);
        }
    }

    /// Something still being written would fill the volume: the kubelet would
    /// evict the Pod, losing everything. The biggest young units go first
    /// (with an export, the uploaded ones before them).
    fn make_room(&mut self, units: &[Unit], rules: &Rules, size: SizeBudget) {
        if self.kept_bytes <= size.full_at {
            return;
        }
        let mut growing: Vec<&Unit> = units
            .iter()
            .enumerate()
            .filter(|(r, u)| !rules.pinned(*r, u) && rules.young(u.modified))
            .map(|(_, u)| u)
            .collect();
        growing.sort_by_key(|u| (!u.uploaded, std::cmp::Reverse(u.bytes)));
        for u in growing {
            if self.kept_bytes <= size.keep_under {
                break;
            }
            self.kept_bytes = self.kept_bytes.saturating_sub(u.bytes);
            self.drop_unit(u, rules);
            self.young.extend(u.files.iter().cloned());
        }
    }
}

/// The plan on a session that records.
#[cfg(test)]
mod recorded;

/// The plan on a session whose recordings are exported.
#[cfg(test)]
mod exported;

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// The files a pass deletes, with no size budget and nothing but these files.
    fn deletes(files: Vec<Entry>, policy: Policy) -> Vec<PathBuf> {
        plan_of(files, 0, policy).delete
    }

    #[test]
    fn old_files_go_by_age() {
        let files = vec![e("a.yml", 10), e("b.yml", 100), e("c.log", 5000), e("d.yml", 4000)];
        assert_eq!(names(deletes(files, Policy::of(3600, 100, 5))), ["c.log", "d.yml"]);
    }

    #[test]
    fn the_count_keeps_the_newest() {
        let files = (0..10).map(|i| e(&format!("page-{i}.yml"), 100 + i)).collect();
        let doomed = names(deletes(files, Policy::of(3600, 3, 5)));
        assert_eq!(doomed, (3..10).map(|i| format!("page-{i}.yml")).collect::<Vec<_>>());
    }

    #[test]
    fn the_last_printed_snapshot_survives_age_and_count() {
        // Everything is ancient; the newest snapshot stays, even behind newer non-snapshot files.
        let files = vec![e("console-1.log", 7000), e("page-a.yml", 8000), e("page-b.yml", 9000), e("shot.png", 7500)];
        let doomed = names(deletes(files, Policy::of(3600, 1, 5)));
        assert_eq!(doomed, ["console-1.log", "page-b.yml", "shot.png"]);
    }

    #[test]
    fn equal_times_are_broken_by_name() {
        let files = vec![e("page-2026-01-01T00-00-01.yml", 9000), e("page-2026-01-01T00-00-02.yml", 9000)];
        assert_eq!(names(deletes(files, Policy::of(3600, 10, 5))), ["page-2026-01-01T00-00-01.yml"]);
    }

    #[test]
    fn files_inside_the_grace_period_are_never_deleted() {
        let files = (0..5).map(|i| e(&format!("f{i}.png"), i)).collect();
        assert!(deletes(files, Policy::of(0, 1, 10)).is_empty());
        // A clock that went backwards makes a file look new, hence kept.
        let future = Entry { path: "future.yml".into(), modified: now() + Duration::from_secs(60), bytes: 1, len: 1 };
        assert!(deletes(vec![future], Policy::of(1, 0, 0)).is_empty());
    }

    #[test]
    fn nothing_to_do_on_an_empty_or_small_directory() {
        assert!(deletes(vec![], Policy::of(1, 1, 0)).is_empty());
        assert!(deletes(vec![e("a.yml", 1)], Policy::of(3600, 5, 0)).is_empty());
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
        let plan = plan_of(files, 0, budget(1000, 2000));
        // e.yml (last printed, 100) + a (400) + b (400) = 900; c does not fit, so c and the older d go.
        assert_eq!(names(plan.delete), ["c.png", "d.png"]);
        assert_eq!((plan.kept_bytes, plan.full), (900, false));
    }

    #[test]
    fn protected_files_and_subdirectories_count_against_the_budget() {
        let files = vec![sized("young.png", 1, 500), sized("last.yml", 100, 300), sized("old.png", 200, 300)];
        let plan = plan_of(files, 250, budget(1200, 5000));
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
        let plan = plan_of(files, 0, budget(800, 950));
        // Protected: 900 + 50 + 100 = 1050 > 950 (full): the biggest young file goes, then 150 <= 800.
        assert_eq!(names(plan.young.clone()), ["growing.bin"]);
        // old.png was past the budget before the young file went; it is not brought back.
        assert_eq!(names(plan.delete), ["growing.bin", "old.png"]);
        assert_eq!((plan.kept_bytes, plan.full), (150, false));
    }

    #[test]
    fn a_last_printed_snapshot_that_fills_the_volume_makes_it_full() {
        let files = vec![sized("huge.yml", 100, 990), sized("x.png", 200, 5)];
        let plan = plan_of(files, 0, budget(800, 950));
        assert_eq!(names(plan.delete), ["x.png"]);
        assert!(plan.full, "only the last-printed snapshot is left, above the full mark");
        let subdirs = plan_of(vec![], 960, budget(800, 950));
        assert!(subdirs.full, "subdirectories retention does not delete can fill it too");
    }
}
