//! Telling an agent's own `playwright-cli close` from a crash.
//!
//! Both end the daemon with exit status 0 and no output (measured on 0.1.22),
//! so the exit alone cannot say which happened. The image's `playwright-cli`
//! wrapper ([`crate::cli`]) knows: before it runs `close`, `close-all` or
//! `kill-all`, it leaves a note beside the sockets naming the session. A
//! daemon exit with a fresh note for its session is the agent's doing: the
//! runtime opens a fresh browser without recording a restart, and the
//! readiness probe does not fail while it does. A close from a client that
//! bypasses the wrapper (another image's CLI in a sidecar) leaves no note
//! and still counts as a crash.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The note, in the session's socket namespace directory (beside
/// [`crate::restarts::RECORD_FILE`]).
pub const NOTE_FILE: &str = "agent-close.json";
/// Which session a note for `close-all` / `kill-all` names.
pub const ALL_SESSIONS: &str = "*";
/// How long a note stands: a close takes well under a second, and a fresh
/// browser starts in a few; a note older than this (a close that found no
/// browser) covers nothing.
pub const NOTE_LIFETIME: Duration = Duration::from_secs(20);

/// What the wrapper writes before a close.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// The session the command closes, or [`ALL_SESSIONS`].
    pub session: String,
    /// When, in milliseconds since the epoch.
    pub at_unix_ms: u64,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The wrapper's side: notes that `session` is about to be closed by an
/// agent (written whole, then renamed).
pub fn announce(dir: &Path, session: &str, now: SystemTime) -> std::io::Result<()> {
    let note = Note { session: session.to_owned(), at_unix_ms: unix_ms(now) };
    let tmp = dir.join(format!("{NOTE_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(&note).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, dir.join(NOTE_FILE))
}

/// The note in `dir`, if any (unreadable = none).
pub fn read(dir: &Path) -> Option<Note> {
    std::fs::read(dir.join(NOTE_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// Does `note` cover a daemon of `session` that exited at `now` after
/// starting at `started`: written for it (or all) while it ran, and fresh?
pub fn covers(note: &Note, session: &str, started: SystemTime, now: SystemTime) -> bool {
    let at = note.at_unix_ms;
    (note.session == session || note.session == ALL_SESSIONS)
        && at >= unix_ms(started)
        && u128::from(unix_ms(now).saturating_sub(at)) <= NOTE_LIFETIME.as_millis()
}

/// Is the session being reopened after an agent's close right now (a fresh
/// note for it)? The probe's question.
pub fn reopening(dir: &Path, session: &str, now: SystemTime) -> bool {
    read(dir).is_some_and(|note| covers(&note, session, UNIX_EPOCH, now))
}

/// Removes the note once the fresh browser runs.
pub fn clear(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(NOTE_FILE));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn a_note_covers_its_session_or_all_while_the_daemon_ran_and_only_while_fresh() {
        let note = Note { session: "shop".into(), at_unix_ms: unix_ms(at(10)) };
        assert!(covers(&note, "shop", at(0), at(11)));
        assert!(!covers(&note, "other", at(0), at(11)), "another session's close");
        assert!(!covers(&note, "shop", at(12), at(13)), "written before this daemon started");
        assert!(covers(&note, "shop", at(0), at(10) + NOTE_LIFETIME));
        assert!(!covers(&note, "shop", at(0), at(11) + NOTE_LIFETIME), "stale: a close that found no browser");
        let all = Note { session: ALL_SESSIONS.into(), ..note };
        assert!(covers(&all, "anything", at(0), at(11)));
    }

    #[test]
    fn announce_read_reopening_and_clear_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        assert!(!reopening(dir.path(), "shop", SystemTime::now()));
        announce(dir.path(), "shop", SystemTime::now()).unwrap();
        assert_eq!(read(dir.path()).unwrap().session, "shop");
        assert!(reopening(dir.path(), "shop", SystemTime::now()));
        assert!(!reopening(dir.path(), "other", SystemTime::now()));
        assert!(!reopening(dir.path(), "shop", SystemTime::now() + 2 * NOTE_LIFETIME));
        clear(dir.path());
        assert_eq!(read(dir.path()), None);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(leftovers.is_empty(), "no temporary file left: {leftovers:?}");
    }
}
