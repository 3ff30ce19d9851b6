//! Resume's reopen: `state-load` from a private file, one `run-code` that
//! loads every tab at once and restores its values, and `tab-select` of the
//! tab that was in front (the daemon's current tab is what agents drive).

use std::time::{Duration, Instant};

use playpen_api::suspend::SuspendedState;
use serde_json::Value;

use super::daemon::Daemon;
use super::error::SuspendError;
use super::private::PrivateDir;
use super::scripts;
use crate::cli::fastpath::socket::replace_lone_surrogates;

/// How long each tab's load may take.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `state-load` and `tab-select` may take.
const WITHIN: Duration = Duration::from_secs(30);

/// How one tab came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabOutcome {
    /// Whether its URL loaded.
    pub loaded: bool,
    /// Fields whose value was put back.
    pub restored: u64,
    /// Fields the reloaded page no longer has (or that are passwords now).
    pub missing: u64,
    /// Why it did not load or restore (one line).
    pub error: Option<String>,
}

/// A reopen: each tab's outcome and the time of each step.
#[derive(Debug)]
pub struct Reopened {
    /// In the document's order.
    pub tabs: Vec<TabOutcome>,
    /// `state-load`.
    pub state_load: Duration,
    /// From `state-load` answered to every tab loaded and in front.
    pub tabs_took: Duration,
}

/// Loads `doc` into the session behind `daemon`.
pub async fn reopen(daemon: &Daemon, private: &PrivateDir, doc: &SuspendedState) -> Result<Reopened, SuspendError> {
    let started = Instant::now();
    let file = private.file("storage-state.json")?;
    let bytes = serde_json::to_vec(&doc.storage).unwrap_or_default();
    std::fs::write(&file, bytes).map_err(|source| SuspendError::File {
        what: "cannot write the storage state",
        path: file.clone(),
        source,
    })?;
    daemon.run("state-load", vec![file.display().to_string()], WITHIN).await?;
    let state_load = started.elapsed();
    let mut tabs = vec![];
    if !doc.tabs.is_empty() {
        let within = LOAD_TIMEOUT + WITHIN;
        let answer = daemon.run("run-code", vec![scripts::reopen(&doc.tabs, LOAD_TIMEOUT)], within).await?;
        tabs = outcomes(&answer, doc.tabs.len())?;
        daemon.run("tab-select", vec![doc.active.to_string()], WITHIN).await?;
    }
    Ok(Reopened { tabs, state_load, tabs_took: started.elapsed() - state_load })
}

/// Each tab's outcome from the reopen's answer (pure). The counts come
/// from the pages; anything malformed reads as nothing restored.
pub fn outcomes(answer: &str, tabs: usize) -> Result<Vec<TabOutcome>, SuspendError> {
    let value: Value = serde_json::from_str(&replace_lone_surrogates(answer)).map_err(|e| SuspendError::Protocol {
        command: "run-code",
        detail: format!("the reopen's answer is not JSON: {e}"),
    })?;
    let list = value.as_array().filter(|l| l.len() == tabs).ok_or_else(|| SuspendError::Protocol {
        command: "run-code",
        detail: format!("the reopen's answer is not one outcome for each of {tabs} tabs"),
    })?;
    Ok(list
        .iter()
        .map(|t| TabOutcome {
            loaded: t.get("loaded").and_then(Value::as_bool).unwrap_or(false),
            restored: t.get("restored").and_then(Value::as_u64).unwrap_or(0),
            missing: t.get("missing").and_then(Value::as_u64).unwrap_or(0),
            error: t.get("error").and_then(Value::as_str).map(|e| playpen_api::text::truncate(e, 200)),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_read_per_tab_and_must_match_the_tabs() {
        let answer = r#"[{"loaded":true,"restored":3,"missing":1},{"loaded":false,"error":"net::ERR_CONNECTION_REFUSED"},{"restored":"x"}]"#;
        let got = outcomes(answer, 3).unwrap();
        assert_eq!(got[0], TabOutcome { loaded: true, restored: 3, missing: 1, error: None });
        assert_eq!(got[1].error.as_deref(), Some("net::ERR_CONNECTION_REFUSED"));
        assert!(!got[1].loaded);
        assert_eq!(got[2], TabOutcome { loaded: false, restored: 0, missing: 0, error: None });
        assert!(outcomes(answer, 2).is_err());
        assert!(outcomes("{}", 0).is_err());
    }
}
