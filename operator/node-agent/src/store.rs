//! The node-local store of checkpoints, under one directory on the node
//! (`/var/lib/playpen` by default; the patched shim accepts restore images
//! only under its `restore/`):
//!
//! - `snapshots/<pod uid>/`: a checkpoint (`checkpoint.img`, `pages*.img`)
//!   and its `meta.json`; written as `<pod uid>.partial` and renamed when
//!   complete, so a half-written image is never restored;
//! - `restore/<new pod uid>/`: a checkpoint moved there for exactly one new
//!   Pod. A move, not a copy: a checkpoint is restored once.
//!
//! Every path segment is a UID checked by [`live::is_uid`].

use crate::plan::Meta;
use crate::Error;
use playpen_api::live;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const META: &str = "meta.json";
const PARTIAL: &str = ".partial";

/// The store under `root`.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
}

/// What [`Store::collect`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    pub snapshots: Vec<String>,
    pub restores: Vec<String>,
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    fn snapshots(&self) -> PathBuf {
        self.root.join("snapshots")
    }

    fn restores(&self) -> PathBuf {
        self.root.join("restore")
    }

    /// A fresh, empty directory to checkpoint the Pod `uid` into.
    pub fn begin(&self, uid: &str) -> Result<PathBuf, Error> {
        check_uid(uid)?;
        let dir = self.snapshots().join(format!("{uid}{PARTIAL}"));
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("clearing", &dir)(e)),
        }
        std::fs::create_dir_all(&dir).map_err(Error::io("creating", &dir))?;
        Ok(dir)
    }

    /// Records `meta` with the image in `partial` and makes it restorable;
    /// returns the bytes stored.
    pub fn commit(&self, partial: &Path, meta: &mut Meta) -> Result<u64, Error> {
        check_uid(&meta.pod_uid)?;
        meta.bytes = size_of(partial)?;
        let json = serde_json::to_vec_pretty(meta).map_err(|source| Error::Meta { path: partial.into(), source })?;
        std::fs::write(partial.join(META), json).map_err(Error::io("writing", partial.join(META)))?;
        let done = self.snapshots().join(&meta.pod_uid);
        let _ = std::fs::remove_dir_all(&done);
        std::fs::rename(partial, &done).map_err(Error::io("renaming", &done))?;
        Ok(meta.bytes)
    }

    /// Drops a checkpoint that failed half way.
    pub fn abandon(&self, partial: &Path) {
        let _ = std::fs::remove_dir_all(partial);
    }

    /// The metadata of checkpoint `uid`.
    pub fn meta(&self, uid: &str) -> Result<Meta, Error> {
        check_uid(uid)?;
        read_meta(&self.snapshots().join(uid))
    }

    /// The metadata of every complete checkpoint.
    pub fn metas(&self) -> Result<Vec<Meta>, Error> {
        let found = entries(&self.snapshots())?;
        Ok(found.iter().filter(|(name, _)| !name.ends_with(PARTIAL)).filter_map(|(_, p)| read_meta(p).ok()).collect())
    }

    /// Moves checkpoint `from` to the restore directory of Pod `to` once
    /// `allowed` accepts its metadata; returns that directory.
    pub fn stage(
        &self,
        from: &str,
        to: &str,
        allowed: impl FnOnce(&Meta) -> Result<(), String>,
    ) -> Result<PathBuf, Error> {
        check_uid(from)?;
        check_uid(to)?;
        let target = self.restores().join(to);
        if let Ok(meta) = read_meta(&target) {
            // Staged already (the answer to the Pod was lost): the same answer.
            return match meta.pod_uid == from {
                true => allowed(&meta).map(|()| target).map_err(|why| Error::Refused { from: from.into(), why }),
                false => Err(Error::Refused { from: from.into(), why: "another checkpoint is staged for it".into() }),
            };
        }
        let source = self.snapshots().join(from);
        let meta = read_meta(&source)?;
        allowed(&meta).map_err(|why| Error::Refused { from: from.into(), why })?;
        std::fs::create_dir_all(self.restores()).map_err(Error::io("creating", self.restores()))?;
        std::fs::rename(&source, &target).map_err(Error::io("moving the checkpoint to", &target))?;
        Ok(target)
    }

    /// Removes what is no longer wanted:
    /// - a checkpoint `keep` rejects (its owner is gone), or any checkpoint
    ///   older than `max_age`;
    /// - a restore directory whose Pod `restoring` no longer lists (the Pod
    ///   started, so its image has been read, or it is gone);
    /// - a partial checkpoint older than `max_partial` (its agent died).
    pub fn collect(
        &self,
        now: SystemTime,
        max_age: Duration,
        max_partial: Duration,
        keep: impl Fn(&Meta) -> bool,
        restoring: impl Fn(&str) -> bool,
    ) -> Result<Collected, Error> {
        let mut gone = Collected::default();
        for (name, path) in entries(&self.snapshots())? {
            if let Some(uid) = name.strip_suffix(PARTIAL) {
                if age(&path, now) > max_partial {
                    let _ = std::fs::remove_dir_all(&path);
                    gone.snapshots.push(uid.to_string());
                }
                continue;
            }
            let wanted = match read_meta(&path) {
                Ok(meta) => keep(&meta) && now_secs(now).saturating_sub(meta.taken_at) <= max_age.as_secs(),
                Err(_) => age(&path, now) <= max_partial,
            };
            if !wanted {
                std::fs::remove_dir_all(&path).map_err(Error::io("removing", &path))?;
                gone.snapshots.push(name);
            }
        }
        for (name, path) in entries(&self.restores())? {
            if !restoring(&name) {
                std::fs::remove_dir_all(&path).map_err(Error::io("removing", &path))?;
                gone.restores.push(name);
            }
        }
        Ok(gone)
    }
}

