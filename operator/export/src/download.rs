//! The reader: a session's manifest and the objects it lists, from the
//! store into a local directory, each checked against the manifest (size
//! and SHA-256) before it takes its name. `kubectl playpen record` downloads
//! with it; the keys, the prefix and the manifest are the uploader's own
//! (`keys.rs`, `prefix.rs`, `manifest.rs`), so reader and writer never
//! disagree on where anything is.
//!
//! Local paths keep the layout under the prefix (`manifest.json`,
//! `video/000001.webm`, `trace/…`, `interrupted/…`); a key the manifest
//! lists outside the session's prefix, or one that is not a plain relative
//! path, is refused rather than written anywhere.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::destination::ValidDestination;
use crate::error::ExportError;
use crate::keys::{Layout, ObjectKey, SegmentKind};
use crate::manifest::Manifest;
use crate::prefix::SessionId;
use crate::store;

/// One object to fetch, and where it goes under the target directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The object.
    pub key: ObjectKey,
    /// Its path under the target directory (its key below the prefix).
    pub relative: PathBuf,
    /// Video, trace, or `None` for an `interrupted` marker.
    pub kind: Option<SegmentKind>,
    /// What the manifest says it holds: bytes and SHA-256 (markers: not listed).
    pub expect: Option<(u64, String)>,
}

/// What to download for `manifest` (pure): every segment in the manifest's
/// order, then every marker; and the keys refused (outside the prefix, or
/// not a plain relative path below it).
pub fn plan(layout: &Layout, manifest: &Manifest) -> (Vec<Wanted>, Vec<ObjectKey>) {
    let mut wanted = Vec::new();
    let mut refused = Vec::new();
    let segments = manifest.segments.iter().map(|s| (&s.key, Some(s.kind), Some((s.bytes, s.sha256.clone()))));
    let markers = manifest.interruptions.iter().map(|k| (k, None, None));
    for (key, kind, expect) in segments.chain(markers) {
        match relative(layout, key) {
            Some(relative) => wanted.push(Wanted { key: key.clone(), relative, kind, expect }),
            None => refused.push(key.clone()),
        }
    }
    (wanted, refused)
}

/// `key` below the layout's prefix as a relative path of plain names.
pub fn relative(layout: &Layout, key: &ObjectKey) -> Option<PathBuf> {
    let rest = key.as_str().strip_prefix(layout.prefix().as_str())?.strip_prefix('/')?;
    let plain = |part: &str| !part.is_empty() && part != "." && part != ".." && !part.contains('\\');
    if !rest.split('/').all(plain) {
        return None;
    }
    let path = PathBuf::from(rest);
    path.components().all(|c| matches!(c, Component::Normal(_))).then_some(path)
}

/// One object on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Its bytes.
    pub bytes: u64,
    /// It was there already, the same size and digest: not downloaded again.
    pub already: bool,
}

/// Reads one session's recordings from the store.
#[derive(Debug)]
pub struct Reader {
    store: Arc<dyn ObjectStore>,
    destination: ValidDestination,
    layout: Layout,
}

impl Reader {
    /// A reader for `session` (its prefix rendered with `created`, the
    /// session's creation, as the exporter renders it).
    pub fn new(
        destination: &ValidDestination,
        session: &SessionId,
        created: DateTime<Utc>,
    ) -> Result<Self, ExportError> {
        let layout = Layout::new(destination.prefix.render(session, created)?);
        Ok(Self { store: store::connect(destination)?, destination: destination.clone(), layout })
    }

    /// The session's keys.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// `s3://<bucket>/<prefix>/`, for messages.
    pub fn location(&self) -> String {
        format!("s3://{}/{}/", self.destination.bucket, self.layout.prefix())
    }

    /// `s3://<bucket>/<key>`, for messages.
    pub fn url(&self, key: &ObjectKey) -> String {
        format!("s3://{}/{key}", self.destination.bucket)
    }

