//! `playpen-node-agent`: the live suspend path's hands on a node.
//!
//! It watches the Pods of its own node and the Pods waiting to be restored
//! onto it, and nothing else; it talks to the operator only through those
//! Pods' annotations ([`playpen_api::live`]). `plan` decides from a Pod
//! what to do (pure), `store` keeps checkpoints on the node's disk,
//! `runsc` drives gVisor, `agent` does the watching and patching.

pub mod agent;
pub mod error;
pub mod plan;
pub mod runsc;
pub mod store;

pub use error::Error;
