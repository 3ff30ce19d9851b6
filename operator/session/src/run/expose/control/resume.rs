//! `POST /resume`: the operator hands a running browser (a warm Pod it just
//! claimed) a suspended state to reopen, as the body, and learns from the
//! answer when the tabs are back, without a file delivered through a
//! volume.
//!
//! The body is judged before it is read (a length is required, and one
//! over [`MAX_DOCUMENT_BYTES`] is refused unread), read within
//! [`READ_BODY_WITHIN`] under the busy lock (a slow client holds it no
//! longer), held to the capture's bounds ([`parse`]) and reopened by the
//! same code as `resume-state` ([`suspend::resume`]). Nothing of the
//! document reaches the answer or the log: a bad one is named by the JSON
//! error's kind and position, a tab that did not load by a fixed reason.

use std::time::{Duration, Instant};

use playpen_api::layout::RESUME_PATH;
use playpen_api::runtime_config::RuntimeConfig;
use playpen_api::suspend::{parse, MAX_DOCUMENT_BYTES};
use serde_json::json;
use tokio::io::AsyncRead;

use super::body::{self, BodyFault, Length};
use super::{Answer, Control};
use crate::run::suspend::{self, at_start::RESUME_BOUND, Reopened, TabOutcome};

/// How long the client may take to send its body.
pub const READ_BODY_WITHIN: Duration = Duration::from_secs(10);
/// How long reading and dropping a refused request's body may take.
const DISCARD_WITHIN: Duration = Duration::from_secs(2);

/// A `POST /resume` as its head announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeRequest {
    /// The token after `Authorization: Bearer `.
    pub bearer: Option<Vec<u8>>,
    /// The body's announced length.
    pub length: Length,
    /// Body bytes that arrived with the head.
    pub received: Vec<u8>,
}

impl Control {
    /// Answers one `POST /resume`, reading its body from `stream`, for the
    /// session `config` describes (`None` while the start-up checks run).
    pub async fn resume<R: AsyncRead + Unpin>(
        &self,
        request: ResumeRequest,
        stream: &mut R,
        config: Option<RuntimeConfig>,
    ) -> Answer {
        let ResumeRequest { bearer, length, received } = request;
        let unread = match length {
            Length::Announced(n) => n.saturating_sub(received.len()),
            _ => 0,
        };
        let admitted = self.admit(bearer.as_deref(), RESUME_PATH).map_err(Answer::from).and_then(|()| judge(length));
        let length = match admitted {
            Ok(length) => length,
            Err(answer) => {
                body::discard(stream, unread, DISCARD_WITHIN).await;
                return answer;
            }
        };
        // A warm browser's guard takes any use before its claim for a
        // tenant's and discards the browser: the operator asks again once
        // the claim's runtime.json is here.
        if self.still_warm() {
            body::discard(stream, unread, DISCARD_WITHIN).await;
            return Answer::json(
                "409 Conflict",
                &json!({"error": "still warm: the claim has not reached the runtime"}),
            );
        }
        // A capture or another reopen drives the daemon: refused, not queued.
        let Ok(_running) = self.busy.try_lock() else {
            body::discard(stream, unread, DISCARD_WITHIN).await;
            return Answer::empty("409 Conflict");
        };
        let bytes = match body::read(stream, &received, length, READ_BODY_WITHIN).await {
            Ok(bytes) => bytes,
            Err(fault) => {
                tracing::warn!(?fault, "resume: the document did not arrive whole");
                return body_refusal(fault);
            }
        };
        // The reopen's time, not the client's upload.
        let started = Instant::now();
        let (doc, dropped) = match parse(&bytes) {
            Ok(parsed) => parsed,
            Err(err) => {
                let why = err.without_values();
                tracing::warn!(%why, "resume: the request's document is refused");
                return Answer::error("400 Bad Request", &why);
            }
        };
        drop(bytes);
        let Some(config) = config else { return Answer::failed("the reopen", "start-up") };
        let reopened = match tokio::time::timeout(RESUME_BOUND, suspend::resume(&config, &doc)).await {
            Ok(Ok(reopened)) => reopened,
            Ok(Err(err)) => {
                // The error names steps and paths, never a value (see SuspendError).
                tracing::warn!(step = err.step(), %err, "resume: the reopen failed");
                return Answer::failed("the reopen", err.step());
            }
            Err(_) => {
                tracing::warn!(after = ?RESUME_BOUND, "resume: the reopen did not finish in time");
                return Answer::failed("the reopen", "timeout");
            }
        };
        // A resumed session was idle for as long as it was suspended: the
        // reopen is its first use since.
        self.activity.send_replace(tokio::time::Instant::now());
        let took = started.elapsed();
        let answer = outcome(&reopened, dropped.len(), took);
        tracing::info!(
            tabs = reopened.tabs.len(),
            loaded = reopened.tabs.iter().filter(|t| t.loaded).count(),
            cookies = doc.storage.cookies.len(),
            left_out = dropped.len(),
            state_load_ms = reopened.state_load.as_millis() as u64,
            took_ms = took.as_millis() as u64,
            "resume: the operator's document is reopened"
        );
        Answer::json("200 OK", &answer)
    }
}

