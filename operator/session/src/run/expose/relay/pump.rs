//! The byte pump between a viewer connection and the dashboard (and of the
//! CDP relay and the egress proxy): each direction copied in order, end of
//! stream passed on as a half-close (so HTTP/1.0 and WebSocket close
//! semantics hold).
//!
//! A userspace copy through a buffer that grows (to 1 MiB for the relays),
//! not `splice(2)`: faster and cheaper per byte (docs/session-runtime.md,
//! Benchmark).

use std::ffi::OsString;
use std::io;

use nix::sys::socket::{setsockopt, sockopt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where a direction's buffer starts: what an idle WebSocket holds.
const FIRST_BUFFER: usize = 64 << 10;
/// Where it stops growing: a bulk transfer moves this much per read/write.
const LARGEST_BUFFER: usize = 1 << 20;

/// Both relay hops are loopback inside the Pod, where there is nothing to
/// congest. BBR (the default congestion control on some nodes) paces sends
/// from a timer that fires on another CPU, and loopback then delivers
/// segments out of order: spurious retransmits that halved the relay's
/// upload throughput (measured). Reno sends as the window allows; every
/// kernel lets an unprivileged process choose it. Failure changes nothing
/// but speed, so it is only logged.
pub fn tune(stream: &TcpStream) {
    let _ = stream.set_nodelay(true);
    if let Err(err) = setsockopt(stream, sockopt::TcpCongestion, &OsString::from("reno")) {
        tracing::debug!(%err, "the relay's socket keeps the node's congestion control");
    }
}

/// Where a direction's buffer starts, and where it stops growing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Buffers {
    /// What an idle connection holds per direction.
    pub first: usize,
    /// What a bulk transfer moves per read/write.
    pub largest: usize,
}

/// The viewer's and CDP's: few connections, so a bulk transfer may take 1 MiB.
const RELAY_BUFFERS: Buffers = Buffers { first: FIRST_BUFFER, largest: LARGEST_BUFFER };

/// Copies `from` → `to` until `from` ends, then half-closes `to`.
async fn one_way<R, W>(mut from: R, mut to: W, buffers: Buffers) -> io::Result<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; buffers.first];
    let mut total = 0u64;
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            to.shutdown().await?;
            return Ok(total);
        }
        to.write_all(&buffer[..read]).await?;
        total += read as u64;
        buffer.resize(grown(buffer.len(), read, buffers.largest), 0);
    }
}

/// A buffer a read filled doubles (a bulk transfer is under way), up to
/// `largest`; otherwise it keeps its size.
fn grown(size: usize, read: usize, largest: usize) -> usize {
    if read == size {
        (size * 2).min(largest)
    } else {
        size
    }
}

/// Relays both ways until both directions have ended; returns the bytes
/// moved `a` → `b` and `b` → `a`.
pub async fn relay(a: &mut TcpStream, b: &mut TcpStream) -> io::Result<(u64, u64)> {
    relay_with(a, b, RELAY_BUFFERS).await
}

/// [`relay`] with buffers of these sizes.
pub(crate) async fn relay_with(a: &mut TcpStream, b: &mut TcpStream, buffers: Buffers) -> io::Result<(u64, u64)> {
    let (a_read, a_write) = a.split();
    let (b_read, b_write) = b.split();
    tokio::try_join!(one_way(a_read, b_write, buffers), one_way(b_read, a_write, buffers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn large_transfers_keep_order_and_end_with_a_half_close() {
        // client <-> (relay_a | relay_b) <-> server
        let (mut client, mut relay_a) = pair().await;
        let (mut relay_b, mut server) = pair().await;
        tune(&relay_a);
        tune(&relay_b);
        let relay = tokio::spawn(async move { relay(&mut relay_a, &mut relay_b).await });
        let data: Vec<u8> = (0..(3 << 20)).map(|i: u32| (i % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.unwrap();
            client.shutdown().await.unwrap();
            let mut reply = vec![];
            client.read_to_end(&mut reply).await.unwrap();
            reply
        });
        let mut got = vec![];
        server.read_to_end(&mut got).await.unwrap();
        assert!(got == data, "bytes arrive complete and in order");
        // The half-closed direction ended; the other one still carries bytes.
        server.write_all(b"bye").await.unwrap();
        server.shutdown().await.unwrap();
        assert_eq!(writer.await.unwrap(), b"bye");
        let (up, down) = relay.await.unwrap().unwrap();
        assert_eq!((up, down), (3 << 20, 3));
    }

    #[test]
    fn the_buffer_grows_only_when_a_read_fills_it_and_stops_at_the_largest() {
        assert_eq!(grown(FIRST_BUFFER, 5, LARGEST_BUFFER), FIRST_BUFFER);
        assert_eq!(grown(FIRST_BUFFER, FIRST_BUFFER - 1, LARGEST_BUFFER), FIRST_BUFFER);
        assert_eq!(grown(FIRST_BUFFER, FIRST_BUFFER, LARGEST_BUFFER), 2 * FIRST_BUFFER);
        assert_eq!(grown(LARGEST_BUFFER / 2, LARGEST_BUFFER / 2, LARGEST_BUFFER), LARGEST_BUFFER);
        assert_eq!(grown(LARGEST_BUFFER, LARGEST_BUFFER, LARGEST_BUFFER), LARGEST_BUFFER);
        assert_eq!(grown(16 << 10, 16 << 10, 256 << 10), 32 << 10);
        assert_eq!(grown(256 << 10, 256 << 10, 256 << 10), 256 << 10, "another largest is kept to");
    }

    #[tokio::test]
    async fn small_frames_pass_one_by_one_and_a_bulk_transfer_after_them_is_complete() {
        let (mut writer, relay_in) = pair().await;
        let (relay_out, mut reader) = pair().await;
        let pump = tokio::spawn(one_way(relay_in, relay_out, RELAY_BUFFERS));
        // Small messages one at a time never fill the first buffer.
        for _ in 0..3 {
            writer.write_all(b"frame").await.unwrap();
            let mut got = [0u8; 5];
            reader.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"frame");
        }
        writer.write_all(&vec![1u8; 8 << 20]).await.unwrap();
        writer.shutdown().await.unwrap();
        let mut rest = vec![];
        reader.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest.len(), 8 << 20);
        assert_eq!(pump.await.unwrap().unwrap(), 15 + (8 << 20));
    }

    #[tokio::test]
    async fn relay_sockets_use_reno() {
        let (a, _b) = pair().await;
        tune(&a);
        let cc = nix::sys::socket::getsockopt(&a, sockopt::TcpCongestion).unwrap();
        assert_eq!(cc.to_string_lossy().trim_end_matches('\0'), "reno");
        assert!(a.nodelay().unwrap());
    }
}
