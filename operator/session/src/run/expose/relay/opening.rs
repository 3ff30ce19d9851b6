//! The first bytes of a connection to the viewer port. The readiness probe
//! sends one fixed request that the relay answers itself, so probing (every
//! 2 s) never starts the dashboard; anything else is a viewer's and goes to
//! the dashboard unchanged. Both ends of that request live here.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The probe's request, byte for byte (a path the dashboard does not serve).
pub const PROBE_REQUEST: &[u8] = b"GET /.playpen/viewer-ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";

/// What a connection opened with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// Too few bytes to tell (none yet, or a prefix of the probe's request).
    Incomplete,
    /// The readiness probe's request, whole.
    Probe,
    /// Anything else: a viewer's.
    Viewer,
}

/// Classifies the bytes read so far.
pub fn classify(bytes: &[u8]) -> Opening {
    let common = bytes.len().min(PROBE_REQUEST.len());
    if bytes[..common] != PROBE_REQUEST[..common] {
        Opening::Viewer
    } else if common == PROBE_REQUEST.len() {
        Opening::Probe
    } else {
        Opening::Incomplete
    }
}

/// Reads until the opening is known; returns it with every byte read (to be
/// passed on as it came). `Incomplete` means the peer closed before that.
pub async fn read_opening(conn: &mut TcpStream) -> std::io::Result<(Opening, Vec<u8>)> {
    let mut read = Vec::with_capacity(PROBE_REQUEST.len());
    let mut chunk = [0u8; 2048];
    loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok((Opening::Incomplete, read));
        }
        read.extend_from_slice(&chunk[..n]);
        match classify(&read) {
            Opening::Incomplete => {}
            known => return Ok((known, read)),
        }
    }
}

/// The probe's side: does the relay on `addr` answer its request with 200?
/// `Err` carries what it answered instead.
pub async fn viewer_ready(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
        stream.write_all(PROBE_REQUEST).await.map_err(|e| format!("send: {e}"))?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.map_err(|e| format!("read: {e}"))?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        if answer.starts_with("HTTP/1.1 200 ") || answer.starts_with("HTTP/1.0 200 ") {
            Ok(())
        } else {
            let body = answer.split("\r\n\r\n").nth(1).unwrap_or(&answer).trim();
            Err(if body.is_empty() { "no answer".to_owned() } else { body.to_owned() })
        }
    };
    tokio::time::timeout(timeout, attempt).await.unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_told_apart_from_a_viewer_by_its_whole_request() {
        assert_eq!(classify(b""), Opening::Incomplete);
        assert_eq!(classify(b"GET /.play"), Opening::Incomplete);
        assert_eq!(classify(PROBE_REQUEST), Opening::Probe);
        assert_eq!(classify(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:9323\r\n\r\n"), Opening::Viewer);
        assert_eq!(classify(b"GET /index.html"), Opening::Viewer);
        // The same path from a browser (other headers) is a viewer's request.
        assert_eq!(classify(b"GET /.playpen/viewer-ready HTTP/1.1\r\n"), Opening::Viewer);
        assert_eq!(classify(b"\x16\x03\x01"), Opening::Viewer, "not HTTP at all: passed on as before");
    }
}
