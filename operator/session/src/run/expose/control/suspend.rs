//! `POST /suspend`: the session's suspended state for the operator, which
//! stores it in a Secret before it deletes the Pod. One capture at a time;
//! a failure names its step only.

use playpen_api::layout::SUSPEND_PATH;
use playpen_api::runtime_config::RuntimeConfig;

use super::{Answer, Control};
use crate::run::suspend;

impl Control {
    /// Answers one `POST /suspend` that presented `bearer` (the token after
    /// `Bearer `, if any) for the session `config` describes (`None` while
    /// the start-up checks run).
    pub async fn suspend(&self, bearer: Option<&[u8]>, config: Option<RuntimeConfig>) -> Answer {
        if let Err(refused) = self.admit(bearer, SUSPEND_PATH) {
            return refused.into();
        }
        // A second capture (or a reopen) at once would race the first for the daemon: refused, not queued.
        let Ok(_running) = self.busy.try_lock() else {
            return Answer::empty("409 Conflict");
        };
        let Some(config) = config else { return Answer::failed("the capture", "start-up") };
        match suspend::suspend(&config).await {
            Ok(captured) => {
                for dropped in &captured.dropped {
                    tracing::info!(%dropped, "suspend: left out of the document");
                }
                let doc = &captured.doc;
                let body = doc.to_bytes();
                tracing::info!(
                    tabs = doc.tabs.len(),
                    cookies = doc.storage.cookies.len(),
                    bytes = body.len(),
                    took_ms = captured.took.as_millis() as u64,
                    "suspend: state captured for the operator"
                );
                Answer { status: "200 OK", headers: super::JSON_NO_STORE, body }
            }
            Err(err) => {
                // The error names steps and paths, never a value (see SuspendError).
                tracing::warn!(step = err.step(), %err, "suspend: the capture failed");
                Answer::failed("the capture", err.step())
            }
        }
    }
}
