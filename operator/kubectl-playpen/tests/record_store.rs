//! `kubectl playpen record`'s download path against a real S3-compatible
//! store: SeaweedFS, started by `tests/objectstore/start.sh` on loopback
//! with SigV4 enforced, whose env file the runner exports as
//! `PLAYPEN_TEST_OBJECTSTORE` (tests/run.sh, node and all tiers). Without it
//! every test fails, naming the command to run; nothing is skipped.
//!
//! The objects are written with the exporter's own uploader (the
//! `playpen-export` crate), so what is read back is what a session's
//! exporter leaves; each test writes under a session (UID) of its own.

// A failed step of a test panics with its location.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use kubectl_playpen::commands::record::store::{fetch_all, reader, wait_for_segment};
use kubectl_playpen::error::Error;
use playpen_api::layout::{EXPORT_ACCESS_KEY_ID_KEY, EXPORT_SECRET_ACCESS_KEY_KEY};
use playpen_api::runtime_config::RecordingExportConfig;
use playpen_export::{
    created_at, destination_of, session_of, Credentials, CredentialsSource, InterruptedMarker, Manifest, Secret,
    SegmentKind, SessionInfo, UploadOptions, Uploader, MANIFEST_FORMAT,
};

const START: &str = "export PLAYPEN_TEST_OBJECTSTORE=\"$(tests/objectstore/start.sh | tail -n 1)\"";
/// The session's creation: the prefix's `{date}` comes from it.
const CREATED: &str = "2026-12-10T07:05:09Z";

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
            "PLAYPEN_TEST_OBJECTSTORE is not set: these tests download from a real S3-compatible store. From the \
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