/// The body's length if it may be read, else the refusal it earns before
/// a byte of it is read (pure).
fn judge(length: Length) -> Result<usize, Answer> {
    match length {
        Length::Missing => Err(Answer::error("411 Length Required", "a Content-Length is required")),
        Length::Malformed => Err(Answer::error("400 Bad Request", "the Content-Length is not a number")),
        Length::Announced(n) if n > MAX_DOCUMENT_BYTES => Err(Answer::error(
            "413 Payload Too Large",
            &format!("the document may take at most {MAX_DOCUMENT_BYTES} bytes"),
        )),
        Length::Announced(n) => Ok(n),
    }
}

fn body_refusal(fault: BodyFault) -> Answer {
    match fault {
        BodyFault::TimedOut => Answer::error(
            "408 Request Timeout",
            &format!("the body did not arrive within {} s", READ_BODY_WITHIN.as_secs()),
        ),
        BodyFault::EndedEarly => Answer::error("400 Bad Request", "the body ended before its Content-Length"),
    }
}

/// The answer's body (pure): tabs reopened, each tab that did not load with
/// a fixed reason, the time taken, and how many items the bounds left out.
fn outcome(reopened: &Reopened, left_out: usize, took: Duration) -> serde_json::Value {
    let failed: Vec<_> = reopened
        .tabs
        .iter()
        .enumerate()
        .filter(|(_, tab)| !tab.loaded)
        .map(|(index, tab)| json!({ "index": index, "reason": reason(tab) }))
        .collect();
    json!({
        "tabs": reopened.tabs.len() - failed.len(),
        "failed": failed,
        "tookMs": took.as_millis() as u64,
        "leftOut": left_out,
    })
}

