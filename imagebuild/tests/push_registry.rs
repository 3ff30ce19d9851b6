//! Real parts: Docker Engine with `playpen/base:bookworm` (`tests/imagebuild/setup.sh`)
//! and the CNCF distribution registry with htpasswd auth on loopback
//! (`tests/imagebuild/registry.sh`, whose last stdout line the runner exports as
//! `PLAYPEN_TEST_REGISTRY`; its test user's credentials are in its state dir,
//! `PLAYPEN_TEST_REGISTRY_DIR`, default /tmp/playpen-registry). A missing part
//! fails loudly naming the script to run.
//!
//! One test, in phases (the process-wide log capture and environment are shared):
//! a small image built through the crate's engine code → pushed without credentials
//! (typed auth error, exit 22) → with a wrong password (exit 22, "rejected") → with
//! credentials scoped to another host (withheld, exit 22) → with the credentials from
//! the environment (digest recorded) → the registry serves that manifest by tag with
//! that digest → the secret is nowhere in the captured log.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed fixture is a failed test

use playpen_imagebuild::failure::{Classify, FailureClass};
use playpen_imagebuild::push::{self, RegistryAuth, PASSWORD_ENV, USERNAME_ENV};
use std::io::Write;
use std::sync::{Arc, Mutex};
use support::{base_image, engine};

mod support;

const REGISTRY: &str = "bash tests/imagebuild/registry.sh";

/// Everything the crate logged (tracing, and bollard's `log` records through it).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn registry_address() -> String {
    let addr = std::env::var("PLAYPEN_TEST_REGISTRY").unwrap_or_else(|_| {
        panic!(
            "PLAYPEN_TEST_REGISTRY is not set: run `export PLAYPEN_TEST_REGISTRY=\"$({REGISTRY} | tail -n 1)\"` \
             first (tests/run.sh does)"
        )
    });
    assert!(!addr.trim().is_empty(), "PLAYPEN_TEST_REGISTRY is empty: run `{REGISTRY}`");
    addr.trim().to_owned()
}

fn registry_credentials() -> (String, String) {
    let dir = std::env::var("PLAYPEN_TEST_REGISTRY_DIR").unwrap_or_else(|_| "/tmp/playpen-registry".to_owned());
    let read = |name: &str| {
        let path = std::path::Path::new(&dir).join(name);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}: run `{REGISTRY}` (it makes the test user)", path.display()))
            .trim()
            .to_owned()
    };
    (read("username"), read("password"))
}

