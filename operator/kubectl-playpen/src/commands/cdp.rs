//! `kubectl playpen cdp NAME [--port LOCAL]`: a local tunnel to the
//! session's Chrome DevTools Protocol port; prints the endpoint and the
//! browser's `webSocketDebuggerUrl` read through the tunnel.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cli::CdpArgs;
use crate::connect::Cluster;
use crate::error::Result;
use crate::output::untrusted;
use crate::sessions;
use crate::tunnel::SessionTunnel;

/// What `/json/version` says.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// `Browser`, e.g. `Chrome/140.0.0.0`.
    #[serde(rename = "Browser", default)]
    pub browser: Option<String>,
    /// `Protocol-Version`.
    #[serde(rename = "Protocol-Version", default)]
    pub protocol_version: Option<String>,
    /// Where a CDP client connects.
    pub web_socket_debugger_url: String,
}

/// The request for `/json/version`. Chrome builds `webSocketDebuggerUrl`
/// from the Host header, so it names the local end of the tunnel.
pub fn version_request(local_port: u16) -> String {
    format!("GET /json/version HTTP/1.1\r\nHost: 127.0.0.1:{local_port}\r\nAccept: application/json\r\nConnection: close\r\n\r\n")
}

fn decode_chunked(mut body: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line is not terminated")?;
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size {size_text:?}"))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = body.get(..size).ok_or("a chunk is cut short")?;
        out.extend_from_slice(chunk);
        body = body.get(size..).and_then(|rest| rest.strip_prefix(b"\r\n")).ok_or("a chunk is not terminated")?;
    }
}

/// The status code and body (de-chunked, cut to Content-Length) of a raw
/// HTTP/1.1 response.
pub fn parse_response(raw: &[u8]) -> std::result::Result<(u16, Vec<u8>), String> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete HTTP response")?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let body = &raw[head_end + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP response: {status_line:?}"))?;
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        decode_chunked(body)?
    } else if let Some(length) = header("content-length") {
        let length: usize = length.parse().map_err(|_| format!("bad Content-Length {length:?}"))?;
        body.get(..length).ok_or("the body is shorter than its Content-Length")?.to_vec()
    } else {
        body.to_vec()
    };
    Ok((status, body))
}

/// `/json/version`'s answer, from the raw response.
pub fn parse_version(raw: &[u8]) -> std::result::Result<Version, String> {
    let (status, body) = parse_response(raw)?;
    if status != 200 {
        return Err(format!("/json/version answered {status}: {}", String::from_utf8_lossy(&body).trim()));
    }
    serde_json::from_slice(&body).map_err(|e| format!("/json/version is not the DevTools answer: {e}"))
}

/// More than any `/json/version` answer (a few hundred bytes).
const MAX_ANSWER: usize = 1 << 20;

/// GETs `/json/version` through the tunnel at `addr`.
pub async fn fetch_version(addr: SocketAddr) -> std::result::Result<Version, String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        stream.write_all(version_request(addr.port()).as_bytes()).await.map_err(|e| e.to_string())?;
        // Chromium keeps the connection open despite `Connection: close`
        // (measured), so the answer ends where it parses, not at EOF.
        let mut raw = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let read = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if read == 0 {
                return parse_version(&raw);
            }
            raw.extend_from_slice(&chunk[..read]);
            if let Ok(version) = parse_version(&raw) {
                return Ok(version);
            }
            if raw.len() > MAX_ANSWER {
                return Err(format!("/json/version answered more than {MAX_ANSWER} bytes"));
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), exchange).await.map_err(|_| "no answer within 30s".to_owned())?
}

