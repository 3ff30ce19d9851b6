//! The termination message: one JSON [`TerminationReport`] the operator copies
//! into the session's conditions, written where the kubelet reads it
//! ([`TERMINATION_MESSAGE_PATH`], overridable for tests).

use std::path::PathBuf;

use playpen_api::layout::TERMINATION_MESSAGE_PATH;
use playpen_api::runtime_config::TerminationReport;
use playpen_api::text::truncate;

/// The kubelet truncates termination messages at 4096 bytes; stay under it.
const MAX_MESSAGE_BYTES: usize = 3800;

/// Where the termination message goes.
#[derive(Debug, Clone)]
pub struct Reporter {
    path: PathBuf,
}

impl Default for Reporter {
    fn default() -> Self {
        Self { path: PathBuf::from(TERMINATION_MESSAGE_PATH) }
    }
}

impl Reporter {
    /// A reporter writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file the report is written to.
    #[cfg(test)]
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Writes `reason` and `message` as the termination message. Failing to
    /// write it is logged, never fatal: the exit code still tells the kubelet.
    pub fn write(&self, reason: &str, message: &str) {
        let report = TerminationReport { reason: reason.to_owned(), message: truncate(message, MAX_MESSAGE_BYTES) };
        let text = match serde_json::to_string(&report) {
            Ok(text) => text,
            Err(err) => format!("{{\"reason\":\"{reason}\",\"message\":\"unserialisable report: {err}\"}}"),
        };
        if let Err(err) = std::fs::write(&self.path, text) {
            tracing::warn!(path = %self.path.display(), %err, "could not write the termination message");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_report_the_operator_parses() {
        let dir = tempfile::tempdir().unwrap();
        let reporter = Reporter::new(dir.path().join("termination-log"));
        reporter.write("SocketBudgetExceeded", "too long: shorten it");
        let text = std::fs::read_to_string(reporter.path()).unwrap();
        let parsed = TerminationReport::parse(&text);
        assert_eq!(parsed.reason, "SocketBudgetExceeded");
        assert_eq!(parsed.message, "too long: shorten it");
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let text = "é".repeat(3000);
        let cut = truncate(&text, 3801);
        assert!(cut.len() <= 3801);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate("short", 10), "short");
    }

    #[test]
    fn an_unwritable_path_is_not_fatal() {
        Reporter::new("/nonexistent-dir/termination-log").write("X", "y");
    }
}
