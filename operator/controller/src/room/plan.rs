//! Which warm Pods go so that waiting sessions can start. Pure: the loop in
//! [`super::run`] feeds it the caches' Pods and carries out what it picks.
//!
//! - A session's Pod *waits for room* while the scheduler reports it
//!   `Unschedulable` for want of resources (`Insufficient …`, `Too many
//!   pods`); other reasons (selectors, taints, volumes) no warm Pod can fix.
//! - While any session waits, no warm Pod waits: an unscheduled warm Pod
//!   goes, since it would take the next room that frees before the session.
//! - Each waiting session gets one scheduled warm Pod deleted for it. It
//!   gets another only [`SETTLE`] after that one is gone from the node and
//!   if it still waits (the freed room was on a node it cannot use, or too
//!   small).
//! - Candidates in order: the session's own namespace first, warming before
//!   ready (less work lost), from the pool with the most candidates (the
//!   loss spread), the youngest, then by name.
//! - At most [`MAX_PER_ROUND`] deletions of each kind in a round.
//! - Claimed Pods are never candidates: they are sessions.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use playpen_api::naming::{POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM};

/// How long after its yielded warm Pod is gone a session that still waits
/// gets another: the scheduler's retry after a Pod's deletion takes well
/// under a second; this leaves the room time to be taken.
pub const SETTLE: Duration = Duration::from_secs(15);

/// Most warm Pods deleted for sessions (and, apart, unscheduled ones) in one round.
pub const MAX_PER_ROUND: usize = 8;

/// The scheduler's message when `pod` cannot be scheduled for want of
/// resources on every node; `None` when it is scheduled, not yet tried, or
/// refused for another reason.
pub fn waits_for_room(pod: &Pod) -> Option<&str> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let scheduled = conditions.iter().find(|c| c.type_ == "PodScheduled")?;
    if scheduled.status != "False" || scheduled.reason.as_deref() != Some("Unschedulable") {
        return None;
    }
    let message = scheduled.message.as_deref()?;
    (message.contains("Insufficient ") || message.contains("Too many pods")).then_some(message)
}

fn is_warm(pod: &Pod) -> bool {
    pod.metadata.labels.as_ref().and_then(|l| l.get(POOL_STATE_LABEL)).is_some_and(|s| s == POOL_STATE_WARM)
}

/// A session's Pod that waits for room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingPod {
    /// The Pod's UID (the ledger's key: a replaced Pod waits anew).
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl WaitingPod {
    /// `pod` when it is a session's (not warm) and waits for room.
    pub fn of(pod: &Pod) -> Option<Self> {
        if is_warm(pod) || pod.metadata.deletion_timestamp.is_some() {
            return None;
        }
        waits_for_room(pod)?;
        Some(Self {
            uid: pod.metadata.uid.clone()?,
            namespace: pod.metadata.namespace.clone()?,
            name: pod.metadata.name.clone()?,
        })
    }
}

/// An unclaimed pool Pod as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmPod {
    /// The Pod's UID (a delete's precondition).
    pub uid: String,
    /// Its resourceVersion as cached (the other precondition: a claim
    /// relabels the Pod, and the delete is then refused).
    pub resource_version: Option<String>,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The pool it belongs to.
    pub pool: String,
    /// Bound to a node (its requests hold room there).
    pub scheduled: bool,
    /// Ready to be claimed.
    pub ready: bool,
    /// Being deleted already.
    pub terminating: bool,
    /// metadata.creationTimestamp.
    pub created: Timestamp,
}

impl WarmPod {
    /// `pod` when it is an unclaimed pool Pod.
    pub fn of(pod: &Pod) -> Option<Self> {
        if !is_warm(pod) {
            return None;
        }
        let meta = &pod.metadata;
        let ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        Some(Self {
            uid: meta.uid.clone()?,
            resource_version: meta.resource_version.clone(),
            namespace: meta.namespace.clone()?,
            name: meta.name.clone()?,
            pool: meta.labels.as_ref().and_then(|l| l.get(POOL_LABEL)).cloned()?,
            scheduled: pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some(),
            ready,
            terminating: meta.deletion_timestamp.is_some(),
            created: meta.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0),
        })
    }
}

/// Why a warm Pod is picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Not scheduled: it would take room before a waiting session.
    Competes,
    /// Deleted so that the session Pod with this UID fits.
    MakesRoomFor(String),
}

