//! From a host and port to an open connection, or the rule that refused
//! it: the host rules first, then the proxy's own resolution, then the CIDR
//! floor on each address (which closes DNS rebinding to internal addresses),
//! connecting to the first permitted one.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use playpen_api::egress_hosts::{verdict, Floor, HostRules, Verdict};
use tokio::net::TcpStream;

/// The rules in force for one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Host rules and mode.
    pub rules: HostRules,
    /// Denied ranges and allow-listed CIDRs.
    pub floor: Floor,
}

/// An allowed, open connection.
#[derive(Debug)]
pub(crate) struct Dialed {
    /// The connection.
    pub stream: TcpStream,
    /// Where it goes.
    pub address: SocketAddr,
    /// What allowed it.
    pub verdict: Verdict,
}

/// Why no connection was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// `refused` (a rule) or `failed` (allowed, but unresolvable or unreachable).
    pub outcome: &'static str,
    /// The deciding rule, or what failed.
    pub rule: String,
    /// The last address considered.
    pub address: Option<IpAddr>,
}

impl Refusal {
    fn refused(verdict: Verdict, address: Option<IpAddr>) -> Self {
        Self { outcome: "refused", rule: verdict.rule, address }
    }

    fn failed(rule: String, address: Option<IpAddr>) -> Self {
        Self { outcome: "failed", rule, address }
    }
}

/// Which addresses to try, in order, each with its verdict (pure).
pub(crate) fn permitted(
    host: &Verdict,
    floor: &Floor,
    addresses: &[IpAddr],
) -> Result<Vec<(IpAddr, Verdict)>, Refusal> {
    let judged: Vec<(IpAddr, Verdict)> = addresses.iter().map(|a| (*a, floor.verdict(host, *a))).collect();
    let allowed: Vec<(IpAddr, Verdict)> = judged.iter().filter(|(_, v)| v.allowed).cloned().collect();
    match (allowed.is_empty(), judged.first()) {
        (false, _) => Ok(allowed),
        (true, Some((address, v))) => Err(Refusal::refused(v.clone(), Some(*address))),
        (true, None) => Err(Refusal::failed("no address".into(), None)),
    }
}

/// Whether resolving `host` could change a refusal: only an allow-listed
/// CIDR can admit a host the host rules refuse. Otherwise the name is not
/// looked up at all, so a page cannot send data out in DNS queries for
/// names it is refused.
fn worth_resolving(host: &Verdict, floor: &Floor) -> bool {
    host.allowed || (!host.rule.starts_with("denyHosts") && !floor.allowed.is_empty())
}

