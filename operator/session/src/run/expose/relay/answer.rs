//! A short plain-text HTTP answer from the relay itself (the probe's, a
//! refusal), after which the connection is closed.

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The whole response: `status`, `text` as the body, `Connection: close`.
pub fn response(status: u16, text: &str) -> String {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Service Unavailable",
    };
    let body = format!("{text}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Writes [`response`] and closes the sending side; a peer already gone is no error worth reporting.
pub async fn send(conn: &mut TcpStream, status: u16, text: &str) {
    let _ = conn.write_all(response(status, text).as_bytes()).await;
    let _ = conn.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_text_and_its_length_is_declared() {
        let r = response(503, "the viewer's dashboard is stopped");
        assert!(r.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{r}");
        assert!(r.contains("Content-Length: 34\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nthe viewer's dashboard is stopped\n"), "{r}");
        assert!(response(200, "ready").starts_with("HTTP/1.1 200 OK\r\n"));
    }
}
