//! Reads a child's stdout/stderr line by line: logs each line, keeps a tail
//! for error messages, and forwards lines to whoever waits for a marker
//! (`Daemon listening on`, `Listening on`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;

/// How many lines of a child's output are kept for error messages.
const TAIL_LINES: usize = 40;

/// Substrings that make a line worth keeping whatever follows it: the
/// browser's own sandbox diagnoses, which Playwright buries in a long call log.
pub const NOTABLE: &[&str] = &["No usable sandbox", "crbug.com/638180", "crbug.com/357670", "sandboxing failed"];

#[derive(Debug, Default)]
struct Lines {
    tail: VecDeque<String>,
    notable: Vec<String>,
}

/// The last lines a child printed on both streams, plus every notable line.
#[derive(Debug, Clone, Default)]
pub struct Tail(Arc<Mutex<Lines>>);

impl Tail {
    fn lines(&self) -> std::sync::MutexGuard<'_, Lines> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, line: String) {
        let mut lines = self.lines();
        if NOTABLE.iter().any(|n| line.contains(n)) && lines.notable.len() < TAIL_LINES {
            lines.notable.push(line.clone());
        }
        if lines.tail.len() == TAIL_LINES {
            lines.tail.pop_front();
        }
        lines.tail.push_back(line);
    }

    /// The kept lines, joined.
    pub fn text(&self) -> String {
        self.lines().tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// The notable lines, joined.
    pub fn notable(&self) -> String {
        self.lines().notable.join("\n")
    }
}

/// Pumps `reader` until EOF; lines go to the log, the tail and `forward`.
pub fn pump(
    child: &'static str,
    stream: &'static str,
    reader: impl AsyncRead + Unpin + Send + 'static,
    tail: Tail,
) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(reader).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "playpen_session::child", child, stream, "{line}");
            tail.push(line.clone());
            let _ = tx.send(line);
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_forwarded_and_the_tail_is_bounded() {
        let input: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = Tail::default();
        let mut rx = pump("t", "stdout", std::io::Cursor::new(input.into_bytes()), tail.clone());
        let mut seen = 0;
        while rx.recv().await.is_some() {
            seen += 1;
        }
        assert_eq!(seen, 100);
        let text = tail.text();
        assert!(text.starts_with("line 60\n"), "{text}");
        assert!(text.ends_with("line 99"));
        assert_eq!(tail.notable(), "");
    }

    #[tokio::test]
    async fn sandbox_diagnoses_are_kept_past_the_tail() {
        let mut input =
            "[err] Running as root without --no-sandbox is not supported. See https://crbug.com/638180.\n".to_owned();
        input.extend((0..100).map(|i| format!("call log {i}\n")));
        let tail = Tail::default();
        let mut rx = pump("t", "stdout", std::io::Cursor::new(input.into_bytes()), tail.clone());
        while rx.recv().await.is_some() {}
        assert!(!tail.text().contains("crbug"));
        assert!(tail.notable().contains("Running as root"));
    }
}
