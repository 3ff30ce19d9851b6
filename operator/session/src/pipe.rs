//! `playpen-session pipe PORT`: one TCP connection to 127.0.0.1:PORT in the
//! Pod, relayed to and from stdin and stdout, for `kubectl exec`. Where the
//! container runtime runs its own network stack (gVisor's netstack), the
//! kubelet's port-forward dials the Pod's network namespace on the host,
//! which holds no listener: exec reaches inside the sandbox, and this relay
//! finishes the path. Nothing is logged but failures (stdout carries bytes).

use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;

use crate::error::exit;

/// Relays until either side closes: 0 when the connection ended, `exit::FATAL` when it never opened.
pub async fn run(port: u16) -> i32 {
    let stream = match TcpStream::connect(("127.0.0.1", port)).await {
        Ok(stream) => stream,
        Err(err) => {
            eprintln!("playpen-session pipe: connecting to 127.0.0.1:{port}: {err}");
            return exit::FATAL;
        }
    };
    let (mut from_port, mut to_port) = stream.into_split();
    let mut stdin = tokio::io::stdin();
    let mut stdout = BufWriter::new(tokio::io::stdout());
    // The upload's end (the client sent all it will) closes the port's
    // write side only; the relay lasts until the port's side closes, as a
    // viewer's WebSocket or a CDP socket is over then whatever stdin holds.
    let upstream = async {
        let _ = tokio::io::copy(&mut stdin, &mut to_port).await;
        let _ = to_port.shutdown().await;
        std::future::pending::<()>().await
    };
    let downstream = async {
        let copied = copy_flushing(&mut from_port, &mut stdout).await;
        let _ = stdout.flush().await;
        copied
    };
    tokio::select! {
        done = downstream => {
            if let Err(err) = done {
                eprintln!("playpen-session pipe: 127.0.0.1:{port} to stdout: {err}");
            }
            exit::ENDED
        }
        () = upstream => exit::ENDED,
    }
}

/// Copies `from` to `to`, flushing after every read: stdout is a pipe, and
/// a viewer frame or a CDP reply must not wait for a full buffer.
async fn copy_flushing<R, W>(from: &mut R, to: &mut W) -> std::io::Result<u64>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(total);
        }
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
        total += n as u64;
    }
}
