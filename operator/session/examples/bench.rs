//! Benchmarks of the viewer relay and of snapshot retention, run with
//! `cargo run --release -p playpen-session --example bench`.
//!
//! * relay: throughput of 256 MiB transfers each way (upload: viewer →
//!   dashboard; download: dashboard → viewer, the screencast's direction),
//!   median of 5 alternating rounds, direct and through the relay in the same
//!   run; the CPU time the relay's thread spends per GiB next to what both
//!   endpoints spend per GiB of a direct transfer; p50/p99 round trip of
//!   1-byte ping-pongs. The relay runs on its own single-threaded runtime, as
//!   in `playpen-session run`. Targets: ≥ 90 % of direct throughput, < 100 µs
//!   added at p50. A second baseline, when `socat` is on PATH: the same hop
//!   through socat (the usual userspace TCP relay), in the same rounds.
//! * retention: one pass over 100,000 files (target < 1 s).

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use playpen_session::run::expose::relay;
use playpen_session::run::policy::retention::{self, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TRANSFER: usize = 256 << 20;
const CHUNK: usize = 256 << 10;
const ROUNDS: usize = 5;
const PINGS: usize = 10_000;

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Upload,
    Download,
}

/// Upload ('U'): counts bytes until EOF, then answers one byte. Download
/// ('D'): sends [`TRANSFER`] bytes and closes. Ping ('P'): echoes 1-byte pings.
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
                let mut buf = vec![7u8; CHUNK];
                match mode[0] {
                    b'U' => {
                        while s.read(&mut buf).await.unwrap() > 0 {}
                        s.write_all(b"k").await.unwrap();
                    }
                    b'D' => {
                        for _ in 0..TRANSFER / CHUNK {
                            s.write_all(&buf).await.unwrap();
                        }
                        s.shutdown().await.unwrap();
                    }
                    _ => {
                        while let Ok(n) = s.read(&mut buf[..1]).await {
                            if n == 0 || s.write_all(&buf[..1]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// One 256 MiB transfer to or from `to`, in MiB/s.
async fn transfer(to: SocketAddr, direction: Direction) -> f64 {
    let mut s = TcpStream::connect(to).await.unwrap();
    let mut buf = vec![7u8; CHUNK];
    let t = Instant::now();
    match direction {
        Direction::Upload => {
            s.write_all(b"U").await.unwrap();
            for _ in 0..TRANSFER / CHUNK {
                s.write_all(&buf).await.unwrap();
            }
            s.shutdown().await.unwrap();
            s.read_exact(&mut buf[..1]).await.unwrap();
        }
        Direction::Download => {
            s.write_all(b"D").await.unwrap();
            let mut got = 0;
            loop {
                match s.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => got += n,
                }
            }
            assert_eq!(got, TRANSFER, "the whole transfer arrived");
        }
    }
    TRANSFER as f64 / t.elapsed().as_secs_f64() / f64::from(1 << 20)
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

/// CPU time a thread of this process has run, from the scheduler's own
/// nanosecond account (`/proc/self/task/<tid>/schedstat`).
fn thread_cpu(tid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap();
    Duration::from_nanos(stat.split_whitespace().next().unwrap().parse().unwrap())
}

/// CPU time of every thread of this process but `except`.
fn other_threads_cpu(except: i32) -> Duration {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&tid| tid != except)
        .map(thread_cpu)
        .sum()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn per_gib(cpu: Duration, transfers: usize) -> f64 {
    cpu.as_secs_f64() * 1000.0 / (transfers * TRANSFER) as f64 * f64::from(1 << 30)
}

fn retention_bench() {
    let dir = tempfile::tempdir().unwrap();
    let base = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..100_000u64 {
        let p = dir.path().join(format!("page-{i:06}.yml"));
        std::fs::write(&p, "x").unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(base + Duration::from_millis(i)).unwrap();
    }
    // With a size budget that keeps everything: the budget's bookkeeping is in the measured pass.
    let size = retention::size_budget(Some(1 << 40), None, None);
    let keep_all = Policy {
        max_age: Duration::from_secs(86_400),
        max_count: 1_000_000,
        grace: Duration::from_secs(5),
        size,
        uploaded_first: false,
    };
    let t = Instant::now();
    let deleted = retention::prune(dir.path(), keep_all).unwrap().deleted;
    println!("retention: pass over 100000 files deleting {deleted}: {:?} (target < 1 s)", t.elapsed());
    let half = Policy { max_count: 50_000, ..keep_all };
    let t = Instant::now();
    let deleted = retention::prune(dir.path(), half).unwrap().deleted;
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
    // Each party on a thread and runtime of its own, as separate processes
    // would be: the upstream (the dashboard), the relay, the client.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            tx.send(upstream().await).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let upstream = rx.recv().unwrap();
    let clients = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // The relay on its own current-thread runtime, as in `playpen-session run`.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = relay::bind_pinned(0).unwrap();
            tx.send((listener.local_addr().unwrap(), nix::unistd::gettid().as_raw())).unwrap();
            let (publisher, dashboard) = relay::upstream::channel();
            publisher.publish(relay::upstream::Upstream::Serving(upstream));
            let waits = relay::Waits { opening: Duration::from_secs(1), upstream: Duration::from_secs(1) };
            relay::serve(listener, dashboard, waits, Default::default()).await;
        });
    });
    let (pinned, relay_tid) = rx.recv().unwrap();
    let socat = socat_relay(upstream);
    if socat.is_none() {
        println!("relay: socat not on PATH, no second baseline (apt-get install socat)");
    }
    println!("relay: {} MiB per transfer, median of {ROUNDS} alternating rounds", TRANSFER >> 20);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "{:<9} {:>11} {:>11} {:>6} {:>10} {:>8} {:>12} {:>13} {:>9}",
        "direction", "direct", "relayed", "ratio", "socat", "vs socat", "relay CPU", "endpoints CPU", "CPU bound"
    );
    for direction in [Direction::Upload, Direction::Download] {
        clients.block_on(async {
            transfer(upstream, direction).await; // warm-up
            let (mut direct, mut relayed, mut via_socat) = (vec![], vec![], vec![]);
            let (mut relay_cpu, mut direct_cpu) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..ROUNDS {
                let before = other_threads_cpu(relay_tid);
                direct.push(transfer(upstream, direction).await);
                direct_cpu += other_threads_cpu(relay_tid) - before;
                let before = thread_cpu(relay_tid);
                relayed.push(transfer(pinned, direction).await);
                relay_cpu += thread_cpu(relay_tid) - before;
                if let Some((addr, _)) = &socat {
                    via_socat.push(transfer(*addr, direction).await);
                }
            }
            let (direct, relayed) = (median(direct).unwrap(), median(relayed).unwrap());
            let socat = median(via_socat);
            // The most a relayed transfer could move with the relay and both
            // endpoints keeping every core busy at these costs, against direct.
            let (relay_cost, endpoints_cost) = (per_gib(relay_cpu, ROUNDS), per_gib(direct_cpu, ROUNDS));
            let cpu_bound = cores as f64 * 1000.0 / (relay_cost + endpoints_cost) * 1024.0;
            println!(
                "{:<9} {:>11} {:>11} {:>6} {:>10} {:>8} {:>12} {:>13} {:>9}",
                if direction == Direction::Upload { "upload" } else { "download" },
                format!("{direct:.0} MiB/s"),
                format!("{relayed:.0} MiB/s"),
                format!("{:.0} %", relayed / direct * 100.0),
                socat.map_or("-".into(), |s| format!("{s:.0} MiB/s")),
                socat.map_or("-".into(), |s| format!("{:.2}x", relayed / s)),
                format!("{relay_cost:.0} ms/GiB"),
                format!("{endpoints_cost:.0} ms/GiB"),
                format!("{:.0} %", cpu_bound / direct * 100.0),
            );
        });
    }
    println!(
        "relay: target ratio >= 90 %. relay CPU: the relay thread's, per GiB relayed; endpoints CPU: both ends', per GiB \
         of a direct transfer; CPU bound: what {cores} cores busy at those costs could relay, against direct"
    );
    clients.block_on(async {
        let (d50, d99) = pings(upstream).await;
        let (r50, r99) = pings(pinned).await;
        println!(
            "relay: round trip p50 direct {d50:?}, relayed {r50:?}, added {:?} (target < 100 µs); p99 {d99:?} / {r99:?}",
            r50.saturating_sub(d50)
        );
    });
    retention_bench();
}
