//! `playpen-session rotate`, exec'd in the browser container by `kubectl
//! playpen record --rotate`: asks the runtime (PID 1) for a video rotation
//! now and waits until it finished the segment in progress. Both sides of
//! its answer live here: one line on stdout and the exit code.

/// The runtime's subcommand.
pub const SUBCOMMAND: &str = "rotate";
/// The answer's line when a segment was finished: `finished video-<ms>.webm`.
pub const FINISHED: &str = "finished";
/// Exit code: no video is recording (none asked for, or not started yet).
pub const EXIT_NOTHING_RECORDING: i32 = 3;
/// Exit code: the session is closing; its close finishes the video.
pub const EXIT_CLOSING: i32 = 4;

/// The answer's line for a finished segment file named `name`.
pub fn finished_line(name: &str) -> String {
    format!("{FINISHED} {name}")
}

/// The start (Unix milliseconds, the segment's name) of the segment a
/// rotation finished, from the command's output.
pub fn finished_ms(stdout: &str) -> Option<u64> {
    let name = stdout.lines().find_map(|l| l.trim().strip_prefix(FINISHED)?.strip_prefix(' '))?;
    let digits = name.trim().strip_prefix("video-")?.strip_suffix(".webm")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_names_the_finished_segment() {
        assert_eq!(finished_ms(&format!("{}\n", finished_line("video-1796112000123.webm"))), Some(1_796_112_000_123));
        assert_eq!(finished_ms("noise\nfinished video-5.webm\n"), Some(5));
        for bad in [
            "",
            "finished",
            "finished clip.webm",
            "finished video-.webm",
            "finished video-1x.webm",
            "finishedvideo-1.webm",
        ] {
            assert_eq!(finished_ms(bad), None, "{bad:?}");
        }
    }
}
