//! The recording uploader against a real S3-compatible store: SeaweedFS,
//! started by `tests/objectstore/start.sh` on loopback with SigV4 enforced,
//! whose env file (endpoint, bucket, the test user's key pair) the runner
//! exports as `PLAYPEN_TEST_OBJECTSTORE`. Without it every test fails,
//! naming the command to run; nothing is skipped and nothing started here.
//!
//! Objects are read back with a client of their own (static credentials),
//! not through the uploader, and each test writes under a prefix of its own.

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::Utc;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use playpen_api::layout::{EXPORT_ACCESS_KEY_ID_KEY, EXPORT_SECRET_ACCESS_KEY_KEY};
use playpen_session::export::{
    Backoff, CredentialsError, CredentialsSource, Destination, ExportError, InterruptedMarker, Manifest, ObjectKey,
    SegmentKind, SessionId, SessionInfo, UploadOptions, Uploader, ValidDestination, MANIFEST_FORMAT,
};
use sha2::{Digest, Sha256};

const START: &str = "export PLAYPEN_TEST_OBJECTSTORE=\"$(tests/objectstore/start.sh | tail -n 1)\"";

/// The store the scripts started.
struct Store {
    endpoint: String,
    bucket: String,
    region: String,
    access_key_id: String,
    secret_access_key: String,
}

fn store() -> Store {
    let file = std::env::var("PLAYPEN_TEST_OBJECTSTORE").unwrap_or_else(|_| {
        panic!(
            "PLAYPEN_TEST_OBJECTSTORE is not set: these tests upload to a real S3-compatible store. From the \
             repository root run:\n  {START}\nthen re-run the tests (tests/run.sh does both)"
        )
    });
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{file}: {e}: is the object store running? Run:\n  {START}"));
    let vars: HashMap<&str, &str> =
        text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split_once('=')).collect();
    let var = |name: &str| {
        vars.get(name).map(|v| v.to_string()).unwrap_or_else(|| panic!("{file} has no {name}: run {START}"))
    };
    Store {
        endpoint: var("PLAYPEN_TEST_S3_ENDPOINT"),
        bucket: var("PLAYPEN_TEST_S3_BUCKET"),
        region: var("PLAYPEN_TEST_S3_REGION"),
        access_key_id: var("PLAYPEN_TEST_S3_ACCESS_KEY_ID"),
        secret_access_key: var("PLAYPEN_TEST_S3_SECRET_ACCESS_KEY"),
    }
}

/// A session of its own for each test (its UID makes the prefix unique).
fn session(test: &str) -> SessionId {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    SessionId { namespace: "it".into(), name: test.replace('_', "-"), uid: format!("{nanos:x}-{}", std::process::id()) }
}

/// Writes the key pair as a mounted Secret's files, swapped in whole like the kubelet does.
fn write_credentials(dir: &Path, key: &str, secret: &str) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, value) in [(EXPORT_ACCESS_KEY_ID_KEY, key), (EXPORT_SECRET_ACCESS_KEY_KEY, secret)] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, format!("{value}\n")).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

fn destination(store: &Store, credentials: &Path) -> ValidDestination {
    Destination {
        endpoint: store.endpoint.clone(),
        bucket: store.bucket.clone(),
        prefix: "it/{namespace}/{name}/{uid}".into(),
        region: store.region.clone(),
        path_style: true,
        credentials: CredentialsSource::Files { dir: credentials.to_owned() },
    }
    .validate()
    .unwrap()
}

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
    session: SessionId,
}

impl Fixture {
    /// The right credentials in `<tmp>/secret`.
    fn new(test: &str) -> Self {
        let fixture = Self { dir: tempfile::tempdir().unwrap(), store: store(), session: session(test) };
        write_credentials(&fixture.credentials(), &fixture.store.access_key_id, &fixture.store.secret_access_key);
        fixture
    }

    fn credentials(&self) -> PathBuf {
        self.dir.path().join("secret")
    }

    fn uploader(&self, backoff: Backoff) -> Uploader {
        let destination = destination(&self.store, &self.credentials());
        let options = UploadOptions { backoff, ..UploadOptions::default() };
        Uploader::new(&destination, &self.session, Utc::now(), &self.dir.path().join("uploaded.jsonl"), options)
            .unwrap()
    }

    fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// A client of its own, with static credentials, to read back what was stored.
    fn reader(&self) -> Arc<dyn ObjectStore> {
        Arc::new(
            AmazonS3Builder::new()
                .with_endpoint(&self.store.endpoint)
                .with_bucket_name(&self.store.bucket)
                .with_region(&self.store.region)
                .with_access_key_id(&self.store.access_key_id)
                .with_secret_access_key(&self.store.secret_access_key)
                .with_allow_http(true)
                .build()
                .unwrap(),
        )
    }

    async fn read_back(&self, key: &ObjectKey) -> Vec<u8> {
        let got = self.reader().get(&StorePath::from(key.as_str())).await;
        got.unwrap_or_else(|e| panic!("{key} is not in the store: {e}")).bytes().await.unwrap().to_vec()
    }
}

fn few_attempts() -> Backoff {
    Backoff { first: Duration::from_millis(50), max: Duration::from_millis(200), attempts: Some(2) }
}

/// Deterministic bytes that do not compress or repeat (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_small_file_goes_in_one_put_and_reads_back_byte_equal() {
    let fx = Fixture::new("small_file");
    let uploader = fx.uploader(few_attempts());
    let content = noise(100 * 1024);
    let path = fx.file("video-1.webm", &content);
    let key = uploader.layout().video(1).unwrap();
    assert!(!uploader.is_uploaded(&path));

    let upload = uploader.upload_file(&path, &key).await.unwrap();

    assert!(!upload.multipart);
    assert_eq!((upload.bytes, upload.sha256.as_str()), (content.len() as u64, sha256(&content).as_str()));
    assert!(upload.recorded && uploader.is_uploaded(&path), "the ledger counts the unchanged file as uploaded");
    assert_eq!(fx.read_back(&key).await, content);
    assert!(key.as_str().starts_with(&format!("it/it/small-file/{}/video/", fx.session.uid)), "{key}");
    let progress = uploader.progress();
    assert_eq!((progress.objects, progress.bytes, progress.last_error), (1, content.len() as u64, None));
}

#[tokio::test]
async fn a_20_mib_file_goes_as_a_multipart_upload_and_reads_back_byte_equal() {
    let fx = Fixture::new("multipart");
    let uploader = fx.uploader(few_attempts());
    let content = noise(20 * 1024 * 1024);
    let path = fx.file("video-2.webm", &content);
    let key = uploader.layout().video(2).unwrap();

    let upload = uploader.upload_file(&path, &key).await.unwrap();

    assert!(upload.multipart, "20 MiB is past the 8 MiB threshold");
    assert_eq!(upload.bytes, content.len() as u64);
    assert_eq!(upload.sha256, sha256(&content));
    let meta = fx.reader().head(&StorePath::from(key.as_str())).await.unwrap();
    assert_eq!(meta.size, content.len() as u64);
    // S3's ETag of a multipart object ends with its number of parts: 8 + 8 + 4 MiB.
    let etag = meta.e_tag.unwrap_or_default();
    assert!(etag.trim_matches('"').ends_with("-3"), "ETag {etag} is not that of a 3-part upload");
    let back = fx.read_back(&key).await;
    assert!(back == content, "the object differs from the file (sha256 {} vs {})", sha256(&back), sha256(&content));
}

#[tokio::test]
async fn the_manifest_lists_the_segments_in_order_and_an_interrupted_marker_is_written() {
    let fx = Fixture::new("manifest");
    let uploader = fx.uploader(few_attempts());
    let started = Utc::now();
    let mut manifest = Manifest::new(SessionInfo::from(&fx.session), started);
    let trace = uploader.layout().trace("trace-1765350309123.trace").unwrap();
    let videos = [uploader.layout().video(1).unwrap(), uploader.layout().video(2).unwrap()];
    // Uploaded out of order: the manifest keeps the segments' order.
    for (key, kind, offset) in
        [(&trace, SegmentKind::Trace, 0), (&videos[1], SegmentKind::Video, 60), (&videos[0], SegmentKind::Video, 0)]
    {
        let path = fx.file(&key.as_str().replace('/', "_"), key.as_str().as_bytes());
        let upload = uploader.upload_file(&path, key).await.unwrap();
        let start = started + chrono::Duration::seconds(offset);
        manifest.record(upload.segment(kind, start, start + chrono::Duration::seconds(60)), Utc::now());
    }
    let marker = InterruptedMarker {
        format: MANIFEST_FORMAT,
        session: SessionInfo::from(&fx.session),
        recording_started: Some(started),
        detected: Utc::now(),
        last_segment: Some(videos[1].clone()),
        reason: "the recording in progress at the previous start was not finished (the runtime was killed)".into(),
    };

    let marker_key = uploader.put_interrupted(&marker).await.unwrap();
    manifest.interrupted(marker_key.clone(), Utc::now());
    uploader.put_manifest(&manifest).await.unwrap();

    let stored = Manifest::from_json(&fx.read_back(&uploader.layout().manifest()).await).unwrap();
    assert_eq!(stored, manifest);
    let keys: Vec<&ObjectKey> = stored.segments.iter().map(|s| &s.key).collect();
    assert_eq!(keys, [&videos[0], &videos[1], &trace]);
    assert_eq!(stored.segments[0].sha256, sha256(videos[0].as_str().as_bytes()));
    assert_eq!(stored.interruptions, std::slice::from_ref(&marker_key));
    assert!(
        marker_key.as_str().starts_with(&format!("it/it/manifest/{}/interrupted/", fx.session.uid)),
        "{marker_key}"
    );
    let back: serde_json::Value = serde_json::from_slice(&fx.read_back(&marker_key).await).unwrap();
    assert_eq!(back["lastSegment"], videos[1].as_str());
    assert_eq!(back["session"]["uid"], fx.session.uid.as_str());
}

