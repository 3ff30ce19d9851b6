//! Where the Node client finds a session: `createClientInfo` and
//! `Registry.load()` of `playwright-core/lib/tools/cli-client/registry.js`.
//!
//! Session files live in `<base>/<16hex>/<name>.session` (`<base>` is
//! `PWTEST_DAEMON_SESSION_DIR`, else `$XDG_CACHE_HOME` or `~/.cache`, plus
//! `ms-playwright/daemon`). Every file of every directory is loaded and keyed
//! by its `workspaceDir`, or the directory name without one. The client's own
//! key is the nearest ancestor of its working directory (at most ten levels)
//! holding `.playwright`, or else `sha1(<playwright-core dir>)[..16]`: the
//! same rule the daemon used to name its directory. The session is the first
//! entry under that key whose `name` matches, in directory order (libuv
//! sorts directory listings by name).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::sha1;

/// The parts of `createClientInfo` the lookup needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The nearest ancestor of the cwd holding `.playwright`.
    pub workspace_dir: Option<String>,
    /// `sha1(workspaceDir || packageRoot)[..16]`.
    pub workspace_dir_hash: String,
}

impl ClientInfo {
    /// The client's info for `cwd` and the playwright-core directory (resolved
    /// through symlinks, as Node's `__dirname` is).
    pub fn new(cwd: &Path, core_real: &Path) -> Option<Self> {
        let workspace_dir = match find_workspace_dir(cwd) {
            Some(dir) => Some(dir.to_str()?.to_owned()),
            None => None,
        };
        let hashed = match &workspace_dir {
            Some(dir) => dir.clone(),
            None => core_real.to_str()?.to_owned(),
        };
        Some(Self { workspace_dir, workspace_dir_hash: sha1::hex(hashed.as_bytes())[..16].to_owned() })
    }

    /// `clientKey`.
    pub fn key(&self) -> &str {
        self.workspace_dir.as_deref().unwrap_or(&self.workspace_dir_hash)
    }
}

/// `findWorkspaceDir`: up to ten directories from `start` holding `.playwright`.
pub fn find_workspace_dir(start: &Path) -> Option<PathBuf> {
    let mut dir = start.to_path_buf();
    for _ in 0..10 {
        if dir.join(".playwright").exists() {
            return Some(dir);
        }
        match dir.parent() {
            Some(parent) => dir = parent.to_path_buf(),
            None => break,
        }
    }
    None
}

/// `baseDaemonDir()` from the environment lookup `var`.
pub fn base_daemon_dir(var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("PWTEST_DAEMON_SESSION_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cache = match set("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        // os.homedir(): $HOME, else the password database (not modelled: hand over).
        None => PathBuf::from(set("HOME")?).join(".cache"),
    };
    Some(cache.join("ms-playwright").join("daemon"))
}

/// A session file the client would use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    /// The session file.
    pub file: PathBuf,
    /// Its `version`, if a string.
    pub version: Option<String>,
    /// Its `socketPath`, if a string.
    pub socket_path: Option<String>,
}

/// The registry could not be read the way the Node client reads it.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// `fs.promises.stat` of a directory entry failed (the Node client would throw).
    #[error("cannot stat {0}: {1}")]
    Stat(PathBuf, std::io::Error),
    /// A session file the client would load is not a JSON object of the expected shape.
    #[error("session file {0} has a shape the fast client does not model")]
    Shape(PathBuf),
}

fn sorted_names(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.file_name())).collect(),
        Err(_) => return vec![],
    };
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    names
}

