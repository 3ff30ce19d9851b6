//! Benchmarks of the viewer relay and of snapshot retention, run with
//! `cargo run --release -p playpen-session --example bench`.
//!
//! * relay: throughput of 256 MiB uploads (median of 5 alternating rounds) and p50/p99 round trip of 1-byte
//!   ping-pongs, direct and through the relay, in the same run. The relay
//!   runs on its own single-threaded runtime, as in `playpen-session run`.
//!   Targets: ≥ 90 % of direct throughput, < 100 µs added at p50. A second
//!   baseline, when `socat` is on PATH: the same relay hop through socat
//!   (the usual userspace TCP relay), in the same alternating rounds.
//! * retention: one pass over 100,000 files (target < 1 s).

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use playpen_session::relay;
use playpen_session::retention::{self, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const UPLOAD: usize = 256 << 20;
const PINGS: usize = 10_000;

/// Counts bytes until EOF, then answers one byte; echoes 1-byte pings otherwise.
async fn upstream() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            s.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let mut mode = [0u8; 1];
                // A bare connect (the socat readiness check) sends nothing.
                if s.read_exact(&mut mode).await.is_err() {
                    return;
                }
                let mut buf = vec![0u8; 256 << 10];
                if mode[0] == b'U' {
                    while s.read(&mut buf).await.unwrap() > 0 {}
                    s.write_all(b"k").await.unwrap();
                } else {
                    while let Ok(n) = s.read(&mut buf[..1]).await {
                        if n == 0 || s.write_all(&buf[..1]).await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
    });
    addr
}

async fn upload(to: SocketAddr) -> f64 {
    let mut s = TcpStream::connect(to).await.unwrap();
    let chunk = vec![7u8; 256 << 10];
    let t = Instant::now();
    s.write_all(b"U").await.unwrap();
    let mut sent = 0;
    while sent < UPLOAD {
        s.write_all(&chunk).await.unwrap();
        sent += chunk.len();
    }
    s.shutdown().await.unwrap();
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack).await.unwrap();
    UPLOAD as f64 / t.elapsed().as_secs_f64() / f64::from(1 << 20)
}

async fn pings(to: SocketAddr) -> (Duration, Duration) {
    let mut s = TcpStream::connect(to).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(b"P").await.unwrap();
    let mut rtts = Vec::with_capacity(PINGS);
    let mut b = [0u8; 1];
    for _ in 0..PINGS {
        let t = Instant::now();
        s.write_all(b"x").await.unwrap();
        s.read_exact(&mut b).await.unwrap();
        rtts.push(t.elapsed());
    }
    rtts.sort();
    (rtts[PINGS / 2], rtts[PINGS * 99 / 100])
}

fn retention_bench() {
    let dir = tempfile::tempdir().unwrap();
    let base = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..100_000u64 {
        let p = dir.path().join(format!("page-{i:06}.yml"));
        std::fs::write(&p, "x").unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(base + Duration::from_millis(i)).unwrap();
    }
    let keep_all = Policy { max_age: Duration::from_secs(86_400), max_count: 1_000_000, grace: Duration::from_secs(5) };
    let t = Instant::now();
    let deleted = retention::prune(dir.path(), keep_all).unwrap();
    println!("retention: pass over 100000 files deleting {deleted}: {:?} (target < 1 s)", t.elapsed());
    let half = Policy { max_count: 50_000, ..keep_all };
    let t = Instant::now();
    let deleted = retention::prune(dir.path(), half).unwrap();
    println!("retention: pass over 100000 files deleting {deleted}: {:?}", t.elapsed());
}

/// `socat` relaying a loopback port to `upstream`, if socat is installed; killed on drop.
fn socat_relay(upstream: SocketAddr) -> Option<(SocketAddr, KillOnDrop)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let child = std::process::Command::new("socat")
        .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
        .arg(format!("TCP:{upstream}"))
        .spawn()
        .ok()?;
    let child = KillOnDrop(child);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Some((addr, child));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let clients = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let upstream = clients.block_on(upstream());
    // The relay on its own current-thread runtime, as in the runtime.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = relay::bind_pinned(0).unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let (_up_tx, up_rx) = tokio::sync::watch::channel(Some(upstream));
            relay::serve(listener, up_rx, Duration::from_secs(1), Default::default()).await;
        });
    });
    let pinned = rx.recv().unwrap();
    let socat = socat_relay(upstream);
    clients.block_on(async {
        upload(upstream).await; // warm-up
        // Alternating rounds; the median of each side (loopback throughput is noisy on a small VM).
        let (mut direct, mut relayed, mut via_socat) = (vec![], vec![], vec![]);
        for _ in 0..5 {
            direct.push(upload(upstream).await);
            relayed.push(upload(pinned).await);
            if let Some((addr, _)) = &socat {
                via_socat.push(upload(*addr).await);
            }
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let (direct, relayed) = (median(direct).unwrap(), median(relayed).unwrap());
        println!(
            "relay: throughput (median of 5) direct {direct:.0} MiB/s, relayed {relayed:.0} MiB/s = {:.0} % (target >= 90 %)",
            relayed / direct * 100.0
        );
        match median(via_socat) {
            Some(s) => println!(
                "relay: through socat {s:.0} MiB/s = {:.0} % of direct; the relay moves {:.2}x socat's bytes/s",
                s / direct * 100.0,
                relayed / s
            ),
            None => println!("relay: socat not on PATH, no second baseline (apt-get install socat)"),
        }
        let (d50, d99) = pings(upstream).await;
        let (r50, r99) = pings(pinned).await;
        println!(
            "relay: round trip p50 direct {d50:?}, relayed {r50:?}, added {:?} (target < 100 µs); p99 {d99:?} / {r99:?}",
            r50.saturating_sub(d50)
        );
    });
    retention_bench();
}
