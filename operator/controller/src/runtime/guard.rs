//! What every reconciler here shares: a panic in one object's reconcile
//! caught as that object's error, a failure streak per object backed off
//! and announced once (and every 16th retry).

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Duration;

use futures::FutureExt;
use kube::runtime::controller::Action;

use crate::error::{Error, Result};
use crate::runtime::metrics::Metrics;

/// Runs one reconcile so that a panic in it becomes [`Error::Panicked`] for
/// that object (backoff, a `ReconcileFailed` Event, the panic counter)
/// instead of unwinding through the controller and ending the process,
/// which would stop every other tenant's objects.
pub async fn catch_panics(reconcile: impl Future<Output = Result<Action>>, metrics: &Metrics) -> Result<Action> {
    match AssertUnwindSafe(reconcile).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => {
            metrics.panics.inc();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Err(Error::Panicked(message))
        }
    }
}

/// Consecutive failed reconciles per object (its UID, so a later object of
/// the same name starts afresh).
#[derive(Debug, Default)]
pub struct Failures(Mutex<HashMap<String, u32>>);

impl Failures {
    /// Counts one more failure of `key`; returns the streak's length.
    pub fn record(&self, key: &str) -> u32 {
        self.0
            .lock()
            .map(|mut f| {
                let n = f.entry(key.to_owned()).or_insert(0);
                *n = n.saturating_add(1);
                *n
            })
            .unwrap_or(1)
    }

    /// Whether `key`'s last reconcile failed.
    pub fn failing(&self, key: &str) -> bool {
        self.0.lock().map(|f| f.contains_key(key)).unwrap_or(true)
    }

    /// Ends `key`'s streak (a reconcile succeeded).
    pub fn clear(&self, key: &str) {
        self.0.lock().map(|mut f| f.remove(key)).ok();
    }

    /// Forgets every object `keep` does not name (they are gone).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut f) = self.0.lock() {
            f.retain(|key, _| keep(key));
        }
    }

    /// Objects with a failing streak.
    pub fn len(&self) -> usize {
        self.0.lock().map(|f| f.len()).unwrap_or(0)
    }

    /// Whether none is failing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The wait after the `attempts`-th failure in a row: 1 s doubling to 5 minutes.
pub fn backoff(attempts: u32) -> Action {
    let secs = 1u64 << attempts.saturating_sub(1).min(9);
    Action::requeue(Duration::from_secs(secs.min(300)))
}

/// Whether the `attempts`-th failure in a row gets an Event: the first and
/// every 16th, so a struggling API server is not also flooded with Events.
pub fn announce(attempts: u32) -> bool {
    attempts == 1 || attempts.is_multiple_of(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_to_five_minutes_and_speak_rarely() {
        let failures = Failures::default();
        let streak: Vec<u32> = (0..20).map(|_| failures.record("ns/a")).collect();
        assert_eq!(streak[..3], [1, 2, 3]);
        assert_eq!(failures.record("ns/b"), 1, "per object");
        assert!(failures.failing("ns/a") && !failures.failing("ns/c"));
        failures.clear("ns/a");
        assert!(!failures.failing("ns/a"), "a success ends the streak");
        assert_eq!(failures.record("ns/a"), 1, "a success ends the streak");
        assert_eq!(backoff(1), Action::requeue(Duration::from_secs(1)));
        assert_eq!(backoff(4), Action::requeue(Duration::from_secs(8)));
        assert_eq!(backoff(40), Action::requeue(Duration::from_secs(300)));
        let announced: Vec<u32> = (1..=40).filter(|n| announce(*n)).collect();
        assert_eq!(announced, [1, 16, 32]);
    }

    #[tokio::test]
    async fn a_panic_is_the_objects_error() {
        let metrics = Metrics::default();
        let err = catch_panics(async { panic!("boom") }, &metrics).await.unwrap_err();
        assert!(matches!(err, Error::Panicked(ref m) if m == "boom"), "{err:?}");
        assert_eq!(metrics.panics.get(), 1);
    }
}
