//! Reads from a session runtime's readiness port: its egress report
//! (`GET /egress`, for the egress watch) and its exporter's status
//! (`GET /export`, for the export watch). The Pod answers, so the answer is
//! hostile: the connection and the whole exchange are timed out, at most a
//! bound of bytes is read, and the answer is cut to its bounds
//! ([`EgressReport::bounded`], [`ExportStatus::bounded`]). A slow or silent
//! Pod costs one of a watch's slots for [`EXCHANGE_WITHIN`].
//!
//! Also here: which sessions a watch reads ([`ready_targets`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use kube::runtime::reflector::Store;
use kube::ResourceExt as _;
use playpen_api::egress_report::{EgressReport, MAX_REPORT_BYTES};
use playpen_api::export_status::{ExportStatus, MAX_STATUS_BYTES};
use playpen_api::layout::{EGRESS_REPORT_PATH, EXPORT_STATUS_PATH, READINESS_PORT};
use playpen_api::BrowserSession;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::context::Context;

/// Time to connect.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(2);
/// Time for the whole exchange, connection included.
pub const EXCHANGE_WITHIN: Duration = Duration::from_secs(4);
/// Room for the answer's head on top of its body.
const HEAD_ROOM: usize = 4096;

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No connection, or the exchange took too long.
    #[error("{0}")]
    Unreachable(String),
    /// The runtime has nothing to say there yet (404).
    #[error("nothing reported")]
    NotFound,
    /// An answer that is not what was asked for.
    #[error("bad answer: {0}")]
    BadAnswer(String),
    /// An answer with another status than 200 or 404: its status line and
    /// the start of its body (the runtime's JSON error, if it sent one).
    #[error("answered {line:?}: {body}")]
    Status {
        /// The status line.
        line: String,
        /// At most 256 bytes of the body.
        body: String,
    },
}

/// A session a watch reads: its object, and where its runtime answers.
#[derive(Debug)]
pub struct Target {
    /// The session.
    pub session: Arc<BrowserSession>,
    /// Its Pod's address.
    pub ip: IpAddr,
}

/// The sessions `wanted` picks whose Pod is Ready, and every session's UID.
pub fn ready_targets(
    stores: &[Store<BrowserSession>],
    ctx: &Context,
    wanted: impl Fn(&BrowserSession) -> bool,
) -> (Vec<Target>, std::collections::HashSet<String>) {
    let caches = ctx.caches();
    let mut present = std::collections::HashSet::new();
    let mut found = Vec::new();
    for bs in stores.iter().flat_map(Store::state) {
        let Some(uid) = bs.uid() else { continue };
        present.insert(uid);
        if !wanted(&bs) {
            continue;
        }
        let namespace = bs.namespace().unwrap_or_default();
        let pod = bs.status.as_ref().and_then(|s| s.pod_name.as_deref()).and_then(|p| caches.pods.get(&namespace, p));
        if let Some(ip) = pod.and_then(|p| p.ready_ip()) {
            found.push(Target { session: bs, ip });
        }
    }
    (found, present)
}

/// The egress report of the runtime at `ip`.
pub async fn report(ip: IpAddr) -> Result<EgressReport, FetchError> {
    report_at(SocketAddr::new(ip, READINESS_PORT)).await
}

/// The report at `addr` (a test's fixture listens elsewhere).
pub async fn report_at(addr: SocketAddr) -> Result<EgressReport, FetchError> {
    json::<EgressReport>(addr, EGRESS_REPORT_PATH, MAX_REPORT_BYTES, EXCHANGE_WITHIN).await.map(EgressReport::bounded)
}

/// The exporter's status as the runtime at `ip` last read it.
pub async fn export_status(ip: IpAddr) -> Result<ExportStatus, FetchError> {
    export_status_at(SocketAddr::new(ip, READINESS_PORT)).await
}

/// The exporter's status at `addr`.
pub async fn export_status_at(addr: SocketAddr) -> Result<ExportStatus, FetchError> {
    json::<ExportStatus>(addr, EXPORT_STATUS_PATH, MAX_STATUS_BYTES, EXCHANGE_WITHIN).await.map(ExportStatus::bounded)
}

/// `GET path` at `addr`, its body as JSON of at most `max_bytes`, within `within`.
async fn json<T: DeserializeOwned>(
    addr: SocketAddr,
    path: &str,
    max_bytes: usize,
    within: Duration,
) -> Result<T, FetchError> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let body = exchange(addr, request.as_bytes(), max_bytes, within).await?;
    serde_json::from_slice(&body).map_err(|e| FetchError::BadAnswer(format!("not the expected JSON: {e}")))
}

