//! `lock` against a loopback server this test starts: a nodejs.org-style dist
//! (tarball + SHASUMS256.txt made here) and a small npm registry holding the
//! CLI's closure. Proves acceptance of the right tarball, refusal of a tampered
//! one with the digest-mismatch code, the failure classes' exit codes, token
//! handling, determinism of the lock and of the layer built from it.

mod support;

use playpen_imagebuild::build::{fetch_artifacts, layer_tar};
use playpen_imagebuild::digest::Integrity;
use playpen_imagebuild::fetch::{FetchConfig, Fetcher};
use playpen_imagebuild::lock::{Lock, LockedChromium};
use playpen_imagebuild::spec::{parse_spec, NodeSource, OsFamily};
use support::*;

fn fetcher(s: &Server, cache: &std::path::Path) -> Fetcher {
    Fetcher::new(&FetchConfig {
        registry: format!("{}/npm", s.base),
        ca_bundle: None,
        token_env: None,
        cache_dir: cache.into(),
    })
    .expect("a fetcher without CA bundle or token")
}

/// A server with the 22.12.0 dist and the npm closure.
fn serving_all() -> Server {
    let s = Server::start();
    serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    s
}

/// Writes `yaml` as `<dir>/image.yaml`; returns its path.
fn write_spec(dir: &std::path::Path, yaml: &str) -> std::path::PathBuf {
    let spec = dir.join("image.yaml");
    std::fs::write(&spec, yaml).expect("writing the spec");
    spec
}

#[tokio::test]
async fn dist_node_and_npm_closure_resolve_to_a_deterministic_lock() {
    let s = Server::start();
    let tarball = serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    let dir = tempfile::tempdir().unwrap();
    let spec = parse_spec(&local_spec(&s, ""), "t").unwrap();
    let f = fetcher(&s, &dir.path().join("cache"));
    let lock = playpen_imagebuild::resolve::resolve(&f, &spec).await.unwrap();

    assert_eq!(lock.node.source, NodeSource::Dist);
    assert_eq!(lock.node.integrity, Integrity::parse(&sha256_hex(&tarball)).unwrap());
    assert_eq!(lock.node.url, format!("{}/dist/v22.12.0/node-v22.12.0-linux-x64.tar.gz", s.base));
    assert_eq!(lock.node.bin_path, "node-v22.12.0-linux-x64/bin/node");
    let names: Vec<&str> = lock.packages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["@playwright/cli", "playwright", "playwright-core"]);
    assert_eq!(
        lock.chromium,
        LockedChromium::Playwright { revision: "1247".into(), browser_version: Some("147.0.7700.0".into()) }
    );

    // Resolving again gives byte-identical lock text.
    let again = playpen_imagebuild::resolve::resolve(&f, &spec).await.unwrap();
    assert_eq!(lock.to_canonical_json(), again.to_canonical_json());

    // Two layers from one lock: one digest. Served from the cache even with the server's routes gone.
    s.routes.lock().unwrap().clear();
    let a = fetch_artifacts(&f, &lock).await.unwrap();
    let one = layer_tar(&lock, OsFamily::Apt, &a, 1_700_000_000).unwrap();
    let two = layer_tar(&lock, OsFamily::Apt, &fetch_artifacts(&f, &lock).await.unwrap(), 1_700_000_000).unwrap();
    assert_eq!(Integrity::sha256_of(&one), Integrity::sha256_of(&two));
    let mut entries = tar::Archive::new(one.as_slice());
    let paths: Vec<String> =
        entries.entries().unwrap().map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned()).collect();
    assert!(paths.contains(&"opt/playpen/node/bin/node".to_owned()));
    assert!(paths.contains(&"opt/playpen/cli/node_modules/playwright-core/browsers.json".to_owned()));
    assert!(!paths.iter().any(|p| p.ends_with("bin/npm")), "only node is taken from the dist tarball");
}

