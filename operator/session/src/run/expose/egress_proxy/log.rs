//! The egress log: one JSON line per connection attempt in
//! `recordings/egress.jsonl` on the snapshot volume. Bounded: past
//! [`MAX_LOG_BYTES`] the file moves to `egress.jsonl.1` (replacing the one
//! before) and a new one starts; retention leaves both to this bound. The
//! file is opened for each line, so one deleted is simply started again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) use playpen_api::layout::EGRESS_LOG_FILE as LOG_FILE;
use playpen_api::layout::EGRESS_LOG_MAX_BYTES as MAX_LOG_BYTES;
use playpen_api::layout::EGRESS_LOG_ROTATED_FILE;

use super::record::Record;
use super::tally::Tally;

/// Appends records to the log, one writer at a time, and counts them.
#[derive(Debug)]
pub(crate) struct EgressLog {
    path: PathBuf,
    max_bytes: u64,
    lock: Mutex<()>,
    tally: Arc<Tally>,
}

impl EgressLog {
    /// A log at `<recordings>/egress.jsonl`.
    pub(crate) fn new(recordings: &Path) -> Self {
        Self::with_limit(recordings.join(LOG_FILE), MAX_LOG_BYTES)
    }

    /// A log at `path`, rotated past `max_bytes`.
    pub(crate) fn with_limit(path: PathBuf, max_bytes: u64) -> Self {
        Self { path, max_bytes, lock: Mutex::new(()), tally: Arc::default() }
    }

    /// The same log, counting into `tally` (the one the readiness endpoint reports).
    pub(crate) fn counting_into(self, tally: Arc<Tally>) -> Self {
        Self { tally, ..self }
    }

    /// Counts `record` and appends it; a failure to write is logged, never
    /// the connection's problem.
    pub(crate) fn write(&self, record: &Record) {
        self.tally.note(record);
        let Ok(mut line) = serde_json::to_vec(record) else { return };
        line.push(b'\n');
        let _held = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(err) = self.append(&line) {
            tracing::warn!(path = %self.path.display(), "cannot write the egress log: {err}");
        }
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let full = std::fs::metadata(&self.path).is_ok_and(|m| m.len() + line.len() as u64 > self.max_bytes);
        if full {
            std::fs::rename(&self.path, self.path.with_file_name(EGRESS_LOG_ROTATED_FILE))?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        file.write_all(line)
    }
}

/// `at` as RFC 3339 in UTC with milliseconds (`2026-12-04T18:20:00.123Z`).
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn record(host: &str) -> Record {
        Record {
            at: "2026-12-04T00:00:00.000Z".into(),
            host: host.into(),
            port: 443,
            address: Some("192.0.2.1".into()),
            verdict: "allowed",
            rule: "allowHosts[0]".into(),
            sent: 1,
            received: 2,
            ms: 3,
        }
    }

    #[test]
    fn times_are_rfc_3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let at = UNIX_EPOCH + Duration::from_millis(1_796_112_000_123);
        assert_eq!(rfc3339(at), "2026-12-01T08:00:00.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn each_record_is_one_json_line_with_every_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = EgressLog::new(&dir.path().join("recordings"));
        log.write(&record("a.test"));
        log.write(&Record { address: None, verdict: "refused", ..record("b.test") });
        let text = std::fs::read_to_string(dir.path().join("recordings").join(LOG_FILE)).expect("log");
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        assert_eq!(lines.len(), 2);
        let keys: Vec<&String> = lines[0].as_object().expect("object").keys().collect();
        assert_eq!(keys, ["address", "at", "host", "ms", "port", "received", "rule", "sent", "verdict"]);
        assert_eq!(lines[1]["address"], serde_json::Value::Null);
        assert_eq!(lines[1]["verdict"], "refused");
    }

    #[test]
    fn the_log_rotates_past_its_bound_and_restarts_when_deleted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LOG_FILE);
        let log = EgressLog::with_limit(path.clone(), 400);
        for i in 0..10 {
            log.write(&record(&format!("h{i}.test")));
        }
        let size = std::fs::metadata(&path).expect("log").len();
        assert!(size <= 400, "{size}");
        let rotated = std::fs::read_to_string(dir.path().join(EGRESS_LOG_ROTATED_FILE)).expect("rotated");
        assert!(rotated.len() <= 400 && !rotated.is_empty());
        std::fs::remove_file(&path).expect("delete");
        log.write(&record("after.test"));
        assert!(std::fs::read_to_string(&path).expect("log").contains("after.test"));
    }
}