/// Checks, resolves and connects, each step bounded by `timeout`.
pub(crate) async fn dial(host: &str, port: u16, policy: &Policy, timeout: Duration) -> Result<Dialed, Refusal> {
    let by_host = verdict(host, port, &policy.rules);
    if !worth_resolving(&by_host, &policy.floor) {
        return Err(Refusal::refused(by_host, None));
    }
    let addresses: Vec<IpAddr> = match tokio::time::timeout(timeout, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
        Ok(Err(err)) => return Err(Refusal::failed(format!("cannot resolve: {err}"), None)),
        Err(_) => return Err(Refusal::failed("resolution timed out".into(), None)),
    };
    let mut last = None;
    for (address, verdict) in permitted(&by_host, &policy.floor, &addresses)? {
        let to = SocketAddr::new(address, port);
        match tokio::time::timeout(timeout, TcpStream::connect(to)).await {
            Ok(Ok(stream)) => return Ok(Dialed { stream, address: to, verdict }),
            Ok(Err(err)) => last = Some((address, format!("cannot connect: {err}"))),
            Err(_) => last = Some((address, "connect timed out".to_owned())),
        }
    }
    Err(match last {
        Some((address, why)) => Refusal::failed(why, Some(address)),
        None => Refusal::failed("no address".into(), None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::v1alpha1::EgressMode;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect(text)
    }

    fn policy(mode: EgressMode, allow: &[&str], deny: &[&str], denied: &[&str], allowed: &[&str]) -> Policy {
        let owned = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let cidrs = |l: &[&str]| l.iter().map(|c| c.parse().expect("cidr")).collect();
        Policy {
            rules: HostRules::parse(mode, &owned(allow), &owned(deny)).expect("rules"),
            floor: Floor { denied: cidrs(denied), allowed: cidrs(allowed) },
        }
    }

    #[test]
    fn the_first_permitted_addresses_are_tried_in_resolution_order() {
        let p = policy(EgressMode::AllowListOnly, &["a.test"], &[], &["10.0.0.0/8"], &[]);
        let host = verdict("a.test", 443, &p.rules);
        let tried = permitted(&host, &p.floor, &[ip("10.1.1.1"), ip("192.0.2.1"), ip("192.0.2.2")]).expect("some");
        assert_eq!(tried.iter().map(|(a, _)| *a).collect::<Vec<_>>(), [ip("192.0.2.1"), ip("192.0.2.2")]);
        assert_eq!(tried[0].1.rule, "allowHosts[0]");
    }

    #[test]
    fn a_name_resolving_only_into_denied_ranges_is_refused_with_the_range() {
        let p = policy(EgressMode::AllowListOnly, &["a.test"], &[], &["10.0.0.0/8", "169.254.0.0/16"], &[]);
        let host = verdict("a.test", 443, &p.rules);
        let refused = permitted(&host, &p.floor, &[ip("169.254.169.254"), ip("10.0.0.1")]).expect_err("refused");
        assert_eq!(
            refused,
            Refusal::refused(
                Verdict { allowed: false, rule: "denied range 169.254.0.0/16".into() },
                Some(ip("169.254.169.254"))
            )
        );
        assert_eq!(permitted(&host, &p.floor, &[]).expect_err("none").outcome, "failed");
    }

    #[test]
    fn refused_names_are_not_resolved_unless_a_cidr_could_admit_them() {
        let listed = policy(EgressMode::AllowListOnly, &["a.test"], &["b.test"], &[], &[]);
        assert!(!worth_resolving(&verdict("c.test", 443, &listed.rules), &listed.floor));
        assert!(worth_resolving(&verdict("a.test", 443, &listed.rules), &listed.floor));
        let with_cidr = policy(EgressMode::AllowListOnly, &["a.test"], &["b.test"], &[], &["192.0.2.0/24"]);
        assert!(worth_resolving(&verdict("c.test", 443, &with_cidr.rules), &with_cidr.floor));
        assert!(!worth_resolving(&verdict("b.test", 443, &with_cidr.rules), &with_cidr.floor), "a deny stands");
    }

    #[tokio::test]
    async fn a_refused_host_is_never_connected_to() {
        let p = policy(EgressMode::AllowListOnly, &["a.test"], &[], &[], &[]);
        let refused = dial("refused.invalid", 443, &p, Duration::from_secs(1)).await.expect_err("refused");
        assert_eq!((refused.outcome, refused.rule.as_str(), refused.address), ("refused", "mode AllowListOnly", None));
    }

    #[tokio::test]
    async fn an_allowed_loopback_listener_is_reached_when_the_floor_leaves_loopback_open() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let open = policy(EgressMode::AllowListOnly, &[&format!("localhost:{port}")], &[], &["10.0.0.0/8"], &[]);
        let dialed = dial("localhost", port, &open, Duration::from_secs(5)).await.expect("dialed");
        assert!(dialed.address.ip().is_loopback());
        assert_eq!(dialed.verdict.rule, "allowHosts[0]");
        let floored =
            policy(EgressMode::AllowListOnly, &[&format!("localhost:{port}")], &[], &["127.0.0.0/8", "::1/128"], &[]);
        let refused = dial("localhost", port, &floored, Duration::from_secs(5)).await.expect_err("floor");
        assert!(refused.rule.starts_with("denied range "), "{refused:?}");
    }
}