/// Runs `cdp` until Ctrl-C.
pub async fn run(cluster: &Cluster, args: CdpArgs) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let SessionTunnel { pod, port, tunnel, .. } =
        SessionTunnel::open(cluster, &args.name, sessions::cdp_port, args.port, args.via).await?;
    let addr = tunnel.local_addr()?;
    println!("http://127.0.0.1:{}", addr.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(tunnel.serve_until(async {
        let _ = stopped.await;
    }));
    match fetch_version(addr).await {
        Ok(version) => {
            println!("webSocketDebuggerUrl: {}", untrusted(&version.web_socket_debugger_url, false));
            if let Some(browser) = version.browser {
                eprintln!("browser: {}", untrusted(&browser, false));
            }
        }
        Err(e) => eprintln!("warning: reading /json/version through the tunnel: {e}"),
    }
    eprintln!(
        "forwarding to the CDP port of BrowserSession {ns}/{} (Pod {pod}, port {port}); Ctrl-C to stop",
        args.name
    );
    super::interrupted().await;
    let _ = stop.send(());
    let _ = server.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION: &str = r#"{
   "Browser": "Chrome/140.0.7339.80",
   "Protocol-Version": "1.3",
   "User-Agent": "Mozilla/5.0",
   "V8-Version": "14.0",
   "WebKit-Version": "537.36",
   "webSocketDebuggerUrl": "ws://127.0.0.1:41234/devtools/browser/0f6c3c6e-1c59-4f1b-9d41-d1b1a2c9e2a7"
}"#;

    fn response(headers: &str, body: &str) -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\n{headers}\r\n\r\n{body}").into_bytes()
    }

    #[test]
    fn the_request_names_the_local_end() {
        let request = version_request(41234);
        assert!(request.starts_with("GET /json/version HTTP/1.1\r\n"));
        assert!(request.contains("\r\nHost: 127.0.0.1:41234\r\n"));
        assert!(request.ends_with("\r\n\r\n"));
    }

    #[test]
    fn chromes_answer_with_content_length() {
        let raw = response(
            &format!("Content-Length:{}\r\nContent-Type:application/json; charset=UTF-8", VERSION.len()),
            VERSION,
        );
        let version = parse_version(&raw).unwrap();
        assert_eq!(
            version.web_socket_debugger_url,
            "ws://127.0.0.1:41234/devtools/browser/0f6c3c6e-1c59-4f1b-9d41-d1b1a2c9e2a7"
        );
        assert_eq!(version.browser.as_deref(), Some("Chrome/140.0.7339.80"));
        assert_eq!(version.protocol_version.as_deref(), Some("1.3"));
    }

    #[test]
    fn chunked_and_unframed_bodies() {
        let (a, b) = VERSION.split_at(40);
        let chunked = format!("{:x}\r\n{a}\r\n{:X};ext=1\r\n{b}\r\n0\r\n\r\n", a.len(), b.len());
        let raw = response("Transfer-Encoding: chunked", &chunked);
        assert!(parse_version(&raw).unwrap().web_socket_debugger_url.starts_with("ws://"));
        let raw = response("Connection: close", VERSION);
        assert!(parse_version(&raw).is_ok(), "no length: the body runs to the end");
        let raw = response("content-length: 999999", VERSION);
        assert!(parse_version(&raw).unwrap_err().contains("shorter than its Content-Length"));
        let raw = response("Transfer-Encoding: chunked", "zz\r\n");
        assert!(parse_version(&raw).unwrap_err().contains("bad chunk size"));
        let raw = response("Transfer-Encoding: chunked", "10\r\nshort");
        assert!(parse_version(&raw).unwrap_err().contains("cut short"));
    }

    #[test]
    fn wrong_answers_say_what_came() {
        assert!(parse_version(b"").unwrap_err().contains("no complete HTTP response"));
        assert!(parse_version(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap_err().contains("not an HTTP response"));
        let raw = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nboom".to_vec();
        assert_eq!(parse_version(&raw).unwrap_err(), "/json/version answered 500: boom");
        let raw = response("Content-Length: 2", "{}");
        assert!(parse_version(&raw).unwrap_err().contains("not the DevTools answer"));
        let raw = b"HTTP/1.0 200 OK\r\n\r\n{\"webSocketDebuggerUrl\":\"ws://x\"}".to_vec();
        assert_eq!(parse_version(&raw).unwrap().web_socket_debugger_url, "ws://x");
    }
}
