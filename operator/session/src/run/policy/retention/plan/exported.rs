//! With a recording export: what the exporter stored goes first when the
//! count or the size budget must delete; without one, or with a ledger that
//! knows nothing, retention is as it always was.

use proptest::prelude::*;

use super::super::fixtures::*;
use super::*;

/// Four finished videos, oldest first, of 100 bytes each, and the last-printed snapshot.
fn four_videos() -> Session {
    (1..=4u64).rev().fold(Session::default().snapshot("page.yml", 10, 10), |s, i| s.video(i * 1000, i * 1000, 100))
}

#[test]
fn the_budget_takes_the_stored_recordings_first_oldest_first() {
    // 410 bytes, a budget of 300: one video of 100 must go (two, at 210 > 200).
    let stored = || four_videos().exporting().stored(&video_path(3000)).stored(&video_path(1000));
    let plan = stored().plan(budget(310, 100_000));
    assert_eq!(names(plan.delete), sorted([video_path(3000)]), "the oldest stored, not the oldest");
    assert!(plan.not_uploaded.is_empty());
    let plan = stored().plan(budget(210, 100_000));
    assert_eq!(names(plan.delete), sorted([video_path(3000), video_path(1000)]), "then the next stored");
    assert_eq!((plan.kept_bytes, plan.full), (210, false));
    let without = four_videos().plan(budget(210, 100_000));
    assert_eq!(names(without.delete), sorted([video_path(4000), video_path(3000)]), "the oldest, without an export");
}

#[test]
fn past_what_is_stored_the_rest_goes_as_without_an_export_and_is_reported() {
    // A budget of 110: three videos must go; one is stored.
    let plan = four_videos().exporting().stored(&video_path(1000)).plan(budget(110, 100_000));
    // The stored one first; then, walking the rest newest first, 10 + 100 fits and the older two go.
    assert_eq!(names(plan.delete), sorted([video_path(1000), video_path(3000), video_path(4000)]));
    assert_eq!(names(plan.not_uploaded), sorted([video_path(3000), video_path(4000)]));
    assert_eq!((plan.kept_bytes, plan.full), (110, false));
    // A ledger that knows nothing: exactly as without an export, every loss reported.
    let backlog = four_videos().exporting().plan(budget(110, 100_000));
    let without = four_videos().plan(budget(110, 100_000));
    assert_eq!((&backlog.delete, backlog.kept_bytes), (&without.delete, without.kept_bytes));
    assert_eq!(names(backlog.not_uploaded), names(without.delete));
    assert!(without.not_uploaded.is_empty(), "nothing to report without an export");
}

#[test]
fn the_count_takes_the_stored_recordings_first_and_never_a_snapshot_for_them() {
    let session = || four_videos().snapshot("old.png", 9000, 1).exporting().stored(&video_path(2000));
    let plan = session().plan(Policy::of(86_400, 3, 5));
    // Four videos for a count of three: the stored one goes, not the oldest. Two snapshots: both stay.
    assert_eq!(names(plan.delete), sorted([video_path(2000)]));
    let plan = session().plan(Policy::of(86_400, 1, 5));
    // One of each kind: the stored video, then the oldest of the others; the older snapshot.
    let gone = [video_path(2000), video_path(3000), video_path(4000), "old.png".to_owned()];
    assert_eq!(names(plan.delete), sorted(gone));
    assert_eq!(names(plan.not_uploaded), sorted([video_path(3000), video_path(4000)]));
}

#[test]
fn age_deletes_as_without_an_export_and_reports_what_was_not_stored() {
    let plan = four_videos().exporting().stored(&video_path(4000)).plan(Policy::of(2500, 100, 5));
    assert_eq!(names(plan.delete), sorted([video_path(3000), video_path(4000)]));
    assert_eq!(names(plan.not_uploaded), sorted([video_path(3000)]));
}

