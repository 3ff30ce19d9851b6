//! What the egress watch remembers of each session between rounds (pure):
//! the refused attempts already counted, those not yet announced and when
//! the last `EgressRefused` Event went out, so that a session hammering a
//! refused host gets one Event per [`EVENT_EVERY`], saying how many
//! attempts and to which hosts, not one per attempt.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use playpen_api::egress_report::EgressReport;

/// The shortest time between two `EgressRefused` Events of one session.
pub const EVENT_EVERY: Duration = Duration::from_secs(300);
/// Hosts an Event names at most (the most attempted first).
pub const HOSTS_NAMED: usize = 5;

type HostPort = (String, u16);

/// One session's memory.
#[derive(Debug, Default)]
struct Seen {
    /// Refused attempts by host as of the last report.
    counted: BTreeMap<HostPort, u64>,
    /// Refused attempts not announced yet, with the last rule.
    pending: BTreeMap<HostPort, (u64, String)>,
    last_event: Option<Instant>,
}

/// The memory of every session the watch reads, by UID.
#[derive(Debug, Default)]
pub struct Ledger {
    sessions: HashMap<String, Seen>,
}

impl Ledger {
    /// Takes `report`, the session `uid`'s latest, and returns the note of
    /// an `EgressRefused` Event when one is due at `now`. A count lower than
    /// the last one means the runtime started again (its counts start at
    /// zero): the whole count is new.
    pub fn observe(&mut self, uid: &str, report: &EgressReport, now: Instant) -> Option<String> {
        let seen = self.sessions.entry(uid.to_owned()).or_default();
        let mut counted = BTreeMap::new();
        for host in &report.refused_hosts {
            let key = (host.host.clone(), host.port);
            let before = seen.counted.get(&key).copied().unwrap_or(0);
            let new = if host.attempts >= before { host.attempts - before } else { host.attempts };
            if new > 0 {
                let pending = seen.pending.entry(key.clone()).or_insert((0, String::new()));
                pending.0 = pending.0.saturating_add(new);
                pending.1.clone_from(&host.rule);
            }
            counted.insert(key, host.attempts);
        }
        seen.counted = counted;
        let due = seen.last_event.is_none_or(|last| now.duration_since(last) >= EVENT_EVERY);
        if seen.pending.is_empty() || !due {
            return None;
        }
        seen.last_event = Some(now);
        Some(note(&std::mem::take(&mut seen.pending)))
    }

    /// Forgets every session not in `present`.
    pub fn retain(&mut self, present: &HashSet<String>) {
        self.sessions.retain(|uid, _| present.contains(uid));
    }

    /// Sessions remembered.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// "refused 7 attempts to 2 hosts: b.test:443 ×5 (mode AllowListOnly), …".
fn note(pending: &BTreeMap<HostPort, (u64, String)>) -> String {
    let total = pending.values().fold(0u64, |sum, (n, _)| sum.saturating_add(*n));
    let mut hosts: Vec<(&HostPort, &(u64, String))> = pending.iter().collect();
    hosts.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(b.0)));
    let named: Vec<String> = hosts
        .iter()
        .take(HOSTS_NAMED)
        .map(|((host, port), (n, rule))| format!("{host}:{port} ×{n} ({rule})"))
        .collect();
    let more = hosts.len().saturating_sub(HOSTS_NAMED);
    let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
    let s = |n: u64| if n == 1 { "" } else { "s" };
    let host_count = hosts.len() as u64;
    format!(
        "the egress proxy refused {total} attempt{} to {host_count} host{}: {}{tail} \
         (kubectl playpen egress NAME --refused shows each)",
        s(total),
        s(host_count),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::egress_report::RefusedHost;

    fn report(hosts: &[(&str, u64)]) -> EgressReport {
        EgressReport {
            rules: vec![],
            refused_hosts: hosts
                .iter()
                .map(|(host, attempts)| RefusedHost {
                    host: (*host).into(),
                    port: 443,
                    attempts: *attempts,
                    rule: "mode AllowListOnly".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_first_refusal_is_announced_and_later_ones_wait_for_the_interval() {
        let mut ledger = Ledger::default();
        let t0 = Instant::now();
        assert_eq!(ledger.observe("u", &report(&[]), t0), None, "nothing refused, nothing said");
        let first = ledger.observe("u", &report(&[("b.test", 2)]), t0).expect("the first refusals");
        assert!(first.starts_with("the egress proxy refused 2 attempts to 1 host: b.test:443 ×2 (mode AllowListOnly)"));
        // More refusals within the interval wait, and are summed.
        assert_eq!(ledger.observe("u", &report(&[("b.test", 5)]), t0 + Duration::from_secs(60)), None);
        assert_eq!(ledger.observe("u", &report(&[("b.test", 6), ("c.test", 1)]), t0 + Duration::from_secs(120)), None);
        let later = ledger.observe("u", &report(&[("b.test", 6), ("c.test", 1)]), t0 + EVENT_EVERY).expect("due");
        assert!(later.contains("refused 5 attempts to 2 hosts: b.test:443 ×4"), "{later}");
        assert!(later.contains("c.test:443 ×1"), "{later}");
        // Nothing new: nothing said, however long it has been.
        assert_eq!(ledger.observe("u", &report(&[("b.test", 6), ("c.test", 1)]), t0 + EVENT_EVERY * 3), None);
    }

    #[test]
    fn a_restarted_runtime_counts_from_zero_again() {
        let mut ledger = Ledger::default();
        let t0 = Instant::now();
        ledger.observe("u", &report(&[("b.test", 9)]), t0).expect("first");
        let again = ledger.observe("u", &report(&[("b.test", 3)]), t0 + EVENT_EVERY).expect("after a restart");
        assert!(again.contains("refused 3 attempts"), "{again}");
    }

    #[test]
    fn sessions_are_apart_and_forgotten_when_gone() {
        let mut ledger = Ledger::default();
        let t0 = Instant::now();
        assert!(ledger.observe("a", &report(&[("x.test", 1)]), t0).is_some());
        assert!(ledger.observe("b", &report(&[("x.test", 1)]), t0).is_some(), "another session's Event is its own");
        ledger.retain(&HashSet::from(["b".to_owned()]));
        assert_eq!(ledger.len(), 1);
        assert!(ledger.observe("a", &report(&[("x.test", 1)]), t0).is_some(), "a forgotten session starts afresh");
    }

    #[test]
    fn a_note_names_the_most_attempted_hosts_and_counts_the_rest() {
        let mut ledger = Ledger::default();
        let hosts: Vec<(String, u64)> = (1..=8).map(|i| (format!("h{i}.test"), i)).collect();
        let hosts: Vec<(&str, u64)> = hosts.iter().map(|(h, n)| (h.as_str(), *n)).collect();
        let note = ledger.observe("u", &report(&hosts), Instant::now()).expect("due");
        assert!(note.starts_with("the egress proxy refused 36 attempts to 8 hosts: h8.test:443 ×8"), "{note}");
        assert!(note.contains("h4.test:443 ×4 (mode AllowListOnly) and 3 more"), "{note}");
        assert!(!note.contains("h3.test"), "{note}");
    }
}