/// One warm Pod to delete (an index into the plan's `warm`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// Index into the `warm` slice given to [`plan`].
    pub warm: usize,
    /// Why.
    pub reason: Reason,
}

/// What was yielded for whom, carried from round to round: a waiting
/// session's last yielded warm Pod, and since when it is gone. Holds an
/// entry per waiting session at most ([`Ledger::update`] drops the rest).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    given: HashMap<String, Given>,
}

#[derive(Debug, Clone)]
struct Given {
    warm_uid: String,
    gone_since: Option<Instant>,
}

impl Ledger {
    /// Notes that `warm_uid` was deleted for the session Pod `waiting_uid`.
    pub fn give(&mut self, waiting_uid: &str, warm_uid: &str) {
        self.given.insert(waiting_uid.to_owned(), Given { warm_uid: warm_uid.to_owned(), gone_since: None });
    }

    /// Forgets sessions that no longer wait; marks yielded Pods that are
    /// gone from `warm` as gone since `now`.
    pub fn update(&mut self, waiting: &[WaitingPod], warm: &[WarmPod], now: Instant) {
        let waiting: HashSet<&str> = waiting.iter().map(|w| w.uid.as_str()).collect();
        let present: HashSet<&str> = warm.iter().map(|w| w.uid.as_str()).collect();
        self.given.retain(|uid, _| waiting.contains(uid.as_str()));
        for given in self.given.values_mut() {
            if given.gone_since.is_none() && !present.contains(given.warm_uid.as_str()) {
                given.gone_since = Some(now);
            }
        }
    }

    /// Sessions remembered (for the gauge and the bound's test).
    pub fn len(&self) -> usize {
        self.given.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// Whether `waiting_uid` may have a warm Pod deleted for it at `now`.
    fn owed(&self, waiting_uid: &str, now: Instant) -> bool {
        match self.given.get(waiting_uid) {
            None => true,
            Some(Given { gone_since: Some(gone), .. }) => now.saturating_duration_since(*gone) >= SETTLE,
            Some(Given { gone_since: None, .. }) => false,
        }
    }
}

/// The warm Pods to delete at `now` for the sessions `waiting`, given what
/// `ledger` says was yielded before (see the module's rules).
pub fn plan(waiting: &[WaitingPod], warm: &[WarmPod], ledger: &Ledger, now: Instant) -> Vec<Pick> {
    if waiting.is_empty() {
        return Vec::new();
    }
    let live: Vec<usize> = (0..warm.len()).filter(|&i| !warm[i].terminating).collect();
    let mut picks: Vec<Pick> = live
        .iter()
        .filter(|&&i| !warm[i].scheduled)
        .take(MAX_PER_ROUND)
        .map(|&i| Pick { warm: i, reason: Reason::Competes })
        .collect();
    let mut candidates: Vec<usize> = live.into_iter().filter(|&i| warm[i].scheduled).collect();
    let mut per_pool: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for &i in &candidates {
        *per_pool.entry((&warm[i].namespace, &warm[i].pool)).or_default() += 1;
    }
    let mut owed: Vec<&WaitingPod> = waiting.iter().filter(|w| ledger.owed(&w.uid, now)).collect();
    owed.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    for session in owed.into_iter().take(MAX_PER_ROUND) {
        let best = candidates.iter().enumerate().min_by(|(_, &a), (_, &b)| {
            let key = |i: usize| {
                let pod = &warm[i];
                let pool_size = per_pool.get(&(pod.namespace.as_str(), pod.pool.as_str())).copied().unwrap_or(0);
                (
                    pod.namespace != session.namespace,
                    pod.ready,
                    std::cmp::Reverse(pool_size),
                    std::cmp::Reverse(pod.created),
                    (pod.namespace.as_str(), pod.name.as_str()),
                )
            };
            key(a).cmp(&key(b))
        });
        let Some((at, &chosen)) = best else { break };
        candidates.swap_remove(at);
        if let Some(n) = per_pool.get_mut(&(warm[chosen].namespace.as_str(), warm[chosen].pool.as_str())) {
            *n -= 1;
        }
        picks.push(Pick { warm: chosen, reason: Reason::MakesRoomFor(session.uid.clone()) });
    }
    picks
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
