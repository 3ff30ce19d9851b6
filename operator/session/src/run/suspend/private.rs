//! A directory only the runtime uses, for the storage state in transit
//! between the runtime and the daemon (the same user): 0700 inside the
//! owner-only socket namespace, its files created 0600 before the daemon
//! writes them (a rewrite keeps the mode), and removed with everything in
//! it when dropped.

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::error::SuspendError;

/// The directory; removed on drop.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// A new directory under `parent` (which must exist).
    pub fn create(parent: &Path) -> Result<Self, SuspendError> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let path = parent.join(format!("suspend-{}-{nanos:09}", std::process::id()));
        DirBuilder::new().mode(0o700).create(&path).map_err(|source| SuspendError::File {
            what: "cannot create the private directory",
            path: path.clone(),
            source,
        })?;
        Ok(Self { path })
    }

    /// An empty file `name` in it, 0600, made now (never an existing one).
    pub fn file(&self, name: &str) -> Result<PathBuf, SuspendError> {
        let path = self.path.join(name);
        OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).map_err(|source| {
            SuspendError::File { what: "cannot create the private file", path: path.clone(), source }
        })?;
        Ok(path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), %err, "cannot remove the private directory of a suspend or resume");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn owner_only_fresh_and_gone_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let dir = PrivateDir::create(parent.path()).unwrap();
        let path = dir.path().to_owned();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        let file = dir.file("state.json").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert!(dir.file("state.json").is_err(), "never an existing file");
        std::fs::write(&file, b"{}").unwrap();
        assert_eq!(mode(&file), 0o600, "a rewrite keeps the mode");
        drop(dir);
        assert!(!path.exists());
    }
}
