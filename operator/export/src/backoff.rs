//! How often the uploader tries an upload again (pure). The store client
//! retries a request on its own (5xx, dropped connections, with jittered
//! backoff); these attempts come on top, for what it gives up on: a refused
//! signature until the Secret is fixed, a store down for minutes.

use std::time::Duration;

/// Attempts and the waits between them: `first`, doubled each time, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failed attempt.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
    /// How many attempts in all; `None`: until the upload succeeds.
    pub attempts: Option<u32>,
}

impl Default for Backoff {
    /// Waits of 1 s, 2 s, 4 s … up to 1 min; tries until it succeeds (a
    /// recording waits on the volume until the store takes it).
    fn default() -> Self {
        Self { first: Duration::from_secs(1), max: Duration::from_secs(60), attempts: None }
    }
}

impl Backoff {
    /// The wait after failed attempt `attempt` (from 1), or `None` when it was the last.
    pub fn after(&self, attempt: u32) -> Option<Duration> {
        if self.attempts.is_some_and(|n| attempt >= n) {
            return None;
        }
        let doublings = attempt.saturating_sub(1).min(31);
        Some(self.first.saturating_mul(1 << doublings).min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_maximum() {
        let b = Backoff::default();
        let waits: Vec<u64> = (1..=9).map(|n| b.after(n).unwrap().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(b.after(u32::MAX), Some(Duration::from_secs(60)));
    }

    #[test]
    fn a_bounded_backoff_stops_after_its_last_attempt() {
        let b = Backoff { first: Duration::from_millis(10), max: Duration::from_millis(25), attempts: Some(3) };
        assert_eq!(b.after(1), Some(Duration::from_millis(10)));
        assert_eq!(b.after(2), Some(Duration::from_millis(20)));
        assert_eq!(b.after(3), None);
        let once = Backoff { attempts: Some(1), ..b };
        assert_eq!(once.after(1), None);
    }

    #[test]
    fn huge_first_waits_saturate_at_the_maximum() {
        let b = Backoff { first: Duration::MAX, max: Duration::from_secs(5), attempts: None };
        assert_eq!(b.after(4), Some(Duration::from_secs(5)));
    }
}
