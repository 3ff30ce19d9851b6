//! `playpen-session suspend-state` and `resume-state`: the runtime's side
//! of the State path of suspend and resume (docs/suspend-resume.md).
//!
//! Suspend captures the session's storage state and its tabs into a
//! [`SuspendedState`] document; resume loads one into a (fresh) browser and
//! reopens its tabs. Both talk to the session's daemon straight over its
//! socket ([`daemon`]), as the fast path does: two requests each way
//! (plus a `tab-select`), no Node client. [`capture`] and [`reopen`] are
//! the two halves; [`scripts`] builds the code they run; [`private`] holds
//! the storage state in transit; [`at_start`] reopens a resumed session's
//! mounted document once its browser runs. Nothing here logs a cookie or a
//! value.

pub mod at_start;
mod capture;
mod daemon;
mod error;
mod private;
mod reopen;
mod scripts;

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use playpen_api::runtime_config::RuntimeConfig;
use playpen_api::suspend::{parse, SuspendedState, MAX_DOCUMENT_BYTES};

pub use capture::Captured;
pub use error::SuspendError;
pub use reopen::{Reopened, TabOutcome};

use crate::config::load;
use crate::error::exit;
use daemon::Daemon;
use private::PrivateDir;

/// The session's daemon and a private directory in its socket namespace.
fn connect(config: &RuntimeConfig) -> Result<(Daemon, PrivateDir), SuspendError> {
    let socket = daemon::find(Path::new(&config.daemon_session_dir), &config.session_name)?;
    let sockets = Path::new(&config.sockets_dir);
    let private = PrivateDir::create(sockets.parent().unwrap_or(sockets))?;
    let cwd = private.path().display().to_string();
    Ok((Daemon { socket, cwd }, private))
}

/// Captures the session's state now.
pub async fn suspend(config: &RuntimeConfig) -> Result<Captured, SuspendError> {
    let (daemon, private) = connect(config)?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    capture::capture(&daemon, &private, now_ms).await
}

/// Loads `doc` into the session and reopens its tabs.
pub async fn resume(config: &RuntimeConfig, doc: &SuspendedState) -> Result<Reopened, SuspendError> {
    let (daemon, private) = connect(config)?;
    reopen::reopen(&daemon, &private, doc).await
}

/// Writes `bytes` to `out` owner-only, through a file beside it renamed
/// into place (a reader never sees half a document).
fn write_private(out: &Path, bytes: &[u8]) -> Result<(), SuspendError> {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let fail =
        |source| SuspendError::File { what: "cannot write the suspended state to", path: out.to_owned(), source };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, out));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(fail)
}

/// Reads a document, refusing more bytes than any document takes before parsing.
fn read_document(from: &Path) -> Result<(SuspendedState, Vec<playpen_api::suspend::Dropped>), SuspendError> {
    let fail = |source| SuspendError::File { what: "cannot read the suspended state", path: from.to_owned(), source };
    let mut bytes = vec![];
    std::fs::File::open(from)
        .and_then(|f| f.take(MAX_DOCUMENT_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(fail)?;
    Ok(parse(&bytes)?)
}

fn config_or_exit(config: &Path, verb: &str) -> Result<RuntimeConfig, i32> {
    load(config).map_err(|err| {
        eprintln!("playpen-session {verb}: {err}");
        exit::FATAL
    })
}

/// Runs `playpen-session suspend-state --out FILE`; the exit code.
pub async fn run_suspend(config: &Path, out: &Path) -> i32 {
    let config = match config_or_exit(config, "suspend-state") {
        Ok(config) => config,
        Err(code) => return code,
    };
    let captured = match suspend(&config).await {
        Ok(captured) => captured,
        Err(err) => {
            eprintln!("playpen-session suspend-state: {err}");
            return exit::FATAL;
        }
    };
    for dropped in &captured.dropped {
        eprintln!("playpen-session suspend-state: {dropped}");
    }
    let bytes = captured.doc.to_bytes();
    if let Err(err) = write_private(out, &bytes) {
        eprintln!("playpen-session suspend-state: {err}");
        return exit::FATAL;
    }
    let doc = &captured.doc;
    println!(
        "suspended {} tabs, {} cookies, {} localStorage origins: {} bytes to {} in {} ms",
        doc.tabs.len(),
        doc.storage.cookies.len(),
        doc.storage.origins.len(),
        bytes.len(),
        out.display(),
        captured.took.as_millis()
    );
    exit::ENDED
}

/// Runs `playpen-session resume-state --from FILE`; the exit code. A tab
/// that does not load is reported on its line; it does not fail the resume.
pub async fn run_resume(config: &Path, from: &Path) -> i32 {
    let started = Instant::now();
    let config = match config_or_exit(config, "resume-state") {
        Ok(config) => config,
        Err(code) => return code,
    };
    let result = match read_document(from) {
        Ok((doc, dropped)) => {
            for note in &dropped {
                eprintln!("playpen-session resume-state: {note}");
            }
            resume(&config, &doc).await
        }
        Err(err) => Err(err),
    };
    let reopened = match result {
        Ok(reopened) => reopened,
        Err(err) => {
            eprintln!("playpen-session resume-state: {err}");
            return exit::FATAL;
        }
    };
    for (index, tab) in reopened.tabs.iter().enumerate() {
        println!("{}", tab_line(index, tab));
    }
    println!(
        "resumed {} tabs ({} loaded) in {} ms: state-load {} ms, tabs {} ms",
        reopened.tabs.len(),
        reopened.tabs.iter().filter(|t| t.loaded).count(),
        started.elapsed().as_millis(),
        reopened.state_load.as_millis(),
        reopened.tabs_took.as_millis()
    );
    exit::ENDED
}

/// One tab's report line (pure): counts and the load error, never a value.
pub fn tab_line(index: usize, tab: &TabOutcome) -> String {
    let error = tab.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
    if tab.loaded {
        format!("tab {index}: loaded, {} fields restored, {} not found{error}", tab.restored, tab.missing)
    } else {
        format!("tab {index}: did not load{error}")
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_document_is_written_owner_only_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("state.json");
        write_private(&out, b"{}").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"{}");
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        assert!(write_private(&dir.path().join("missing/state.json"), b"{}").is_err());
    }

    #[test]
    fn an_oversized_document_is_refused_unparsed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b'{'; MAX_DOCUMENT_BYTES + 10]).unwrap();
        let err = read_document(&path).unwrap_err().to_string();
        assert!(err.contains(&format!("{} bytes, over", MAX_DOCUMENT_BYTES + 1)), "{err}");
    }

    #[test]
    fn tab_lines_say_what_came_back() {
        let ok = TabOutcome { loaded: true, restored: 2, missing: 1, error: None };
        assert_eq!(tab_line(0, &ok), "tab 0: loaded, 2 fields restored, 1 not found");
        let failed = TabOutcome { loaded: false, restored: 0, missing: 0, error: Some("net::ERR".into()) };
        assert_eq!(tab_line(3, &failed), "tab 3: did not load: net::ERR");
    }
}
