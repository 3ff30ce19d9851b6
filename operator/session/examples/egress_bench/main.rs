//! Benchmark of the egress proxy (issue 36: time added per request and
//! throughput through the enforcement path against direct, same run), run
//! with `bash tests/bench/egress.sh`; what it measured:
//! docs/egress-hosts.md (Benchmark).
//!
//! An origin ([`fixture`]), the proxy with host rules allowing only the
//! origin's `localhost:<port>` and the runtime's CIDR floor less
//! 127.0.0.0/8, and a client ([`client`]), each on a thread and runtime of
//! its own, all on 127.0.0.1. Paths, interleaved in the same rounds:
//! direct; `GET http://…` to the proxy; `CONNECT`, then the GET in the
//! tunnel; a `CONNECT` no rule allows (403).
//!
//! * small GETs, each on a new connection: p50/p99, proxied / direct;
//! * small GETs on one kept-alive connection: direct, and in one tunnel;
//! * large downloads: median MiB/s, proxied / direct;
//! * the proxy's CPU per request and per GiB relayed ([`cpu`]).
//!
//! `PLAYPEN_BENCH_EGRESS_REQUESTS` (2000) GETs per path,
//! `PLAYPEN_BENCH_EGRESS_MIB` (256) per download, `PLAYPEN_BENCH_EGRESS_ROUNDS` (5).

#![allow(clippy::unwrap_used)]

mod client;
mod cpu;
mod fixture;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use client::{Path, Target};
use playpen_api::cidr::{Cidr, SPECIAL_RANGES};
use playpen_api::egress_hosts::{Floor, HostRules};
use playpen_api::v1alpha1::EgressMode;

const NEW_CONNECTION: [(Path, &str); 4] = [
    (Path::Direct, "direct"),
    (Path::Absolute, "GET http:// via proxy"),
    (Path::Connect, "CONNECT, GET in tunnel"),
    (Path::Refused, "CONNECT refused (403)"),
];

const DOWNLOADS: [(Path, &str); 3] =
    [(Path::Direct, "direct"), (Path::Connect, "CONNECT tunnel"), (Path::Absolute, "GET http:// via proxy")];

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

/// The proxy on its own current-thread runtime, as in `playpen-session
/// run`; the resolver's blocking threads named as its own, kept for the run.
fn start_proxy(origin_port: u16, recordings: PathBuf) -> SocketAddr {
    let rules =
        HostRules::parse(EgressMode::AllowListOnly, &[format!("localhost:{origin_port}")], &[]).expect("host rules");
    let denied = SPECIAL_RANGES.iter().filter(|c| **c != "127.0.0.0/8").map(|c| c.parse::<Cidr>().unwrap());
    let floor = Floor { denied: denied.collect(), allowed: vec![] };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(cpu::PROXY.into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_name(format!("{}-dns", cpu::PROXY))
                .thread_keep_alive(Duration::from_secs(3600))
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                playpen_session::run::expose::egress_proxy::serve_fixed(listener, rules, floor, &recordings).await;
            });
        })
        .unwrap();
    rx.recv().unwrap()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// How many took 10 ms or more: a delayed ACK (40 ms on Linux) shows here.