/// Seconds since the Unix epoch at `at`.
pub fn now_secs(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn check_uid(uid: &str) -> Result<(), Error> {
    if live::is_uid(uid) {
        Ok(())
    } else {
        Err(Error::NoCheckpoint(format!("{uid:?} (not a Pod UID)")))
    }
}

fn read_meta(dir: &Path) -> Result<Meta, Error> {
    let path = dir.join(META);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NoCheckpoint(dir.file_name().unwrap_or_default().to_string_lossy().into()))
        }
        Err(e) => return Err(Error::io("reading", &path)(e)),
    };
    serde_json::from_slice(&bytes).map_err(|source| Error::Meta { path, source })
}

/// The entries of `dir` (none when it does not exist yet).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("listing", dir)(e)),
    };
    let mut found = Vec::new();
    for entry in read {
        let entry = entry.map_err(Error::io("listing", dir))?;
        found.push((entry.file_name().to_string_lossy().into_owned(), entry.path()));
    }
    Ok(found)
}

fn age(path: &Path, now: SystemTime) -> Duration {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(now);
    now.duration_since(modified).unwrap_or_default()
}

/// Bytes of the files directly in `dir` (a checkpoint has no subdirectories).
fn size_of(dir: &Path) -> Result<u64, Error> {
    let mut total = 0;
    for (_, path) in entries(dir)? {
        total += std::fs::metadata(&path).map_err(Error::io("sizing", &path))?.len();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Owner;

    const A: &str = "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a47";
    const B: &str = "9b926003-1796-4d30-9dd4-7fa322eade1f";

    fn taken(store: &Store, uid: &str, at: u64) -> Meta {
        let dir = store.begin(uid).unwrap();
        std::fs::write(dir.join("checkpoint.img"), vec![7u8; 1000]).unwrap();
        std::fs::write(dir.join("pages.img"), vec![0u8; 24]).unwrap();
        let mut meta = Meta {
            namespace: "team".into(),
            pod_uid: uid.into(),
            owner: Some(Owner { kind: "BrowserSession".into(), name: "s".into(), uid: "o".into() }),
            taken_at: at,
            ..Meta::default()
        };
        assert_eq!(store.commit(&dir, &mut meta).unwrap(), 1024);
        meta
    }

    #[test]
    fn a_committed_checkpoint_is_staged_once_for_the_pod_allowed() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        let meta = taken(&store, A, 100);
        assert_eq!(store.meta(A).unwrap(), Meta { bytes: 1024, ..meta });
        assert!(!root.path().join("snapshots").join(format!("{A}.partial")).exists());
        // Refused: nothing moves.
        let refused = store.stage(A, B, |_| Err("not yours".into())).unwrap_err();
        assert!(matches!(refused, Error::Refused { ref why, .. } if why == "not yours"), "{refused}");
        let staged = store.stage(A, B, |m| if m.namespace == "team" { Ok(()) } else { Err("no".into()) }).unwrap();
        assert_eq!(staged, root.path().join("restore").join(B));
        assert_eq!(std::fs::read(staged.join("checkpoint.img")).unwrap().len(), 1000);
        // Asked again for the same Pod (its answer was lost): the same directory.
        assert_eq!(store.stage(A, B, |_| Ok(())).unwrap(), staged);
        assert_eq!(store.metas().unwrap(), vec![], "moved, not copied");
        // Moved, not copied: a restore into another Pod finds nothing.
        let c = "5d0ad1c4-8f10-4a8e-9a43-3c0c7a0d2b11";
        assert!(matches!(store.stage(A, c, |_| Ok(())), Err(Error::NoCheckpoint(_))));
    }

    #[test]
    fn paths_are_only_ever_uids() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        for bad in ["../../etc", "", "a/b", A.to_uppercase().as_str()] {
            assert!(store.begin(bad).is_err(), "{bad:?}");
            assert!(store.meta(bad).is_err(), "{bad:?}");
            assert!(store.stage(bad, B, |_| Ok(())).is_err(), "{bad:?}");
            assert!(store.stage(A, bad, |_| Ok(())).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn collection_removes_what_no_one_keeps_and_restores_no_pod_waits_for() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        let now = SystemTime::now();
        taken(&store, A, now_secs(now));
        taken(&store, B, now_secs(now));
        let day = Duration::from_secs(86_400);
        let keep_a = |m: &Meta| m.pod_uid == A;
        let gone = store.collect(now, day, day, keep_a, |_| true).unwrap();
        assert_eq!(gone, Collected { snapshots: vec![B.into()], restores: vec![] });
        // Too old, even if kept.
        let later = now + Duration::from_secs(2 * 86_400);
        let gone = store.collect(later, day, day, |_| true, |_| true).unwrap();
        assert_eq!(gone.snapshots, vec![A.to_string()]);
        // A restore directory goes once its Pod no longer waits for it.
        taken(&store, A, now_secs(now));
        store.stage(A, B, |_| Ok(())).unwrap();
        assert_eq!(store.collect(now, day, day, |_| true, |_| true).unwrap(), Collected::default());
        let gone = store.collect(now, day, day, |_| true, |uid| uid != B).unwrap();
        assert_eq!(gone.restores, vec![B.to_string()]);
        // A partial checkpoint goes once it is older than its bound.
        store.begin(A).unwrap();
        assert_eq!(store.collect(now, day, day, |_| true, |_| true).unwrap(), Collected::default());
        let gone = store.collect(later, day, day, |_| true, |_| true).unwrap();
        assert_eq!(gone.snapshots, vec![A.to_string()]);
    }
}
