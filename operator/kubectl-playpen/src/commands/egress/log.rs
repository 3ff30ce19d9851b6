//! The egress log as `kubectl playpen egress` reads it (pure): the bytes a
//! Pod sent, split into lines, each parsed as one connection attempt of
//! the runtime's egress proxy (docs/egress-hosts.md), then filtered and
//! rendered. The Pod is not trusted: a line longer than a record can be,
//! not UTF-8, not JSON, or with a field out of bounds is skipped and
//! counted, and every text is escaped where it is printed.

use serde::Deserialize;

use crate::output::{render_table, untrusted};

/// The longest line a record can make (a host of 253 characters, an IPv6
/// address, a rule naming a CIDR): anything longer is not one.
pub const MAX_LINE_BYTES: usize = 2048;
/// Bounds of the texts in a record.
const MAX_AT_CHARS: usize = 40;
const MAX_HOST_CHARS: usize = 253;
const MAX_ADDRESS_CHARS: usize = 64;
const MAX_RULE_CHARS: usize = 512;

/// What the proxy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Connected.
    Allowed,
    /// Refused by a rule or the CIDR floor.
    Refused,
    /// Allowed, but no address answered.
    Failed,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Refused => "refused",
            Verdict::Failed => "failed",
        }
    }
}

/// One connection attempt, as the proxy writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Record {
    /// When it ended (RFC 3339).
    pub at: String,
    /// The host the browser named.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address connected to (or refused), when one was resolved.
    #[serde(default)]
    pub address: Option<String>,
    /// The decision.
    pub verdict: Verdict,
    /// The rule that decided.
    pub rule: String,
    /// Bytes from the browser.
    pub sent: u64,
    /// Bytes to the browser.
    pub received: u64,
    /// Milliseconds the connection lasted.
    pub ms: u64,
}

impl Record {
    fn within_bounds(&self) -> bool {
        let fits = |text: &str, max: usize| text.chars().count() <= max;
        fits(&self.at, MAX_AT_CHARS)
            && fits(&self.host, MAX_HOST_CHARS)
            && !self.host.is_empty()
            && self.address.as_deref().is_none_or(|a| fits(a, MAX_ADDRESS_CHARS))
            && fits(&self.rule, MAX_RULE_CHARS)
    }

    /// `host:port`, an IPv6 literal in brackets.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A record and the line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The parsed record.
    pub record: Record,
    /// The line as the Pod sent it (valid JSON, UTF-8, bounded).
    pub text: String,
}

/// What the log held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The records, oldest first.
    pub lines: Vec<Line>,
    /// Lines that were not records (blank lines are not counted).
    pub skipped: usize,
}

/// Parses `raw`, the rotated file then the current one, oldest first.
pub fn parse(raw: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    for bytes in raw.split(|b| *b == b'\n') {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(bytes) {
            Some(line) => out.lines.push(line),
            None => out.skipped += 1,
        }
    }
    out
}

fn parse_line(bytes: &[u8]) -> Option<Line> {
    if bytes.len() > MAX_LINE_BYTES {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let record: Record = serde_json::from_str(text).ok()?;
    record.within_bounds().then(|| Line { record, text: text.to_owned() })
}

/// Which records to show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only refused attempts.
    pub refused_only: bool,
    /// Only the last N (of those selected).
    pub tail: Option<usize>,
}

/// The lines `selection` keeps, oldest first.
pub fn select(lines: &[Line], selection: Selection) -> Vec<&Line> {
    let kept: Vec<&Line> =
        lines.iter().filter(|l| !selection.refused_only || l.record.verdict == Verdict::Refused).collect();
    let skip = selection.tail.map_or(0, |n| kept.len().saturating_sub(n));
    kept.into_iter().skip(skip).collect()
}

/// The table of `lines`, kubectl style; every cell escaped.
pub fn table(lines: &[&Line]) -> String {
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            let r = &l.record;
            vec![
                r.at.clone(),
                r.verdict.as_str().to_owned(),
                r.authority(),
                r.address.clone().unwrap_or_else(|| "-".to_owned()),
                r.rule.clone(),
                r.sent.to_string(),
                r.received.to_string(),
                r.ms.to_string(),
            ]
        })
        .collect();
    render_table(&["TIME", "VERDICT", "HOST:PORT", "ADDRESS", "RULE", "SENT", "RECEIVED", "MS"], &rows)
}

/// The lines as they were written, one per line, escaped for the terminal
/// (a JSON string may carry a raw direction override).
pub fn json_lines(lines: &[&Line]) -> String {
    lines.iter().map(|l| untrusted(&l.text, false) + "\n").collect()
}