/// Sends `request` to `addr` and returns the body of a 200 answer of at
/// most `max_bytes`, within `within`.
pub(crate) async fn exchange(
    addr: SocketAddr,
    request: &[u8],
    max_bytes: usize,
    within: Duration,
) -> Result<Vec<u8>, FetchError> {
    let exchange = async {
        let mut stream = tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(addr))
            .await
            .map_err(|_| FetchError::Unreachable(format!("no connection to {addr} within {CONNECT_WITHIN:?}")))?
            .map_err(|e| FetchError::Unreachable(format!("{addr}: {e}")))?;
        stream.write_all(request).await.map_err(|e| FetchError::Unreachable(e.to_string()))?;
        let mut answer = Vec::new();
        let limit = u64::try_from(max_bytes + HEAD_ROOM).unwrap_or(u64::MAX);
        (&mut stream)
            .take(limit + 1)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| FetchError::Unreachable(e.to_string()))?;
        if answer.len() as u64 > limit {
            return Err(FetchError::BadAnswer(format!("more than {limit} bytes")));
        }
        body_of(answer)
    };
    tokio::time::timeout(within, exchange)
        .await
        .map_err(|_| FetchError::Unreachable(format!("no answer from {addr} within {within:?}")))?
}

/// The body of a 200 answer; any other status is an error naming it.
fn body_of(mut answer: Vec<u8>) -> Result<Vec<u8>, FetchError> {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| FetchError::BadAnswer("no end of the head".into()))?;
    let status = answer.split(|b| *b == b'\r').next().unwrap_or_default();
    let code = status.strip_prefix(b"HTTP/1.1 ").or_else(|| status.strip_prefix(b"HTTP/1.0 ")).unwrap_or_default();
    match code.get(..4) {
        Some(b"200 ") => Ok(answer.split_off(end + 4)),
        Some(b"404 ") => Err(FetchError::NotFound),
        _ => {
            let line = String::from_utf8_lossy(&status[..status.len().min(64)]).into_owned();
            // The Pod wrote it: control characters go before it reaches a log or a status.
            let body = String::from_utf8_lossy(&answer[end + 4..(end + 4 + 256).min(answer.len())])
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            let line = line.chars().filter(|c| !c.is_control()).collect();
            Err(FetchError::Status { line, body })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server answering every connection with `answer` (after `delay`).
    async fn serving(answer: Vec<u8>, delay: Duration) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut head = [0u8; 1024];
                    let _ = s.read(&mut head).await;
                    tokio::time::sleep(delay).await;
                    let _ = s.write_all(&answer).await;
                });
            }
        });
        addr
    }

    fn ok(body: &str) -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[tokio::test]
    async fn a_report_is_read_and_bounded() {
        let body = r#"{"rules":[{"verdict":"refused","rule":"mode AllowListOnly","connections":3}],
            "refusedHosts":[{"host":"b.test\u001b","port":443,"attempts":3,"rule":"mode AllowListOnly"}]}"#;
        let report = report_at(serving(ok(body), Duration::ZERO).await).await.unwrap();
        assert_eq!(report.total("refused"), 3);
        assert_eq!(report.refused_hosts[0].host, "b.test", "control characters dropped");
    }

    #[tokio::test]
    async fn hostile_answers_are_errors_not_hangs() {
        let missing = report_at(serving(b"HTTP/1.1 404 Not Found\r\n\r\n".to_vec(), Duration::ZERO).await).await;
        assert!(matches!(missing, Err(FetchError::NotFound)), "{missing:?}");
        let not_ok = report_at(serving(b"HTTP/1.1 500 Oops\r\n\r\n".to_vec(), Duration::ZERO).await).await;
        assert!(matches!(not_ok, Err(FetchError::Status { ref line, .. }) if line.contains("500")), "{not_ok:?}");
        let garbage = report_at(serving(ok("[1,2"), Duration::ZERO).await).await;
        assert!(matches!(garbage, Err(FetchError::BadAnswer(_))), "{garbage:?}");
        let huge = ok(&format!("{{\"rules\":[],\"x\":\"{}\"}}", "a".repeat(MAX_REPORT_BYTES + 10_000)));
        let huge = report_at(serving(huge, Duration::ZERO).await).await;
        assert!(matches!(huge, Err(FetchError::BadAnswer(ref m)) if m.starts_with("more than")), "{huge:?}");
    }

    #[tokio::test]
    async fn an_export_status_is_read_and_bounded() {
        let body = format!(
            r#"{{"destination":"s3://rec/a/","objects":4,"bytes":10,"segments":2,"interruptions":0,
            "lastError":"403 \u001b[2J{}"}}"#,
            "x".repeat(3000)
        );
        let status = export_status_at(serving(ok(&body), Duration::ZERO).await).await.unwrap();
        assert_eq!((status.objects, status.segments), (4, 2));
        let error = status.last_error.unwrap();
        assert!(error.starts_with("403 [2J") && error.chars().count() == playpen_api::export_status::MAX_ERROR_CHARS);
    }

    #[tokio::test]
    async fn a_silent_pod_costs_the_exchange_bound_at_most() {
        let addr = serving(ok("{}"), Duration::from_secs(3600)).await;
        let slow = json::<EgressReport>(addr, EGRESS_REPORT_PATH, 1024, Duration::from_millis(200)).await;
        assert!(matches!(slow, Err(FetchError::Unreachable(ref m)) if m.contains("no answer")), "{slow:?}");
    }
}