    /// The manifest and its bytes as stored; `None` when there is none yet
    /// (nothing uploaded).
    pub async fn manifest(&self) -> Result<Option<(Manifest, Vec<u8>)>, ExportError> {
        let key = self.layout.manifest();
        let bytes = match self.get(&key).await {
            Ok(bytes) => bytes,
            Err(ExportError::Missing { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let manifest = Manifest::from_json(&bytes).map_err(|source| ExportError::Manifest {
            bucket: self.destination.bucket.clone(),
            key: key.clone(),
            source,
        })?;
        Ok(Some((manifest, bytes)))
    }

    /// An object's content (small objects: the manifest, a marker).
    pub async fn get(&self, key: &ObjectKey) -> Result<Vec<u8>, ExportError> {
        let result = self.store.get(&location(key)).await.map_err(|e| self.error("GET", key, e))?;
        Ok(result.bytes().await.map_err(|e| self.error("GET", key, e))?.to_vec())
    }

    /// Downloads `wanted` to `<dir>/<wanted.relative>`, streamed into a
    /// `.part` file beside it and renamed once its size and digest match
    /// the manifest's; a file already there with both is kept as it is.
    pub async fn fetch(&self, wanted: &Wanted, dir: &Path) -> Result<Fetched, ExportError> {
        let to = dir.join(&wanted.relative);
        let write = |source| ExportError::Write { path: to.clone(), source };
        if let Some((bytes, sha256)) = &wanted.expect {
            if let Some((have_bytes, have_sha)) = digest_of(&to).await {
                if have_bytes == *bytes && have_sha == *sha256 {
                    return Ok(Fetched { bytes: *bytes, already: true });
                }
            }
        }
        if let Some(parent) = to.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(write)?;
        }
        let part = part_path(&to);
        let outcome = self.stream_into(&wanted.key, &part).await;
        let (bytes, sha256) = match outcome {
            Ok(got) => got,
            Err(e) => {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e);
            }
        };
        if let Some(what) = wanted.expect.as_ref().and_then(|expect| mismatch(expect, bytes, &sha256)) {
            let _ = tokio::fs::remove_file(&part).await;
            return Err(ExportError::Mismatch {
                bucket: self.destination.bucket.clone(),
                key: wanted.key.clone(),
                what,
            });
        }
        tokio::fs::rename(&part, &to).await.map_err(write)?;
        Ok(Fetched { bytes, already: false })
    }

    async fn stream_into(&self, key: &ObjectKey, part: &Path) -> Result<(u64, String), ExportError> {
        let write = |source| ExportError::Write { path: part.to_owned(), source };
        let result = self.store.get(&location(key)).await.map_err(|e| self.error("GET", key, e))?;
        let mut file = tokio::fs::File::create(part).await.map_err(write)?;
        let mut stream = result.into_stream();
        let mut hasher = Sha256::new();
        let mut bytes = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.error("GET", key, e))?;
            hasher.update(&chunk);
            bytes += chunk.len() as u64;
            file.write_all(&chunk).await.map_err(write)?;
        }
        file.sync_all().await.map_err(write)?;
        Ok((bytes, hex(&hasher.finalize())))
    }

    fn error(&self, operation: &'static str, key: &ObjectKey, error: object_store::Error) -> ExportError {
        if matches!(error, object_store::Error::NotFound { .. }) {
            return ExportError::Missing { bucket: self.destination.bucket.clone(), key: key.clone() };
        }
        store::error(&self.destination, operation, key, error)
    }
}

/// What differs between what the manifest lists and what came (pure).
pub fn mismatch((bytes, sha256): &(u64, String), got_bytes: u64, got_sha256: &str) -> Option<String> {
    if *bytes != got_bytes {
        return Some(format!("the manifest lists {bytes} bytes, {got_bytes} came"));
    }
    (!sha256.eq_ignore_ascii_case(got_sha256))
        .then(|| format!("the manifest lists SHA-256 {sha256}, what came has {got_sha256}"))
}

fn part_path(to: &Path) -> PathBuf {
    let mut name = to.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    to.with_file_name(name)
}

/// Size and SHA-256 of a local file, when it exists.
async fn digest_of(path: &Path) -> Option<(u64, String)> {
    let content = tokio::fs::read(path).await.ok()?;
    Some((content.len() as u64, hex(&Sha256::digest(&content))))
}

