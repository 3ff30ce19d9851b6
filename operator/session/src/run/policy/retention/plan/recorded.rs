//! Videos and traces under the snapshots' age limit and size budget, with a
//! count of their own; the recording in progress never deleted; the shared
//! trace blobs kept while a trace is.

use super::super::fixtures::*;
use super::*;

/// A day's age and a count that keep everything; 5 s of grace.
fn lenient() -> Policy {
    Policy::of(86_400, 10_000, 5)
}

#[test]
fn an_old_video_and_an_old_trace_go_by_age_with_their_frames() {
    let plan = Session::default()
        .video(5000, 4000, 10)
        .trace(5000, 4000, 10)
        .frame(4500, 5)
        .video(200, 100, 10)
        .trace(200, 100, 10)
        .frame(150, 5)
        .plan(Policy::of(3600, 500, 5));
    let [network, trace] = trace_files(5000);
    assert_eq!(names(plan.delete), sorted([video_path(5000), network, trace, frame_path(4500)]));
    assert_eq!(plan.kept_bytes, 35);
}

#[test]
fn the_recording_in_progress_survives_age_count_and_size() {
    // Started long ago and not written since: only being in progress keeps it.
    let session = || {
        Session::default()
            .recording(9000)
            .video(9000, 8000, 400)
            .trace(9000, 8000, 300)
            .frame(8500, 100)
            .trace(20_000, 15_000, 10)
            .snapshot("page.yml", 10, 10)
    };
    let strict = Policy { max_age: Duration::from_secs(60), max_count: 0, ..budget(10, 100_000) };
    let plan = session().plan(strict);
    assert_eq!(names(plan.delete), sorted(trace_files(20_000)));
    assert_eq!((plan.kept_bytes, plan.full), (400 + 600 + 100 + 10, false));

    // What it holds fills the volume: it stays, and the volume is full.
    let full = session().plan(Policy { size: budget(100, 1000).size, ..strict });
    assert!(full.young.is_empty());
    assert_eq!(names(full.delete), sorted(trace_files(20_000)));
    assert!(full.full);
}

#[test]
fn the_size_budget_deletes_the_oldest_whatever_their_kind() {
    let plan = Session::default()
        .snapshot("page.yml", 10, 100)
        .video(50, 40, 300)
        .snapshot("shot-1.png", 60, 300)
        .trace(200, 100, 150)
        .snapshot("shot-0.png", 150, 300)
        .video(300, 250, 10)
        .plan(budget(1000, 5000));
    // Newest first: page.yml (last printed) 100, the video 400, shot-1 700, the
    // trace's two files 1000; shot-0 does not fit, and the older video goes too.
    assert_eq!(names(plan.delete), sorted(["shot-0.png".to_owned(), video_path(300)]));
    assert_eq!((plan.kept_bytes, plan.full), (1000, false));
}

#[test]
fn a_young_trace_that_would_fill_the_volume_goes_whole() {
    let plan = Session::default().trace(3, 2, 600).snapshot("page.yml", 100, 50).plan(budget(100, 1000));
    assert_eq!(names(plan.young.clone()), sorted(trace_files(3)));
    assert_eq!(names(plan.delete), sorted(trace_files(3)));
    assert_eq!((plan.kept_bytes, plan.full), (50, false));
}

#[test]
fn shared_blobs_go_only_once_no_trace_is_left() {
    let traced =
        |written: u64| Session::default().trace(9000, written, 10).resource("aaa", 8000, 50).resource("bbb", 1, 50);
    let by_age = Policy::of(3600, 500, 5);

    let kept = traced(100).plan(by_age);
    assert!(kept.delete.is_empty(), "a trace is left: {:?}", kept.delete);
    assert_eq!(kept.kept_bytes, 120);

    // The trace goes by age: the blobs go with it, but one still being written.
    let gone = traced(8000).plan(by_age);
    let [network, trace] = trace_files(9000);
    assert_eq!(names(gone.delete), sorted([network, trace, "recordings/traces/resources/aaa".to_owned()]));
    assert_eq!(gone.kept_bytes, 50);

    let recording = traced(8000).recording(9000).plan(by_age);
    assert!(recording.delete.is_empty(), "the trace in progress reads them");
    let starting = Session::default().recording(10).resource("aaa", 8000, 50).plan(by_age);
    assert!(starting.delete.is_empty(), "a trace starting may read them before it writes a file");
    let cut_short = traced(8000).cut_short().plan(by_age);
    assert_eq!(names(cut_short.delete), sorted(trace_files(9000)), "an unlisted trace may read them");
}

#[test]
fn frames_of_a_trace_already_deleted_go_unless_still_being_written() {
    let plan = Session::default().frame(9500, 5).trace(9000, 100, 1).frame(3, 5).trace(1, 1, 1).plan(lenient());
    // 9500 s ago: before every trace left. 3 s ago: during the first trace, which is kept.
    assert_eq!(names(plan.delete), sorted([frame_path(9500)]));
    let young = Session::default().frame(2, 5).trace(1, 1, 1).plan(lenient());
    assert!(young.delete.is_empty());
    assert_eq!(young.kept_bytes, 7);
}

#[test]
fn many_snapshots_do_not_push_recordings_out_by_count() {
    let snapshots = (0..600u64).fold(Session::default(), |s, i| s.snapshot(&format!("page-{i:03}.yml"), 2000 - i, 1));
    let plan = snapshots.video(9000, 3000, 1).trace(9000, 3000, 1).plan(Policy::of(86_400, 500, 5));
    assert_eq!(names(plan.delete), (0..100).map(|i| format!("page-{i:03}.yml")).collect::<Vec<_>>());
}

#[test]
fn recordings_keep_their_own_count_of_the_newest() {
    let videos = (1..=5u64).fold(Session::default().snapshot("page.yml", 9000, 1), |s, i| s.video(i * 100, i * 100, 1));
    let plan = videos.trace(50, 50, 1).plan(Policy::of(86_400, 3, 5));
    // Newest first: the trace, the videos of 100 and 200 s ago; the rest go.
    assert_eq!(names(plan.delete), sorted([video_path(300), video_path(400), video_path(500)]));
}

#[test]
fn the_egress_log_is_not_a_recording_it_counts_bytes_only() {
    let session = || {
        Session::default()
            .egress_log("egress.jsonl", 9000, 40)
            .egress_log("egress.jsonl.1", 20_000, 400)
            .video(300, 300, 1)
            .video(200, 200, 1)
            .snapshot("page.yml", 10, 1)
    };
    // Older than the age limit and than every video: kept whole, and not one
    // of the recordings the count keeps (the newest video stays).
    let plan = session().plan(Policy::of(3600, 1, 5));
    assert_eq!(names(plan.delete), sorted([video_path(300)]));
    assert_eq!(plan.kept_bytes, 440 + 1 + 1);
    // A count of none deletes every video, never the log.
    let none = session().plan(Policy::of(86_400, 0, 5));
    assert_eq!(names(none.delete), sorted([video_path(200), video_path(300)]));
    // Under a tight budget its bytes push the older recordings out first, and
    // a log that fills the volume on its own makes it full, never deleted.
    let tight = session().plan(budget(442, 100_000));
    assert_eq!(names(tight.delete), sorted([video_path(300)]));
    let full = session().plan(budget(100, 300));
    assert!(full.full && !full.delete.iter().any(|p| p.to_string_lossy().contains("egress")), "{full:?}");
}
