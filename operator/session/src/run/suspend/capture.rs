//! Suspend's capture: `state-save` into a private file and one `run-code`
//! reading every tab, sent at once; then the document, within its bounds.

use std::io::Read;
use std::time::{Duration, Instant};

use playpen_api::suspend::{sanitise, Dropped, Field, StorageState, SuspendedState, Tab};
use serde_json::Value;

use super::daemon::Daemon;
use super::error::SuspendError;
use super::private::PrivateDir;
use super::scripts;
use crate::cli::fastpath::socket::replace_lone_surrogates;

/// How long one page may take to give its values (a busy or hostile page
/// keeps its URL only).
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `state-save` and the capture may take.
const WITHIN: Duration = Duration::from_secs(30);
/// The largest storage state read back (localStorage is 5 MiB per origin at
/// most in Chromium; the document keeps 512 KiB of it at most).
const MAX_STORAGE_FILE: u64 = 64 << 20;

/// A capture: the document, what it left out, and how long it took.
#[derive(Debug)]
pub struct Captured {
    /// The document, within its bounds.
    pub doc: SuspendedState,
    /// What was left out.
    pub dropped: Vec<Dropped>,
    /// From the first request to the document.
    pub took: Duration,
}

/// Captures the session's state through `daemon`.
pub async fn capture(daemon: &Daemon, private: &PrivateDir, now_ms: u64) -> Result<Captured, SuspendError> {
    let started = Instant::now();
    let file = private.file("storage-state.json")?;
    let save = daemon.run("state-save", vec![file.display().to_string()], WITHIN);
    let read = daemon.run("run-code", vec![scripts::capture(PAGE_TIMEOUT)], WITHIN);
    let (saved, answer) = tokio::join!(save, read);
    saved?;
    let storage = read_storage(&file)?;
    let (doc, dropped) = build(storage, &answer?, now_ms)?;
    Ok(Captured { doc, dropped, took: started.elapsed() })
}

fn read_storage(path: &std::path::Path) -> Result<StorageState, SuspendError> {
    let fail =
        |source| SuspendError::File { what: "cannot read the saved storage state", path: path.to_owned(), source };
    let mut bytes = vec![];
    std::fs::File::open(path).and_then(|f| f.take(MAX_STORAGE_FILE + 1).read_to_end(&mut bytes)).map_err(fail)?;
    if bytes.len() as u64 > MAX_STORAGE_FILE {
        return Err(SuspendError::StorageShape(format!("over {MAX_STORAGE_FILE} bytes")));
    }
    serde_json::from_slice(&bytes).map_err(|e| SuspendError::StorageShape(e.to_string()))
}

fn protocol(detail: impl Into<String>) -> SuspendError {
    SuspendError::Protocol { command: "run-code", detail: detail.into() }
}