fn location(key: &ObjectKey) -> StorePath {
    // Keys are made of checked segments (keys.rs) or refused by `relative`.
    StorePath::from(key.as_str())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::manifest::{Segment, SessionInfo};
    use crate::prefix::PrefixTemplate;

    fn session() -> SessionId {
        SessionId { namespace: "ns".into(), name: "demo".into(), uid: "u-1".into() }
    }

    fn layout() -> Layout {
        let at = Utc.with_ymd_and_hms(2026, 12, 10, 7, 0, 0).unwrap();
        Layout::new(
            PrefixTemplate::parse("rec/{namespace}/{name}/{uid}").and_then(|t| t.render(&session(), at)).unwrap(),
        )
    }

    fn key(text: &str) -> ObjectKey {
        serde_json::from_value(serde_json::Value::String(text.into())).unwrap()
    }

    #[test]
    fn keys_below_the_prefix_keep_their_layout_and_others_are_refused() {
        let l = layout();
        assert_eq!(relative(&l, &l.manifest()), Some(PathBuf::from("manifest.json")));
        assert_eq!(relative(&l, &l.video(3).unwrap()), Some(PathBuf::from("video/000003.webm")));
        assert_eq!(
            relative(&l, &l.trace("resources/ab.json").unwrap()),
            Some(PathBuf::from("trace/resources/ab.json"))
        );
        for bad in [
            "rec/ns/demo/u-1",
            "rec/ns/demo/u-1/",
            "rec/ns/demo/u-10/video/000001.webm",
            "rec/ns/other/u-1/video/000001.webm",
            "rec/ns/demo/u-1/../../../../etc/passwd",
            "rec/ns/demo/u-1/video//x",
            "rec/ns/demo/u-1/./x",
            "rec/ns/demo/u-1/a\\..\\b",
            "/rec/ns/demo/u-1/x",
        ] {
            assert_eq!(relative(&l, &key(bad)), None, "{bad}");
        }
    }

    #[test]
    fn the_plan_lists_segments_in_manifest_order_then_markers_and_refuses_strays() {
        let l = layout();
        let t = |s| Utc.with_ymd_and_hms(2026, 12, 10, 7, 0, s).unwrap();
        let mut manifest = Manifest::new(SessionInfo::from(&session()), t(0));
        let seg = |key: ObjectKey, kind, start, bytes| Segment {
            key,
            kind,
            start: t(start),
            end: t(start + 1),
            bytes,
            sha256: "ab".repeat(32),
        };
        manifest.record(seg(l.video(2).unwrap(), SegmentKind::Video, 20, 2), t(21));
        manifest.record(seg(l.video(1).unwrap(), SegmentKind::Video, 10, 1), t(22));
        manifest.record(seg(key("elsewhere/video/000009.webm"), SegmentKind::Video, 30, 9), t(23));
        manifest.interrupted(l.interrupted(t(15)), t(24));
        let (wanted, refused) = plan(&l, &manifest);
        let paths: Vec<_> = wanted.iter().map(|w| w.relative.display().to_string()).collect();
        assert_eq!(paths, ["video/000001.webm", "video/000002.webm", "interrupted/20261210T070015.000Z.json"]);
        assert_eq!(wanted[0].expect, Some((1, "ab".repeat(32))));
        assert_eq!((wanted[2].kind, &wanted[2].expect), (None, &None));
        assert_eq!(refused, [key("elsewhere/video/000009.webm")]);
    }

    #[test]
    fn a_mismatch_names_what_differs() {
        let expect = (5, "AB".repeat(32));
        assert_eq!(mismatch(&expect, 5, &"ab".repeat(32)), None, "hex in either case");
        assert_eq!(mismatch(&expect, 4, "x").as_deref(), Some("the manifest lists 5 bytes, 4 came"));
        assert!(mismatch(&expect, 5, &"cd".repeat(32)).is_some_and(|m| m.contains("SHA-256")));
        assert_eq!(part_path(Path::new("d/video/000001.webm")), PathBuf::from("d/video/000001.webm.part"));
    }
}
