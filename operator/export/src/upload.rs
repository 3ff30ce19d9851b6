//! The uploader: files, the manifest and markers into the store, each
//! upload tried again with backoff until it succeeds (or the backoff's
//! attempts run out), what was uploaded noted in the ledger.
//!
//! Files up to the multipart threshold go in one `PUT`; larger ones as a
//! multipart upload of fixed-size parts, a few in flight at once, aborted
//! when it fails (stored parts cost space until then). The SHA-256 of what
//! was sent is computed on the way.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use object_store::path::Path as StorePath;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;
use tokio::task::JoinSet;

use crate::answer::StoreAnswer;
use crate::backoff::Backoff;
use crate::destination::ValidDestination;
use crate::error::ExportError;
use crate::keys::{Layout, ObjectKey, SegmentKind};
use crate::ledger::{Fingerprint, Ledger, Uploaded};
use crate::manifest::{InterruptedMarker, Manifest, Segment};
use crate::prefix::SessionId;
use crate::store;

/// S3's smallest part but the last.
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;
/// Parts sent at once in a multipart upload (memory: this many parts).
const PARTS_IN_FLIGHT: usize = 2;

/// How the uploader sends files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadOptions {
    /// Files larger than this go as a multipart upload.
    pub multipart_threshold: u64,
    /// The size of each part but the last; at least [`MIN_PART_SIZE`].
    pub part_size: usize,
    /// Attempts and waits.
    pub backoff: Backoff,
}

impl Default for UploadOptions {
    /// 8 MiB: one `PUT` for a minute of video at the usual bitrates, parts of 8 MiB beyond.
    fn default() -> Self {
        Self { multipart_threshold: 8 * 1024 * 1024, part_size: 8 * 1024 * 1024, backoff: Backoff::default() }
    }
}

/// One file uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// Where it went.
    pub key: ObjectKey,
    /// How many bytes were sent.
    pub bytes: u64,
    /// SHA-256 of what was sent, lowercase hex.
    pub sha256: String,
    /// Sent as a multipart upload.
    pub multipart: bool,
    /// The file did not change while it was read, so the ledger counts it
    /// as uploaded (a live file is not, until uploaded again once finished).
    pub recorded: bool,
}

impl Upload {
    /// Its manifest entry.
    pub fn segment(&self, kind: SegmentKind, start: DateTime<Utc>, end: DateTime<Utc>) -> Segment {
        Segment { key: self.key.clone(), kind, start, end, bytes: self.bytes, sha256: self.sha256.clone() }
    }
}

/// What the uploader has done, for the session's status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Objects stored.
    pub objects: u64,
    /// Bytes stored.
    pub bytes: u64,
    /// When the last object was stored.
    pub last_upload: Option<DateTime<Utc>>,
    /// The last failure, cleared by the next success.
    pub last_error: Option<String>,
}

