//! What the suspend captures (and the reopens of a resume into a claimed
//! warm browser) found, by session UID, until the session's status says
//! it: each is a task ([`super::capture`]); the session's reconcile reads
//! its entry ([`super::plan`]).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A capture's state.
#[derive(Debug, Clone, PartialEq)]
pub enum Capture {
    /// Asking the runtime.
    Running {
        /// Failed captures right before it.
        failed_before: u32,
    },
    /// The document is in the session's `<session>-suspended` Secret.
    Saved(Saved),
    /// The runtime or the API server said no.
    Failed(Failure),
    /// A resume's saved state is open again in a claimed warm browser
    /// (`POST /resume`), this long after the request.
    Reopened {
        /// From the request to the runtime's answer.
        millis: i64,
    },
}

/// A saved state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    /// Size of the document.
    pub bytes: i64,
    /// Tabs in it.
    pub tabs: i32,
    /// From the request to the Secret written.
    pub millis: i64,
}

/// A failed capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// What failed, for the status (no value of the state, no token).
    pub message: String,
    /// When.
    pub at: Instant,
    /// Failures in a row.
    pub attempts: u32,
}

impl Failure {
    /// How long after a failure the next capture waits: 5 s, doubling to 5 minutes.
    pub fn backoff(&self) -> Duration {
        let doublings = self.attempts.saturating_sub(1).min(6);
        (Duration::from_secs(5) * 2u32.pow(doublings)).min(Duration::from_secs(300))
    }

    /// When the next capture may start.
    pub fn retry_at(&self) -> Instant {
        self.at + self.backoff()
    }
}

/// The captures, by session UID.
#[derive(Debug, Default)]
pub struct SuspendBook {
    captures: Mutex<HashMap<String, Capture>>,
    /// The live path's checkpoint requests not answered yet, and since
    /// when this operator has seen each waiting.
    checkpoints: Mutex<HashMap<String, (String, Instant)>>,
}

impl SuspendBook {
    /// The capture of the session with `uid`.
    pub fn get(&self, uid: &str) -> Option<Capture> {
        self.captures.lock().ok()?.get(uid).cloned()
    }

    /// Marks a capture of `uid` running; `false` when one already runs.
    pub fn begin(&self, uid: &str) -> bool {
        let Ok(mut captures) = self.captures.lock() else { return false };
        let failed_before = match captures.get(uid) {
            Some(Capture::Running { .. }) => return false,
            Some(Capture::Failed(f)) => f.attempts,
            _ => 0,
        };
        captures.insert(uid.to_owned(), Capture::Running { failed_before });
        true
    }

    /// Records how the running capture of `uid` ended (a failure counts
    /// the failures before it).
    pub fn finish(&self, uid: &str, outcome: Result<Capture, String>, now: Instant) {
        let Ok(mut captures) = self.captures.lock() else { return };
        let before = match captures.get(uid) {
            Some(Capture::Running { failed_before, .. }) => *failed_before,
            Some(Capture::Failed(f)) => f.attempts,
            _ => 0,
        };
        let entry = match outcome {
            Ok(done) => done,
            Err(message) => Capture::Failed(Failure { message, at: now, attempts: before + 1 }),
        };
        captures.insert(uid.to_owned(), entry);
    }

    /// Since when `uid`'s checkpoint `request` has waited for the node
    /// agent (first seen `now`, or when this operator started).
    pub fn checkpoint_waiting(&self, uid: &str, request: &str, now: Instant) -> Instant {
        let Ok(mut waiting) = self.checkpoints.lock() else { return now };
        let entry = waiting.entry(uid.to_owned()).or_insert_with(|| (request.to_owned(), now));
        if entry.0 != request {
            *entry = (request.to_owned(), now);
        }
        entry.1
    }

    /// Forgets `uid`'s capture and checkpoint request (its status says
    /// them, or it is not suspended any more).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut captures) = self.captures.lock() {
            captures.remove(uid);
        }
        if let Ok(mut waiting) = self.checkpoints.lock() {
            waiting.remove(uid);
        }
    }

    /// Forgets the sessions not in `uids`.
    pub fn retain(&self, uids: &HashSet<String>) {
        if let Ok(mut captures) = self.captures.lock() {
            captures.retain(|uid, _| uids.contains(uid));
        }
        if let Ok(mut waiting) = self.checkpoints.lock() {
            waiting.retain(|uid, _| uids.contains(uid));
        }
    }

    /// How many sessions have an entry.
    pub fn len(&self) -> usize {
        self.captures.lock().map(|c| c.len()).unwrap_or_default()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_capture_at_a_time_and_failures_count_up_to_a_capped_backoff() {
        let book = SuspendBook::default();
        let now = Instant::now();
        assert!(book.begin("u"));
        assert!(!book.begin("u"), "a second capture waits for the first");
        book.finish("u", Err("runtime: state-save".into()), now);
        assert!(book.begin("u"), "a failed one may be retried");
        book.finish("u", Err("again".into()), now);
        let Some(Capture::Failed(f)) = book.get("u") else { panic!("{:?}", book.get("u")) };
        assert_eq!((f.attempts, f.backoff()), (2, Duration::from_secs(10)));
        let many = Failure { attempts: 40, ..f };
        assert_eq!(many.backoff(), Duration::from_secs(300));
        book.finish("u", Ok(Capture::Saved(Saved { bytes: 10, tabs: 1, millis: 5 })), now);
        assert!(matches!(book.get("u"), Some(Capture::Saved(_))));
        book.retain(&HashSet::new());
        assert!(book.is_empty());
    }

    #[test]
    fn a_checkpoint_request_waits_from_when_it_was_first_seen() {
        let book = SuspendBook::default();
        let t0 = Instant::now();
        assert_eq!(book.checkpoint_waiting("u", "suspend-2", t0), t0);
        assert_eq!(book.checkpoint_waiting("u", "suspend-2", t0 + Duration::from_secs(30)), t0);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(book.checkpoint_waiting("u", "suspend-3", later), later, "a new request waits anew");
        book.forget("u");
        assert_eq!(
            book.checkpoint_waiting("u", "suspend-3", later + Duration::from_secs(1)),
            later + Duration::from_secs(1)
        );
        book.retain(&HashSet::new());
        assert!(book.checkpoints.lock().unwrap().is_empty());
    }
}