/// Whether the runtime configuration `raw` (`runtime.json`) carries host
/// rules (`egressHosts`); an error says why it could not be read as JSON.
pub fn host_rules_apply(raw: &[u8]) -> Result<bool, String> {
    let config: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| format!("runtime.json is not JSON: {e}"))?;
    let object = config.as_object().ok_or("runtime.json is not a JSON object")?;
    Ok(object.get("egressHosts").is_some_and(|hosts| !hosts.is_null()))
}

/// What to say about the skipped lines, if any.
pub fn skipped_note(skipped: usize) -> Option<String> {
    (skipped > 0).then(|| {
        format!(
            "{skipped} line(s) of the egress log skipped: not an egress record (longer than {MAX_LINE_BYTES} \
             bytes, not UTF-8 JSON, a field missing or out of bounds)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWED: &str = r#"{"at":"2026-12-04T18:20:00.123Z","host":"a.allowed.test","port":8080,"address":"10.96.3.4","verdict":"allowed","rule":"allowHosts[0]","sent":120,"received":5678,"ms":12}"#;
    const REFUSED: &str = r#"{"at":"2026-12-04T18:20:01.000Z","host":"b.other.test","port":8080,"address":null,"verdict":"refused","rule":"mode AllowListOnly","sent":0,"received":0,"ms":0}"#;
    const FAILED: &str = r#"{"at":"2026-12-04T18:20:02.000Z","host":"c.allowed.test","port":443,"address":"192.0.2.1","verdict":"failed","rule":"allowHosts[0]","sent":0,"received":0,"ms":10000}"#;

    fn log(lines: &[&str]) -> Vec<u8> {
        lines.join("\n").into_bytes()
    }

    #[test]
    fn every_field_of_a_record_is_read() {
        let parsed = parse(&log(&[ALLOWED, REFUSED, FAILED]));
        assert_eq!(parsed.skipped, 0);
        let r = &parsed.lines[0].record;
        assert_eq!(
            (r.at.as_str(), r.host.as_str(), r.port, r.address.as_deref(), r.verdict),
            ("2026-12-04T18:20:00.123Z", "a.allowed.test", 8080, Some("10.96.3.4"), Verdict::Allowed)
        );
        assert_eq!((r.rule.as_str(), r.sent, r.received, r.ms), ("allowHosts[0]", 120, 5678, 12));
        assert_eq!(parsed.lines[0].text, ALLOWED);
        assert_eq!(parsed.lines[1].record.address, None);
        assert_eq!(parsed.lines[2].record.verdict, Verdict::Failed);
    }

    #[test]
    fn blank_lines_crlf_and_unknown_fields_are_tolerated() {
        let newer = ALLOWED.replace("\"ms\":12", "\"ms\":12,\"tls\":true");
        let without_address = REFUSED.replace("\"address\":null,", "");
        let raw = format!("\n{ALLOWED}\r\n\n  \n{newer}\n{without_address}\n");
        let parsed = parse(raw.as_bytes());
        assert_eq!((parsed.lines.len(), parsed.skipped), (3, 0));
        assert_eq!(parsed.lines[0].text, ALLOWED, "the carriage return is not part of the line");
        assert_eq!(parsed.lines[2].record.address, None);
    }

    #[test]
    fn hostile_lines_are_skipped_and_counted() {
        let long_rule = ALLOWED.replace("allowHosts[0]", &"r".repeat(MAX_RULE_CHARS + 1));
        let long_host = ALLOWED.replace("a.allowed.test", &"h".repeat(MAX_HOST_CHARS + 1));
        let long_address = ALLOWED.replace("10.96.3.4", &"1".repeat(MAX_ADDRESS_CHARS + 1));
        let long_at = ALLOWED.replace("2026-12-04T18:20:00.123Z", &"2".repeat(MAX_AT_CHARS + 1));
        let padded = format!("{ALLOWED}{}", " ".repeat(MAX_LINE_BYTES));
        let bad = [
            "not json".to_owned(),
            "[1,2]".to_owned(),
            ALLOWED.replace("\"allowed\"", "\"maybe\""),
            ALLOWED.replace("8080", "70000"),
            ALLOWED.replace("\"sent\":120", "\"sent\":-1"),
            ALLOWED.replace("\"host\":\"a.allowed.test\",", ""),
            ALLOWED.replace("a.allowed.test", ""),
            long_rule,
            long_host,
            long_address,
            long_at,
            padded,
        ];
        let mut raw = Vec::new();
        for line in &bad {
            raw.extend_from_slice(line.as_bytes());
            raw.push(b'\n');
        }
        raw.extend_from_slice(b"\xff\xfe{}\n");
        raw.extend_from_slice(REFUSED.as_bytes());
        let parsed = parse(&raw);
        assert_eq!(parsed.skipped, bad.len() + 1);
        assert_eq!(parsed.lines.len(), 1, "the good line after them is read");
        assert!(skipped_note(parsed.skipped).unwrap().starts_with("13 line(s)"));
        assert_eq!(skipped_note(0), None);
    }

    #[test]
    fn a_record_at_the_bounds_is_kept() {
        let host = format!("{}.test", "h".repeat(MAX_HOST_CHARS - 5));
        let line = ALLOWED.replace("a.allowed.test", &host);
        let parsed = parse(line.as_bytes());
        assert_eq!((parsed.lines.len(), parsed.skipped), (1, 0));
    }

    #[test]
    fn selection_filters_refused_then_takes_the_tail() {
        let parsed = parse(&log(&[REFUSED, ALLOWED, REFUSED, FAILED, REFUSED]));
        let all = select(&parsed.lines, Selection::default());
        assert_eq!(all.len(), 5);
        let refused = select(&parsed.lines, Selection { refused_only: true, tail: None });
        assert_eq!(refused.len(), 3);
        assert!(refused.iter().all(|l| l.record.verdict == Verdict::Refused));
        let last_two = select(&parsed.lines, Selection { refused_only: false, tail: Some(2) });
        assert_eq!(last_two.iter().map(|l| l.record.verdict).collect::<Vec<_>>(), [Verdict::Failed, Verdict::Refused]);
        let last_refused = select(&parsed.lines, Selection { refused_only: true, tail: Some(1) });
        assert_eq!(last_refused.len(), 1);
        assert!(select(&parsed.lines, Selection { refused_only: false, tail: Some(0) }).is_empty());
        assert_eq!(select(&parsed.lines, Selection { refused_only: false, tail: Some(99) }).len(), 5);
        assert!(select(&[], Selection { refused_only: true, tail: Some(3) }).is_empty());
    }

    #[test]
    fn the_table_has_every_column_and_a_dash_for_no_address() {
        let parsed = parse(&log(&[ALLOWED, REFUSED]));
        let lines: Vec<&Line> = parsed.lines.iter().collect();
        let text = table(&lines);
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[0], ["TIME", "VERDICT", "HOST:PORT", "ADDRESS", "RULE", "SENT", "RECEIVED", "MS"]);
        assert_eq!(
            rows[1],
            [
                "2026-12-04T18:20:00.123Z",
                "allowed",
                "a.allowed.test:8080",
                "10.96.3.4",
                "allowHosts[0]",
                "120",
                "5678",
                "12"
            ]
        );
        assert_eq!(
            rows[2],
            ["2026-12-04T18:20:01.000Z", "refused", "b.other.test:8080", "-", "mode", "AllowListOnly", "0", "0", "0"]
        );
    }

    #[test]
    fn an_ipv6_host_is_bracketed() {
        let line = ALLOWED.replace("a.allowed.test", "2001:db8::1");
        let parsed = parse(line.as_bytes());
        assert_eq!(parsed.lines[0].record.authority(), "[2001:db8::1]:8080");
    }

    #[test]
    fn terminal_controls_from_the_pod_are_escaped_in_the_table_and_the_json() {
        // JSON carries an escape as \u001b (decoded into the record) and a
        // direction override raw: neither reaches the terminal as such.
        let line = ALLOWED.replace("allowHosts[0]", "x\\u001b[2Jy\u{202e}z");
        let parsed = parse(line.as_bytes());
        assert_eq!(parsed.skipped, 0);
        let lines: Vec<&Line> = parsed.lines.iter().collect();
        let text = table(&lines);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("x\\u{1b}[2Jy\\u{202e}z"), "{text}");
        let json = json_lines(&lines);
        assert!(!json.contains('\u{202e}') && json.contains("\\u{202e}") && json.ends_with("}\n"), "{json}");
    }

    #[test]
    fn json_output_is_the_lines_as_written() {
        let parsed = parse(&log(&[ALLOWED, "garbage", REFUSED]));
        let lines: Vec<&Line> = parsed.lines.iter().collect();
        assert_eq!(json_lines(&lines), format!("{ALLOWED}\n{REFUSED}\n"));
        assert_eq!(json_lines(&[]), "");
    }

    #[test]
    fn host_rules_are_read_from_runtime_json() {
        assert_eq!(host_rules_apply(br#"{"sessionName":"s","egressHosts":{"mode":"Internet"}}"#), Ok(true));
        assert_eq!(host_rules_apply(br#"{"sessionName":"s"}"#), Ok(false));
        assert_eq!(host_rules_apply(br#"{"sessionName":"s","egressHosts":null}"#), Ok(false));
        assert!(host_rules_apply(b"[]").unwrap_err().contains("not a JSON object"));
        assert!(host_rules_apply(b"{").unwrap_err().contains("not JSON"));
        assert!(host_rules_apply(b"").is_err());
    }
}
