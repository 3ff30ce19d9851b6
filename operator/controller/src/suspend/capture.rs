//! One capture (or a resume's reopen in a claimed warm browser), as a
//! task: the session's control token (its Secret
//! created once, with 32 random bytes), delivered to the Pod (an annotation
//! that makes the kubelet refresh its volumes at once), `POST /suspend` to
//! the runtime with it, the answer checked as a [`playpen_api::suspend::SuspendedState`] and
//! written to the session's `<session>-suspended` Secret. The session is
//! woken when it ends ([`super::book`] holds the outcome).
//!
//! The Pod answers, so the answer is hostile: bounded in time and size,
//! parsed with the document's own bounds, and never logged (it holds
//! cookies). Neither is the token.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use playpen_api::layout::{CONTROL_TOKEN_FILE, READINESS_PORT, RESUME_PATH, RESUME_STATE_FILE, SUSPEND_PATH};
use playpen_api::naming::{delivery_digest, MANAGER};
use playpen_api::suspend::{self, ParseError};
use playpen_api::BrowserSession;
use serde_json::json;

use super::book::{Capture, Saved};
use crate::children::suspend::{control_secret, random_token, suspended_state_secret};
use crate::children::Identity;
use crate::context::Context;
use crate::runtime_reads::{exchange, FetchError};

/// The whole capture, token and Secret writes included.
pub const CAPTURE_WITHIN: Duration = Duration::from_secs(60);
/// One request to the runtime (its own capture bounds each page to 5 s).
const REQUEST_WITHIN: Duration = Duration::from_secs(45);
/// Between tries while the token, the policy or a claim's `runtime.json`
/// is not in place yet: short, because a resume into a warm claim waits on
/// the last of these and every try lost is a resume's time.
const RETRY_EVERY: Duration = Duration::from_millis(100);
/// The answer's bound: the largest document and then some.
const MAX_ANSWER_BYTES: usize = 2 * suspend::MAX_DOCUMENT_BYTES;
/// Annotation of a session's Pod: a digest of its control token (never the
/// token). Setting it makes the kubelet sync the Pod, which adds the token
/// file to the launch-config volume at once.
pub const CONTROL_ANNOTATION: &str = "playpen.dev/control";

/// The browser a task talks to: its Pod, its runtime's address, and the
/// Secret its launch-config directory takes the control token from (the
/// session's own, or a claimed warm Pod's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Browser {
    /// The Pod's name.
    pub pod: String,
    /// Its address.
    pub ip: IpAddr,
    /// Its control Secret's name.
    pub control_secret: String,
}

/// Starts a capture of `bs`'s `browser` unless a task of the session runs.
pub fn start(ctx: &Arc<Context>, bs: &BrowserSession, id: &Identity, browser: Browser) {
    let (ctx2, id2) = (ctx.clone(), id.clone());
    let work = async move {
        let started = Instant::now();
        let (document, tabs) = fetch_state(&ctx2, &id2, &browser).await?;
        let bytes = document.len();
        write_state(&ctx2, &id2, document).await?;
        Ok(Capture::Saved(Saved {
            bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
            tabs: i32::try_from(tabs).unwrap_or(i32::MAX),
            millis: elapsed_millis(started),
        }))
    };
    spawn(ctx, Task::of_session(bs, id, "capture"), work);
}

/// Starts reopening `bs`'s saved state in the claimed warm `browser`
/// (`POST /resume`) unless a task of the session runs.
pub fn start_reopen(ctx: &Arc<Context>, bs: &BrowserSession, id: &Identity, browser: Browser) {
    let (ctx2, id2) = (ctx.clone(), id.clone());
    let work = async move {
        let started = Instant::now();
        reopen(&ctx2, &id2, &browser).await?;
        Ok(Capture::Reopened { millis: elapsed_millis(started) })
    };
    spawn(ctx, Task::of_session(bs, id, "reopen"), work);
}

