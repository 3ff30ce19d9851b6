//! Reads one runtime's egress report: `GET /egress` on its readiness port.
//! The Pod answers, so the answer is hostile: the connection and the whole
//! exchange are timed out, at most [`MAX_REPORT_BYTES`] are read, and the
//! report is cut to its bounds ([`EgressReport::bounded`]). A slow or
//! silent Pod costs one of the watch's slots for [`EXCHANGE_WITHIN`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use playpen_api::egress_report::{EgressReport, MAX_REPORT_BYTES};
use playpen_api::layout::{EGRESS_REPORT_PATH, READINESS_PORT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Time to connect.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(2);
/// Time for the whole exchange, connection included.
pub const EXCHANGE_WITHIN: Duration = Duration::from_secs(4);
/// Room for the answer's head on top of its body.
const HEAD_ROOM: usize = 4096;

/// Why a report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No connection, or the exchange took too long.
    #[error("{0}")]
    Unreachable(String),
    /// An answer that is not a report.
    #[error("bad answer: {0}")]
    BadAnswer(String),
}

/// The report of the runtime at `ip`.
pub async fn report(ip: IpAddr) -> Result<EgressReport, FetchError> {
    report_at(SocketAddr::new(ip, READINESS_PORT)).await
}

/// The report at `addr` (a test's fixture listens elsewhere).
pub async fn report_at(addr: SocketAddr) -> Result<EgressReport, FetchError> {
    report_within(addr, EXCHANGE_WITHIN).await
}

async fn report_within(addr: SocketAddr, within: Duration) -> Result<EgressReport, FetchError> {
    let exchange = async {
        let mut stream = tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(addr))
            .await
            .map_err(|_| FetchError::Unreachable(format!("no connection to {addr} within {CONNECT_WITHIN:?}")))?
            .map_err(|e| FetchError::Unreachable(format!("{addr}: {e}")))?;
        let request = format!("GET {EGRESS_REPORT_PATH} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(|e| FetchError::Unreachable(e.to_string()))?;
        let mut answer = Vec::new();
        let limit = u64::try_from(MAX_REPORT_BYTES + HEAD_ROOM).unwrap_or(u64::MAX);
        (&mut stream)
            .take(limit + 1)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| FetchError::Unreachable(e.to_string()))?;
        if answer.len() as u64 > limit {
            return Err(FetchError::BadAnswer(format!("more than {limit} bytes")));
        }
        parse(&answer)
    };
    tokio::time::timeout(within, exchange)
        .await
        .map_err(|_| FetchError::Unreachable(format!("no answer from {addr} within {within:?}")))?
}

/// The report in an HTTP answer.
fn parse(answer: &[u8]) -> Result<EgressReport, FetchError> {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| FetchError::BadAnswer("no end of the head".into()))?;
    let status = answer.split(|b| *b == b'\r').next().unwrap_or_default();
    if !status.starts_with(b"HTTP/1.1 200 ") && !status.starts_with(b"HTTP/1.0 200 ") {
        let line = String::from_utf8_lossy(&status[..status.len().min(64)]).into_owned();
        return Err(FetchError::BadAnswer(format!("status {line:?}")));
    }
    let report: EgressReport =
        serde_json::from_slice(&answer[end + 4..]).map_err(|e| FetchError::BadAnswer(format!("not a report: {e}")))?;
    Ok(report.bounded())
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
        let not_ok = report_at(serving(b"HTTP/1.1 404 Not Found\r\n\r\n".to_vec(), Duration::ZERO).await).await;
        assert!(matches!(not_ok, Err(FetchError::BadAnswer(ref m)) if m.contains("404")), "{not_ok:?}");
        let garbage = report_at(serving(ok("[1,2"), Duration::ZERO).await).await;
        assert!(matches!(garbage, Err(FetchError::BadAnswer(_))), "{garbage:?}");
        let huge = ok(&format!("{{\"rules\":[],\"x\":\"{}\"}}", "a".repeat(MAX_REPORT_BYTES + 10_000)));
        let huge = report_at(serving(huge, Duration::ZERO).await).await;
        assert!(matches!(huge, Err(FetchError::BadAnswer(ref m)) if m.starts_with("more than")), "{huge:?}");
    }

    #[tokio::test]
    async fn a_silent_pod_costs_the_exchange_bound_at_most() {
        let addr = serving(ok("{}"), Duration::from_secs(3600)).await;
        let slow = report_within(addr, Duration::from_millis(200)).await;
        assert!(matches!(slow, Err(FetchError::Unreachable(ref m)) if m.contains("no answer")), "{slow:?}");
    }
}
