//! Warm Pods make room for sessions. When a session's Pod cannot be
//! scheduled for want of resources, the operator deletes an unclaimed warm
//! Pod for it ([`plan`], pure; [`run`], the loop), and every pool holds its
//! refills while any session waits ([`Room::waiting`], read by the pool
//! reconciler); they refill once none does.
//!
//! Why not a low PriorityClass for warm Pods, letting the scheduler preempt
//! them: a Pod's priority is fixed at its creation, so a claimed Pod would
//! keep the warm priority for the whole session, and any cold session
//! arriving on a full node could preempt a session in use. Here only
//! unclaimed Pods are ever deleted, and a delete is made conditional on the
//! Pod's resourceVersion, which a claim changes.

pub mod plan;
mod run;

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

pub use run::run;

/// What the room loop shares with the reconcilers.
#[derive(Debug, Default)]
pub struct Room {
    waiting: AtomicUsize,
    wake: Notify,
}

impl Room {
    /// Session Pods waiting for room, as of the loop's last round.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    fn set_waiting(&self, n: usize) {
        self.waiting.store(n, Ordering::Relaxed);
    }

    /// Asks the loop to look now (a reconcile saw a session's Pod wait for room).
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}
