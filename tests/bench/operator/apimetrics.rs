//! Request counts from the API server's own `/metrics`: every request by
//! resource, verb and code (`apiserver_request_total`), and what reached
//! etcd (`etcd_requests_total`), so a no-op apply (a request, but no
//! storage write) is told apart from a real write.

use std::collections::BTreeMap;

use anyhow::Context as _;
use kube::Client;

/// Verbs that change something (as `apiserver_request_total` spells them:
/// server-side apply is `APPLY`, not `PATCH`).
const WRITE_VERBS: &[&str] = &["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"];
/// etcd operations that write.
const ETCD_WRITES: &[&str] = &["create", "update", "delete"];

/// Counters at one instant.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// (resource[/subresource], verb, code) → requests.
    requests: BTreeMap<(String, String, String), f64>,
    /// (resource, operation) → etcd requests.
    etcd: BTreeMap<(String, String), f64>,
}

/// Reads the API server's counters (the admin client may read /metrics).
pub async fn scrape(client: &Client) -> anyhow::Result<Counts> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await.context("reading the API server's /metrics")?;
    Ok(parse(&text))
}

fn parse(text: &str) -> Counts {
    let mut counts = Counts::default();
    for line in text.lines() {
        let Some((name, labels, value)) = sample(line) else { continue };
        let label = |k: &str| labels.get(k).cloned().unwrap_or_default();
        match name {
            "apiserver_request_total" => {
                // Discovery, /healthz and other non-resource paths have no resource.
                let resource = label("resource");
                if resource.is_empty() {
                    continue;
                }
                let sub = label("subresource");
                let resource = if sub.is_empty() { resource } else { format!("{resource}/{sub}") };
                *counts.requests.entry((resource, label("verb"), label("code"))).or_default() += value;
            }
            "etcd_requests_total" => {
                *counts.etcd.entry((label("resource"), label("operation"))).or_default() += value;
            }
            _ => {}
        }
    }
    counts
}

/// `name{k="v",…} value` → its parts; None for comments and other shapes.
fn sample(line: &str) -> Option<(&str, BTreeMap<String, String>, f64)> {
    let (name, rest) = line.split_once('{')?;
    let close = rest.rfind('}')?;
    let value = rest[close + 1..].trim().parse().ok()?;
    let mut labels = BTreeMap::new();
    let mut body = &rest[..close];
    while let Some((key, after)) = body.split_once("=\"") {
        // A value ends at the first quote not escaped by a backslash.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        let end = end?;
        labels.insert(key.trim_start_matches(',').to_owned(), after[..end].to_owned());
        body = &after[end + 1..];
    }
    Some((name, labels, value))
}

/// What happened between two scrapes.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    /// (resource, verb) → (requests, of which not 2xx).
    pub rows: BTreeMap<(String, String), (f64, f64)>,
    /// (resource, operation) → etcd requests.
    pub etcd: BTreeMap<(String, String), f64>,
}

impl Delta {
    /// `after − before`, only what changed.
    pub fn between(before: &Counts, after: &Counts) -> Self {
        let mut delta = Self::default();
        for (key, value) in &after.requests {
            let d = value - before.requests.get(key).copied().unwrap_or(0.0);
            if d > 0.0 {
                let (resource, verb, code) = key;
                let row = delta.rows.entry((resource.clone(), verb.clone())).or_default();
                row.0 += d;
                if !code.starts_with('2') {
                    row.1 += d;
                }
            }
        }
        for (key, value) in &after.etcd {
            let d = value - before.etcd.get(key).copied().unwrap_or(0.0);
            if d > 0.0 {
                delta.etcd.insert(key.clone(), d);
            }
        }
        delta
    }

    /// Write requests, optionally leaving out one (resource, verb): the
    /// bench's own creates of the sessions are not the controller's.
    pub fn writes_except(&self, except: Option<(&str, &str)>) -> f64 {
        self.rows
            .iter()
            .filter(|((r, v), _)| is_write(v) && except != Some((r.as_str(), v.as_str())))
            .map(|(_, (n, _))| n)
            .sum()
    }

    /// Write requests to the resources `keep` accepts.
    pub fn writes_to(&self, keep: impl Fn(&str) -> bool) -> f64 {
        self.rows.iter().filter(|((r, v), _)| is_write(v) && keep(r)).map(|(_, (n, _))| n).sum()
    }

    /// Read requests (GET, LIST, WATCH).
    pub fn reads(&self) -> f64 {
        self.rows.iter().filter(|((_, v), _)| !is_write(v)).map(|(_, (n, _))| n).sum()
    }

    /// Writes that reached etcd (create, update, delete) for the resources
    /// `keep` accepts (by resource name, its group aside).
    pub fn etcd_writes(&self, keep: impl Fn(&str) -> bool) -> f64 {
        self.etcd.iter().filter(|((r, op), _)| ETCD_WRITES.contains(&op.as_str()) && keep(r)).map(|(_, n)| n).sum()
    }
}

/// Whether `verb` changes something.
pub fn is_write(verb: &str) -> bool {
    WRITE_VERBS.contains(&verb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_subtracts() {
        let before = parse(
            "# HELP x\napiserver_request_total{code=\"201\",resource=\"pods\",subresource=\"\",verb=\"POST\"} 2\n",
        );
        let after = parse(concat!(
            "apiserver_request_total{code=\"201\",resource=\"pods\",subresource=\"\",verb=\"POST\"} 5\n",
            "apiserver_request_total{code=\"409\",resource=\"pods\",subresource=\"\",verb=\"POST\"} 1\n",
            "apiserver_request_total{code=\"200\",resource=\"browsersessions\",subresource=\"status\",verb=\"APPLY\"} 4\n",
            "apiserver_request_total{code=\"200\",resource=\"\",subresource=\"/healthz\",verb=\"GET\"} 9\n",
            "apiserver_request_total{code=\"200\",resource=\"pods\",subresource=\"\",verb=\"LIST\"} 3\n",
            "etcd_requests_total{group=\"\",operation=\"update\",resource=\"pods\"} 7\n",
            "etcd_requests_total{group=\"\",operation=\"get\",resource=\"pods\"} 8\n",
        ));
        let d = Delta::between(&before, &after);
        assert_eq!(d.rows[&("pods".into(), "POST".into())], (4.0, 1.0));
        assert_eq!(d.rows[&("browsersessions/status".into(), "APPLY".into())], (4.0, 0.0));
        assert_eq!(d.writes_except(None), 8.0);
        assert_eq!(d.writes_except(Some(("pods", "POST"))), 4.0);
        assert_eq!(d.reads(), 3.0);
        assert_eq!(d.etcd_writes(|_| true), 7.0);
        assert_eq!(d.etcd_writes(|r| r != "pods"), 0.0);
    }

    #[test]
    fn label_values_may_hold_commas_and_escaped_quotes() {
        let (name, labels, value) = sample("m{a=\"x,y\",b=\"say \\\"hi\\\"\"} 1.5").expect("a sample");
        assert_eq!((name, value), ("m", 1.5));
        assert_eq!(labels["a"], "x,y");
        assert_eq!(labels["b"], "say \\\"hi\\\"");
    }
}
