//! Test support: a loopback HTTP/1.1 server serving fixed routes, and fake
//! artifacts shaped like the real ones (Node dist, npm packages); a throwaway
//! containerd ([`containerd`]) and a throwaway current Docker Engine on it
//! ([`dockerd`]).
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed fixture is a failed test

pub mod containerd;
pub mod dockerd;

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

/// A server on 127.0.0.1 that answers from a route table; records request paths and Authorization headers.
pub struct Server {
    pub base: String,
    pub routes: Arc<Mutex<HashMap<String, Answer>>>,
    pub seen_auth: Arc<Mutex<Vec<String>>>,
    pub seen_paths: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Answer>>> = Arc::default();
        let seen_auth: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen_paths: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, a, sp) = (routes.clone(), seen_auth.clone(), seen_paths.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (r, a, sp) = (r.clone(), a.clone(), sp.clone());
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
                    sp.lock().unwrap().push(path.clone());
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
        Server { base, routes, seen_auth, seen_paths }
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

/// The version of `playwright` and `playwright-core` in the fake registry.
pub const CORE_VERSION: &str = "1.64.0-alpha-1";

/// `@playwright/cli`'s package.json in the fake registry.
pub fn cli_package_json() -> String {
    format!(
        r#"{{"name":"@playwright/cli","version":"0.1.22","bin":{{"playwright-cli":"playwright-cli.js"}},"dependencies":{{"playwright":"{CORE_VERSION}","playwright-core":"{CORE_VERSION}"}}}}"#
    )
}

/// The dependencies of `@playwright/cli` in the fake registry, as packument JSON.
pub fn cli_dependencies() -> String {
    format!(r#"{{"playwright":"{CORE_VERSION}","playwright-core":"{CORE_VERSION}"}}"#)
}

/// Serves `name@version`'s packument at `/npm/<name>` (its `dist.tarball` at `/npm/<file>`,
/// its sha512 integrity) and the tarball itself.
pub fn serve_package(s: &Server, name: &str, version: &str, file: &str, tarball: &[u8], deps: &str) {
    let packument = format!(
        r#"{{"name":"{name}","versions":{{"{version}":{{"dist":{{"tarball":"{base}/npm/{file}","integrity":"{sri}"}},"dependencies":{deps}}}}}}}"#,
        base = s.base,
        sri = sha512_sri(tarball)
    );
    s.serve(&format!("/npm/{}", name.replace('/', "%2f")), packument);
    s.serve(&format!("/npm/{file}"), tarball.to_vec());
}

/// Serves a fake npm registry at `/npm` holding @playwright/cli 0.1.22 → playwright → playwright-core.
pub fn serve_npm(s: &Server) {
    let core_version = CORE_VERSION;
    let cli = tgz(&[
        ("package/package.json", cli_package_json().as_bytes(), 0o644),
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
    serve_package(s, "@playwright/cli", "0.1.22", "cli.tgz", &cli, &cli_dependencies());
    let pw_deps = format!(r#"{{"playwright-core":"{core_version}"}}"#);
    serve_package(s, "playwright", core_version, "pw.tgz", &pw, &pw_deps);
    serve_package(s, "playwright-core", core_version, "core.tgz", &core, "{}");
}

/// One tar entry written byte for byte, so tests can make what `tar::Builder` refuses
/// to write: `..` and absolute names, links out, devices, names that are not UTF-8,
/// a size the data does not have.
#[derive(Clone, Debug)]
pub struct RawEntry {
    pub path: Vec<u8>,
    pub data: Vec<u8>,
    pub kind: tar::EntryType,
    pub link: Vec<u8>,
    /// The size the header declares, when not the data's.
    pub declared_size: Option<u64>,
}

impl RawEntry {
    pub fn new(path: impl AsRef<[u8]>, kind: tar::EntryType) -> RawEntry {
        RawEntry { path: path.as_ref().to_vec(), data: vec![], kind, link: vec![], declared_size: None }
    }
    pub fn file(path: impl AsRef<[u8]>, data: impl AsRef<[u8]>) -> RawEntry {
        RawEntry { data: data.as_ref().to_vec(), ..RawEntry::new(path, tar::EntryType::Regular) }
    }
    pub fn link(path: impl AsRef<[u8]>, kind: tar::EntryType, target: impl AsRef<[u8]>) -> RawEntry {
        RawEntry { link: target.as_ref().to_vec(), ..RawEntry::new(path, kind) }
    }
}

/// A .tgz of raw entries; names over 100 bytes get a GNU long-name entry first.
pub fn raw_tgz(entries: &[RawEntry]) -> Vec<u8> {
    let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for e in entries {
        if e.path.len() > 100 {
            let mut long = tar::Header::new_gnu();
            long.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
            long.set_entry_type(tar::EntryType::GNULongName);
            long.set_size(e.path.len() as u64 + 1);
            long.set_mode(0o644);
            long.set_cksum();
            b.append(&long, [e.path.as_slice(), b"\0"].concat().as_slice()).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        let name = &e.path[..e.path.len().min(100)];
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.as_old_mut().linkname[..e.link.len()].copy_from_slice(&e.link);
        h.set_entry_type(e.kind);
        h.set_mode(0o644);
        h.set_size(e.declared_size.unwrap_or(e.data.len() as u64));
        h.set_cksum();
        b.append(&h, e.data.as_slice()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
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
