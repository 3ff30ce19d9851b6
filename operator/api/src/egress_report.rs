//! What the session runtime's egress proxy has counted since it started,
//! as it answers `GET /egress` on the readiness port
//! ([`crate::layout::EGRESS_REPORT_PATH`]) and the operator reads it for
//! the `EgressRefused` Events and the per-session egress metrics. One type
//! on both sides of the wire; the operator treats what it reads as hostile
//! (the Pod writes it) and bounds it with [`EgressReport::bounded`].

use serde::{Deserialize, Serialize};

/// Rule rows a report carries at most; the runtime folds the rest into
/// [`OTHER_RULE`].
pub const MAX_RULES: usize = 64;
/// Refused host:port pairs a report carries at most (the most recent).
pub const MAX_REFUSED_HOSTS: usize = 32;
/// The rule of the rows past [`MAX_RULES`].
pub const OTHER_RULE: &str = "other";
/// The longest rule text kept (the longest the runtime writes is a denied
/// IPv6 range, about 60 characters).
pub const MAX_RULE_CHARS: usize = 96;
/// The longest host kept: a DNS name's limit.
pub const MAX_HOST_CHARS: usize = 253;
/// The most bytes of a report the operator reads.
pub const MAX_REPORT_BYTES: usize = 64 * 1024;

/// The counts since the runtime started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EgressReport {
    /// Connection attempts by verdict and rule.
    #[serde(default)]
    pub rules: Vec<RuleCount>,
    /// Hosts refused, most recent first.
    #[serde(default)]
    pub refused_hosts: Vec<RefusedHost>,
}

/// Attempts that one rule decided with one verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleCount {
    /// `allowed`, `refused` or `failed`.
    pub verdict: String,
    /// The rule (`allowHosts[0]`, `mode AllowListOnly`, `denied range 10.0.0.0/8`, …).
    pub rule: String,
    /// Connection attempts.
    pub connections: u64,
    /// Bytes from the browser.
    #[serde(default)]
    pub sent: u64,
    /// Bytes to the browser.
    #[serde(default)]
    pub received: u64,
}

/// A host the proxy refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedHost {
    /// The host the browser named.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Attempts refused.
    pub attempts: u64,
    /// The rule of the last refusal.
    pub rule: String,
}

/// The verdicts a report may name; anything else is dropped.
pub const VERDICTS: [&str; 3] = ["allowed", "refused", "failed"];

impl EgressReport {
    /// The report cut to what the operator keeps: at most [`MAX_RULES`] rows
    /// with a known verdict and [`MAX_REFUSED_HOSTS`] hosts, texts cut to
    /// their bounds and stripped of control characters.
    pub fn bounded(mut self) -> Self {
        self.rules.retain(|r| VERDICTS.contains(&r.verdict.as_str()));
        self.rules.truncate(MAX_RULES);
        for row in &mut self.rules {
            row.rule = clean(&row.rule, MAX_RULE_CHARS);
        }
        self.refused_hosts.truncate(MAX_REFUSED_HOSTS);
        for host in &mut self.refused_hosts {
            host.host = clean(&host.host, MAX_HOST_CHARS);
            host.rule = clean(&host.rule, MAX_RULE_CHARS);
        }
        self
    }

    /// Attempts with `verdict`, over every rule.
    pub fn total(&self, verdict: &str) -> u64 {
        self.rules.iter().filter(|r| r.verdict == verdict).fold(0, |sum, r| sum.saturating_add(r.connections))
    }
}

/// `text` without control characters, cut to `max` characters.
fn clean(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(verdict: &str, rule: &str, connections: u64) -> RuleCount {
        RuleCount { verdict: verdict.into(), rule: rule.into(), connections, ..RuleCount::default() }
    }

    #[test]
    fn a_hostile_report_is_cut_to_its_bounds() {
        let report = EgressReport {
            rules: (0..200).map(|i| row(if i == 0 { "bogus" } else { "refused" }, &"r\n".repeat(100), 1)).collect(),
            refused_hosts: (0..100)
                .map(|i| RefusedHost {
                    host: format!("h{i}\u{1b}[31m{}", "x".repeat(400)),
                    port: 443,
                    attempts: 1,
                    rule: "mode AllowListOnly".into(),
                })
                .collect(),
        }
        .bounded();
        assert_eq!(report.rules.len(), MAX_RULES);
        assert!(report.rules.iter().all(|r| r.verdict == "refused" && r.rule == "r".repeat(MAX_RULE_CHARS)));
        assert_eq!(report.refused_hosts.len(), MAX_REFUSED_HOSTS);
        assert!(report.refused_hosts.iter().all(|h| h.host.chars().count() == MAX_HOST_CHARS));
        assert!(report.refused_hosts.iter().all(|h| !h.host.contains('\u{1b}')));
    }

    #[test]
    fn totals_add_rows_of_one_verdict_without_overflow() {
        let report = EgressReport {
            rules: vec![row("refused", "a", u64::MAX), row("refused", "b", 5), row("allowed", "c", 2)],
            refused_hosts: vec![],
        };
        assert_eq!(report.total("refused"), u64::MAX);
        assert_eq!(report.total("allowed"), 2);
        assert_eq!(report.total("failed"), 0);
    }

    #[test]
    fn the_wire_form_is_camel_case_and_missing_lists_read_empty() {
        let report: EgressReport = serde_json::from_str("{}").expect("empty");
        assert_eq!(report, EgressReport::default());
        let text = serde_json::to_string(&EgressReport {
            rules: vec![row("allowed", "allowHosts[0]", 1)],
            refused_hosts: vec![RefusedHost { host: "b.test".into(), port: 80, attempts: 2, rule: "x".into() }],
        })
        .expect("json");
        assert!(text.contains("\"refusedHosts\":[{\"host\":\"b.test\",\"port\":80,\"attempts\":2,\"rule\":\"x\"}]"));
    }
}