fn stalls(sorted: &[Duration]) -> usize {
    sorted.iter().filter(|t| **t >= Duration::from_millis(10)).count()
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Checks what came back: 403 for the refused path, else 200 with the whole body.
fn check(path: Path, (status, len): (u16, usize), want: usize) {
    match path {
        Path::Refused => assert_eq!(status, 403, "a refused CONNECT is answered 403"),
        _ => assert_eq!((status, len), (200, want), "{path:?}: the whole body, 200"),
    }
}

/// Small GETs, each on a new connection, the paths interleaved (each
/// round starts with the next path); then the proxy's CPU per request over
/// a block of each proxied path in a row.
async fn new_connections(target: &Target, requests: usize) {
    let mut buf = vec![0u8; 64 << 10];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(requests); NEW_CONNECTION.len()];
    for round in 0..requests + 50 {
        for k in 0..NEW_CONNECTION.len() {
            let i = (round + k) % NEW_CONNECTION.len();
            let path = NEW_CONNECTION[i].0;
            let (took, status, len) = target.fetch(path, "/small", &mut buf).await;
            check(path, (status, len), fixture::SMALL);
            // The first 50 rounds warm up.
            if round >= 50 {
                times[i].push(took);
            }
        }
    }
    let block = requests.min(1000);
    println!(
        "egress: {requests} GETs of {} bytes per path, each on a new connection, paths interleaved",
        fixture::SMALL
    );
    println!(
        "{:<24} {:>9} {:>9} {:>10} {:>10} {:>7} {:>14}",
        "path", "p50", "p99", "p50 ratio", "p99 ratio", ">=10ms", "proxy CPU/req"
    );
    let (mut d50, mut d99) = (Duration::ZERO, Duration::ZERO);
    for (i, (path, name)) in NEW_CONNECTION.iter().enumerate() {
        times[i].sort();
        let (p50, p99) = (quantile(&times[i], 0.5), quantile(&times[i], 0.99));
        if *path == Path::Direct {
            (d50, d99) = (p50, p99);
        }
        let proxy_cpu = if *path == Path::Direct {
            "-".to_owned()
        } else {
            let before = cpu::proxy();
            for _ in 0..block {
                let (_, status, len) = target.fetch(*path, "/small", &mut buf).await;
                check(*path, (status, len), fixture::SMALL);
            }
            // The proxy logs a connection once both ends closed it.
            tokio::time::sleep(Duration::from_millis(100)).await;
            micros((cpu::proxy() - before) / block as u32)
        };
        println!(
            "{name:<24} {:>9} {:>9} {:>9.2}x {:>9.2}x {:>7} {proxy_cpu:>14}",
            micros(p50),
            micros(p99),
            p50.as_secs_f64() / d50.as_secs_f64(),
            p99.as_secs_f64() / d99.as_secs_f64(),
            stalls(&times[i]),
        );
    }
}

