//! Egress by host name (issue 36, docs/egress-hosts.md): the grammar of a
//! host rule, the verdict on a host and port, and the CIDR floor every
//! resolved address meets. Pure, so the operator (admission, the
//! `EgressPolicy` summary) and the runtime's proxy (enforcement) cannot
//! disagree on what a rule means.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::cidr::{Cidr, SPECIAL_RANGES};
use crate::v1alpha1::EgressMode;

/// A host rule, as RE2 (the API server's CEL) and Rust's `regex` read it
/// alike: lowercase DNS labels, `*.` only as the first label, the last
/// label starting with a letter (which refuses IPv4 literals; `[` and `:`
/// refuse IPv6 ones), an optional `:port` from 1 to 65535.
pub const HOST_RULE_PATTERN: &str = concat!(
    r"^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z]([-a-z0-9]{0,61}[a-z0-9])?",
    r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
);

/// The CEL rule on a list of host rules (`allowHosts`, `denyHosts`).
pub fn host_list_rule() -> String {
    // CEL string literals take backslash escapes: each one is doubled.
    format!("self.all(h, h.matches('{}'))", HOST_RULE_PATTERN.replace('\\', "\\\\"))
}

/// Most characters of a host name (RFC 1035's 253, without a trailing dot).
pub const MAX_HOST_LEN: usize = 253;

/// Ports a rule without one allows: HTTP and HTTPS.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// What a rule's host part matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Exactly this host.
    Exact(String),
    /// One or more labels below this suffix (`*.example.com` holds
    /// `example.com`), never the suffix itself.
    Wildcard(String),
}

/// One entry of `allowHosts` or `denyHosts`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostRule {
    /// The host part.
    pub pattern: Pattern,
    /// The one port it applies to; `None`: [`DEFAULT_PORTS`].
    pub port: Option<u16>,
}

/// Why a host rule was refused (the same cases the CEL rule refuses).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostRuleError {
    /// Empty, or longer than a DNS name.
    #[error("{0:?}: a host rule is a DNS name of 1 to 253 characters")]
    Length(String),
    /// Not lowercase DNS labels with an optional leading `*.`.
    #[error(
        "{0:?}: write a lowercase DNS name (IDNA/punycode form), `*.` only as the first label, \
         the last label starting with a letter (no IP literals: allow-list those by CIDR)"
    )]
    Host(String),
    /// The port is not 1-65535 in plain digits.
    #[error("{0:?}: the port must be 1-65535")]
    Port(String),
}

fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let inner_ok = bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let alnum = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (1..=63).contains(&bytes.len()) && inner_ok && alnum(bytes.first()) && alnum(bytes.last())
}

fn parse_port(text: &str) -> Option<u16> {
    let plain = !text.is_empty() && !text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| text.parse::<u16>().ok()).flatten().filter(|p| *p != 0)
}

impl FromStr for HostRule {
    type Err = HostRuleError;

    fn from_str(text: &str) -> Result<Self, HostRuleError> {
        if text.is_empty() || text.len() > MAX_HOST_LEN {
            return Err(HostRuleError::Length(text.to_owned()));
        }
        let (host, port) = match text.split_once(':') {
            Some((host, port)) => (host, Some(parse_port(port).ok_or_else(|| HostRuleError::Port(text.to_owned()))?)),
            None => (text, None),
        };
        let bad_host = || HostRuleError::Host(text.to_owned());
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let labels: Vec<&str> = name.split('.').collect();
        let last = labels.last().copied().unwrap_or_default();
        if !labels.iter().all(|l| is_label(l)) || !last.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Err(bad_host());
        }
        let pattern = if wildcard { Pattern::Wildcard(name.to_owned()) } else { Pattern::Exact(name.to_owned()) };
        Ok(Self { pattern, port })
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Exact(host) => write!(f, "{host}")?,
            Pattern::Wildcard(suffix) => write!(f, "*.{suffix}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// A host as a request names it, in the form rules are written in:
/// lowercase, without the trailing dot of a fully qualified name.
pub fn normalize_host(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

impl HostRule {
    /// Whether the rule covers `host` (normalized, see [`normalize_host`]) on `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = self.port.map_or(DEFAULT_PORTS.contains(&port), |p| p == port);
        let host_ok = match &self.pattern {
            Pattern::Exact(exact) => host == exact,
            Pattern::Wildcard(suffix) => host
                .strip_suffix(suffix.as_str())
                .and_then(|below| below.strip_suffix('.'))
                .is_some_and(|below| !below.is_empty()),
        };
        port_ok && host_ok
    }
}

/// A session's effective host rules: its own and the chart's, with the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRules {
    /// `spec.network.egress.mode`: what a host no rule names gets.
    pub mode: EgressMode,
    /// Allowed hosts, in the order reported (`allowHosts[i]`).
    pub allow: Vec<HostRule>,
    /// Refused hosts; a deny wins over an allow.
    pub deny: Vec<HostRule>,
}

/// A list entry that is not a host rule, with where it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}[{index}]: {source}")]
pub struct HostListError {
    /// `allowHosts` or `denyHosts`.
    pub field: &'static str,
    /// Position in the list.
    pub index: usize,
    /// What is wrong with it.
    pub source: HostRuleError,
}

/// Parses every entry of a list named `field`.
pub fn parse_list(field: &'static str, entries: &[String]) -> Result<Vec<HostRule>, HostListError> {
    entries
        .iter()
        .enumerate()
        .map(|(index, e)| e.parse().map_err(|source| HostListError { field, index, source }))
        .collect()
}

impl HostRules {
    /// Parses both lists (as they stand in the spec or in `runtime.json`).
    pub fn parse(mode: EgressMode, allow: &[String], deny: &[String]) -> Result<Self, HostListError> {
        Ok(Self { mode, allow: parse_list("allowHosts", allow)?, deny: parse_list("denyHosts", deny)? })
    }

