//! `record --rotate`: `playpen-session rotate` exec'd in the browser
//! container, which has the runtime finish the video segment in progress
//! now (SIGUSR1 to PID 1) and answers with the segment it finished
//! (`playpen_api::rotate`).

use playpen_api::layout::SESSION_RUNTIME_BIN;
use playpen_api::rotate::{finished_ms, EXIT_CLOSING, EXIT_NOTHING_RECORDING, SUBCOMMAND};

use super::Source;
use crate::error::{Error, Result};
use crate::output::untrusted;
use crate::remote::{Capped, Target};

/// The most of the command's output kept.
const OUTPUT_LIMIT: u64 = 64 * 1024;

/// What the runtime answered (pure): the start (Unix ms) of the segment it
/// finished, `None` when there was nothing to finish, or the error.
pub fn answer(code: i32, stdout: &str, stderr: &str, pod: &str) -> Result<Option<u64>> {
    match code {
        0 => finished_ms(stdout).map(Some).ok_or_else(|| {
            Error::Remote(format!(
                "playpen-session {SUBCOMMAND} in Pod {pod} answered without naming a segment: {}",
                untrusted(stdout.trim(), false)
            ))
        }),
        EXIT_NOTHING_RECORDING | EXIT_CLOSING => Ok(None),
        code => {
            let old = stderr.contains("unrecognized subcommand");
            let hint =
                if old { " (the session's browser image predates it: rebuild it with this release)" } else { "" };
            Err(Error::Remote(format!(
                "playpen-session {SUBCOMMAND} in Pod {pod} exited {code}{hint}: {}",
                untrusted(stderr.trim(), false)
            )))
        }
    }
}

/// Asks the session's runtime to finish the video segment in progress; the
/// start of the segment it finished. A Pod that is gone records nothing:
/// with the store as the source, that is said and the copy goes on.
pub async fn ask(target: &Target<'_>, from: Source) -> Result<Option<u64>> {
    let command = vec![SESSION_RUNTIME_BIN.to_owned(), SUBCOMMAND.to_owned()];
    let (mut out, mut err) = (Capped::new(OUTPUT_LIMIT), Capped::new(OUTPUT_LIMIT));
    let code = match target.exec_into(&command, &mut out, &mut err).await {
        Ok(code) => code,
        Err(Error::PodMissing { pod, .. }) if from == Source::Store => {
            println!("Pod {pod} is gone: nothing records there, nothing to rotate; copying what the store holds");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let (stdout, stderr) = (String::from_utf8_lossy(&out.kept), String::from_utf8_lossy(&err.kept));
    let finished = answer(code, &stdout, &stderr, &target.pod)?;
    match finished {
        Some(ms) => println!("finished the video segment in progress (video-{ms}.webm)"),
        None => println!("nothing to rotate: {}", untrusted(stdout.trim(), false)),
    }
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_s_answer_is_the_finished_segment_nothing_or_an_error() {
        assert_eq!(answer(0, "finished video-1796112000123.webm\n", "", "p").unwrap(), Some(1_796_112_000_123));
        assert_eq!(answer(EXIT_NOTHING_RECORDING, "no video is recording\n", "", "p").unwrap(), None);
        assert_eq!(answer(EXIT_CLOSING, "the session is closing\n", "", "p").unwrap(), None);
        assert!(answer(0, "what?", "", "p").unwrap_err().to_string().contains("without naming a segment"));
        let err = answer(2, "", "error: unrecognized subcommand 'rotate'", "demo-browser").unwrap_err().to_string();
        assert!(err.contains("exited 2") && err.contains("predates it"), "{err}");
        let err = answer(1, "", "the runtime did not finish \u{1b}[2J", "p").unwrap_err().to_string();
        assert!(!err.contains('\u{1b}'), "the container's words are escaped: {err}");
    }
}
