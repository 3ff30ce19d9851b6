//! `POST /suspend` on the readiness port: the operator asks for the
//! session's suspended state ([`playpen_api::suspend::SuspendedState`]) and
//! stores it in a Secret before it deletes the Pod (docs/suspend-resume.md).
//!
//! The answer is Secrets-grade (cookies, form values), so the request must
//! carry the bearer token of [`playpen_api::layout::CONTROL_TOKEN_FILE`],
//! re-read per request (the kubelet updates a Secret volume in place).
//! Without that file suspend is not offered (404); a missing or wrong token
//! is 401 with no detail; one capture runs at a time (409 for another). A
//! failed capture answers 503 naming the step only. Neither the token nor
//! the document is logged.

use std::io::Read;
use std::path::{Path, PathBuf};

use playpen_api::runtime_config::RuntimeConfig;
use subtle::ConstantTimeEq;
use tokio::sync::Mutex;

use crate::run::suspend;

/// The longest token file read: a token is some tens of bytes.
const MAX_TOKEN_BYTES: u64 = 4096;

/// What the health endpoint writes back.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// Status line after `HTTP/1.1 `.
    pub status: &'static str,
    /// Headers beyond the length and the close, each ending in `\r\n`.
    pub headers: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    fn empty(status: &'static str) -> Self {
        Self { status, headers: "", body: vec![] }
    }

    fn failed(step: &str) -> Self {
        let body = serde_json::json!({ "error": "the capture failed", "step": step }).to_string().into_bytes();
        Self {
            status: "503 Service Unavailable",
            headers: "Content-Type: application/json\r\nCache-Control: no-store\r\n",
            body,
        }
    }
}

/// The suspend endpoint's state: where the token is, and whether a capture runs.
#[derive(Debug)]
pub struct Control {
    token_file: PathBuf,
    capturing: Mutex<()>,
}

impl Control {
    /// Suspend guarded by the token in `token_file`.
    pub fn new(token_file: impl Into<PathBuf>) -> Self {
        Self { token_file: token_file.into(), capturing: Mutex::new(()) }
    }

    /// Answers one `POST /suspend` that presented `bearer` (the token after
    /// `Bearer `, if any) for the session `config` describes (`None` while
    /// the start-up checks run).
    pub async fn suspend(&self, bearer: Option<&[u8]>, config: Option<RuntimeConfig>) -> Answer {
        let Some(token) = read_token(&self.token_file) else { return Answer::empty("404 Not Found") };
        if !bearer.is_some_and(|presented| matches(presented, &token)) {
            tracing::warn!("POST /suspend refused: missing or wrong bearer token");
            return Answer::empty("401 Unauthorized");
        }
        // A second capture at once would race the first for the daemon: refused, not queued.
        let Ok(_running) = self.capturing.try_lock() else {
            return Answer::empty("409 Conflict");
        };
        let Some(config) = config else { return Answer::failed("start-up") };
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
                Answer {
                    status: "200 OK",
                    headers: "Content-Type: application/json\r\nCache-Control: no-store\r\n",
                    body,
                }
            }
            Err(err) => {
                // The error names steps and paths, never a value (see SuspendError).
                tracing::warn!(step = err.step(), %err, "suspend: the capture failed");
                Answer::failed(err.step())
            }
        }
    }
}

/// The token, trimmed of the whitespace an editor or `echo` adds; `None`
/// when the file is absent, unreadable, empty or oversized.
fn read_token(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = vec![];
    match std::fs::File::open(path).and_then(|f| f.take(MAX_TOKEN_BYTES + 1).read_to_end(&mut bytes)) {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!(path = %path.display(), %err, "cannot read the control token: suspend is not offered");
            return None;
        }
    }
    if bytes.len() as u64 > MAX_TOKEN_BYTES {
        tracing::warn!(path = %path.display(), "the control token is oversized: suspend is not offered");
        return None;
    }
    let token = bytes.trim_ascii();
    (!token.is_empty()).then(|| token.to_vec())
}

/// Whether `presented` is the token, in time independent of where they
/// differ (subtle's `ct_eq`; a length mismatch answers at once, and the
/// length is not the secret).
fn matches(presented: &[u8], token: &[u8]) -> bool {
    bool::from(presented.ct_eq(token))
}

/// The bearer token of an `Authorization` header value (`Bearer <token>`,
/// the scheme in any case).
pub fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then(|| rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_from_its_header_value() {
        assert_eq!(bearer(b" Bearer abc "), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer"), None);
    }

    #[test]
    fn the_token_file_is_trimmed_and_absent_or_empty_offers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control-token");
        assert_eq!(read_token(&path), None);
        std::fs::write(&path, b"  \n").unwrap();
        assert_eq!(read_token(&path), None);
        std::fs::write(&path, b"s3cret\n").unwrap();
        assert_eq!(read_token(&path).as_deref(), Some(&b"s3cret"[..]));
        std::fs::write(&path, vec![b'a'; MAX_TOKEN_BYTES as usize + 1]).unwrap();
        assert_eq!(read_token(&path), None);
        assert!(matches(b"s3cret", b"s3cret") && !matches(b"s3cres", b"s3cret") && !matches(b"s3", b"s3cret"));
    }

    #[tokio::test]
    async fn no_token_file_is_404_and_a_wrong_token_401_before_any_capture() {
        let dir = tempfile::tempdir().unwrap();
        let control = Control::new(dir.path().join("control-token"));
        assert_eq!(control.suspend(Some(b"x"), None).await, Answer::empty("404 Not Found"));
        std::fs::write(dir.path().join("control-token"), b"right").unwrap();
        assert_eq!(control.suspend(None, None).await, Answer::empty("401 Unauthorized"));
        assert_eq!(control.suspend(Some(b"wrong"), None).await, Answer::empty("401 Unauthorized"));
        let early = control.suspend(Some(b"right"), None).await;
        assert_eq!(early.status, "503 Service Unavailable");
        assert_eq!(String::from_utf8(early.body).unwrap(), r#"{"error":"the capture failed","step":"start-up"}"#);
    }
}