/// The document from the storage state and the capture's answer (pure).
/// The answer is the pages' word: a tab whose part is malformed keeps what
/// is well formed, and says what it lost.
pub fn build(storage: StorageState, answer: &str, now_ms: u64) -> Result<(SuspendedState, Vec<Dropped>), SuspendError> {
    let answer: Value = serde_json::from_str(&replace_lone_surrogates(answer))
        .map_err(|e| protocol(format!("the capture's answer is not JSON: {e}")))?;
    let tabs =
        answer.get("tabs").and_then(Value::as_array).ok_or_else(|| protocol("no tabs in the capture's answer"))?;
    let mut dropped = vec![];
    let mut note = |what: String, why: String| dropped.push(Dropped { what, why });
    let count = answer.get("tabCount").and_then(Value::as_u64).unwrap_or(0);
    if count > tabs.len() as u64 {
        note(format!("{} tabs", count - tabs.len() as u64), "the capture reads a bounded number of tabs".into());
    }
    let mut doc = SuspendedState { storage, ..SuspendedState::new(now_ms) };
    doc.active = answer.get("active").and_then(Value::as_u64).and_then(|a| usize::try_from(a).ok()).unwrap_or(0);
    for (index, tab) in tabs.iter().enumerate() {
        let url = tab.get("url").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut kept = Tab { url, scroll_x: 0.0, scroll_y: 0.0, fields: vec![] };
        if let Some(error) = tab.get("error").and_then(Value::as_str) {
            note(format!("tab {index} scroll and form values"), error.to_owned());
        }
        let state = tab.get("state").unwrap_or(&Value::Null);
        kept.scroll_x = state.get("scrollX").and_then(Value::as_f64).unwrap_or(0.0);
        kept.scroll_y = state.get("scrollY").and_then(Value::as_f64).unwrap_or(0.0);
        let fields = state.get("fields").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut malformed = 0;
        for field in fields {
            match serde_json::from_value::<Field>(field.clone()) {
                Ok(field) => kept.fields.push(field),
                Err(_) => malformed += 1,
            }
        }
        let omitted = state.get("omitted").unwrap_or(&Value::Null);
        let counted = |key: &str| omitted.get(key).and_then(Value::as_u64).unwrap_or(0);
        for (n, why) in [
            (malformed, "malformed in the page's answer".to_owned()),
            (counted("tooLong"), format!("longer than {} bytes", playpen_api::suspend::MAX_VALUE_BYTES)),
            (counted("overCount"), format!("beyond the first {}", playpen_api::suspend::MAX_FIELDS_PER_TAB)),
            (counted("overBudget"), "beyond the capture's byte budget for all tabs".to_owned()),
        ] {
            if n > 0 {
                note(format!("tab {index}: {n} form fields"), why);
            }
        }
        doc.tabs.push(kept);
    }
    let (doc, more) = sanitise(doc);
    dropped.extend(more);
    Ok((doc, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::suspend::{check, FieldKey, FieldValue};

    #[test]
    fn an_answer_becomes_a_document_within_bounds() {
        let answer = r#"{"active":1,"tabCount":2,"tabs":[
            {"url":"http://127.0.0.1:1/a","state":{"scrollX":0,"scrollY":300,"omitted":{"tooLong":1},
              "fields":[{"key":{"by":"id","id":"q"},"value":{"kind":"input","value":"hi \ud800"}},{"bogus":1}]}},
            {"url":"javascript:alert(1)","error":"the page did not answer within 5000 ms"}]}"#;
        let (doc, dropped) = build(StorageState::default(), answer, 7).unwrap();
        assert_eq!(check(&doc), Ok(()));
        assert_eq!(doc.captured_at_ms, 7);
        assert_eq!(doc.tabs.len(), 1);
        assert_eq!(doc.tabs[0].scroll_y, 300.0);
        assert_eq!(
            doc.tabs[0].fields,
            vec![Field {
                key: FieldKey::Id { id: "q".into() },
                value: FieldValue::Input { value: "hi \u{FFFD}".into() }
            }]
        );
        assert_eq!(doc.active, 0, "the active tab was the refused one");
        let said: Vec<String> = dropped.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(said[0].contains("tab 0: 1 form fields left out: malformed"));
        assert!(said[1].contains("tab 0: 1 form fields left out: longer than 16384 bytes"));
        assert!(said[2].starts_with("tab 1 scroll and form values left out: the page did not answer"));
        assert!(said[3].starts_with("tab 1 left out: javascript: URLs are not reopened"));
    }

    #[test]
    fn an_answer_that_is_not_the_captures_is_a_protocol_error() {
        for bad in ["", "[]", "{\"tabs\":3}", "not json"] {
            assert!(matches!(build(StorageState::default(), bad, 0), Err(SuspendError::Protocol { .. })), "{bad}");
        }
        let (doc, _) = build(StorageState::default(), r#"{"tabs":[{"state":5},{}]}"#, 0).unwrap();
        assert!(doc.tabs.is_empty(), "tabs without a URL are no tabs");
    }
}