/// Milliseconds since `started`.
pub fn elapsed_millis(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// Which book a task's outcome goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ledger {
    /// [`Context::suspends`], by session UID.
    Sessions,
    /// [`Context::snapshots`], by snapshot UID.
    Snapshots,
}

impl Ledger {
    fn of(self, ctx: &Context) -> &super::SuspendBook {
        match self {
            Self::Sessions => &ctx.suspends,
            Self::Snapshots => &ctx.snapshots,
        }
    }
}

/// One task: whose it is, for the book and the log.
#[derive(Debug, Clone)]
pub struct Task {
    /// Where its outcome is kept.
    pub ledger: Ledger,
    /// The UID it is kept under.
    pub uid: String,
    /// The object's name and namespace, for the log.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// What it does, for the log.
    pub what: &'static str,
    /// The session woken when it ends (a snapshot's reconcile polls).
    pub wake: Option<ObjectRef<BrowserSession>>,
}

impl Task {
    fn of_session(bs: &BrowserSession, id: &Identity, what: &'static str) -> Self {
        Self {
            ledger: Ledger::Sessions,
            uid: id.owner.uid.clone(),
            name: id.name.clone(),
            namespace: id.namespace.clone(),
            what,
            wake: Some(ObjectRef::from_obj(bs)),
        }
    }
}

/// Runs `work` within [`CAPTURE_WITHIN`] unless a task of the same UID
/// runs, records how it ended and wakes whom it should.
pub fn spawn<Fut>(ctx: &Arc<Context>, task: Task, work: Fut)
where
    Fut: std::future::Future<Output = Result<Capture, String>> + Send + 'static,
{
    if !task.ledger.of(ctx).begin(&task.uid) {
        return;
    }
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let Task { ledger, uid, name, namespace, what, wake } = task;
        let outcome = tokio::time::timeout(CAPTURE_WITHIN, work)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {CAPTURE_WITHIN:?}")));
        match &outcome {
            Ok(done) => tracing::info!(%name, %namespace, ?done, "suspend: {what} done"),
            Err(error) => tracing::warn!(%name, %namespace, %error, "suspend: {what} failed"),
        }
        ledger.of(&ctx).finish(&uid, outcome, Instant::now());
        if let Some(session) = wake {
            // The export book's channel wakes any session (see crate::export_watch::book).
            ctx.exports.wake(session);
        }
    });
}

/// Asks `browser`'s runtime for its pages: the control token delivered,
/// `POST /suspend`, the answer checked against the document's own bounds.
/// Returns the document (re-serialised from what was checked) and its tabs.
pub async fn fetch_state(ctx: &Context, id: &Identity, browser: &Browser) -> Result<(Vec<u8>, usize), String> {
    let token = control_token(ctx, id, &browser.control_secret).await?;
    deliver(ctx, id, &browser.pod, &token).await?;
    let request = format!(
        "POST {SUSPEND_PATH} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        browser.ip
    );
    let body = ask(SocketAddr::new(browser.ip, READINESS_PORT), request.into_bytes()).await?;
    let (doc, _dropped) = suspend::parse(&body).map_err(|e| unreadable(&e))?;
    Ok((doc.to_bytes(), doc.tabs.len()))
}

/// What is wrong with the runtime's answer, without a byte of it (a serde
/// error quotes the value it choked on).
fn unreadable(error: &ParseError) -> String {
    match error {
        ParseError::Shape(_) => "the runtime's answer is not a suspended state document".to_owned(),
        other => other.to_string(),
    }
}

