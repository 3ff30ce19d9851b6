//! Zero-copy byte relay between two TCP sockets: `splice(2)` moves data
//! socket → pipe → socket inside the kernel, so the relay costs no copy
//! through user space. Each direction keeps its order; end of stream is
//! passed on as a half-close, so WebSocket and HTTP/1.0 close semantics hold.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::fcntl::{splice, OFlag, SpliceFFlags};
use nix::sys::socket::{shutdown, Shutdown};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The pipe's capacity (raised from Linux's 64 KiB default when allowed,
/// fewer syscalls per byte); never more is put in it.
const PIPE_CAPACITY: usize = 1 << 20;
/// What a pipe holds when it cannot be raised.
const DEFAULT_PIPE_CAPACITY: usize = 64 << 10;

fn flags() -> SpliceFFlags {
    SpliceFFlags::SPLICE_F_NONBLOCK | SpliceFFlags::SPLICE_F_MOVE
}

/// A non-blocking pipe and how much it holds.
fn pipe() -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let (out, inp) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    let wanted = i32::try_from(PIPE_CAPACITY).unwrap_or(i32::MAX);
    let capacity = nix::fcntl::fcntl(&inp, nix::fcntl::FcntlArg::F_SETPIPE_SZ(wanted))
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(DEFAULT_PIPE_CAPACITY);
    Ok((out, inp, capacity))
}

/// Moves bytes `from` → `to` until `from` ends, then half-closes `to`.
async fn one_way(from: &TcpStream, to: &TcpStream) -> io::Result<u64> {
    let (pipe_out, pipe_in, capacity) = pipe()?;
    let mut buffered = 0usize;
    let mut total = 0u64;
    let mut eof = false;
    loop {
        // Fill the pipe from the source while it has data and the pipe has room.
        while !eof && buffered < capacity {
            let moved = from.try_io(Interest::READABLE, || {
                splice(from.as_fd(), None, pipe_in.as_fd(), None, capacity - buffered, flags()).map_err(io::Error::from)
            });
            match moved {
                Ok(0) => eof = true,
                Ok(n) => buffered += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        // Drain the pipe into the destination.
        while buffered > 0 {
            let moved = to.try_io(Interest::WRITABLE, || {
                splice(pipe_out.as_fd(), None, to.as_fd(), None, buffered, flags()).map_err(io::Error::from)
            });
            match moved {
                Ok(n) => {
                    buffered -= n;
                    total += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => to.writable().await?,
                Err(e) => return Err(e),
            }
        }
        if eof {
            let _ = shutdown(to.as_raw_fd(), Shutdown::Write);
            return Ok(total);
        }
        from.readable().await?;
    }
}

/// Relays both ways until both directions have ended.
pub async fn relay(a: &TcpStream, b: &TcpStream) -> io::Result<(u64, u64)> {
    tokio::try_join!(one_way(a, b), one_way(b, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
        let (mut client, relay_a) = pair().await;
        let (relay_b, mut server) = pair().await;
        let relay = tokio::spawn(async move { relay(&relay_a, &relay_b).await });
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
        server.write_all(b"bye").await.unwrap();
        server.shutdown().await.unwrap();
        assert_eq!(writer.await.unwrap(), b"bye");
        let (up, down) = relay.await.unwrap().unwrap();
        assert_eq!((up, down), (3 << 20, 3));
    }
}
