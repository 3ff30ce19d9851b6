//! The session controller's shared state: the client, settings and
//! metrics, the per-object records and the caches every reconcile reads.

use std::collections::HashSet;
use std::ops::Deref;
use std::sync::{Arc, RwLock};

use kube::{Client, Resource, ResourceExt};
use playpen_api::BrowserSession;

use crate::baseline::Baselines;
use crate::burst::Burst;
use crate::cache::Caches;
use crate::children::Settings;
use crate::export_watch::book::ExportBook;
use crate::own_writes::OwnWrites;
use crate::recovery::RecoveryBudget;
use crate::room::Room;
use crate::runtime::leader::Fence;
use crate::runtime::metrics::{Metrics, TrackedLabels};
use crate::runtime::{Reconciled, Shared};
use crate::suspend::SuspendBook;

/// Shared state of the session reconciler: what every controller has
/// ([`Shared`], reached through `Deref`) and the session's own records.
pub struct Context {
    shared: Shared,
    pub(crate) recovery: RecoveryBudget,
    /// The running controllers' caches of their children (replaced when
    /// they restart, after a lost and regained leadership).
    caches: RwLock<Arc<Caches>>,
    /// What this process wrote; the caches are judged with it, and keep it
    /// when they are replaced.
    pub(crate) own: Arc<OwnWrites>,
    pub(crate) baselines: Baselines,
    pub(crate) burst: Burst,
    /// Shared with the room loop and the pool reconciler.
    pub(crate) room: Arc<Room>,
    /// What the sessions' exporters last reported, and their wake-ups.
    pub(crate) exports: ExportBook,
    /// What the suspend captures found ([`crate::suspend`]).
    pub(crate) suspends: SuspendBook,
    /// What the snapshot takes found, by snapshot UID ([`crate::snapshot`]).
    pub(crate) snapshots: SuspendBook,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl Deref for Context {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Context {
    /// A context publishing Events as `reporter`, writing unconditionally
    /// (see [`Context::with_fence`]).
    pub fn new(client: Client, settings: Settings, metrics: Arc<Metrics>, reporter: &str) -> Self {
        Self {
            shared: Shared::new(client, settings, metrics, reporter, Fence::unconditional()),
            recovery: RecoveryBudget::default(),
            caches: RwLock::default(),
            own: Arc::default(),
            baselines: Baselines::default(),
            burst: Burst::default(),
            room: Arc::default(),
            exports: ExportBook::default(),
            suspends: SuspendBook::default(),
            snapshots: SuspendBook::default(),
        }
    }

    /// The same room as the pool reconciler's (see [`crate::room`]).
    pub fn with_room(mut self, room: Arc<Room>) -> Self {
        self.room = room;
        self
    }

    /// Forgets what the records hold of sessions (by UID) and namespaces
    /// no longer there.
    pub(crate) fn forget_all_but(&self, uids: &HashSet<String>, namespaces: &HashSet<String>) {
        self.own.retain(|owner| uids.contains(owner) || namespaces.contains(owner));
        self.burst.retain(|uid| uids.contains(uid));
        self.failures.retain(|uid| uids.contains(uid));
        self.baselines.retain(|ns| namespaces.contains(ns));
        self.exports.retain(uids);
        self.suspends.retain(uids);
    }

    /// Sets the `tracked_objects` gauges.
    pub(crate) fn report_tracked(&self) {
        let sizes = [
            ("own_writes", self.own.len()),
            ("deferred", self.burst.deferred()),
            ("failing", self.failures.len()),
            ("baselines", self.baselines.len()),
            ("export_reports", self.exports.len()),
            ("suspend_captures", self.suspends.len()),
            ("snapshot_takes", self.snapshots.len()),
        ];
        for (record, n) in sizes {
            let gauge = self.metrics.tracked.get_or_create(&TrackedLabels { record: record.to_owned() });
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    pub(crate) fn caches(&self) -> Arc<Caches> {
        self.caches.read().map(|c| c.clone()).unwrap_or_default()
    }

    pub(crate) fn set_caches(&self, caches: Caches) {
        if let Ok(mut held) = self.caches.write() {
            *held = Arc::new(caches);
        }
    }

    /// Replaces failed Pods within `budget`.
    pub fn with_recovery(self, recovery: RecoveryBudget) -> Self {
        Self { recovery, ..self }
    }

    /// Writes only while `fence` is open (leader election).
    pub fn with_fence(mut self, fence: Fence) -> Self {
        self.shared.fence = fence;
        self
    }
}

impl Reconciled for BrowserSession {
    fn failure_key(&self) -> String {
        key(self)
    }
}

/// A session's key in the per-object records: its UID (a later session of
/// the same name starts afresh).
pub(crate) fn key(bs: &BrowserSession) -> String {
    bs.meta().uid.clone().unwrap_or_else(|| format!("{}/{}", bs.namespace().unwrap_or_default(), bs.name_any()))
}
