//! Auth state that arrives after the browser started: a warm Pod claimed by
//! a session with `spec.authState`. The Pod stays tokenless: the operator
//! copies the session's state into the Pod's own optional Secret volume
//! (mounted at the auth state path while warm, empty) and names the file in
//! `runtime.json`; the kubelet updates both in place. The runtime looks
//! every [`POLL`] and loads a state it has not loaded yet into the running
//! browser, with the same owner-only copy and `state-load` a cold start uses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use playpen_api::layout::{AUTH_STATE_DIR, AUTH_STATE_FILE};
use tokio::sync::watch;

use crate::config::load;
use crate::run::daemon::{AuthLoad, DaemonState};
use crate::run::reaper::Managed;

/// How often `runtime.json` and the state file are looked at (two small reads).
pub const POLL: Duration = Duration::from_millis(250);

/// Where a claimed warm Pod finds its session's auth state.
pub fn delivered_path() -> String {
    format!("{AUTH_STATE_DIR}/{AUTH_STATE_FILE}")
}

/// The state to load now, if any: `runtime.json` names a file that holds
/// bytes other than those loaded last.
pub fn pending(config_path: &Path, loaded: Option<&[u8]>) -> Option<(PathBuf, Vec<u8>)> {
    let file = PathBuf::from(load(config_path).ok()?.auth_state_file?);
    let bytes = std::fs::read(&file).ok().filter(|b| !b.is_empty())?;
    (loaded != Some(bytes.as_slice())).then_some((file, bytes))
}

/// Loads every new auth state `runtime.json` names into the running browser.
/// What the daemon loaded at its start counts as loaded.
pub async fn follow(config_path: PathBuf, load_plan: AuthLoad, managed: Managed, state: watch::Receiver<DaemonState>) {
    let mut loaded = load_plan.required.then(|| std::fs::read(&load_plan.source).ok()).flatten();
    loop {
        tokio::time::sleep(POLL).await;
        if matches!(*state.borrow(), DaemonState::Stopped) {
            return;
        }
        let Some((file, bytes)) = pending(&config_path, loaded.as_deref()) else { continue };
        // A daemon that is starting loads the file itself once it listens.
        if !matches!(*state.borrow(), DaemonState::Running { .. }) {
            continue;
        }
        let plan = AuthLoad { source: file, required: true, ..load_plan.clone() };
        plan.load(&managed).await;
        tracing::info!("auth state loaded into the running browser (delivered after its start)");
        loaded = Some(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_pending_once_named_present_and_new() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let config = dir.path().join("runtime.json");
        let mut rc = crate::config::tests::sample();
        std::fs::write(&config, serde_json::to_vec(&rc).unwrap()).unwrap();
        assert_eq!(pending(&config, None), None, "runtime.json names no state");
        rc.auth_state_file = Some(state.display().to_string());
        std::fs::write(&config, serde_json::to_vec(&rc).unwrap()).unwrap();
        assert_eq!(pending(&config, None), None, "named, but the kubelet has not written it yet");
        std::fs::write(&state, b"").unwrap();
        assert_eq!(pending(&config, None), None, "an empty file is no state");
        std::fs::write(&state, b"{\"cookies\":[]}").unwrap();
        let (file, bytes) = pending(&config, None).unwrap();
        assert_eq!((file, bytes.as_slice()), (state.clone(), b"{\"cookies\":[]}".as_slice()));
        assert_eq!(pending(&config, Some(&bytes)), None, "loaded already");
        std::fs::write(&state, b"{\"cookies\":[1]}").unwrap();
        assert!(pending(&config, Some(&bytes)).is_some(), "a changed state loads again");
    }
}