    /// Whether any rule is set: without one the browser is not proxied.
    pub fn any(&self) -> bool {
        !self.allow.is_empty() || !self.deny.is_empty()
    }
}

/// What the rules say about one connection attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The connection may be made.
    pub allowed: bool,
    /// Which rule decided, as the log and the 403 name it:
    /// `denyHosts[2]`, `allowHosts[0]`, `mode Internet`, `allowCIDRs[1]`,
    /// `denied range 10.0.0.0/8`.
    pub rule: String,
}

impl Verdict {
    fn new(allowed: bool, rule: impl Into<String>) -> Self {
        Self { allowed, rule: rule.into() }
    }
}

/// The rule for `host` on `port` before any resolution: the first matching
/// `denyHosts` entry refuses, else the first matching `allowHosts` entry
/// allows, else the mode decides (`Internet` allows only while no
/// `allowHosts` narrows it).
pub fn verdict(host: &str, port: u16, rules: &HostRules) -> Verdict {
    let host = normalize_host(host);
    if let Some(i) = rules.deny.iter().position(|r| r.matches(&host, port)) {
        return Verdict::new(false, format!("denyHosts[{i}]"));
    }
    if let Some(i) = rules.allow.iter().position(|r| r.matches(&host, port)) {
        return Verdict::new(true, format!("allowHosts[{i}]"));
    }
    match rules.mode {
        EgressMode::Internet if rules.allow.is_empty() => Verdict::new(true, "mode Internet"),
        EgressMode::Internet => Verdict::new(false, "allowHosts (none matched)"),
        mode => Verdict::new(false, format!("mode {}", mode.as_str())),
    }
}

/// Addresses no connection ever goes to, whatever the lists say: `0.0.0.0`
/// and `::` reach the local host on Linux.
pub const UNSPECIFIED_RANGES: [&str; 2] = ["0.0.0.0/8", "::/128"];

/// The addresses the proxy refuses to connect to, and the allow-listed
/// CIDRs that override them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// Denied ranges: the special ranges, the cluster's, the chart's.
    pub denied: Vec<Cidr>,
    /// `spec.network.egress.allowCIDRs`, in order.
    pub allowed: Vec<Cidr>,
}

impl Floor {
    /// The default floor: [`SPECIAL_RANGES`] and `extra` (the cluster's
    /// Pod and Service ranges, the chart's `network.denyCIDRs`).
    pub fn standard(extra: &[Cidr], allowed: Vec<Cidr>) -> Self {
        let special = SPECIAL_RANGES.iter().map(|c| c.parse::<Cidr>().expect("constant CIDR"));
        Self { denied: special.chain(extra.iter().copied()).collect(), allowed }
    }

    /// The verdict on connecting to `address` for a host whose own verdict
    /// is `host`. An allow-listed CIDR admits the address even inside a
    /// denied range, and even for a host no host rule allows (the CIDR
    /// allow-list is an allow-list of its own); a `denyHosts` refusal stands.
    pub fn verdict(&self, host: &Verdict, address: IpAddr) -> Verdict {
        let unspecified = UNSPECIFIED_RANGES.iter().map(|c| c.parse::<Cidr>().expect("constant CIDR"));
        if let Some(range) = unspecified.into_iter().find(|c| c.contains_addr(address)) {
            return Verdict::new(false, format!("denied range {range}"));
        }
        if host.rule.starts_with("denyHosts") {
            return host.clone();
        }
        if let Some(i) = self.allowed.iter().position(|c| c.contains_addr(address)) {
            return Verdict::new(true, format!("allowCIDRs[{i}]"));
        }
        if !host.allowed {
            return host.clone();
        }
        match self.denied.iter().find(|c| c.contains_addr(address)) {
            Some(range) => Verdict::new(false, format!("denied range {range}")),
            None => host.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