#[test]
fn a_tampered_dist_tarball_is_refused_with_exit_17() {
    let s = serving_all();
    s.serve(
        "/dist/v22.12.0/node-v22.12.0-linux-x64.tar.gz",
        tgz(&[("node-v22.12.0-linux-x64/bin/node", b"evil", 0o755)]),
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), &local_spec(&s, ""));
    let cache = dir.path().join("cache");
    let (code, err) = run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()], &[]);
    assert_eq!(code, 17, "{err}");
    assert!(err.contains("digest mismatch") && err.contains("DigestMismatch") && err.contains("remedy:"), "{err}");
    assert!(!dir.path().join("image.lock.json").exists(), "no lock is written for a refused download");
}

#[test]
fn the_right_dist_tarball_is_accepted_by_the_binary() {
    let s = serving_all();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), &local_spec(&s, ""));
    let cache = dir.path().join("cache");
    let (code, err) = run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let lock = Lock::read(&dir.path().join("image.lock.json")).unwrap();
    assert_eq!(lock.node.integrity.algorithm(), "sha256");
}

#[test]
fn a_tarball_missing_from_shasums_is_package_absent() {
    let s = serving_all();
    s.serve("/dist/v22.12.0/SHASUMS256.txt", format!("{}  node-v22.12.0-win-x64.zip\n", sha256_hex(b"x")));
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), &local_spec(&s, ""));
    let (code, err) =
        run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, 15, "{err}");
    assert!(err.contains("does not list node-v22.12.0-linux-x64.tar.gz"), "{err}");
}

#[test]
fn failure_classes_have_their_exit_codes() {
    let s = serving_all();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("image.yaml");
    let cache = dir.path().join("cache");
    let lock = |yaml: String, env: &[(&str, &str)]| {
        std::fs::write(&spec, yaml).unwrap();
        run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()], env)
    };

    // Unknown key → invalid spec (10), naming the key.
    let (code, err) = lock(local_spec(&s, "fonts: [x]\nextraPackages: [y]\n"), &[]);
    assert_eq!(code, 10, "{err}");
    assert!(err.contains("unknown field `extraPackages`"), "{err}");

    // Validation problems name the field (10).
    let (code, err) = lock(local_spec(&s, "").replace("22.12.0", "18.20.0"), &[]);
    assert_eq!(code, 10, "{err}");
    assert!(err.contains("node.version") && err.contains("20 or newer"), "{err}");

    // Version absent (15).
    let (code, err) = lock(local_spec(&s, "").replace("{version: 0.1.22}", "{version: 0.1.99}"), &[]);
    assert_eq!(code, 15, "{err}");
    assert!(err.contains("@playwright/cli@0.1.99 is not published"), "{err}");

    // Auth rejected (13) — and the token is sent, but never printed.
    s.fail("/npm/@playwright%2fcli", 401);
    let with_token = local_spec(&s, "").replace("registry: {npm:", "registry: {tokenEnv: PLAYPEN_TEST_NPM_TOKEN, npm:");
    let (code, err) = lock(with_token, &[("PLAYPEN_TEST_NPM_TOKEN", "tok-very-secret")]);
    assert_eq!(code, 13, "{err}");
    assert!(err.contains("AuthRejected") && !err.contains("tok-very-secret"), "{err}");
    assert!(s.seen_auth.lock().unwrap().iter().any(|h| h.ends_with("Bearer tok-very-secret")));

    // Unreachable registry (14): nothing listens on port 9 of loopback.
    let (code, err) = lock(local_spec(&s, "").replace(&format!("{}/npm", s.base), "http://127.0.0.1:9/npm"), &[]);
    assert_eq!(code, 14, "{err}");

    // The Chromium archive host is blocked (16) — with the registry answering again.
    serve_npm(&s);
    let archive = format!(
        "chromium: {{source: archive, url: 'http://127.0.0.1:9/chromium.tar.gz', sha256: {}, executablePath: /opt/playpen/chromium/chrome}}",
        "0".repeat(64)
    );
    let (code, err) = lock(local_spec(&s, "").replace("chromium: {source: playwright}", &archive), &[]);
    assert_eq!(code, 16, "{err}");
    assert!(err.contains("BrowserDownloadBlocked") && err.contains("chromium.source: distribution"), "{err}");

    // Credentials in a URL are refused (10) and redacted.
    let (code, err) = lock(local_spec(&s, "").replace("http://127.0.0.1", "http://bob:pw123@127.0.0.1"), &[]);
    assert_eq!(code, 10, "{err}");
    assert!(!err.contains("pw123"), "{err}");
}

