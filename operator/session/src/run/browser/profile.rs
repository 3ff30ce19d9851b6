//! Auth state and persistent profiles. A mounted storage-state file (group
//! readable through `fsGroup`) is copied owner-only (0600) into the session's
//! 0700 namespace, loaded with `playwright-cli state-load` after every
//! daemon start, and removed once loaded. A persistent profile may hold Chromium's `Singleton*` locks
//! from the previous Pod, named after a hostname that no longer exists:
//! Chromium refuses to start until they are removed, so they are removed
//! before every start (the previous browser is gone by then).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Chromium's profile lock files (symlinks on Linux).
pub const SINGLETON_FILES: [&str; 3] = ["SingletonLock", "SingletonCookie", "SingletonSocket"];

/// Removes stale profile locks from `user_data_dir`; returns how many.
pub fn clear_stale_locks(user_data_dir: &Path) -> usize {
    SINGLETON_FILES
        .iter()
        .map(|name| user_data_dir.join(name))
        // symlink_metadata: the lock is a dangling symlink, which `exists()` would miss.
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .filter(|path| match std::fs::remove_file(path) {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "cannot remove a stale profile lock");
                false
            }
        })
        .count()
}

/// Copies `source` to `target` with mode 0600 (the copy holds live credentials).
pub fn copy_owner_only(source: &Path, target: &Path) -> std::io::Result<()> {
    write_owner_only(target, &std::fs::read(source)?)
}

/// Writes `bytes` to a new `target` with mode 0600, replacing any file
/// there (never writing through one an earlier container left).
pub fn write_owner_only(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let _ = std::fs::remove_file(target);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(target)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// `state-load`'s argv for a copied state file.
pub fn state_load_args(session: &str, file: &Path) -> Vec<String> {
    vec![format!("-s={session}"), "state-load".to_owned(), file.display().to_string()]
}

/// Where the owner-only copy of the auth state lives: the namespace root.
pub fn auth_copy_path(sockets_dir: &Path) -> PathBuf {
    sockets_dir.parent().unwrap_or(sockets_dir).join("auth-state.json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn stale_locks_are_removed_even_as_dangling_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("old-pod-hostname-1234", tmp.path().join("SingletonLock")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", tmp.path().join("SingletonSocket")).unwrap();
        std::fs::write(tmp.path().join("SingletonCookie"), "1").unwrap();
        std::fs::write(tmp.path().join("Preferences"), "{}").unwrap();
        assert_eq!(clear_stale_locks(tmp.path()), 3);
        assert!(tmp.path().join("Preferences").exists(), "the profile itself is kept");
        assert_eq!(clear_stale_locks(tmp.path()), 0);
        assert_eq!(clear_stale_locks(Path::new("/nonexistent/profile")), 0);
    }

    #[test]
    fn the_auth_copy_is_owner_only_even_over_a_loose_file() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("state.json");
        std::fs::write(&source, r#"{"cookies":[],"origins":[]}"#).unwrap();
        std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o440)).unwrap();
        let target = tmp.path().join("copy.json");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o666)).unwrap();
        copy_owner_only(&source, &target).unwrap();
        let meta = std::fs::metadata(&target).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), r#"{"cookies":[],"origins":[]}"#);
        assert!(copy_owner_only(&tmp.path().join("missing"), &target).is_err());
    }

    #[test]
    fn state_load_names_the_session_and_the_copy() {
        assert_eq!(
            state_load_args("demo", Path::new("/d/pw/x/auth-state.json")),
            ["-s=demo", "state-load", "/d/pw/x/auth-state.json"]
        );
        assert_eq!(auth_copy_path(Path::new("/d/pw/x/s")), PathBuf::from("/d/pw/x/auth-state.json"));
    }
}