/// What resolving the origin's name costs the proxy on each new
/// connection: `getaddrinfo` on the runtime's blocking pool, as
/// `tokio::net::lookup_host` does (here from `/etc/hosts`; in a Pod, a DNS
/// query for each name not in it).
async fn resolution(target: &Target, requests: usize) {
    let mut times = Vec::with_capacity(requests);
    for round in 0..requests + 50 {
        let started = std::time::Instant::now();
        let found = tokio::net::lookup_host(("localhost", target.origin.port())).await.unwrap().count();
        assert!(found > 0, "localhost resolves");
        if round >= 50 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    println!(
        "{:<24} {:>9} {:>9} {:>10} {:>10} {:>7}   (how the proxy resolves each connection's host)",
        "resolving localhost",
        micros(quantile(&times, 0.5)),
        micros(quantile(&times, 0.99)),
        "",
        "",
        stalls(&times),
    );
}

/// Small GETs on one kept-alive connection to the origin and in one
/// tunnel, alternating.
async fn kept_alive(target: &Target, requests: usize) {
    let mut buf = vec![0u8; 64 << 10];
    let mut direct = target.keep_alive(Path::Direct, &mut buf).await;
    let mut tunnel = target.keep_alive(Path::Connect, &mut buf).await;
    let (mut d, mut t) = (Vec::with_capacity(requests), Vec::with_capacity(requests));
    for round in 0..requests + 50 {
        for k in 0..2 {
            let (s, times) = if (round + k) % 2 == 0 { (&mut direct, &mut d) } else { (&mut tunnel, &mut t) };
            let started = std::time::Instant::now();
            check(Path::Direct, target.get(s, Path::Direct, "/small", &mut buf).await, fixture::SMALL);
            if round >= 50 {
                times.push(started.elapsed());
            }
        }
    }
    d.sort();
    t.sort();
    let (d50, d99, t50, t99) = (quantile(&d, 0.5), quantile(&d, 0.99), quantile(&t, 0.5), quantile(&t, 0.99));
    println!(
        "{:<24} {:>9} {:>9} {:>9.2}x {:>9.2}x {:>7}   (direct, kept alive: {} / {}, >=10ms {})",
        "kept alive, in tunnel",
        micros(t50),
        micros(t99),
        t50.as_secs_f64() / d50.as_secs_f64(),
        t99.as_secs_f64() / d99.as_secs_f64(),
        stalls(&t),
        micros(d50),
        micros(d99),
        stalls(&d),
    );
}

/// Large downloads by each path, in rounds that start with the next path.
async fn downloads(target: &Target, large: usize, rounds: usize) {
    let mut buf = vec![0u8; 256 << 10];
    let (_, status, len) = target.fetch(Path::Direct, "/large", &mut buf).await; // warm-up
    check(Path::Direct, (status, len), large);
    let mut speeds: Vec<Vec<f64>> = vec![vec![]; DOWNLOADS.len()];
    let (mut proxy, mut ends) = ([Duration::ZERO; DOWNLOADS.len()], [Duration::ZERO; DOWNLOADS.len()]);
    for round in 0..rounds {
        for k in 0..DOWNLOADS.len() {
            let i = (round + k) % DOWNLOADS.len();
            let path = DOWNLOADS[i].0;
            let (p, e) = (cpu::proxy(), cpu::endpoints());
            let (took, status, len) = target.fetch(path, "/large", &mut buf).await;
            check(path, (status, len), large);
            proxy[i] += cpu::proxy() - p;
            ends[i] += cpu::endpoints() - e;
            speeds[i].push(large as f64 / took.as_secs_f64() / f64::from(1 << 20));
        }
    }
    let per_gib = |cpu: Duration| cpu.as_secs_f64() * 1000.0 / (rounds * large) as f64 * f64::from(1 << 30);
    println!("egress: downloads of {} MiB, median of {rounds} rounds, paths interleaved", large >> 20);
    println!("{:<24} {:>12} {:>7} {:>13} {:>15}", "path", "throughput", "ratio", "proxy CPU", "endpoints CPU");
    let direct = median(speeds[0].clone());
    for (i, (path, name)) in DOWNLOADS.iter().enumerate() {
        let speed = median(speeds[i].clone());
        let proxy_cpu = if *path == Path::Direct { "-".to_owned() } else { format!("{:.0} ms/GiB", per_gib(proxy[i])) };
        println!(
            "{name:<24} {:>12} {:>6.0}% {proxy_cpu:>13} {:>15}",
            format!("{speed:.0} MiB/s"),
            speed / direct * 100.0,
            format!("{:.0} ms/GiB", per_gib(ends[i])),
        );
    }
}

fn main() {
    let requests = setting("PLAYPEN_BENCH_EGRESS_REQUESTS", 2000);
    let large = setting("PLAYPEN_BENCH_EGRESS_MIB", 256) << 20;
    let rounds = setting("PLAYPEN_BENCH_EGRESS_ROUNDS", 5);
    let recordings = tempfile::tempdir().unwrap();
    let origin = fixture::start(large);
    let target = Target { origin, proxy: start_proxy(origin.port(), recordings.path().to_owned()) };
    let load =
        || std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("?").to_owned();
    println!(
        "egress: load average {} before, on {} cores",
        load(),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        new_connections(&target, requests).await;
        resolution(&target, requests).await;
        kept_alive(&target, requests).await;
        downloads(&target, large, rounds).await;
        // The proxy logs a connection once both ends closed it.
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    let logged: usize = ["egress.jsonl", "egress.jsonl.1"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(recordings.path().join(f)).ok())
        .map(|text| text.lines().count())
        .sum();
    println!(
        "egress: {logged} attempts logged (egress.jsonl and its rotation), load average {} after; \
         ratios: proxied / direct in the same run. proxy CPU: its threads' (runtime and resolver), \
         per request over {} requests of the path in a row, per GiB over the proxied downloads; \
         endpoints CPU: client's and origin's, per GiB",
        load(),
        requests.min(1000)
    );
}
