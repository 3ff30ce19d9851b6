//! The session's policy, each re-read from `runtime.json` while the session
//! runs (the kubelet refreshes the ConfigMap in place): the idle timeout
//! ([`idle`]), the maximum lifetime ([`lifetime`]), snapshot and recording
//! retention within the volume's budget ([`retention`]), and the guard that
//! discards a warm browser used before its claim ([`pristine`]), and host
//! rules added to a browser launched without its egress proxy
//! ([`host_rules_added`]). Each gives
//! `run` a future that resolves when the policy ends the session.

pub(crate) mod host_rules_added;
pub(crate) mod idle;
pub(crate) mod lifetime;
pub(crate) mod pristine;
pub mod retention;