#[test]
fn the_token_is_not_sent_to_other_hosts() {
    let s = Server::start();
    let other = Server::start();
    serve_node_dist(&other, "22.12.0");
    serve_npm(&s);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("image.yaml");
    let yaml = local_spec(&s, "")
        .replace(&format!("{}/dist", s.base), &format!("{}/dist", other.base))
        .replace("registry: {npm:", "registry: {tokenEnv: PLAYPEN_TEST_NPM_TOKEN, npm:");
    std::fs::write(&spec, yaml).unwrap();
    let (code, err) = run_bin(
        &["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", dir.path().join("c").to_str().unwrap()],
        &[("PLAYPEN_TEST_NPM_TOKEN", "tok-2")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(other.seen_auth.lock().unwrap().is_empty(), "the dist host must not see the registry token");
    assert!(!s.seen_auth.lock().unwrap().is_empty());
}

#[test]
fn build_refuses_a_download_that_differs_from_the_lock() {
    let s = serving_all();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), &local_spec(&s, ""));
    let lock_cache = dir.path().join("lock-cache");
    let (code, err) =
        run_bin(&["lock", "--spec", spec.to_str().unwrap(), "--cache-dir", lock_cache.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    // The registry now serves different bytes for the CLI; build (with a fresh cache) refuses before any engine call.
    s.serve("/npm/cli.tgz", tgz(&[("package/package.json", b"{}", 0o644)]));
    let (code, err) = run_bin(
        &[
            "build",
            "--lock",
            dir.path().join("image.lock.json").to_str().unwrap(),
            "--tag",
            "playpen/never:built",
            "--cache-dir",
            dir.path().join("build-cache").to_str().unwrap(),
            "--out-dir",
            dir.path().join("out").to_str().unwrap(),
        ],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    );
    assert_eq!(code, 17, "the digest check runs before the engine is contacted: {err}");
    assert!(err.contains("digest mismatch") && err.contains("cli.tgz"), "{err}");

    // With the lock's bytes (from the lock's cache) and no engine: the engine class (20).
    let (code, err) = run_bin(
        &[
            "build",
            "--lock",
            dir.path().join("image.lock.json").to_str().unwrap(),
            "--tag",
            "playpen/never:built",
            "--cache-dir",
            lock_cache.to_str().unwrap(),
            "--out-dir",
            dir.path().join("out").to_str().unwrap(),
        ],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    );
    assert_eq!(code, 20, "{err}");
    assert!(err.contains("Docker Engine is not reachable") && err.contains("setup.sh"), "{err}");
}

#[tokio::test]
async fn a_musl_base_locks_the_musl_tarball_of_the_same_release() {
    let s = Server::start();
    let glibc = serve_node_dist(&s, "22.12.0");
    // An unofficial-builds-style musl tarball beside it, listed in the same SHASUMS256.txt.
    let dir = "node-v22.12.0-linux-x64-musl";
    let musl = tgz(&[(&format!("{dir}/bin/node"), b"#!/bin/sh\necho musl-node\n", 0o755)]);
    let shasums =
        format!("{}  node-v22.12.0-linux-x64.tar.gz\n{}  {dir}.tar.gz\n", sha256_hex(&glibc), sha256_hex(&musl));
    s.serve("/dist/v22.12.0/SHASUMS256.txt", shasums);
    s.serve(&format!("/dist/v22.12.0/{dir}.tar.gz"), musl.clone());
    serve_npm(&s);
    let cache = tempfile::tempdir().unwrap();
    let yaml = local_spec(&s, "").replace("source: dist,", "source: dist, libc: musl,");
    let spec = parse_spec(&yaml, "t").unwrap();
    let lock = playpen_imagebuild::resolve::resolve(&fetcher(&s, cache.path()), &spec).await.unwrap();
    assert_eq!(lock.node.url, format!("{}/dist/v22.12.0/{dir}.tar.gz", s.base));
    assert_eq!(lock.node.integrity, Integrity::parse(&sha256_hex(&musl)).unwrap());
    assert_eq!(lock.node.bin_path, format!("{dir}/bin/node"));
}