/// GET /v2/<name>/manifests/<tag>: (status, Docker-Content-Digest, sha256 of the body).
async fn get_manifest(addr: &str, name: &str, tag: &str, auth: Option<(&str, &str)>) -> (u16, String, String) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut req = client.get(format!("http://{addr}/v2/{name}/manifests/{tag}")).header(
        "Accept",
        "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json",
    );
    if let Some((u, p)) = auth {
        req = req.basic_auth(u, Some(p));
    }
    let resp =
        req.send().await.unwrap_or_else(|e| panic!("the registry at {addr} did not answer ({e}): run `{REGISTRY}`"));
    let status = resp.status().as_u16();
    let header =
        resp.headers().get("docker-content-digest").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = resp.bytes().await.unwrap();
    let hashed = {
        use sha2::Digest as _;
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&body)))
    };
    (status, header, hashed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_sends_credentials_from_the_environment_and_records_the_digest_the_registry_serves() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .try_init()
        .expect("the only subscriber in this test binary");

    let addr = registry_address();
    let (username, password) = registry_credentials();
    let (status, _, _) = get_manifest(&addr, "playpen/push-test", "none", None).await;
    assert_eq!(status, 401, "the registry at {addr} does not ask for credentials: run `{REGISTRY}` (htpasswd auth)");
    let engine = engine().await;

    // A small image through the crate's engine code: the base plus a label unique to this
    // run, so the manifest (and its digest) is new each time.
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    );
    let dockerfile = format!("FROM {}\nLABEL dev.playpen.test.push=\"{nonce}\"\n", base_image());
    let context = playpen_imagebuild::build::context_tar(&dockerfile, b"", None, 0).unwrap();
    let image_id = engine.build(context, false, |l| eprintln!("build: {l}")).await.unwrap();
    let name = "playpen/push-test";
    let tag = "imagebuild";
    let reference = format!("{addr}/{name}:{tag}");
    // An interrupted earlier run may have left the tag; its image goes with it.
    let _ = engine.remove_image(&reference).await;
    engine.tag(&image_id, &reference).await.unwrap();

    let mut lines: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();

    // 0. A registry nobody listens on: unreachable, exit 23, the fix names the engine's reach.
    let nowhere = format!("127.0.0.1:1/{name}:{tag}");
    engine.tag(&image_id, &nowhere).await.unwrap();
    let err = push::push(&engine, &nowhere, &RegistryAuth::none(), |l| lines.push(l.to_owned())).await.unwrap_err();
    eprintln!("unreachable: {err}");
    engine.remove_image(&nowhere).await.unwrap();
    assert_eq!(err.class(), FailureClass::PushFailed, "{err}");
    assert_eq!(err.class().exit_code(), 23);
    assert!(err.to_string().contains("Docker Engine could not reach 127.0.0.1:1"), "{err}");

    // 1. No credentials: the registry asks for some; the error names the registry, quotes the
    //    engine and says which variables to export.
    let err = push::push(&engine, &reference, &RegistryAuth::none(), |l| lines.push(l.to_owned())).await.unwrap_err();
    let text = err.to_string();
    eprintln!("without credentials: {text}");
    errors.push(text.clone());
    assert_eq!(err.class(), FailureClass::PushAuthRejected, "{text}");
    assert_eq!(err.class().exit_code(), 22);
    assert!(text.contains(&format!("the registry {addr} refused the push of {reference}")), "{text}");
    assert!(text.contains("Docker Engine said \"no basic auth credentials\""), "{text}");
    assert!(text.contains(USERNAME_ENV) && text.contains(PASSWORD_ENV), "{text}");

    // 2. A wrong password: rejected, and the message says the credentials were.
    let wrong = RegistryAuth::basic(&username, "not-the-password");
    let err = push::push(&engine, &reference, &wrong, |l| lines.push(l.to_owned())).await.unwrap_err();
    eprintln!("wrong password: {err}");
    errors.push(err.to_string());
    assert_eq!(err.class(), FailureClass::PushAuthRejected, "{err}");
    assert!(err.to_string().contains("rejected the basic credentials"), "{err}");

    // 3. The right credentials scoped to another host are withheld from this one.
    let scoped = RegistryAuth::basic(&username, &password).scoped_to("registry.example.com");
    let err = push::push(&engine, &reference, &scoped, |l| lines.push(l.to_owned())).await.unwrap_err();
    eprintln!("scoped to another host: {err}");
    errors.push(err.to_string());
    assert_eq!(err.class(), FailureClass::PushAuthRejected, "{err}");
    assert!(err.to_string().contains("PLAYPEN_REGISTRY_HOST"), "{err}");

    // 4. Credentials from the environment, as the binary reads them.
    std::env::set_var(USERNAME_ENV, &username);
    std::env::set_var(PASSWORD_ENV, &password);
    let auth = RegistryAuth::from_env().unwrap();
    let started = std::time::Instant::now();
    let report = push::push(&engine, &reference, &auth, |l| lines.push(l.to_owned())).await.unwrap();
    eprintln!("pushed {} in {:.1}s", report.pinned, started.elapsed().as_secs_f64());
    assert_eq!(report.registry, addr);
    assert_eq!(report.reference, reference);
    assert!(report.digest.starts_with("sha256:") && report.digest.len() == 71, "{report:?}");
    assert_eq!(report.pinned, format!("{addr}/{name}@{}", report.digest));
    assert!(report.credentials.starts_with("basic from PLAYPEN_REGISTRY_USERNAME"), "{report:?}");
    assert!(
        lines.iter().any(|l| l == "push: Preparing")
            && lines.iter().any(|l| l.starts_with("push: ") && l.contains(&format!("digest: {}", report.digest))),
        "progress is streamed: {lines:?}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["digest"], report.digest.as_str(), "the build report's `push.digest`");

    // 5. The registry serves that manifest by tag, with that digest (header and content),
    //    and only to an authenticated client.
    let (status, header, hashed) = get_manifest(&addr, name, tag, Some((&username, &password))).await;
    assert_eq!(status, 200);
    assert_eq!(header, report.digest, "Docker-Content-Digest of the tag");
    assert_eq!(hashed, report.digest, "sha256 of the manifest served");
    let (status, _, _) = get_manifest(&addr, name, tag, None).await;
    assert_eq!(status, 401, "the registry needs the credential");
    let repo_digests = engine.repo_digests(&reference).await.unwrap();
    assert!(repo_digests.contains(&report.pinned), "{repo_digests:?}");

    // 6. The secret is nowhere: progress lines, errors, and everything logged at TRACE
    //    (including bollard's own request logging), in any encoding: plain, and
    //    inside any base64 text in either alphabet, which covers the basic-auth
    //    header and the base64url JSON of Docker's X-Registry-Auth header.
    let log = captured.text();
    assert!(log.contains("pushing") && log.contains("/push"), "the capture works:\n{log}");
    let everything = format!("{log}\n{}\n{}", lines.join("\n"), errors.join("\n"));
    let x_registry_auth = {
        use base64::Engine as _;
        let json = serde_json::json!({"username": username, "password": password, "serveraddress": addr});
        base64::engine::general_purpose::URL_SAFE.encode(json.to_string())
    };
    assert!(
        base64_forms(&password).iter().any(|form| x_registry_auth.contains(form.as_str())),
        "the search finds the password inside an X-Registry-Auth value"
    );
    assert!(!everything.contains(password.as_str()), "the password leaked into the log output");
    for form in base64_forms(&password) {
        assert!(!everything.contains(&form), "the password leaked, base64-encoded, into the log output");
    }

    engine.remove_image(&reference).await.unwrap();
}

/// What `secret` looks like inside any base64 text, in the standard and the
/// URL-safe alphabet, at each of the three byte offsets it can start at: the
/// characters of its encoding that do not depend on the bytes around it.
fn base64_forms(secret: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use base64::Engine as _;
    let mut forms = Vec::new();
    for engine in [&STANDARD, &URL_SAFE] {
        for offset in 0..3 {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&bytes);
            // Character i holds bits 6i..6i+6: keep those wholly inside the secret.
            let start = (4 * offset).div_ceil(3);
            let end = 4 * (offset + secret.len()) / 3;
            if end > start + 4 {
                forms.push(encoded[start..end].to_owned());
            }
        }
    }
    forms
}