#[test]
fn a_trace_is_stored_only_when_every_file_of_it_is_as_uploaded() {
    let session = || {
        Session::default()
            .snapshot("page.yml", 10, 10)
            .video(500, 500, 100)
            .trace(9000, 1000, 100)
            .frame(8000, 50)
            .exporting()
            .stored(&trace_files(9000)[0])
            .stored(&trace_files(9000)[1])
    };
    // One unit of 250 bytes must go: the trace's frame is not stored, so the trace is not.
    let plan = session().plan(budget(200, 100_000));
    assert_eq!(
        names(plan.delete),
        sorted([trace_files(9000)[0].clone(), trace_files(9000)[1].clone(), frame_path(8000)])
    );
    assert_eq!(names(plan.not_uploaded), sorted([trace_path(9000)]), "the oldest went, unstored");
    let plan = session().stored(&frame_path(8000)).plan(budget(200, 100_000));
    assert_eq!(plan.delete.len(), 3, "stored whole, the trace goes (it is also the oldest)");
    assert!(plan.not_uploaded.is_empty());
    // A file written to since its upload (the live trace) is not stored.
    let rewritten = Session::default()
        .snapshot("page.yml", 10, 10)
        .video(3000, 3000, 100)
        .video(2000, 2000, 100)
        .exporting()
        .stored_before_a_write(&video_path(2000))
        .plan(budget(110, 100_000));
    assert_eq!(names(rewritten.delete), sorted([video_path(3000)]));
}

#[test]
fn the_file_being_uploaded_stays_even_when_nothing_stored_is_left() {
    let plan = four_videos().exporting().uploading(&video_path(4000)).plan(budget(210, 100_000));
    // The oldest is being uploaded: it stays, counted first; the walk keeps the newest beside it.
    assert_eq!(names(plan.not_uploaded), names(plan.delete.clone()));
    assert_eq!(names(plan.delete), sorted([video_path(2000), video_path(3000)]));
    assert_eq!(plan.kept_bytes, 210);
    let blob = Session::default()
        .trace(9000, 8000, 10)
        .resource("aaa", 8000, 50)
        .resource("bbb", 8000, 50)
        .exporting()
        .uploading("recordings/traces/resources/bbb")
        .plan(Policy::of(3600, 500, 5));
    let [network, trace] = trace_files(9000);
    assert_eq!(names(blob.delete), sorted([network, trace, "recordings/traces/resources/aaa".to_owned()]));
}

#[test]
fn the_volume_is_full_only_once_nothing_stored_is_left() {
    // The recording in progress fills the volume: every stored video goes, the unstored ones as
    // without an export; then the runtime stops with SnapshotVolumeFull as it always did.
    let session = || four_videos().recording(100).video(100, 60, 1000).exporting().stored(&video_path(1000));
    let plan = session().plan(budget(500, 1000));
    assert!(plan.full, "{plan:?}");
    assert_eq!(plan.delete.len(), 4, "everything deletable went");
    assert_eq!(plan.not_uploaded.len(), 3);
    let roomy = session().plan(budget(1400, 2000));
    assert_eq!((names(roomy.delete), roomy.full), (sorted([video_path(1000)]), false));
}

#[test]
fn a_young_file_that_would_fill_the_volume_goes_stored_first() {
    let session = Session::default()
        .snapshot("page.yml", 100, 10)
        .video(3, 3, 500)
        .video(2, 2, 400)
        .exporting()
        .stored(&video_path(2));
    let plan = session.plan(budget(600, 800));
    assert_eq!(names(plan.young.clone()), sorted([video_path(2)]), "the stored one, though smaller");
    assert_eq!((plan.kept_bytes, plan.full), (510, false));
    assert!(plan.not_uploaded.is_empty());
}

