//! What one reconcile of a session does, decided from what it read (pure).
//!
//! Two decisions, because the first one saves every read: [`gate`], from
//! what the watch delivered (deleted, older than our own status write, a
//! first status still yielding to a burst), and [`plan`], from what the
//! reconcile read (the pool's answer, the references, the caches).

use std::time::Duration;

use playpen_api::v1alpha1::Phase;

use crate::burst;

/// How soon a reconcile that read a session older than its own last status
/// write looks again if nothing wakes it first: its own write's watch
/// event wakes it (a reconcile runs on every event of a session), which in
/// a burst may be seconds away: polling at 50 ms made 37 reconciles per
/// session in a burst of 1,000.
pub const STALE_REQUEUE: Duration = Duration::from_secs(2);

/// What a reconcile knows before it reads anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The session is being deleted.
    pub deleting: bool,
    /// The session is older than this process's own last status write.
    pub stale: bool,
    /// Its first status waits for a burst and still yields, with the phase
    /// its Pod would report (`None`: not waiting, or no longer yielding).
    pub yielding_first: Option<Phase>,
}

/// Whether the reconcile goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Deleted: forget the session (owner references delete its children).
    Forget,
    /// Nothing to do now; look again after this long unless woken.
    LookAgain(Duration),
    /// Read, plan, apply and report.
    Reconcile,
}

/// The gate.
pub fn gate(arrival: &Arrival) -> Gate {
    if arrival.deleting {
        return Gate::Forget;
    }
    if arrival.stale {
        return Gate::LookAgain(STALE_REQUEUE);
    }
    // A first status that would say the browser is ready, failed or ended
    // is news: it is written at once.
    match arrival.yielding_first {
        Some(phase) if burst::may_wait(phase) => Gate::LookAgain(burst::RETRY),
        _ => Gate::Reconcile,
    }
}

/// Whether nothing of a session can exist that the caches would not show:
/// it has no status yet, its first status does not wait for a burst (its
/// children would exist), no earlier reconcile of it in this process failed
/// half-way, and the caches hold their first lists.
pub fn untouched(has_status: bool, deferred: bool, failing: bool, caches_filled: bool) -> bool {
    !has_status && !deferred && !failing && caches_filled
}

/// Where the session's browser comes from, as the claim resolved it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Browser {
    /// Its own (no pool).
    #[default]
    Own,
    /// A pool that cannot serve it (gone, its template conflicts).
    Refused,
    /// Its pool has no ready browser and its `whenEmpty` is `Wait`.
    Waiting,
    /// A warm Pod of its pool; `fresh` when this reconcile claimed it.
    Claimed {
        /// This reconcile made the claim.
        fresh: bool,
    },
    /// A cold start from its pool's template.
    PooledCold,
}

impl Browser {
    /// Whether the session runs a browser now (references to check,
    /// children to build).
    pub fn runs(self) -> bool {
        !matches!(self, Browser::Refused | Browser::Waiting)
    }
}

/// What the reconcile read, for the plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    /// Where the browser comes from.
    pub browser: Browser,
    /// The session loads an auth state first (a claim delivers it before
    /// the session is Ready).
    pub auth_state: bool,
    /// A Secret or claim the spec names is missing.
    pub references_missing: bool,
    /// The recovery budget is spent: no new Pod.
    pub gave_up: bool,
    /// See [`untouched`].
    pub untouched: bool,
    /// The namespace's baseline policy isolates a Pod made before its own.
    pub baseline: bool,
    /// The session's own Pod is in the cache.
    pub pod_cached: bool,
    /// Its first status waits for a burst (its children exist).
    pub deferred: bool,
    /// This process created its Pod and the watch has not shown it yet.
    pub created_unseen: bool,
    /// Its status names a Pod.
    pub recorded: bool,
    /// A first status written now would yield to other first reconciles.
    pub burst: bool,
}

/// When a claimed Pod's mounts become the session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Beside the status write: a fresh claim with nothing to load first is
    /// Ready at once (its isolation and viewer were in place while warm).
    BesideStatus,
    /// Before the status is computed (it reads what the delivery found);
    /// `fresh`: this reconcile claimed it, so the children are re-owned.
    First {
        /// This reconcile made the claim.
        fresh: bool,
    },
}

/// What one reconcile does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Pending on an empty pool: a status that names it, no children.
    Wait,
    /// The pool cannot serve it: a status that says why, no children.
    Refuse,
    /// A first reconcile: the children and the Pod in one go (the baseline
    /// isolates the Pod meanwhile), beside the status write, which waits
    /// when `defer_status` (a burst).
    CreateAtOnce {
        /// The first status yields to a burst.
        defer_status: bool,
    },
    /// Its first reconcile made the Pod and the watch has not shown it:
    /// the children again, the Pod as built.
    AsBuilt,
    /// The children applied, then the Pod created if absent and
    /// `create_pod`; `recorded`: the status names a Pod (read it if the
    /// cache does not show it).
    ApplyThenCreate {
        /// Every reference resolved and the budget not spent.
        create_pod: bool,
        /// The status names a Pod.
        recorded: bool,
    },
    /// A claimed Pod made the session's.
    Claimed(Settle),
}

/// The plan.
pub fn plan(facts: &Facts) -> Plan {
    let create_pod = !facts.references_missing && !facts.gave_up;
    match facts.browser {
        Browser::Waiting => Plan::Wait,
        Browser::Refused => Plan::Refuse,
        Browser::Claimed { fresh: true } if !facts.auth_state => Plan::Claimed(Settle::BesideStatus),
        Browser::Claimed { fresh } => Plan::Claimed(Settle::First { fresh }),
        Browser::Own if facts.untouched && facts.baseline && create_pod && !facts.pod_cached => {
            Plan::CreateAtOnce { defer_status: facts.burst }
        }
        Browser::Own | Browser::PooledCold if facts.deferred && facts.created_unseen => Plan::AsBuilt,
        Browser::Own | Browser::PooledCold => Plan::ApplyThenCreate { create_pod, recorded: facts.recorded },
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
