//! The origin the bench fetches from: HTTP/1.1 on 127.0.0.1, keep-alive
//! unless the request says `Connection: close` (as the proxy's forwards
//! do). `/small` answers [`SMALL`] bytes, `/large` the configured transfer.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The body of a small GET: a script or a JSON answer.
pub const SMALL: usize = 1024;
/// Bytes per write of a large body.
const CHUNK: usize = 256 << 10;

/// Starts the origin on a thread and runtime of its own (another process
/// in a real Pod's view); returns its address.
pub fn start(large: usize) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("fixture".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                while let Ok((s, _)) = listener.accept().await {
                    tokio::spawn(serve(s, large));
                }
            });
        })
        .unwrap();
    rx.recv().unwrap()
}

/// Answers requests on one connection until the client closes it or asks to.
async fn serve(mut s: TcpStream, large: usize) {
    // Like the HTTP servers of the web (nginx's `tcp_nodelay on`).
    s.set_nodelay(true).unwrap();
    let mut head = Vec::with_capacity(2048);
    let mut chunk = vec![7u8; CHUNK];
    loop {
        head.clear();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 512];
            match s.read(&mut byte).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&byte[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let close = text.contains("\r\nconnection: close\r\n");
        let len = if text.starts_with("get /large ") { large } else { SMALL };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n{}\r\n",
            if close { "Connection: close\r\n" } else { "" }
        );
        // The head, then the body, in writes of their own, as a server that
        // streams its body does.
        if s.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
        let mut left = len;
        while left > 0 {
            let n = left.min(CHUNK);
            if s.write_all(&chunk[..n]).await.is_err() {
                return;
            }
            left -= n;
        }
        if close {
            let _ = s.shutdown().await;
            // Drain until the client closes: closing with unread bytes would reset.
            while matches!(s.read(&mut chunk).await, Ok(n) if n > 0) {}
            return;
        }
    }
}
