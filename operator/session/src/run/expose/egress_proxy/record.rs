//! One connection attempt as the proxy logs and counts it: a line of
//! `egress.jsonl` ([`super::log`]) and a count in the report
//! ([`super::tally`]).

use serde::Serialize;

/// One connection attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Record {
    /// When it ended (RFC 3339, UTC).
    pub at: String,
    /// The host the browser named.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address connected to (or refused), when one was resolved.
    pub address: Option<String>,
    /// `allowed`, `refused` or `failed` (allowed, but no address answered).
    pub verdict: &'static str,
    /// The rule that decided (`allowHosts[0]`, `denied range 10.0.0.0/8`, …).
    pub rule: String,
    /// Bytes from the browser to the host.
    pub sent: u64,
    /// Bytes from the host to the browser.
    pub received: u64,
    /// How long the connection lasted, in milliseconds.
    pub ms: u64,
}
