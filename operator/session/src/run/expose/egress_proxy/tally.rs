//! Counts of the proxy's verdicts since the runtime started, answered on
//! `GET /egress` ([`crate::run::expose::health`]) for the operator's
//! `EgressRefused` Events and per-session metrics. Bounded whatever a page
//! does: at most [`MAX_RULES`] rule rows (the rest fold into
//! [`OTHER_RULE`]) and [`MAX_REFUSED_HOSTS`] refused hosts (the least
//! recent go), so a page naming a million hosts costs a few kilobytes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use playpen_api::egress_report::{
    EgressReport, RefusedHost, RuleCount, MAX_REFUSED_HOSTS, MAX_RULES, MAX_RULE_CHARS, OTHER_RULE,
};

use super::record::Record;

#[derive(Debug, Default)]
struct State {
    rules: BTreeMap<(&'static str, String), RuleCount>,
    /// By host and port: the row and when it was last refused (a sequence number).
    refused: BTreeMap<(String, u16), (RefusedHost, u64)>,
    seq: u64,
}

/// The counts, shared by the proxy's connections and the readiness endpoint.
#[derive(Debug, Default)]
pub struct Tally(Mutex<State>);

impl Tally {
    /// Counts one logged attempt.
    pub(crate) fn note(&self, record: &Record) {
        let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.seq += 1;
        let seq = state.seq;
        let mut key = (record.verdict, record.rule.chars().take(MAX_RULE_CHARS).collect::<String>());
        if !state.rules.contains_key(&key) && state.rules.len() >= MAX_RULES - 1 {
            key.1 = OTHER_RULE.to_owned();
        }
        let row = state.rules.entry(key.clone()).or_insert_with(|| RuleCount {
            verdict: key.0.to_owned(),
            rule: key.1.clone(),
            ..RuleCount::default()
        });
        row.connections = row.connections.saturating_add(1);
        row.sent = row.sent.saturating_add(record.sent);
        row.received = row.received.saturating_add(record.received);
        if record.verdict != "refused" {
            return;
        }
        let host_key = (record.host.clone(), record.port);
        if !state.refused.contains_key(&host_key) && state.refused.len() >= MAX_REFUSED_HOSTS {
            let oldest = state.refused.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                state.refused.remove(&oldest);
            }
        }
        let (row, at) = state.refused.entry(host_key).or_insert_with(|| {
            (RefusedHost { host: record.host.clone(), port: record.port, ..RefusedHost::default() }, seq)
        });
        row.attempts = row.attempts.saturating_add(1);
        row.rule.clone_from(&record.rule);
        *at = seq;
    }

    /// The report: rule rows in a stable order, refused hosts most recent first.
    pub fn report(&self) -> EgressReport {
        let state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut refused: Vec<&(RefusedHost, u64)> = state.refused.values().collect();
        refused.sort_by_key(|(_, at)| std::cmp::Reverse(*at));
        EgressReport {
            rules: state.rules.values().cloned().collect(),
            refused_hosts: refused.into_iter().map(|(row, _)| row.clone()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(host: &str, verdict: &'static str, rule: &str) -> Record {
        Record {
            at: String::new(),
            host: host.into(),
            port: 443,
            address: None,
            verdict,
            rule: rule.into(),
            sent: 10,
            received: 20,
            ms: 1,
        }
    }

    #[test]
    fn attempts_are_counted_by_verdict_and_rule_and_refused_hosts_by_recency() {
        let tally = Tally::default();
        tally.note(&record("a.test", "allowed", "allowHosts[0]"));
        tally.note(&record("a.test", "allowed", "allowHosts[0]"));
        tally.note(&record("b.test", "refused", "mode AllowListOnly"));
        tally.note(&record("c.test", "refused", "denyHosts[1]"));
        tally.note(&record("b.test", "refused", "mode AllowListOnly"));
        let report = tally.report();
        let allowed = report.rules.iter().find(|r| r.verdict == "allowed").expect("allowed row");
        assert_eq!(
            (allowed.rule.as_str(), allowed.connections, allowed.sent, allowed.received),
            ("allowHosts[0]", 2, 20, 40)
        );
        assert_eq!(report.total("refused"), 3);
        let hosts: Vec<(&str, u64)> = report.refused_hosts.iter().map(|h| (h.host.as_str(), h.attempts)).collect();
        assert_eq!(hosts, [("b.test", 2), ("c.test", 1)]);
    }

    #[test]
    fn a_flood_of_hosts_and_rules_stays_bounded() {
        let tally = Tally::default();
        for i in 0..10_000 {
            tally.note(&record(&format!("h{i}.test"), "refused", &format!("denied range 10.{}.0.0/16", i % 200)));
        }
        let report = tally.report();
        assert_eq!(report.rules.len(), MAX_RULES);
        assert_eq!(report.total("refused"), 10_000);
        assert!(report.rules.iter().any(|r| r.rule == OTHER_RULE && r.connections > 0));
        assert_eq!(report.refused_hosts.len(), MAX_REFUSED_HOSTS);
        assert_eq!(report.refused_hosts[0].host, "h9999.test", "the most recent first");
        assert!(report.refused_hosts.iter().all(|h| h.host.as_str() >= "h9968.test"), "the least recent went");
    }
}