/// Uploads one session's recordings.
#[derive(Debug)]
pub struct Uploader {
    store: Arc<dyn ObjectStore>,
    destination: ValidDestination,
    layout: Layout,
    ledger: Mutex<Ledger>,
    options: UploadOptions,
    progress: Mutex<Progress>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its value whole: a panic elsewhere does not spoil it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Uploader {
    /// An uploader for `session` (its prefix rendered with `created`), its
    /// ledger at `ledger_file` (read if it exists).
    pub fn new(
        destination: &ValidDestination,
        session: &SessionId,
        created: DateTime<Utc>,
        ledger_file: &Path,
        options: UploadOptions,
    ) -> Result<Self, ExportError> {
        let layout = Layout::new(destination.prefix.render(session, created)?);
        let ledger =
            Ledger::open(ledger_file).map_err(|source| ExportError::Local { path: ledger_file.to_owned(), source })?;
        Ok(Self {
            store: store::connect(destination)?,
            destination: destination.clone(),
            layout,
            ledger: Mutex::new(ledger),
            options: UploadOptions { part_size: options.part_size.max(MIN_PART_SIZE), ..options },
            progress: Mutex::new(Progress::default()),
        })
    }

    /// The session's keys.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether `path`, as it now is, is in the store (retention deletes these first).
    pub fn is_uploaded(&self, path: &Path) -> bool {
        lock(&self.ledger).is_uploaded(path)
    }

    /// Counts, times and the last error.
    pub fn progress(&self) -> Progress {
        lock(&self.progress).clone()
    }

    /// Uploads the file at `path` to `key`, trying again until it succeeds
    /// or the backoff gives up (the last error is returned).
    pub async fn upload_file(&self, path: &Path, key: &ObjectKey) -> Result<Upload, ExportError> {
        self.retrying(key, || self.upload_file_once(path, key)).await
    }

    /// Writes the manifest (`<prefix>/manifest.json`), with retries.
    pub async fn put_manifest(&self, manifest: &Manifest) -> Result<(), ExportError> {
        let key = self.layout.manifest();
        let body = manifest.to_json();
        self.retrying(&key, || self.put_once(&key, body.clone())).await
    }

    /// Writes an `interrupted` marker at `<prefix>/interrupted/<detected>.json`, with retries.
    pub async fn put_interrupted(&self, marker: &InterruptedMarker) -> Result<ObjectKey, ExportError> {
        let key = self.layout.interrupted(marker.detected);
        let body = marker.to_json();
        self.retrying(&key, || self.put_once(&key, body.clone())).await?;
        Ok(key)
    }

    /// Reads an object back (once; no retries).
    pub async fn get(&self, key: &ObjectKey) -> Result<Vec<u8>, ExportError> {
        let location = location(key);
        let result = self.store.get(&location).await.map_err(|e| self.store_error("GET", key, e))?;
        let bytes = result.bytes().await.map_err(|e| self.store_error("GET", key, e))?;
        Ok(bytes.to_vec())
    }

    async fn retrying<T, F, Fut>(&self, key: &ObjectKey, mut attempt: F) -> Result<T, ExportError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ExportError>>,
    {
        let mut n = 0;
        loop {
            n += 1;
            let error = match attempt().await {
                Ok(value) => {
                    lock(&self.progress).last_error = None;
                    return Ok(value);
                }
                Err(error) => error,
            };
            lock(&self.progress).last_error = Some(error.to_string());
            let wait = if error.is_retryable() { self.options.backoff.after(n) } else { None };
            let Some(wait) = wait else { return Err(error) };
            tracing::warn!(%key, attempt = n, %error, "recording upload failed; trying again in {wait:?}");
            tokio::time::sleep(wait).await;
        }
    }

    async fn upload_file_once(&self, path: &Path, key: &ObjectKey) -> Result<Upload, ExportError> {
        let local = |source| ExportError::Local { path: path.to_owned(), source };
        let before = Fingerprint::of(&tokio::fs::symlink_metadata(path).await.map_err(local)?);
        let mut file = tokio::fs::File::open(path).await.map_err(local)?;
        let mut hasher = Sha256::new();
        let multipart = before.bytes > self.options.multipart_threshold;
        let bytes = if multipart {
            self.put_multipart(&mut file, path, key, &mut hasher).await?
        } else {
            let mut body = Vec::new();
            file.read_to_end(&mut body).await.map_err(local)?;
            hasher.update(&body);
            let len = body.len() as u64;
            self.put_once(key, body).await?;
            len
        };
        let sha256 = hex(&hasher.finalize());
        let after = tokio::fs::symlink_metadata(path).await.ok().map(|m| Fingerprint::of(&m));
        let recorded = after == Some(before) && bytes == before.bytes;
        if recorded {
            let entry = Uploaded {
                path: path.to_owned(),
                bytes,
                modified_ns: before.modified_ns,
                key: key.clone(),
                sha256: sha256.clone(),
                at: Utc::now(),
            };
            let mut ledger = lock(&self.ledger);
            let file = ledger.file().to_owned();
            ledger.record(entry).map_err(|source| ExportError::Ledger {
                path: path.to_owned(),
                ledger: file,
                source,
            })?;
        }
        Ok(Upload { key: key.clone(), bytes, sha256, multipart, recorded })
    }

    async fn put_once(&self, key: &ObjectKey, body: Vec<u8>) -> Result<(), ExportError> {
        let len = body.len() as u64;
        self.store.put(&location(key), PutPayload::from(body)).await.map_err(|e| self.store_error("PUT", key, e))?;
        self.stored(len);
        Ok(())
    }

    async fn put_multipart(
        &self,
        file: &mut tokio::fs::File,
        path: &Path,
        key: &ObjectKey,
        hasher: &mut Sha256,
    ) -> Result<u64, ExportError> {
        const OPERATION: &str = "multipart upload";
        let mut upload =
            self.store.put_multipart(&location(key)).await.map_err(|e| self.store_error(OPERATION, key, e))?;
        let outcome = match self.send_parts(upload.as_mut(), file, path, key, hasher).await {
            Ok(total) => upload.complete().await.map(|_| total).map_err(|e| self.store_error(OPERATION, key, e)),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(total) => {
                self.stored(total);
                Ok(total)
            }
            Err(error) => {
                if let Err(e) = upload.abort().await {
                    tracing::warn!(%key, error = %self.store_error("abort", key, e), "a failed multipart upload could not be aborted; its parts stay in the store until a lifecycle rule removes them");
                }
                Err(error)
            }
        }
    }

    async fn send_parts(
        &self,
        upload: &mut dyn MultipartUpload,
        file: &mut tokio::fs::File,
        path: &Path,
        key: &ObjectKey,
        hasher: &mut Sha256,
    ) -> Result<u64, ExportError> {
        let mut parts = JoinSet::new();
        let mut total = 0;
        loop {
            let chunk = read_up_to(file, self.options.part_size)
                .await
                .map_err(|source| ExportError::Local { path: path.to_owned(), source })?;
            if chunk.is_empty() {
                break;
            }
            let last = chunk.len() < self.options.part_size;
            hasher.update(&chunk);
            total += chunk.len() as u64;
            while parts.len() >= PARTS_IN_FLIGHT {
                self.part_done(parts.join_next().await, key)?;
            }
            parts.spawn(upload.put_part(PutPayload::from(chunk)));
            if last {
                break;
            }
        }
        while let Some(done) = parts.join_next().await {
            self.part_done(Some(done), key)?;
        }
        Ok(total)
    }

    fn part_done(
        &self,
        done: Option<Result<object_store::Result<()>, tokio::task::JoinError>>,
        key: &ObjectKey,
    ) -> Result<(), ExportError> {
        match done {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(self.store_error("multipart upload", key, e)),
            Some(Err(e)) => Err(ExportError::Store {
                operation: "multipart upload",
                bucket: self.destination.bucket.clone(),
                key: key.clone(),
                answer: StoreAnswer::from_error_text(&format!("the part's task ended: {e}"), &[]),
            }),
        }
    }

    fn stored(&self, bytes: u64) {
        let mut progress = lock(&self.progress);
        progress.objects += 1;
        progress.bytes += bytes;
        progress.last_upload = Some(Utc::now());
    }

    fn store_error(&self, operation: &'static str, key: &ObjectKey, error: object_store::Error) -> ExportError {
        store::error(&self.destination, operation, key, error)
    }
}

fn location(key: &ObjectKey) -> StorePath {
    // Keys are made of checked segments (keys.rs): nothing for `from` to escape.
    StorePath::from(key.as_str())
}

/// Up to `len` bytes, fewer only at the end of the file.
async fn read_up_to(file: &mut tokio::fs::File, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read(&mut buf[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parts_are_full_but_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 25]).unwrap();
        let mut file = tokio::fs::File::open(&path).await.unwrap();
        let mut sizes = Vec::new();
        loop {
            let chunk = read_up_to(&mut file, 10).await.unwrap();
            if chunk.is_empty() {
                break;
            }
            sizes.push(chunk.len());
        }
        assert_eq!(sizes, [10, 10, 5]);
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(hex(&Sha256::digest(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