/// Why a tab did not load, in words of Chromium's and Playwright's only
/// (pure). The page's message names the URL after the error (`page.goto:
/// net::ERR_CONNECTION_REFUSED at http://…`), so only the leading error
/// code is kept, never the rest.
fn reason(tab: &TabOutcome) -> String {
    let message = tab.error.as_deref().unwrap_or_default();
    let message = message.strip_prefix("page.goto: ").unwrap_or(message);
    if let Some(code) = message.strip_prefix("net::ERR_") {
        let code: String =
            code.chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        if !code.is_empty() && code.len() <= 64 {
            return format!("net::ERR_{code}");
        }
    }
    if message.starts_with("Timeout ") {
        return "timeout".to_owned();
    }
    "did not load".to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::tests::control;
    use super::*;

    fn tab(loaded: bool, error: Option<&str>) -> TabOutcome {
        TabOutcome { loaded, restored: 0, missing: 0, error: error.map(str::to_owned) }
    }

    #[test]
    fn a_tab_that_did_not_load_says_why_without_its_url() {
        let refused = tab(false, Some("page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:9/?sid=s3cret"));
        assert_eq!(reason(&refused), "net::ERR_CONNECTION_REFUSED");
        let slow =
            tab(false, Some("page.goto: Timeout 30000ms exceeded.\nCall log: navigating to \"http://x/?s3cret\""));
        assert_eq!(reason(&slow), "timeout");
        assert_eq!(reason(&tab(false, Some("net::ERR_s3cret"))), "did not load");
        assert_eq!(reason(&tab(false, Some("page.goto: interrupted by http://x/?s3cret"))), "did not load");
        assert_eq!(reason(&tab(false, None)), "did not load");
        let reopened = Reopened {
            tabs: vec![tab(true, Some("restore failed: s3cret")), refused, tab(true, None)],
            state_load: Duration::from_millis(5),
            tabs_took: Duration::from_millis(50),
        };
        let said = outcome(&reopened, 1, Duration::from_millis(1234)).to_string();
        assert_eq!(
            said,
            r#"{"failed":[{"index":1,"reason":"net::ERR_CONNECTION_REFUSED"}],"leftOut":1,"tabs":2,"tookMs":1234}"#
        );
    }

    #[test]
    fn the_length_is_judged_before_the_body() {
        assert_eq!(judge(Length::Missing).unwrap_err().status, "411 Length Required");
        assert_eq!(judge(Length::Malformed).unwrap_err().status, "400 Bad Request");
        assert_eq!(judge(Length::Announced(MAX_DOCUMENT_BYTES + 1)).unwrap_err().status, "413 Payload Too Large");
        assert_eq!(judge(Length::Announced(MAX_DOCUMENT_BYTES)), Ok(MAX_DOCUMENT_BYTES));
        assert_eq!(judge(Length::Announced(0)), Ok(0));
    }

    fn request(bearer: Option<&str>, length: Length, received: &[u8]) -> ResumeRequest {
        ResumeRequest { bearer: bearer.map(|b| b.as_bytes().to_vec()), length, received: received.to_vec() }
    }

    #[tokio::test]
    async fn the_token_comes_first_then_the_length_then_the_lock_then_the_document() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path().join("control-token"));
        let mut nothing: &[u8] = b"";
        let garbage = br#"{"format":"s3ssion-cookie"}"#;
        let big = Length::Announced(MAX_DOCUMENT_BYTES + 1);
        assert_eq!(control.resume(request(Some("t"), big, b""), &mut nothing, None).await.status, "404 Not Found");
        std::fs::write(dir.path().join("control-token"), b"t\n").unwrap();
        assert_eq!(
            control.resume(request(None, big, b""), &mut nothing, None).await,
            Answer::empty("401 Unauthorized")
        );
        assert_eq!(control.resume(request(Some("u"), big, b""), &mut nothing, None).await.status, "401 Unauthorized");
        assert_eq!(
            control.resume(request(Some("t"), big, b""), &mut nothing, None).await.status,
            "413 Payload Too Large"
        );
        let missing = control.resume(request(Some("t"), Length::Missing, b""), &mut nothing, None).await;
        assert_eq!(missing.status, "411 Length Required");
        // A garbled document is named by what is wrong, not quoted.
        let bad =
            control.resume(request(Some("t"), Length::Announced(garbage.len()), garbage), &mut nothing, None).await;
        let body = String::from_utf8(bad.body).unwrap();
        assert_eq!(bad.status, "400 Bad Request");
        assert!(body.contains("expected u32") && !body.contains("s3ssion"), "{body}");
        let short = control.resume(request(Some("t"), Length::Announced(10), b"{"), &mut nothing, None).await;
        assert_eq!(short.status, "400 Bad Request");
        // While a capture (or a reopen) holds the lock, the second is refused.
        let held = control.busy.try_lock().unwrap();
        let busy = control.resume(request(Some("t"), Length::Announced(2), b"{}"), &mut nothing, None).await;
        assert_eq!(busy, Answer::empty("409 Conflict"));
        drop(held);
        // A valid document before the configuration is known: the step is named.
        let doc = playpen_api::suspend::SuspendedState::new(1).to_bytes();
        let early = control.resume(request(Some("t"), Length::Announced(doc.len()), &doc), &mut nothing, None).await;
        assert_eq!(early.status, "503 Service Unavailable");
        assert_eq!(String::from_utf8(early.body).unwrap(), r#"{"error":"the reopen failed","step":"start-up"}"#);
    }

    #[tokio::test]
    async fn a_warm_browser_refuses_a_reopen_until_its_claim_arrives() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("control-token"), b"t\n").unwrap();
        let config_path = dir.path().join("runtime.json");
        let mut config = crate::config::tests::sample();
        config.warm = true;
        std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
        let control = control(dir.path().join("control-token")).with_config_path(&config_path);
        let doc = playpen_api::suspend::SuspendedState::new(1).to_bytes();
        let mut nothing: &[u8] = b"";
        let warm = control.resume(request(Some("t"), Length::Announced(doc.len()), &doc), &mut nothing, None).await;
        assert_eq!(warm.status, "409 Conflict");
        assert!(String::from_utf8(warm.body).unwrap().contains("still warm"));
        // The claim's runtime.json: the reopen goes ahead (here to the
        // start-up step, the configuration not being known yet).
        config.warm = false;
        std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
        let claimed = control.resume(request(Some("t"), Length::Announced(doc.len()), &doc), &mut nothing, None).await;
        assert_eq!(claimed.status, "503 Service Unavailable");
    }
}