/// Content that differs by seed and size.
fn content(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn millis(ms: u64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(i64::try_from(ms).unwrap()).unwrap()
}

struct Fixture {
    tmp: tempfile::TempDir,
    store: Store,
    export: RecordingExportConfig,
    uploader: Uploader,
    manifest: Manifest,
}

impl Fixture {
    /// A session of its own, its exporter's uploader signing with the
    /// mounted-Secret files the exporter reads.
    fn new(test: &str) -> Self {
        let store = store();
        let tmp = tempfile::tempdir().unwrap();
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        let export = RecordingExportConfig {
            endpoint: store.endpoint.clone(),
            bucket: store.bucket.clone(),
            region: store.region.clone(),
            prefix: "it/record/{namespace}/{date}/{name}/{uid}".into(),
            path_style: true,
            namespace: "team-a".into(),
            name: test.replace('_', "-"),
            uid: format!("{nanos:x}-{}", std::process::id()),
        };
        let secret = tmp.path().join("secret");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join(EXPORT_ACCESS_KEY_ID_KEY), &store.access_key_id).unwrap();
        std::fs::write(secret.join(EXPORT_SECRET_ACCESS_KEY_KEY), &store.secret_access_key).unwrap();
        let destination = destination_of(&export, CredentialsSource::Files { dir: secret }).validate().unwrap();
        let created = created_at(Some(CREATED)).unwrap();
        let uploader = Uploader::new(
            &destination,
            &session_of(&export),
            created,
            &tmp.path().join("ledger.jsonl"),
            UploadOptions::default(),
        )
        .unwrap();
        let manifest = Manifest::new(SessionInfo::from(&session_of(&export)), Utc::now());
        Self { tmp, store, export, uploader, manifest }
    }

    fn credentials(&self, secret: &str) -> Credentials {
        Credentials {
            access_key_id: self.store.access_key_id.clone(),
            secret_access_key: Secret::new(secret),
            session_token: None,
        }
    }

    /// Uploads `bytes` as video segment `seq` started at `ms`, and the manifest.
    async fn video(&mut self, seq: u32, ms: u64, bytes: &[u8]) {
        let file = self.tmp.path().join(format!("video-{ms}.webm"));
        std::fs::write(&file, bytes).unwrap();
        let key = self.uploader.layout().video(seq).unwrap();
        let upload = self.uploader.upload_file(&file, &key).await.unwrap();
        self.manifest.record(upload.segment(SegmentKind::Video, millis(ms), Utc::now()), Utc::now());
        self.uploader.put_manifest(&self.manifest).await.unwrap();
    }

    async fn trace(&mut self, path: &str, bytes: &[u8]) {
        let file = self.tmp.path().join("trace-file");
        std::fs::write(&file, bytes).unwrap();
        let key = self.uploader.layout().trace(path).unwrap();
        let upload = self.uploader.upload_file(&file, &key).await.unwrap();
        self.manifest.record(upload.segment(SegmentKind::Trace, Utc::now(), Utc::now()), Utc::now());
        self.uploader.put_manifest(&self.manifest).await.unwrap();
    }

    async fn marker(&mut self) -> Vec<u8> {
        let marker = InterruptedMarker {
            format: MANIFEST_FORMAT,
            session: SessionInfo::from(&session_of(&self.export)),
            recording_started: Some(millis(1_796_112_000_000)),
            detected: Utc::now(),
            last_segment: Some(self.uploader.layout().video(1).unwrap()),
            reason: "the recording in progress at the last start was not finished".into(),
        };
        let key = self.uploader.put_interrupted(&marker).await.unwrap();
        self.manifest.interrupted(key, Utc::now());
        self.uploader.put_manifest(&self.manifest).await.unwrap();
        marker.to_json()
    }

    fn out_dir(&self) -> PathBuf {
        self.tmp.path().join("out")
    }

    async fn download(
        &self,
        secret: &str,
    ) -> (Result<kubectl_playpen::commands::record::store::Summary, Error>, String) {
        let reader = reader(&self.export, self.credentials(secret), Some(CREATED), "reading it").unwrap();
        let mut out = Vec::new();
        let result = fetch_all(&reader, &self.out_dir(), &mut out, "reading it").await;
        (result, String::from_utf8(out).unwrap())
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn everything_the_manifest_lists_is_downloaded_checked_and_laid_out_as_under_the_prefix() {
    let mut f = Fixture::new("record_everything");
    let (one, two) = (content(1, 300_000), content(2, 9 * 1024 * 1024 + 17));
    f.video(1, 1_796_112_000_000, &one).await;
    f.video(2, 1_796_112_060_000, &two).await;
    f.trace("resources/page@abc-1.jpeg", b"frame").await;
    let marker = f.marker().await;

    let (result, out) = f.download(&f.store.secret_access_key.clone()).await;
    let summary = result.unwrap_or_else(|e| panic!("{e}"));
    let dir = f.out_dir();
    assert_eq!(read(&dir.join("video/000001.webm")), one);
    assert_eq!(read(&dir.join("video/000002.webm")), two, "a multipart upload reads back whole");
    assert_eq!(read(&dir.join("trace/resources/page@abc-1.jpeg")), b"frame");
    let markers: Vec<_> = std::fs::read_dir(dir.join("interrupted")).unwrap().flatten().collect();
    assert_eq!(markers.len(), 1);
    assert_eq!(read(&markers[0].path()), marker);
    assert_eq!(Manifest::from_json(&read(&dir.join("manifest.json"))).unwrap(), f.manifest);
    assert_eq!((summary.objects, summary.videos, summary.already), (5, 2, 0), "{out}");
    let leftovers: Vec<_> = walk(&dir).into_iter().filter(|p| p.to_string_lossy().ends_with(".part")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let location = format!("s3://{}/it/record/team-a/2026-12-10/record-everything/{}/", f.store.bucket, f.export.uid);
    assert!(out.contains(&format!("{location}video/000001.webm -> ")), "the prefix the exporter rendered:\n{out}");
    assert!(out.contains("2 video segment(s), 1 interrupted marker(s)"), "{out}");
    assert!(out.lines().last().unwrap().contains("ffmpeg -f concat"), "a stitch hint last:\n{out}");
    assert!(!out.contains(&f.store.secret_access_key), "{out}");

    // Again: what is there and matches is kept; a damaged copy is fetched again.
    std::fs::write(dir.join("video/000001.webm"), content(9, one.len())).unwrap();
    let (result, out) = f.download(&f.store.secret_access_key.clone()).await;
    let summary = result.unwrap();
    // The second video and the trace; markers (not in the manifest's sizes) come again.
    assert_eq!(summary.already, 2, "{out}");
    assert_eq!(read(&dir.join("video/000001.webm")), one, "the damaged copy was replaced");
}

#[tokio::test]
async fn a_wrong_secret_fails_with_the_store_s_answer_and_never_shows_a_key() {
    let mut f = Fixture::new("record_wrong_secret");
    f.video(1, 1_796_112_000_000, b"webm").await;
    let wrong = format!("Wr0ng{}", &f.store.secret_access_key[5..]);
    let (result, out) = f.download(&wrong).await;
    let err = result.unwrap_err();
    let text = format!("{err}\n{err:?}\n{out}");
    assert!(text.contains("HTTP 403 SignatureDoesNotMatch"), "the store's own answer: {text}");
    assert!(err.to_string().starts_with("reading it: GET s3://"), "what was being done: {err}");
    assert!(!text.contains(&wrong) && !text.contains(&f.store.secret_access_key), "no secret key: {text}");
    assert!(!f.out_dir().join("video").exists(), "nothing written");
}

#[tokio::test]
async fn a_session_with_nothing_uploaded_yet_says_so() {
    let f = Fixture::new("record_nothing_yet");
    let (result, _) = f.download(&f.store.secret_access_key.clone()).await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("nothing in the object store yet at s3://") && err.contains("--rotate"), "{err}");
}

#[tokio::test]
async fn an_object_that_is_not_what_the_manifest_lists_is_refused_and_not_kept() {
    let mut f = Fixture::new("record_mismatch");
    f.video(1, 1_796_112_000_000, b"the segment").await;
    f.manifest.segments[0].sha256 = "00".repeat(32);
    f.uploader.put_manifest(&f.manifest).await.unwrap();
    let (result, _) = f.download(&f.store.secret_access_key.clone()).await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("the manifest lists SHA-256 0000") && err.contains("discarded"), "{err}");
    let dir = f.out_dir();
    assert!(!dir.join("video/000001.webm").exists() && !dir.join("video/000001.webm.part").exists());
}

#[tokio::test]
async fn a_rotated_segment_is_waited_for_until_the_manifest_lists_it() {
    let mut f = Fixture::new("record_rotated");
    f.video(1, 1_796_112_000_000, b"first").await;
    let r = reader(&f.export, f.credentials(&f.store.secret_access_key), Some(CREATED), "waiting").unwrap();
    let finished = 1_796_112_060_000;
    let poll = Duration::from_millis(200);
    let err = wait_for_segment(&r, finished, Duration::from_secs(1), poll, "waiting").await.unwrap_err();
    assert!(matches!(&err, Error::Timeout(why) if why.contains("video-1796112060000.webm")), "{err}");
    wait_for_segment(&r, 1_796_112_000_000, Duration::from_secs(1), poll, "waiting").await.unwrap();

    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        wait_for_segment(&r, finished, Duration::from_secs(30), poll, "waiting").await.map(|()| started.elapsed())
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiting.is_finished(), "not listed yet");
    f.video(2, finished, b"second").await;
    let waited = waiting.await.unwrap().unwrap();
    assert!(waited >= Duration::from_secs(1) && waited < Duration::from_secs(10), "{waited:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
