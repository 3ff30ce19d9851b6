//! `first`: which uploaded units go before the walk, and the marks it reads.

use std::time::{Duration, SystemTime};

use proptest::prelude::*;

use super::*;

fn c(group: usize, bytes: u64, uploaded: bool) -> Candidate {
    Candidate { group, bytes, uploaded }
}

/// `first` with the candidates' bytes and counts as the whole (nothing protected).
fn alone(candidates: &[Candidate], budget: u64, max_count: usize) -> Vec<usize> {
    let bytes = candidates.iter().map(|c| c.bytes).sum();
    let mut counts = [0; 2];
    for c in candidates {
        counts[c.group] += 1;
    }
    first(candidates, bytes, counts, budget, max_count)
}

#[test]
fn nothing_goes_when_nothing_is_over() {
    let all = [c(1, 10, true), c(1, 10, true), c(0, 10, false)];
    assert!(alone(&all, 30, 3).is_empty());
    assert!(alone(&[], 0, 0).is_empty());
}

#[test]
fn over_the_budget_the_oldest_uploaded_go_until_it_fits() {
    // Newest first: a not uploaded, b uploaded, c not uploaded, d uploaded, e uploaded.
    let all = [c(1, 10, false), c(1, 10, true), c(1, 10, false), c(1, 10, true), c(1, 10, true)];
    assert_eq!(alone(&all, 35, 100), [4, 3], "e then d: 30 <= 35");
    assert_eq!(alone(&all, 5, 100), [4, 3, 1], "every uploaded one, still over: the walk takes the rest");
}

#[test]
fn past_the_count_only_its_own_kind_goes() {
    // Snapshots (group 0) are over their count; no uploaded snapshot exists.
    let all = [c(0, 1, false), c(0, 1, false), c(1, 1, true), c(0, 1, false)];
    assert!(alone(&all, u64::MAX, 2).is_empty(), "a recording never goes for the snapshots' count");
    let recordings = [c(1, 1, false), c(1, 1, true), c(1, 1, false), c(1, 1, true)];
    assert_eq!(alone(&recordings, u64::MAX, 3), [3], "one over: the oldest uploaded");
    assert_eq!(alone(&recordings, u64::MAX, 1), [3, 1]);
}

#[test]
fn protected_units_count_but_never_go() {
    // 100 bytes and two recordings already kept beside the candidates.
    let all = [c(1, 10, true), c(1, 10, true)];
    assert_eq!(first(&all, 120, [0, 4], 115, 10), [1]);
    assert_eq!(first(&all, 120, [0, 4], 90, 10), [1, 0]);
    assert_eq!(first(&all, 20, [0, 4], 1000, 3), [1]);
}

#[test]
fn a_unit_is_uploaded_only_when_every_file_is_stored_as_it_now_is() {
    let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
    let entry = |path: &str, len| Entry { path: PathBuf::from(path), modified: at, bytes: 4096, len };
    let trace = [entry("/r/traces/t-1.trace", 10), entry("/r/traces/t-1.network", 5)];
    let mut export = Exported::default();
    for e in &trace {
        export.uploaded.insert(e.path.clone(), fingerprint(e));
    }
    assert_eq!(fingerprint(&trace[0]), Fingerprint { bytes: 10, modified_ns: 1_700_000_000_123_456_789 });
    assert!(export.stored(&trace[0]) && !export.stored(&entry("/r/traces/t-1.trace", 11)), "grown since");
    let later = Entry { modified: at + Duration::from_nanos(1), ..trace[0].clone() };
    assert!(!export.stored(&later), "written since, same length");

    let unit = |kind, files: &[&Entry]| {
        let mut u = Unit::file(kind, files[0].clone());
        for f in &files[1..] {
            u.add((*f).clone());
        }
        u
    };
    let grown = entry("/r/traces/t-1.network", 6);
    let mut units = [
        unit(Kind::Trace, &[&trace[0], &trace[1]]),
        unit(Kind::Trace, &[&trace[0], &grown]),
        unit(Kind::Snapshot, &[&trace[0]]),
    ];
    let stored = export.stored_paths(&[trace[0].clone(), grown.clone()]);
    export.mark(&mut units, &stored);
    assert_eq!(units.iter().map(|u| u.uploaded).collect::<Vec<_>>(), [false, false, false]);
    let stored = export.stored_paths(&trace);
    export.uploading = Some(PathBuf::from("/r/traces/t-1.network"));
    export.mark(&mut units, &stored);
    assert_eq!(units.iter().map(|u| u.uploaded).collect::<Vec<_>>(), [true, true, false], "never a snapshot");
    assert_eq!(units.iter().map(|u| u.in_progress).collect::<Vec<_>>(), [true, true, false]);
}

fn candidates() -> impl Strategy<Value = Vec<Candidate>> {
    proptest::collection::vec((0..2usize, 0..50u64, any::<bool>()).prop_map(|(g, b, u)| c(g, b, u)), 0..24)
}

proptest! {
    #[test]
    fn uploaded_go_oldest_first_and_only_while_something_is_over(
        all in candidates(),
        extra_bytes in 0..100u64,
        extra_counts in (0..4usize, 0..4usize),
        budget in 0..600u64,
        max_count in 0..16usize,
    ) {
        let mut counts = [extra_counts.0, extra_counts.1];
        for c in &all {
            counts[c.group] += 1;
        }
        let bytes = extra_bytes + all.iter().map(|c| c.bytes).sum::<u64>();
        let gone = first(&all, bytes, counts, budget, max_count);
        prop_assert!(gone.windows(2).all(|w| w[0] > w[1]), "oldest first, each once: {gone:?}");
        prop_assert!(gone.iter().all(|&i| all[i].uploaded), "only uploaded ones");
        let (mut left_bytes, mut left_counts) = (bytes, counts);
        for &i in &gone {
            left_bytes -= all[i].bytes;
            left_counts[all[i].group] -= 1;
        }
        let kept_uploaded = |group: Option<usize>| {
            (0..all.len()).any(|i| all[i].uploaded && !gone.contains(&i) && group.is_none_or(|g| all[i].group == g))
        };
        // Still over: nothing uploaded that could help is left.
        prop_assert!(left_bytes <= budget || !kept_uploaded(None));
        for (g, &n) in left_counts.iter().enumerate() {
            prop_assert!(n <= max_count || !kept_uploaded(Some(g)));
        }
        // An uploaded unit kept while a newer one went: that one went for its own kind's count.
        for &i in &gone {
            for j in (i + 1)..all.len() {
                if all[j].uploaded && !gone.contains(&j) {
                    prop_assert!(all[j].group != all[i].group, "{j} kept, {i} gone, same kind");
                }
            }
        }
        // Nothing over, nothing gone.
        if bytes <= budget && counts.iter().all(|&n| n <= max_count) {
            prop_assert!(gone.is_empty());
        }
    }
}
