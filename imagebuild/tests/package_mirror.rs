//! Real parts: Docker Engine and the debootstrap base (`tests/imagebuild/setup.sh`).
//! A base whose apt sources name a mirror on this machine that refuses or never
//! answers: `playpen-imagebuild build --no-cache` fails within a minute with exit 25
//! naming the mirror; the build watchdog stops a step that would run on.
//!
//! Traffic goes only to this machine: the mirrors are listeners (or a closed port)
//! on Docker Engine's bridge gateway, the address build containers reach the host by.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed fixture is a failed test

use bollard::query_parameters::{InspectNetworkOptions, ListContainersOptions};
use playpen_imagebuild::engine::{Engine, EngineError};
use playpen_imagebuild::failure::{Classify, FailureClass};
use playpen_imagebuild::layer::{write_tar, Entry, Tree};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{base_image, engine, run_bin, serve_node_dist, serve_npm, Server};

mod support;

/// The acceptance bound: a dead mirror is classified within a minute.
const BOUND: Duration = Duration::from_secs(60);

/// The default bridge's gateway: a host address build containers reach. Engine 20.10
/// leaves `Gateway` out of the default bridge's IPAM config; the engine gives the
/// bridge the subnet's first address then. Binding to it proves it is this machine's.
async fn bridge_gateway() -> Ipv4Addr {
    let docker = bollard::Docker::connect_with_defaults().unwrap().negotiate_version().await.unwrap();
    let net = docker.inspect_network("bridge", None::<InspectNetworkOptions>).await.unwrap();
    let config = net.ipam.and_then(|i| i.config).unwrap_or_default();
    let from_gateway = config.iter().find_map(|c| c.gateway.as_deref()?.parse::<Ipv4Addr>().ok());
    let from_subnet = config.iter().find_map(|c| {
        let network: Ipv4Addr = c.subnet.as_deref()?.split_once('/')?.0.parse().ok()?;
        Some(Ipv4Addr::from(u32::from(network) + 1))
    });
    let gateway = from_gateway.or(from_subnet).expect("Docker Engine's bridge network has an IPv4 subnet");
    assert!(TcpListener::bind((gateway, 0)).is_ok(), "the bridge gateway {gateway} is not an address of this machine");
    gateway
}

/// A context with one Dockerfile.
fn context(dockerfile: &str) -> Vec<u8> {
    let mut tree = Tree::new();
    tree.insert("Dockerfile".into(), Entry::File { data: dockerfile.as_bytes().to_vec(), mode: 0o644 });
    write_tar(&tree, 0).unwrap()
}

/// The test base with its apt sources pointing at `mirror` only, tagged `tag`.
async fn base_with_mirror(engine: &Engine, mirror: &str, tag: &str) {
    let dockerfile = format!(
        "FROM {}\nRUN echo 'deb {mirror} bookworm main' > /etc/apt/sources.list && rm -rf /etc/apt/sources.list.d/*\n",
        base_image()
    );
    let id = engine.build(context(&dockerfile), false, |_| {}).await.unwrap();
    engine.tag(&id, tag).await.unwrap();
}

/// A listener on the gateway that accepts every connection and never answers;
/// counts connections so the test knows the build's traffic reached it.
fn black_hole(ip: Ipv4Addr) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (port, accepted)
}

/// A port on the gateway that nothing listens on (the kernel answers with a reset).
fn closed_port(ip: Ipv4Addr) -> u16 {
    TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port()
}

