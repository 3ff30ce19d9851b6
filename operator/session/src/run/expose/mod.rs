//! What the Pod exposes: the viewer relay on the pinned port ([`relay`]) and
//! the dashboard behind it, run only while someone views ([`dashboard`]);
//! the opt-in CDP endpoint relayed to the browser's own DevTools server
//! ([`cdp`]); the forward proxy Chromium goes through when host rules
//! apply ([`egress_proxy`]); and the kubelet's readiness endpoint, `GET
//! /readyz` on the Pod's address ([`health`]). What the readiness verdict ([`crate::probe`])
//! asks of the viewer port is re-exported here.

pub(crate) mod cdp;
pub(crate) mod control;
pub(crate) mod dashboard;
pub mod egress_proxy;
pub(crate) mod health;
pub mod relay;

pub(crate) use relay::opening::viewer_ready;
