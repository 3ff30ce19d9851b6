//! The pool's plan: from the Pods a pool has to how many to create and
//! which to delete. Pure, so every rule below is a table row or a property.
//!
//! - `minReady` unclaimed Pods of the current template, ready or warming,
//!   are kept; the missing ones are created.
//! - Never more than `max_unclaimed()` unclaimed Pods after the plan.
//! - A template change replaces the unclaimed Pods of older templates: a
//!   ready old Pod stays while it covers for a current one still warming,
//!   and goes once enough current ones are ready (or at once when the pool
//!   is over its bound); an old Pod still warming goes at once.
//! - A failed or finished warm Pod, or one not ready [`WARM_DEADLINE`]
//!   after its creation, is deleted (and so replaced).
//! - Claimed Pods belong to their sessions: only counted, never deleted.
//! - While sessions wait for room on the nodes (`hold`), nothing is created
//!   (the [`crate::room`] loop deletes warm Pods for them meanwhile).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// How long a warm Pod may take to become ready before it is replaced.
pub const WARM_DEADLINE: Duration = Duration::from_secs(300);

/// Whose a pool Pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodState {
    /// Unclaimed, owned by the pool: the plan's to keep or delete.
    Warm,
    /// A session's (or on its way to one): counted only.
    Claimed,
}

/// One Pod of the pool as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolPod {
    /// The Pod's name.
    pub name: String,
    /// The template hash it was built from.
    pub template_hash: String,
    /// Warm or claimed.
    pub state: PodState,
    /// The browser is ready (Pod condition Ready).
    pub ready: bool,
    /// The Pod ended (phase Failed or Succeeded).
    pub failed: bool,
    /// Being deleted already (deletionTimestamp set): neither counted nor deleted.
    pub terminating: bool,
    /// metadata.creationTimestamp.
    pub created: Timestamp,
}

/// What the pool asks of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want<'a> {
    /// Ready-or-warming unclaimed Pods of the current template to keep.
    pub min_ready: i32,
    /// Most unclaimed Pods at once.
    pub max_unclaimed: i32,
    /// The current template's hash.
    pub template_hash: &'a str,
    /// Sessions wait for room: create nothing.
    pub hold: bool,
}

/// Why a Pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Phase Failed or Succeeded.
    Failed,
    /// Not ready within [`WARM_DEADLINE`].
    NeverReady,
    /// Built from an older template.
    Outdated,
    /// More unclaimed Pods of the current template than `minReady`.
    Surplus,
}

impl DeleteReason {
    /// A word for Events and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::NeverReady => "not ready in time",
            Self::Outdated => "older template",
            Self::Surplus => "more than minReady",
        }
    }
}

/// Counts for the pool's status, as they stand after the plan is carried out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Unclaimed, ready Pods of the current template.
    pub ready: i32,
    /// Every other unclaimed Pod kept or created.
    pub warming: i32,
    /// Claimed Pods still there.
    pub claimed: i32,
}

/// The plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Pods of the current template to create.
    pub create: i32,
    /// Pods to delete, with why.
    pub delete: Vec<(String, DeleteReason)>,
    /// The status counts after the plan.
    pub counts: Counts,
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Which Pods to keep first: ready ones, then the oldest (furthest along),
/// then by name so the plan is deterministic.
fn keep_order(pods: &mut [&PoolPod]) {
    pods.sort_by(|a, b| b.ready.cmp(&a.ready).then(a.created.cmp(&b.created)).then(a.name.cmp(&b.name)));
}

/// The plan for a pool with `pods` at `now`.
pub fn plan(want: Want<'_>, pods: &[PoolPod], now: Timestamp) -> Plan {
    let min_ready = want.min_ready.max(0);
    let max_unclaimed = want.max_unclaimed.max(min_ready);
    let live: Vec<&PoolPod> = pods.iter().filter(|p| !p.terminating).collect();
    let claimed = count(live.iter().filter(|p| p.state == PodState::Claimed).count());
    let mut delete = Vec::new();
    let (mut current, mut old) = (Vec::new(), Vec::new());
    for pod in live.into_iter().filter(|p| p.state == PodState::Warm) {
        let age = Duration::try_from(now.duration_since(pod.created)).unwrap_or_default();
        if pod.failed {
            delete.push((pod.name.clone(), DeleteReason::Failed));
        } else if !pod.ready && age >= WARM_DEADLINE {
            delete.push((pod.name.clone(), DeleteReason::NeverReady));
        } else if pod.template_hash == want.template_hash {
            current.push(pod);
        } else if pod.ready {
            old.push(pod);
        } else {
            // Warming for a template nobody asks for any more.
            delete.push((pod.name.clone(), DeleteReason::Outdated));
        }
    }
    keep_order(&mut current);
    keep_order(&mut old);
    let keep_current = current.len().min(usize::try_from(min_ready).unwrap_or(0));
    delete.extend(current[keep_current..].iter().map(|p| (p.name.clone(), DeleteReason::Surplus)));
    let kept = &current[..keep_current];
    let current_ready = count(kept.iter().filter(|p| p.ready).count());
    let current_warming = count(keep_current) - current_ready;
    let keep_current = count(keep_current);
    let need = min_ready - keep_current;
    // Old ready Pods cover for current ones not ready yet, within the bound.
    let mut keep_old = count(old.len()).min(min_ready - current_ready).min(max_unclaimed - keep_current).max(0);
    let mut create = if want.hold { 0 } else { need.min(max_unclaimed - keep_current - keep_old).max(0) };
    if create == 0 && need > 0 && current_warming == 0 && keep_old > 0 && !want.hold {
        // Full of old Pods and nothing warming: make room for one new Pod
        // (readiness dips by one until it is ready, then the next goes).
        keep_old -= 1;
        create += 1;
    }
    let keep_old_n = usize::try_from(keep_old).unwrap_or(0);
    delete.extend(old[keep_old_n..].iter().map(|p| (p.name.clone(), DeleteReason::Outdated)));
    Plan {
        create,
        delete,
        counts: Counts { ready: current_ready, warming: current_warming + keep_old + create, claimed },
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