/// `Registry.load()` then `registry.entry(clientInfo, session)`.
pub fn find_session(base: &Path, client: &ClientInfo, session: &str) -> Result<Option<SessionEntry>, RegistryError> {
    for hash_dir in sorted_names(base) {
        let daemon_dir = base.join(&hash_dir);
        let meta = std::fs::metadata(&daemon_dir).map_err(|e| RegistryError::Stat(daemon_dir.clone(), e))?;
        if !meta.is_dir() {
            continue;
        }
        for file in sorted_names(&daemon_dir) {
            let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(".session")) else {
                if file.as_bytes().ends_with(b".session") {
                    return Err(RegistryError::Shape(daemon_dir.join(&file)));
                }
                continue;
            };
            let path = daemon_dir.join(&file);
            let Ok(text) = std::fs::read(&path) else { continue };
            let Ok(config) = serde_json::from_slice::<serde_json::Value>(&text) else { continue };
            let Some(config) = config.as_object() else {
                return Err(RegistryError::Shape(path));
            };
            let key = match config.get("workspaceDir") {
                None | Some(serde_json::Value::Null) => hash_dir.to_str().map(str::to_owned),
                Some(serde_json::Value::String(s)) if s.is_empty() => hash_dir.to_str().map(str::to_owned),
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(RegistryError::Shape(path)),
            };
            if key.as_deref() != Some(client.key()) {
                continue;
            }
            let name = match config.get("name") {
                None | Some(serde_json::Value::Null) => stem.to_owned(),
                Some(serde_json::Value::String(s)) if s.is_empty() => stem.to_owned(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(_) => return Err(RegistryError::Shape(path)),
            };
            if name != session {
                continue;
            }
            let text_of = |k: &str| config.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            return Ok(Some(SessionEntry {
                file: path,
                version: text_of("version"),
                socket_path: text_of("socketPath"),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(key_dir: Option<&str>) -> ClientInfo {
        ClientInfo { workspace_dir: key_dir.map(str::to_owned), workspace_dir_hash: "00aa00aa00aa00aa".into() }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_base_dir_follows_the_cli() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(base_daemon_dir(env(&[("PWTEST_DAEMON_SESSION_DIR", "/d"), ("HOME", "/h")])), Some("/d".into()));
        assert_eq!(
            base_daemon_dir(env(&[("PWTEST_DAEMON_SESSION_DIR", ""), ("XDG_CACHE_HOME", "/x")])),
            Some("/x/ms-playwright/daemon".into())
        );
        assert_eq!(base_daemon_dir(env(&[("HOME", "/h")])), Some("/h/.cache/ms-playwright/daemon".into()));
        assert_eq!(base_daemon_dir(env(&[])), None);
    }

    #[test]
    fn the_client_key_is_the_workspace_or_the_core_hash() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        let core = Path::new("/root/.cache/playpen/npm/playwright-cli-0.1.22/node_modules/playwright-core");
        let info = ClientInfo::new(&deep, core).unwrap();
        assert_eq!((info.workspace_dir.as_deref(), info.key()), (None, "5f140579e5662630"));
        std::fs::create_dir(dir.path().join("a/.playwright")).unwrap();
        let info = ClientInfo::new(&deep, core).unwrap();
        let ws = dir.path().join("a").display().to_string();
        assert_eq!(info.key(), ws);
        assert_eq!(info.workspace_dir_hash, sha1::hex(ws.as_bytes())[..16]);
        // More than ten levels up is not searched.
        let deeper = dir.path().join("a/1/2/3/4/5/6/7/8/9/10");
        std::fs::create_dir_all(&deeper).unwrap();
        assert_eq!(find_workspace_dir(&deeper), None);
        assert_eq!(find_workspace_dir(deeper.parent().unwrap()), Some(dir.path().join("a")));
    }

    #[test]
    fn sessions_are_found_by_key_and_name() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        write(&b.join("00aa00aa00aa00aa/demo.session"), r#"{"name":"demo","version":"1","socketPath":"/s1"}"#);
        write(&b.join("00aa00aa00aa00aa/other.session"), r#"{"version":"2","socketPath":"/s2"}"#);
        write(&b.join("00aa00aa00aa00aa/broken.session"), "{");
        write(&b.join("00aa00aa00aa00aa/demo.err"), "");
        write(&b.join("11bb11bb11bb11bb/demo.session"), r#"{"name":"demo","workspaceDir":"/ws","socketPath":"/s3"}"#);
        write(&b.join("not-a-dir"), "");
        let found = find_session(b, &client(None), "demo").unwrap().unwrap();
        assert_eq!((found.version.as_deref(), found.socket_path.as_deref()), (Some("1"), Some("/s1")));
        // A file without a name is named after itself.
        assert_eq!(find_session(b, &client(None), "other").unwrap().unwrap().socket_path.as_deref(), Some("/s2"));
        assert_eq!(find_session(b, &client(None), "broken").unwrap(), None);
        // A workspace client sees the sessions of its workspace, wherever they are filed.
        let ws = find_session(b, &client(Some("/ws")), "demo").unwrap().unwrap();
        assert_eq!((ws.version, ws.socket_path.as_deref()), (None, Some("/s3")));
        assert_eq!(find_session(b, &client(Some("/elsewhere")), "demo").unwrap(), None);
        // No base directory: nothing is open.
        assert_eq!(find_session(&b.join("missing"), &client(None), "demo").unwrap(), None);
        write(&b.join("00aa00aa00aa00aa/weird.session"), "[1]");
        assert!(find_session(b, &client(None), "zzz").is_err());
    }
}
