//! How an in-place daemon restart becomes visible without API credentials.
//!
//! The runtime restarts a crashed daemon itself (fast; the Pod stays), so the
//! container's restart count never moves. Instead the runtime appends to a
//! restart record beside the sockets, and the readiness probe fails exactly
//! once for every restart it has not yet reported (the probe keeps what it
//! reported in a second file). The kubelet turns that failure into a readiness
//! flip the operator sees and remembers in the BrowserSession's status.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The runtime's file: how often the daemon exited unexpectedly, and the last time.
pub const RECORD_FILE: &str = "daemon-restarts.json";
/// The probe's file: the count it has already reported.
pub const REPORTED_FILE: &str = "daemon-restarts.reported";

/// What the runtime records after an unexpected daemon exit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartRecord {
    /// Unexpected exits since the runtime started.
    pub count: u64,
    /// How the last one ended (for example "signal: 9 (SIGKILL)").
    pub last_exit: String,
    /// When, in seconds since the epoch.
    pub last_at_unix: u64,
}

/// Where both files live: the session's socket namespace directory.
pub fn record_dir(sockets_dir: &str) -> Option<PathBuf> {
    Path::new(sockets_dir).parent().map(Path::to_path_buf)
}

/// Reads the record (absent or unreadable = no restarts).
pub fn read(dir: &Path) -> RestartRecord {
    std::fs::read(dir.join(RECORD_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Counts one more unexpected exit (written whole, then renamed).
pub fn record(dir: &Path, exit: &str, now_unix: u64) -> std::io::Result<RestartRecord> {
    let mut record = read(dir);
    record.count += 1;
    exit.clone_into(&mut record.last_exit);
    record.last_at_unix = now_unix;
    let tmp = dir.join(format!("{RECORD_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, dir.join(RECORD_FILE))?;
    Ok(record)
}

/// The probe's side: a message for a restart not yet reported (and marks it
/// reported), or `None`.
pub fn unreported(dir: &Path) -> Option<String> {
    let record = read(dir);
    let reported_path = dir.join(REPORTED_FILE);
    let reported: u64 = std::fs::read_to_string(&reported_path).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
    if record.count <= reported {
        return None;
    }
    // Best effort: if it cannot be written the probe fails again next time, never silently passes.
    let _ = std::fs::write(&reported_path, record.count.to_string());
    Some(format!(
        "the browser daemon exited unexpectedly ({}) and was restarted in place; {} restart(s) since the runtime started",
        record.last_exit, record.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_restart_fails_the_probe_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(unreported(dir.path()), None, "no record, nothing to report");
        record(dir.path(), "signal: 9 (SIGKILL)", 100).unwrap();
        let message = unreported(dir.path()).unwrap();
        assert!(message.contains("signal: 9 (SIGKILL)") && message.contains("1 restart(s)"), "{message}");
        assert_eq!(unreported(dir.path()), None, "reported once");
        record(dir.path(), "exit status: 1", 200).unwrap();
        record(dir.path(), "exit status: 2", 300).unwrap();
        let message = unreported(dir.path()).unwrap();
        assert!(message.contains("exit status: 2") && message.contains("3 restart(s)"), "{message}");
        assert_eq!(read(dir.path()), RestartRecord { count: 3, last_exit: "exit status: 2".into(), last_at_unix: 300 });
    }

    #[test]
    fn a_garbled_record_counts_as_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RECORD_FILE), b"{not json").unwrap();
        assert_eq!(unreported(dir.path()), None);
        assert_eq!(record(dir.path(), "x", 1).unwrap().count, 1);
    }

    #[test]
    fn the_files_live_in_the_socket_namespace() {
        assert_eq!(record_dir("/var/lib/playpen/pw/0123abcd/s"), Some(PathBuf::from("/var/lib/playpen/pw/0123abcd")));
    }
}