#[tokio::test]
async fn a_wrong_secret_key_fails_with_the_stores_answer_and_fixing_the_files_resumes() {
    let fx = Fixture::new("wrong_secret");
    let wrong = format!("{}x", fx.store.secret_access_key);
    write_credentials(&fx.credentials(), &fx.store.access_key_id, &wrong);
    let uploader = fx.uploader(few_attempts());
    let content = noise(4096);
    let path = fx.file("video-1.webm", &content);
    let key = uploader.layout().video(1).unwrap();

    let err = uploader.upload_file(&path, &key).await.unwrap_err();

    let text = format!("{err}");
    eprintln!("the refusal, as the uploader reports it: {text}");
    assert!(matches!(err, ExportError::Store { .. }), "{err:?}");
    assert_eq!(err.store_code(), Some("SignatureDoesNotMatch"), "{text}");
    assert!(text.contains("HTTP 403 SignatureDoesNotMatch: "), "{text}");
    for shown in [text.clone(), format!("{err:?}"), uploader.progress().last_error.unwrap()] {
        assert!(!shown.contains(&wrong) && !shown.contains(&fx.store.secret_access_key), "a secret leaked: {shown}");
    }
    assert!(!uploader.is_uploaded(&path));

    // The Secret is fixed: the same uploader, without a restart, succeeds.
    write_credentials(&fx.credentials(), &fx.store.access_key_id, &fx.store.secret_access_key);
    uploader.upload_file(&path, &key).await.unwrap();
    assert_eq!(fx.read_back(&key).await, content);
    assert!(uploader.is_uploaded(&path));
    assert_eq!(uploader.progress().last_error, None);
}

