//! The Playpen API: the `BrowserSession` custom resource, its admission
//! rules, and the pure naming and socket-layout logic shared by the operator
//! and the in-Pod session runtime. No I/O happens in this crate.

pub mod cidr;
pub mod egress_hosts;
pub mod egress_report;
pub mod export_status;
pub mod layout;
pub mod live;
pub mod naming;
pub mod quantity;
pub mod rotate;
pub mod runtime_config;
pub mod suspend;
pub mod text;
pub mod v1alpha1;

pub use v1alpha1::{BrowserSession, BrowserSessionSpec, BrowserSessionStatus};
