//! The operator's control requests on the readiness port: `POST /suspend`
//! ([`suspend`]) asks for the session's suspended state
//! ([`playpen_api::suspend::SuspendedState`]) before the Pod is deleted;
//! `POST /resume` ([`resume`]) hands a running browser (a warm Pod just
//! claimed) such a document to reopen (docs/suspend-resume.md).
//!
//! Both carry Secrets-grade data (cookies, form values), so a request must
//! carry the bearer token of [`playpen_api::layout::CONTROL_TOKEN_FILE`],
//! re-read per request (the kubelet updates a Secret volume in place).
//! Without that file neither is offered (404); a missing or wrong token is
//! 401 with no detail. They share one busy lock: a capture and a reopen
//! drive the same daemon, so while one runs another is refused (409), not
//! queued. A failure answers 503 naming the step only. Neither the token
//! nor a document is logged.

pub mod body;
mod resume;
mod suspend;

use std::io::Read;
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;
use tokio::sync::{watch, Mutex};
use tokio::time::Instant;

pub use resume::ResumeRequest;

/// The longest token file read: a token is some tens of bytes.
const MAX_TOKEN_BYTES: u64 = 4096;

/// The headers of a JSON answer that holds (or may hold) session data.
const JSON_NO_STORE: &str = "Content-Type: application/json\r\nCache-Control: no-store\r\n";

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

    /// 503 naming what failed (`the capture`, `the reopen`) and the step:
    /// fixed words, never a message or a value.
    fn failed(what: &str, step: &str) -> Self {
        let error = format!("{what} failed");
        Self::json("503 Service Unavailable", &serde_json::json!({ "error": error, "step": step }))
    }

    /// `status` with `body` as JSON, never cached.
    fn json(status: &'static str, body: &serde_json::Value) -> Self {
        Self { status, headers: JSON_NO_STORE, body: body.to_string().into_bytes() }
    }

    /// `status` with `{"error": why}`; `why` must hold no value of a document.
    fn error(status: &'static str, why: &str) -> Self {
        Self::json(status, &serde_json::json!({ "error": why }))
    }
}

/// The control endpoint's state: where the token is, whether a capture or
/// a reopen runs, and where a reopen reports activity.
#[derive(Debug)]
pub struct Control {
    token_file: PathBuf,
    busy: Mutex<()>,
    activity: watch::Sender<Instant>,
    /// `runtime.json`, read when a reopen comes: a warm browser whose
    /// claim has not reached it yet refuses one (`None`: never warm).
    config_path: Option<PathBuf>,
}

/// Why a request is not let in.
enum Refused {
    /// No token file: the endpoint is not offered.
    NotOffered,
    /// No token, or another one.
    Unauthorized,
}

impl From<Refused> for Answer {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::NotOffered => Answer::empty("404 Not Found"),
            Refused::Unauthorized => Answer::empty("401 Unauthorized"),
        }
    }
}

impl Control {
    /// Suspend and resume guarded by the token in `token_file`; a
    /// successful reopen sends its time on `activity` (the idle clock
    /// counts it as a use: a session resumed after a long suspend is not
    /// closed at once).
    pub fn new(token_file: impl Into<PathBuf>, activity: watch::Sender<Instant>) -> Self {
        Self { token_file: token_file.into(), busy: Mutex::new(()), activity, config_path: None }
    }

    /// The same, for a runtime whose `runtime.json` is at `config_path`.
    pub fn with_config_path(mut self, config_path: impl Into<PathBuf>) -> Self {
        self.config_path = Some(config_path.into());
        self
    }

    /// Whether the browser is still warm: no session's claim has reached it.
    fn still_warm(&self) -> bool {
        self.config_path.as_deref().is_some_and(crate::run::policy::pristine::still_warm)
    }

    /// Lets a request in that presented `bearer` (the token after
    /// `Bearer `, if any) to `path`, or says why not.
    fn admit(&self, bearer: Option<&[u8]>, path: &str) -> Result<(), Refused> {
        let Some(token) = read_token(&self.token_file) else { return Err(Refused::NotOffered) };
        if !bearer.is_some_and(|presented| matches(presented, &token)) {
            tracing::warn!(path, "control request refused: missing or wrong bearer token");
            return Err(Refused::Unauthorized);
        }
        Ok(())
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
            tracing::warn!(path = %path.display(), %err, "cannot read the control token: suspend and resume are not offered");
            return None;
        }
    }
    if bytes.len() as u64 > MAX_TOKEN_BYTES {
        tracing::warn!(path = %path.display(), "the control token is oversized: suspend and resume are not offered");
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
pub(crate) mod tests {
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

    /// A control whose activity nobody watches.
    pub(crate) fn control(token_file: impl Into<PathBuf>) -> Control {
        Control::new(token_file, watch::channel(Instant::now()).0)
    }

    #[test]
    fn admission_needs_the_file_and_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path().join("control-token"));
        assert!(matches!(control.admit(Some(b"x"), "/resume"), Err(Refused::NotOffered)));
        std::fs::write(dir.path().join("control-token"), b"right\n").unwrap();
        assert!(matches!(control.admit(None, "/resume"), Err(Refused::Unauthorized)));
        assert!(matches!(control.admit(Some(b"righ"), "/resume"), Err(Refused::Unauthorized)));
        assert!(matches!(control.admit(Some(b"right\n"), "/resume"), Err(Refused::Unauthorized)));
        assert!(control.admit(Some(b"right"), "/resume").is_ok());
    }

    #[tokio::test]
    async fn no_token_file_is_404_and_a_wrong_token_401_before_any_capture() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path().join("control-token"));
        assert_eq!(control.suspend(Some(b"x"), None).await, Answer::empty("404 Not Found"));
        std::fs::write(dir.path().join("control-token"), b"right").unwrap();
        assert_eq!(control.suspend(None, None).await, Answer::empty("401 Unauthorized"));
        assert_eq!(control.suspend(Some(b"wrong"), None).await, Answer::empty("401 Unauthorized"));
        let early = control.suspend(Some(b"right"), None).await;
        assert_eq!(early.status, "503 Service Unavailable");
        assert_eq!(String::from_utf8(early.body).unwrap(), r#"{"error":"the capture failed","step":"start-up"}"#);
    }
}