#[tokio::test]
async fn an_upload_retrying_on_a_wrong_secret_finishes_once_the_secret_is_fixed() {
    let fx = Fixture::new("fixed_while_retrying");
    write_credentials(&fx.credentials(), &fx.store.access_key_id, "not-the-secret-key");
    let forever = Backoff { first: Duration::from_millis(100), max: Duration::from_millis(400), attempts: None };
    let uploader = Arc::new(fx.uploader(forever));
    let content = noise(10 * 1024 * 1024);
    let path = fx.file("video-3.webm", &content);
    let key = uploader.layout().video(3).unwrap();
    let upload = tokio::spawn({
        let (uploader, path, key) = (Arc::clone(&uploader), path.clone(), key.clone());
        async move { uploader.upload_file(&path, &key).await }
    });
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match uploader.progress().last_error {
                Some(e) if e.contains("SignatureDoesNotMatch") => return e,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("the store did not refuse the wrong secret within 30 s");
    assert!(!refused.contains("not-the-secret-key"), "{refused}");

    write_credentials(&fx.credentials(), &fx.store.access_key_id, &fx.store.secret_access_key);

    let done = tokio::time::timeout(Duration::from_secs(60), upload).await;
    let upload = done.expect("the upload did not finish within 60 s of the fix").unwrap().unwrap();
    assert!(upload.multipart);
    assert_eq!(fx.read_back(&key).await, content);
}

#[tokio::test]
async fn missing_credential_files_are_named_without_reaching_the_store() {
    let fx = Fixture::new("no_credentials");
    std::fs::remove_file(fx.credentials().join(EXPORT_SECRET_ACCESS_KEY_KEY)).unwrap();
    let uploader = fx.uploader(few_attempts());
    let path = fx.file("video-1.webm", b"webm");

    let err = uploader.upload_file(&path, &uploader.layout().video(1).unwrap()).await.unwrap_err();

    match &err {
        ExportError::Credentials(CredentialsError::Missing { path }) => {
            assert!(path.ends_with(EXPORT_SECRET_ACCESS_KEY_KEY), "{err}")
        }
        other => panic!("expected the missing file to be named, got {other:?}"),
    }
}

/// `runtime.json` of a recorded session exporting to the test store.
fn exporter_config(fx: &Fixture, output_dir: &Path) -> serde_json::Value {
    serde_json::json!({
        "sessionName": "demo",
        "socketsDir": fx.dir.path().join("s").display().to_string(),
        "daemonSessionDir": fx.dir.path().join("d").display().to_string(),
        "launchConfig": "/nonexistent/config.json",
        "outputDir": output_dir.display().to_string(),
        "sandbox": "Enforced",
        "snapshotMaxAgeSeconds": 3600,
        "snapshotMaxCount": 500,
        "recordVideo": true,
        "recordTrace": true,
        "recordingExport": {
            "endpoint": fx.store.endpoint,
            "bucket": fx.store.bucket,
            "region": fx.store.region,
            "prefix": "it/{namespace}/{name}/{uid}",
            "pathStyle": true,
            "namespace": fx.session.namespace,
            "name": fx.session.name,
            "uid": fx.session.uid,
        }
    })
}

/// The exporter process: finished segments go while the session runs, the
/// one in progress waits for SIGTERM, a recording the runtime found cut
/// short gets its `interrupted` object, and the manifest lists it all.
#[tokio::test]
async fn the_exporter_uploads_finished_segments_marks_interruptions_and_the_rest_on_sigterm() {
    let fx = Fixture::new("exporter");
    let output = fx.dir.path().join("snapshots");
    let recordings = output.join("recordings");
    std::fs::create_dir_all(recordings.join("traces/resources")).unwrap();
    let (first, second) = (noise(64 * 1024), noise(32 * 1024));
    std::fs::write(recordings.join("video-1000.webm"), &first).unwrap();
    std::fs::write(recordings.join("video-2000.webm"), &second).unwrap();
    std::fs::write(recordings.join("traces/trace-1000.trace"), b"{\"type\":\"context-options\"}\n").unwrap();
    std::fs::write(recordings.join("traces/resources/abc"), b"blob").unwrap();
    let in_progress = serde_json::json!({"startedMs": 2000, "video": recordings.join("video-2000.webm"), "trace": true, "recording": true});
    std::fs::write(recordings.join("in-progress.json"), in_progress.to_string()).unwrap();
    std::fs::write(recordings.join("egress.jsonl"), b"{}\n").unwrap();
    let config = fx.dir.path().join("runtime.json");
    std::fs::write(&config, exporter_config(&fx, &output).to_string()).unwrap();

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_playpen-session"))
        .args(["export", "--config", config.to_str().unwrap()])
        .env("PLAYPEN_EXPORT_CREDENTIALS_DIR", fx.credentials())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let layout_prefix = format!("it/it/exporter/{}", fx.session.uid);
    let read = |suffix: &str| {
        let path = StorePath::from(format!("{layout_prefix}/{suffix}"));
        let reader = fx.reader();
        async move { reader.get(&path).await.unwrap_or_else(|e| panic!("{path}: {e}")).bytes().await.unwrap().to_vec() }
    };
    let manifest = || async {
        let bytes = fx.reader().get(&StorePath::from(format!("{layout_prefix}/manifest.json"))).await.ok()?;
        Manifest::from_json(&bytes.bytes().await.ok()?).ok()
    };
    let listed = wait_for(Duration::from_secs(30), || async {
        manifest().await.filter(|m| m.segments.iter().filter(|s| s.kind == SegmentKind::Trace).count() == 2)
    })
    .await
    .expect("the finished segment and the trace files within 30 s");
    let videos: Vec<&str> =
        listed.segments.iter().filter(|s| s.kind == SegmentKind::Video).map(|s| s.key.as_str()).collect();
    assert_eq!(videos, [format!("{layout_prefix}/video/000001.webm")], "only the finished segment while it records");
    assert_eq!(read("video/000001.webm").await, first);
    assert_eq!(read("trace/resources/abc").await, b"blob");
    // The status file follows within its writer's period (status_board::WRITE_EVERY, 2 s).
    let status_file = || async {
        let bytes = std::fs::read(recordings.join(".export/status.json")).ok()?;
        serde_json::from_slice::<serde_json::Value>(&bytes).ok()
    };
    let status = wait_for(Duration::from_secs(10), || async {
        status_file().await.filter(|s| s["objects"].as_u64() >= Some(3))
    })
    .await;
    let status = status.unwrap_or_else(|| panic!("the status file counts the objects: {:?}", status_now(&recordings)));
    assert!(status.get("lastError").is_none(), "{status}");
    assert!(
        fx.reader().head(&StorePath::from(format!("{layout_prefix}/egress.jsonl"))).await.is_err(),
        "the egress log is not a recording segment"
    );

    // The runtime's next start found the recording cut short.
    std::fs::write(recordings.join("interrupted.json"), serde_json::json!([in_progress]).to_string()).unwrap();
    let marked =
        wait_for(Duration::from_secs(30), || async { manifest().await.filter(|m| m.interruptions.len() == 1) })
            .await
            .expect("an interrupted marker within 30 s");
    let marker: serde_json::Value = serde_json::from_slice(&fx.read_back(&marked.interruptions[0]).await).unwrap();
    assert_eq!(marker["lastSegment"], format!("{layout_prefix}/video/000001.webm"), "{marker}");

    // The browser's close finishes the segment in progress (its note goes);
    // SIGTERM: the final pass takes it, then the exporter exits 0.
    std::fs::remove_file(recordings.join("in-progress.json")).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id().unwrap() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let code = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exits").unwrap();
    assert!(code.success(), "{code:?}");
    assert_eq!(read("video/000002.webm").await, second);
    let last = manifest().await.expect("the manifest");
    assert_eq!(last.segments.iter().filter(|s| s.kind == SegmentKind::Video).count(), 2);
}

/// Polls `check` every 250 ms until it gives a value or `within` passes.
/// The status file as it is now, for a failure's message.
fn status_now(recordings: &std::path::Path) -> String {
    std::fs::read_to_string(recordings.join(".export/status.json")).unwrap_or_default()
}

async fn wait_for<T, F, Fut>(within: Duration, check: F) -> Option<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A trace with screenshots stores a resource per screencast frame: the
/// manifest is written once for a pass's trace files, not after each (it
/// was, which made the manifest's traffic grow with the square of the
/// files: docs/recordings-export.md, Benchmark).
#[tokio::test]
async fn the_exporter_writes_the_manifest_once_per_pass_for_many_trace_files() {
    const RESOURCES: usize = 60;
    let fx = Fixture::new("many_traces");
    let output = fx.dir.path().join("snapshots");
    let recordings = output.join("recordings");
    std::fs::create_dir_all(recordings.join("traces/resources")).unwrap();
    std::fs::write(recordings.join("video-1000.webm"), noise(16 * 1024)).unwrap();
    for i in 0..RESOURCES {
        std::fs::write(recordings.join(format!("traces/resources/frame-{i:03}.jpeg")), noise(1024 + i)).unwrap();
    }
    let config = fx.dir.path().join("runtime.json");
    std::fs::write(&config, exporter_config(&fx, &output).to_string()).unwrap();

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_playpen-session"))
        .args(["export", "--config", config.to_str().unwrap()])
        .env("PLAYPEN_EXPORT_CREDENTIALS_DIR", fx.credentials())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let status = || -> Option<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(recordings.join(".export/status.json")).ok()?).ok()
    };
    let after_pass = wait_for(Duration::from_secs(30), || async {
        status().filter(|s| s["objects"].as_u64().unwrap_or(0) > RESOURCES as u64)
    })
    .await
    .expect("the first pass within 30 s");
    // One video segment and its manifest, the trace files, one manifest for them.
    assert_eq!(after_pass["objects"].as_u64(), Some(RESOURCES as u64 + 3), "{after_pass}");
    let key = format!("it/it/many-traces/{}/manifest.json", fx.session.uid);
    let stored = fx.reader().get(&StorePath::from(key)).await.unwrap().bytes().await.unwrap();
    let manifest = Manifest::from_json(&stored).unwrap();
    assert_eq!(manifest.segments.iter().filter(|s| s.kind == SegmentKind::Trace).count(), RESOURCES);
    assert_eq!(manifest.segments.iter().filter(|s| s.kind == SegmentKind::Video).count(), 1);

    // Nothing new: later passes write nothing, the final one included.
    tokio::time::sleep(Duration::from_secs(6)).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id().unwrap() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let code = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exits").unwrap();
    assert!(code.success(), "{code:?}");
    assert_eq!(status().unwrap()["objects"].as_u64(), Some(RESOURCES as u64 + 3));
}