/// Locks a distribution-Chromium spec on `base` against a loopback npm/dist server, then
/// runs `build --no-cache` from it; returns (exit code, stderr, seconds the build took).
fn lock_and_build(base: &str) -> (i32, String, Duration) {
    let s = Server::start();
    serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("image.yaml");
    std::fs::write(
        &spec,
        format!(
            "base: {{image: '{base}', osFamily: apt}}\nnode: {{version: 22.12.0, source: dist, distUrl: '{b}/dist'}}\n\
             cli: {{version: 0.1.22}}\nchromium: {{source: distribution}}\nregistry: {{npm: '{b}/npm'}}\n",
            b = s.base
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let (code, err) = run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", &cache], &[]);
    assert_eq!(code, 0, "{err}");
    let lock = dir.path().join("image.lock.json").display().to_string();
    let out = dir.path().join("out").display().to_string();
    let started = Instant::now();
    let args = [
        "build",
        "--no-cache",
        "--lock",
        &lock,
        "--tag",
        "playpen/never:built",
        "--cache-dir",
        &cache,
        "--out-dir",
        &out,
    ];
    let (code, err) = run_bin(&args, &[]);
    (code, err, started.elapsed())
}

fn assert_classified(code: i32, err: &str, mirror: &str) {
    eprintln!(
        "{}",
        err.lines()
            .filter(|l| l.starts_with("error:") || l.starts_with("failure:") || l.starts_with("remedy:"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(code, 25, "{err}");
    assert!(err.contains(&format!("the package mirror {mirror} could not be reached")), "{err}");
    assert!(err.contains("failure: PackageMirrorUnreachable (exit 25)"), "{err}");
    for setting in ["/etc/apt/sources.list", "Acquire::http::Proxy", "CA", "--build-timeout"] {
        assert!(err.contains(setting), "the remedy names {setting}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_package_mirror_is_classified_within_a_minute() {
    let engine = engine().await;
    let gateway = bridge_gateway().await;
    let mirror = format!("http://{gateway}:{}/debian", closed_port(gateway));
    let tag = "playpen/test-mirror:refused";
    base_with_mirror(&engine, &mirror, tag).await;
    let (code, err, took) = tokio::task::spawn_blocking(move || lock_and_build(tag)).await.unwrap();
    eprintln!("refused mirror: exit {code} after {:.1}s", took.as_secs_f64());
    assert_classified(code, &err, &mirror);
    assert!(err.contains("Connection refused"), "{err}");
    assert!(took < BOUND, "took {took:?}");
    let _ = engine.remove_image(tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_package_mirror_is_classified_within_a_minute() {
    let engine = engine().await;
    let gateway = bridge_gateway().await;
    let (port, accepted) = black_hole(gateway);
    let mirror = format!("http://{gateway}:{port}/debian");
    let tag = "playpen/test-mirror:black-hole";
    base_with_mirror(&engine, &mirror, tag).await;
    let (code, err, took) = tokio::task::spawn_blocking(move || lock_and_build(tag)).await.unwrap();
    eprintln!("black-holed mirror: exit {code} after {:.1}s", took.as_secs_f64());
    assert!(accepted.load(Ordering::SeqCst) > 0, "the build's apt reached the black hole: {err}");
    assert_classified(code, &err, &mirror);
    assert!(took < BOUND, "took {took:?}");
    let _ = engine.remove_image(tag).await;
}

/// Whether a container whose command contains `needle` is running.
async fn running(needle: &str) -> bool {
    let docker = bollard::Docker::connect_with_defaults().unwrap().negotiate_version().await.unwrap();
    let list = docker.list_containers(None::<ListContainersOptions>).await.unwrap();
    list.iter().any(|c| c.command.as_deref().unwrap_or_default().contains(needle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_stops_a_build_and_the_engine_kills_its_step() {
    let engine = engine().await;
    // A unique sleep, so the check below sees only this test's step.
    let nap = format!("sleep {}", 600 + std::process::id() % 1000);
    let dockerfile = format!("FROM {}\nRUN echo started && {nap}\n", base_image());
    let started = Instant::now();
    let err = engine.build_within(context(&dockerfile), true, Duration::from_secs(8), |_| {}).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, EngineError::TimedOut { secs: 8, .. }), "{err}");
    assert_eq!(err.class(), FailureClass::Engine);
    assert!(err.to_string().contains("started") && err.to_string().contains("--build-timeout"), "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // The engine cancels the build when the stream is dropped: its step does not run on.
    let mut gone = false;
    for _ in 0..20 {
        if !running(&nap).await {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(gone, "the stopped build's step ({nap}) is still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_still_waiting_on_its_mirror_when_stopped_is_the_mirrors_failure() {
    let engine = engine().await;
    let gateway = bridge_gateway().await;
    let (port, _accepted) = black_hole(gateway);
    let mirror = format!("http://{gateway}:{port}/debian");
    // apt with many short attempts (as a base with its own retry settings might have):
    // it prints `Ign:` lines and would run for minutes; the watchdog ends it.
    let dockerfile = format!(
        "FROM {}\nRUN echo 'deb {mirror} bookworm main' > /etc/apt/sources.list && \
         apt-get -o Acquire::Retries=50 -o Acquire::http::Timeout=2 update\n",
        base_image()
    );
    let started = Instant::now();
    let err = engine.build_within(context(&dockerfile), true, Duration::from_secs(25), |_| {}).await.unwrap_err();
    let took = started.elapsed();
    eprintln!("stopped after {:.1}s: {err}", took.as_secs_f64());
    assert_eq!(err.class(), FailureClass::PackageMirrorUnreachable, "{err}");
    let text = err.to_string();
    assert!(text.contains(&mirror) && text.contains("watchdog stopped the step after 25 s"), "{text}");
    assert!(took < Duration::from_secs(40), "took {took:?}");
}
