//! playpen-operator: reconciles `BrowserSession` resources into a browser
//! Pod, its launch-config Secret, runtime ConfigMap, snapshot volume, viewer
//! Service and NetworkPolicy.
//!
//! Phases, one module each: [`validate`] (dereference what the spec names)
//! → [`claim`] (a pooled session's warm Pod, or its cold start)
//! → [`children`] (pure objects) → [`apply`] (create, or server-side
//! apply with [`ownership`] handed over) →
//! [`recovery`] (pure: replace a failed Pod, or give up) →
//! [`status`] (pure status from what the cluster reports). [`session`]
//! runs them as one reconcile (gate → dereference → plan → apply → report,
//! the plan pure); [`controller`] wires it to kube-rs; [`pool`] keeps BrowserPools' warm browsers (its
//! own plan → create/delete → status, on the same builders); [`room`]
//! deletes warm Pods for sessions that do not fit; [`runtime`] runs both
//! controllers the same way (shared state, guards, leader election,
//! metrics), and with [`http`] makes it a service; [`operator`] puts the
//! pieces together for `main` and for tests. [`own_writes`] is the one
//! record of what this process wrote, by which its caches and watches tell
//! their own writes' echoes from news.

pub mod apply;
pub mod baseline;
pub mod burst;
pub mod cache;
pub mod children;
pub mod claim;
pub mod context;
pub mod controller;
pub mod crd;
pub mod egress_watch;
pub mod error;
pub mod export_watch;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod http;
pub mod operator;
pub mod own_writes;
pub mod ownership;
pub mod pool;
pub mod recovery;
pub mod room;
pub mod runtime;
pub mod runtime_reads;
pub mod session;
pub mod snapshot;
pub mod status;
pub mod suspend;
pub mod telemetry;
pub mod validate;

pub use error::{Error, Result};
