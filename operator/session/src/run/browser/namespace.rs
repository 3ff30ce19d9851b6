//! The per-session socket namespace: `<data-home>/pw/<8hex>/s` and `/d`,
//! created owner-only before any child sees them, after the worst-case
//! socket path has been checked against the AF_UNIX budget.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use playpen_api::layout::check_socket_budget;
use playpen_api::runtime_config::RuntimeConfig;

use crate::error::Fatal;

/// Checks the budget, then creates the namespace directories (and their
/// common parent) 0700 and verifies the result.
pub fn prepare(config: &RuntimeConfig) -> Result<(), Fatal> {
    check_socket_budget(&config.sockets_dir, &config.session_name)?;
    let sockets = Path::new(&config.sockets_dir);
    let daemon = Path::new(&config.daemon_session_dir);
    let mut dirs = vec![];
    // The namespace root `<data-home>/pw/<8hex>` when both share it.
    if let (Some(a), Some(b)) = (sockets.parent(), daemon.parent()) {
        if a == b {
            dirs.push(a);
        }
    }
    dirs.extend([sockets, daemon]);
    for dir in dirs {
        owner_only_dir(dir)?;
    }
    Ok(())
}

/// Creates `dir` (and missing parents) and makes it 0700, owned by us, not a
/// symlink. An existing directory is tightened, never trusted as it is.
pub fn owner_only_dir(dir: &Path) -> Result<(), Fatal> {
    let fail = |message: String| Fatal::Namespace { path: dir.to_owned(), message };
    DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| fail(format!("cannot create it: {e}")))?;
    let meta = fs::symlink_metadata(dir).map_err(|e| fail(format!("cannot stat it: {e}")))?;
    if !meta.file_type().is_dir() {
        return Err(fail("is not a directory (a symlink?); refusing to put sockets there".into()));
    }
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(fail(format!("is owned by uid {}, not by this process (uid {uid})", meta.uid())));
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|e| fail(format!("cannot chmod 0700: {e}")))?;
    let mode = fs::metadata(dir).map_err(|e| fail(format!("cannot stat it: {e}")))?.permissions().mode() & 0o777;
    if mode != 0o700 {
        return Err(fail(format!("mode is {mode:o} after chmod 0700")));
    }
    Ok(())
}

/// The daemon sockets of `session`: `<sockets>/cli/<16hex>-<session>.sock`.
pub fn daemon_sockets(sockets_dir: &Path, session: &str) -> Vec<PathBuf> {
    let suffix = format!("-{session}.sock");
    std::fs::read_dir(sockets_dir.join("cli"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(&suffix)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_under(root: &Path, session: &str) -> RuntimeConfig {
        let ns = root.join("pw/0123abcd");
        let mut c = crate::config::tests::sample();
        c.session_name = session.into();
        c.sockets_dir = ns.join("s").display().to_string();
        c.daemon_session_dir = ns.join("d").display().to_string();
        c
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_root_sockets_and_daemon_dirs_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config_under(tmp.path(), "demo");
        prepare(&c).unwrap();
        let ns = tmp.path().join("pw/0123abcd");
        for dir in [ns.clone(), ns.join("s"), ns.join("d")] {
            assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        }
    }

    #[test]
    fn an_existing_loose_directory_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config_under(tmp.path(), "demo");
        fs::create_dir_all(&c.sockets_dir).unwrap();
        fs::set_permissions(&c.sockets_dir, fs::Permissions::from_mode(0o777)).unwrap();
        prepare(&c).unwrap();
        assert_eq!(mode(Path::new(&c.sockets_dir)), 0o700);
    }

    #[test]
    fn a_symlink_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config_under(tmp.path(), "demo");
        let target = tmp.path().join("elsewhere");
        fs::create_dir_all(&target).unwrap();
        fs::create_dir_all(Path::new(&c.sockets_dir).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &c.sockets_dir).unwrap();
        let err = prepare(&c).unwrap_err();
        assert_eq!(err.reason(), "SocketNamespaceUnsafe");
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn over_budget_refuses_before_creating_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config_under(tmp.path(), &"x".repeat(90));
        let err = prepare(&c).unwrap_err();
        assert_eq!(err.reason(), "SocketBudgetExceeded");
        assert!(err.to_string().contains("AF_UNIX budget"), "{err}");
        assert!(!tmp.path().join("pw").exists());
    }
}