/// Reopens the session's saved state (its `<session>-suspended` Secret)
/// in `browser`, a warm Pod it claimed.
async fn reopen(ctx: &Context, id: &Identity, browser: &Browser) -> Result<(), String> {
    let secrets = ctx.fence.writer::<Secret>(&ctx.client, &id.namespace).map_err(|e| e.to_string())?;
    let name = &id.names.suspended_state;
    let saved = secrets.get(name).await.map_err(|e| format!("reading Secret {name}: {e}"))?;
    let document = saved
        .data
        .and_then(|mut d| d.remove(RESUME_STATE_FILE))
        .ok_or_else(|| format!("Secret {name} has no {RESUME_STATE_FILE}"))?;
    let token = control_token(ctx, id, &browser.control_secret).await?;
    deliver(ctx, id, &browser.pod, &token).await?;
    let head = format!(
        "POST {RESUME_PATH} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        browser.ip,
        document.0.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(&document.0);
    ask(SocketAddr::new(browser.ip, READINESS_PORT), request).await.map(drop)
}

/// The control token of `secret`: created once with a new random token
/// (owned by the session); when it exists (a 409: a pool made it with its
/// warm Pod, or an earlier suspend), the stored one is read.
async fn control_token(ctx: &Context, id: &Identity, secret_name: &str) -> Result<String, String> {
    let api = ctx.fence.writer::<Secret>(&ctx.client, &id.namespace).map_err(|e| e.to_string())?;
    let fresh = random_token().map_err(|e| format!("no random bytes for a control token: {e}"))?;
    let mut secret = control_secret(id, fresh.as_bytes());
    secret.metadata.name = Some(secret_name.to_owned());
    match api.create(&PostParams { field_manager: Some(MANAGER.into()), ..PostParams::default() }, &secret).await {
        Ok(_) => return Ok(fresh),
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(format!("creating Secret {secret_name}: {e}")),
    }
    let stored = api.get(secret_name).await.map_err(|e| format!("reading Secret {secret_name}: {e}"))?;
    stored
        .data
        .as_ref()
        .and_then(|d| d.get(CONTROL_TOKEN_FILE))
        .and_then(|v| String::from_utf8(v.0.clone()).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("Secret {secret_name} has no {CONTROL_TOKEN_FILE}: delete it to have a new one made"))
}

/// Marks the Pod with the token's digest, unless it is marked already.
async fn deliver(ctx: &Context, id: &Identity, pod_name: &str, token: &str) -> Result<(), String> {
    let digest = delivery_digest(&[token]);
    let cached = ctx.caches().pods.get(&id.namespace, pod_name);
    let marked = cached.and_then(|p| p.metadata.annotations.as_ref()?.get(CONTROL_ANNOTATION).cloned());
    if marked.as_deref() == Some(digest.as_str()) {
        return Ok(());
    }
    let api = ctx.fence.writer::<Pod>(&ctx.client, &id.namespace).map_err(|e| e.to_string())?;
    let patch = json!({"metadata": {"annotations": {CONTROL_ANNOTATION: digest}}});
    api.patch(pod_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|e| format!("marking Pod {pod_name}: {e}"))
}

/// Sends `request` until the runtime answers 200 or says why it cannot:
/// while the token file or the policy that admits the operator are not in
/// place yet (404, 401, no connection), or the runtime is busy or still
/// warm (409), it is asked again.
async fn ask(addr: SocketAddr, request: Vec<u8>) -> Result<Vec<u8>, String> {
    loop {
        match exchange(addr, &request, MAX_ANSWER_BYTES, REQUEST_WITHIN).await {
            Ok(body) => return Ok(body),
            Err(FetchError::NotFound | FetchError::Unreachable(_)) => {}
            Err(FetchError::Status { line, .. }) if line.contains(" 401 ") || line.contains(" 409 ") => {}
            Err(FetchError::Status { line, body }) => return Err(format!("the runtime answered {line}: {body}")),
            Err(other) => return Err(format!("the runtime's answer: {other}")),
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
}

/// Writes the document to the session's `<session>-suspended` Secret.
async fn write_state(ctx: &Context, id: &Identity, document: Vec<u8>) -> Result<(), String> {
    let api = ctx.fence.writer::<Secret>(&ctx.client, &id.namespace).map_err(|e| e.to_string())?;
    let secret = suspended_state_secret(id, document);
    api.patch(&id.names.suspended_state, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&secret))
        .await
        .map(drop)
        .map_err(|e| format!("writing Secret {}: {e}", id.names.suspended_state))
}
