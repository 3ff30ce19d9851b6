//! Test support: a loopback HTTP/1.1 server serving fixed routes, and fake
//! artifacts shaped like the real ones (Node dist, npm packages).
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed fixture is a failed test

use flate2::write::GzEncoder;
use playpen_imagebuild::engine::Engine;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One route's answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A server on 127.0.0.1 that answers from a route table; records Authorization headers.
pub struct Server {
    pub base: String,
    pub routes: Arc<Mutex<HashMap<String, Answer>>>,
    pub seen_auth: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Answer>>> = Arc::default();
        let seen_auth: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, a) = (routes.clone(), seen_auth.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (r, a) = (r.clone(), a.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).is_err() {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if h.to_ascii_lowercase().starts_with("authorization:") {
                            a.lock().unwrap().push(h.trim().to_owned());
                        }
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let answer = r
                        .lock()
                        .unwrap()
                        .get(&path)
                        .cloned()
                        .unwrap_or(Answer { status: 404, body: b"not found".to_vec() });
                    let head = format!(
                        "HTTP/1.1 {} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        answer.status,
                        answer.body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(&answer.body);
                });
            }
        });
        Server { base, routes, seen_auth }
    }

    pub fn serve(&self, path: &str, body: impl Into<Vec<u8>>) {
        self.routes.lock().unwrap().insert(path.to_owned(), Answer { status: 200, body: body.into() });
    }

    pub fn fail(&self, path: &str, status: u16) {
        self.routes.lock().unwrap().insert(path.to_owned(), Answer { status, body: b"nope".to_vec() });
    }
}

/// A .tgz of `(path, bytes, mode)`.
pub fn tgz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

pub fn sha512_sri(bytes: &[u8]) -> String {
    use base64::Engine;
    use sha2::Digest;
    format!("sha512-{}", base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(bytes)))
}

/// Serves a nodejs.org-style dist for `version` under `/dist`; returns the tarball.
pub fn serve_node_dist(s: &Server, version: &str) -> Vec<u8> {
    let dir = format!("node-v{version}-linux-x64");
    let tarball = tgz(&[
        (&format!("{dir}/bin/node"), b"#!/bin/sh\necho fake-node\n", 0o755),
        (&format!("{dir}/bin/npm"), b"npm", 0o755),
        (&format!("{dir}/LICENSE"), b"MIT", 0o644),
    ]);
    let other = tgz(&[("x", b"other", 0o644)]);
    let shasums = format!(
        "{}  node-v{version}-darwin-arm64.tar.gz\n{}  {dir}.tar.gz\n",
        sha256_hex(&other),
        sha256_hex(&tarball)
    );
    s.serve(&format!("/dist/v{version}/SHASUMS256.txt"), shasums);
    s.serve(&format!("/dist/v{version}/{dir}.tar.gz"), tarball.clone());
    tarball
}

/// Serves a fake npm registry at `/npm` holding @playwright/cli 0.1.22 → playwright → playwright-core.
pub fn serve_npm(s: &Server) {
    let core_version = "1.64.0-alpha-1";
    let cli = tgz(&[
        ("package/package.json", format!(r#"{{"name":"@playwright/cli","version":"0.1.22","bin":{{"playwright-cli":"playwright-cli.js"}},"dependencies":{{"playwright":"{core_version}","playwright-core":"{core_version}"}}}}"#).as_bytes(), 0o644),
        ("package/playwright-cli.js", b"console.log('0.1.22')\n", 0o644),
    ]);
    let pw = tgz(&[
        ("package/package.json", format!(r#"{{"name":"playwright","version":"{core_version}","dependencies":{{"playwright-core":"{core_version}"}}}}"#).as_bytes(), 0o644),
        ("package/index.js", b"//", 0o644),
    ]);
    let core = tgz(&[
        (
            "package/package.json",
            format!(r#"{{"name":"playwright-core","version":"{core_version}"}}"#).as_bytes(),
            0o644,
        ),
        (
            "package/browsers.json",
            br#"{"browsers":[{"name":"chromium","revision":"1247","browserVersion":"147.0.7700.0"}]}"#,
            0o644,
        ),
    ]);
    let packument = |name: &str, version: &str, file: &str, bytes: &[u8], deps: &str| {
        format!(
            r#"{{"name":"{name}","versions":{{"{version}":{{"dist":{{"tarball":"{base}/npm/{file}","integrity":"{sri}"}},"dependencies":{deps}}}}}}}"#,
            base = s.base,
            sri = sha512_sri(bytes)
        )
    };
    let deps = format!(r#"{{"playwright":"{core_version}","playwright-core":"{core_version}"}}"#);
    s.serve("/npm/@playwright%2fcli", packument("@playwright/cli", "0.1.22", "cli.tgz", &cli, &deps));
    s.serve(
        "/npm/playwright",
        packument("playwright", core_version, "pw.tgz", &pw, &format!(r#"{{"playwright-core":"{core_version}"}}"#)),
    );
    s.serve("/npm/playwright-core", packument("playwright-core", core_version, "core.tgz", &core, "{}"));
    s.serve("/npm/cli.tgz", cli);
    s.serve("/npm/pw.tgz", pw);
    s.serve("/npm/core.tgz", core);
}

/// A spec using the local server for Node (dist) and npm.
pub fn local_spec(s: &Server, extra: &str) -> String {
    format!(
        "base: {{image: playpen/base:bookworm, osFamily: apt}}\nnode: {{version: 22.12.0, source: dist, distUrl: '{b}/dist'}}\ncli: {{version: 0.1.22}}\nchromium: {{source: playwright}}\nregistry: {{npm: '{b}/npm'}}\n{extra}",
        b = s.base
    )
}

/// Runs the binary; returns (exit code, stderr).
pub fn run_bin(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_playpen-imagebuild"));
    cmd.args(args).env("NO_PROXY", "127.0.0.1,localhost").env("no_proxy", "127.0.0.1,localhost");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// What prepares Docker Engine and the base image for the tests that need them.
pub const SETUP: &str = "bash tests/imagebuild/setup.sh";

/// The debootstrap base image tests/imagebuild/setup.sh makes (or `PLAYPEN_BASE_IMAGE`).
pub fn base_image() -> String {
    std::env::var("PLAYPEN_BASE_IMAGE").unwrap_or_else(|_| "playpen/base:bookworm".to_owned())
}

/// Docker Engine with the base image present; fails loudly naming the set-up script.
pub async fn engine() -> Engine {
    let engine = Engine::connect()
        .await
        .unwrap_or_else(|e| panic!("Docker Engine is required for this test: run `{SETUP}` first ({e})"));
    let base = base_image();
    assert!(
        engine.image_exists(&base).await.expect("inspecting the base image"),
        "the base image {base} is missing: run `{SETUP}` first (it makes it with debootstrap)"
    );
    engine
}
