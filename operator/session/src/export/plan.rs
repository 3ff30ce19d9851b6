//! Which files of the recordings directory one exporter pass uploads, in
//! which order (pure). Finished video segments (`video-<ms>.webm`, all but
//! the one in progress) by start; then trace files under `traces/` whose
//! content changed since they were stored, a live one at most once per
//! segment interval. On the final pass (the Pod is stopping, the browser
//! has ended) everything not stored goes, the last segment included.
//! Notes, the egress log and the exporter's own state stay behind.

use std::path::{Path, PathBuf};

/// A file in the recordings directory, by its path relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The path under `recordings/`.
    pub rel: PathBuf,
}

/// What to upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A finished video segment.
    Video {
        /// Its path under `recordings/`.
        rel: PathBuf,
        /// Unix milliseconds at its start (from its name).
        started_ms: u64,
    },
    /// A trace file.
    Trace {
        /// Its path under `recordings/`.
        rel: PathBuf,
        /// Its path under `traces/` (the key's suffix).
        under_traces: String,
    },
}

/// The state a pass decides with.
#[allow(missing_debug_implementations)] // two closures
pub struct Seen<'a> {
    /// The file name of the video in progress, if any.
    pub video_in_progress: Option<&'a str>,
    /// The final pass: the browser has ended.
    pub final_pass: bool,
    /// Whether the file, as it is now, is stored.
    pub stored: &'a dyn Fn(&Path) -> bool,
    /// Whether the file was sent within the last segment interval (a live
    /// trace file is not sent again until then).
    pub sent_lately: &'a dyn Fn(&Path) -> bool,
}

/// The start of a video segment named `video-<ms>.webm`.
pub fn video_start(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("video-")?.strip_suffix(".webm")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The uploads of one pass, in order.
pub fn plan(listed: &[Listed], seen: &Seen<'_>) -> Vec<Item> {
    let mut videos = Vec::new();
    let mut traces = Vec::new();
    for file in listed {
        let parts: Vec<&str> = file.rel.iter().filter_map(|p| p.to_str()).collect();
        if parts.len() != file.rel.iter().count() || parts.iter().any(|p| p.starts_with('.')) {
            continue;
        }
        match parts.as_slice() {
            [name] => {
                let Some(started_ms) = video_start(name) else { continue };
                let in_progress = seen.video_in_progress == Some(*name);
                if (in_progress && !seen.final_pass) || (seen.stored)(&file.rel) {
                    continue;
                }
                videos.push(Item::Video { rel: file.rel.clone(), started_ms });
            }
            [first, rest @ ..] if *first == crate::run::browser::recording::TRACES && !rest.is_empty() => {
                let live_again = (seen.sent_lately)(&file.rel) && !seen.final_pass;
                if live_again || (seen.stored)(&file.rel) {
                    continue;
                }
                traces.push(Item::Trace { rel: file.rel.clone(), under_traces: rest.join("/") });
            }
            _ => {}
        }
    }
    videos.sort_by_key(|v| match v {
        Item::Video { started_ms, .. } => *started_ms,
        Item::Trace { .. } => 0,
    });
    traces.sort_by(|a, b| rel(a).cmp(rel(b)));
    videos.extend(traces);
    videos
}

fn rel(item: &Item) -> &Path {
    match item {
        Item::Video { rel, .. } | Item::Trace { rel, .. } => rel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(paths: &[&str]) -> Vec<Listed> {
        paths.iter().map(|p| Listed { rel: PathBuf::from(p) }).collect()
    }

    fn run(
        paths: &[&str],
        in_progress: Option<&str>,
        final_pass: bool,
        stored: &[&str],
        lately: &[&str],
    ) -> Vec<String> {
        let stored = |p: &Path| stored.iter().any(|s| Path::new(s) == p);
        let lately = |p: &Path| lately.iter().any(|s| Path::new(s) == p);
        let seen = Seen { video_in_progress: in_progress, final_pass, stored: &stored, sent_lately: &lately };
        plan(&listed(paths), &seen).iter().map(|i| rel(i).display().to_string()).collect()
    }

    const DIR: [&str; 9] = [
        "video-300.webm",
        "video-100.webm",
        "video-200.webm",
        "traces/trace-1.trace",
        "traces/trace-1.network",
        "traces/resources/abc.png",
        "in-progress.json",
        "egress.jsonl",
        ".export/ledger.jsonl",
    ];

    #[test]
    fn finished_videos_go_in_order_then_traces_and_never_the_notes() {
        let got = run(&DIR, Some("video-300.webm"), false, &[], &[]);
        assert_eq!(
            got,
            [
                "video-100.webm",
                "video-200.webm",
                "traces/resources/abc.png",
                "traces/trace-1.network",
                "traces/trace-1.trace"
            ]
        );
    }

    #[test]
    fn the_final_pass_takes_the_segment_in_progress_and_live_traces() {
        let got = run(&DIR, Some("video-300.webm"), true, &["video-100.webm"], &["traces/trace-1.trace"]);
        assert_eq!(
            got,
            [
                "video-200.webm",
                "video-300.webm",
                "traces/resources/abc.png",
                "traces/trace-1.network",
                "traces/trace-1.trace"
            ]
        );
    }

    #[test]
    fn stored_files_and_lately_sent_live_traces_wait() {
        let got = run(&DIR, None, false, &["video-100.webm", "traces/resources/abc.png"], &["traces/trace-1.trace"]);
        assert_eq!(got, ["video-200.webm", "video-300.webm", "traces/trace-1.network"]);
    }

    #[test]
    fn only_video_segment_names_count_as_videos() {
        assert_eq!(video_start("video-1733300000000.webm"), Some(1_733_300_000_000));
        for name in ["video-.webm", "video-12a.webm", "video-12.mp4", "clip-12.webm", "video-+1.webm"] {
            assert_eq!(video_start(name), None, "{name}");
        }
        assert!(run(&["video-x.webm", "notes.txt", "traces"], None, true, &[], &[]).is_empty());
    }
}