/// A random session: snapshots and videos of random ages and sizes, some stored, maybe a
/// recording in progress and an upload in progress.
fn sessions() -> impl Strategy<Value = (Session, Vec<String>)> {
    let snapshots = proptest::collection::vec((1..5000u64, 0..200u64), 0..6);
    let videos = proptest::collection::vec((1..5000u64, 0..300u64, any::<bool>()), 0..10);
    (snapshots, videos, proptest::option::of(0..10usize), proptest::option::of(0..10usize)).prop_map(
        |(snapshots, videos, live, sending)| {
            let mut s = Session::default();
            let mut pinned = Vec::new();
            for (i, (age, bytes)) in snapshots.into_iter().enumerate() {
                s = s.snapshot(&format!("page-{i}.yml"), age, bytes);
            }
            let mut stored = Vec::new();
            for (i, (age, bytes, is_stored)) in videos.into_iter().enumerate() {
                // Distinct names: a video starts a little before its last write.
                let start = age + 1 + i as u64 * 5000;
                s = s.video(start, age, bytes);
                if is_stored {
                    stored.push(video_path(start));
                }
                if live == Some(i) {
                    s = s.recording(start);
                    pinned.push(video_path(start));
                }
                if sending == Some(i) {
                    s = s.exporting().uploading(&video_path(start));
                    pinned.push(video_path(start));
                }
            }
            let s = stored.iter().fold(s.exporting(), |s, path| s.stored(path));
            (s, pinned)
        },
    )
}

fn policies() -> impl Strategy<Value = Policy> {
    (0..6000u64, 0..12usize, 0..20u64, proptest::option::of((0..1500u64, 0..1500u64))).prop_map(
        |(age, count, grace, size)| {
            let mut p = Policy::of(age, count, grace);
            if let Some((a, b)) = size {
                p.size = budget(a.min(b), a.max(b)).size;
            }
            p
        },
    )
}

proptest! {
    #[test]
    fn an_export_only_reorders_what_goes_for_the_count_and_the_budget(
        (session, pinned) in sessions(),
        policy in policies(),
    ) {
        let listing = session.listing();
        let everything: u64 = listing.files.iter().chain(&listing.recordings.videos).map(|e| e.bytes).sum();
        let plan = plan(listing.clone(), now(), policy);
        // What is kept is what is counted.
        let bytes_of = |path: &PathBuf| {
            listing.files.iter().chain(&listing.recordings.videos).find(|e| &e.path == path).map_or(0, |e| e.bytes)
        };
        prop_assert_eq!(plan.kept_bytes, everything - plan.delete.iter().map(bytes_of).sum::<u64>());
        // Neither the recording in progress nor the file being uploaded goes.
        for path in &pinned {
            prop_assert!(!plan.delete.contains(&PathBuf::from(path)), "{path} deleted");
        }
        // An unstored recording goes for the count or the budget only once every stored one did.
        let export = listing.export.clone().unwrap_or_default();
        let rules_young = |e: &Entry| now().duration_since(e.modified).unwrap_or_default() < policy.grace;
        let too_old = |e: &Entry| now().duration_since(e.modified).unwrap_or_default() > policy.max_age;
        let deletable = |e: &Entry| !rules_young(e) && !pinned.iter().any(|p| e.path.as_path() == std::path::Path::new(p));
        let videos = &listing.recordings.videos;
        let lost_for_room = videos.iter().any(|e| {
            deletable(e) && !too_old(e) && !export.stored(e) && plan.delete.contains(&e.path)
        });
        if lost_for_room {
            for e in videos.iter().filter(|e| deletable(e) && export.stored(e)) {
                prop_assert!(plan.delete.contains(&e.path), "{} kept, an unstored one went", e.path.display());
            }
        }
        // Each recording deleted unstored is reported, and only those.
        let unstored: Vec<_> = videos.iter().filter(|e| plan.delete.contains(&e.path) && !export.stored(e)).map(|e| e.path.clone()).collect();
        prop_assert_eq!(names(plan.not_uploaded.clone()), names(unstored));

        // A ledger that knows nothing, or no export: as it always was.
        let no_export = Listing { export: None, ..listing.clone() };
        let nothing_stored = Listing { export: Some(Exported::default()), ..listing };
        let (before, blind) = (super::plan(no_export, now(), policy), super::plan(nothing_stored, now(), policy));
        prop_assert_eq!(&before.delete, &blind.delete);
        prop_assert_eq!((before.kept_bytes, before.full, &before.young), (blind.kept_bytes, blind.full, &blind.young));
        prop_assert!(before.not_uploaded.is_empty());
    }
}
