//! The session's daemon, reached the way the fast path reaches it: its
//! session file in the runtime's daemon directory names the socket and the
//! version, and one `run` request line per command goes to that socket
//! (`cli/fastpath/socket.rs`), so no Node client starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::error::SuspendError;
use crate::cli::fastpath::args::Argv;
use crate::cli::fastpath::compat::check_daemon;
use crate::cli::fastpath::registry::{find_session, ClientInfo};
use crate::cli::fastpath::socket::{parse_reply, run_request, Reply};

/// The most bytes one reply may take: the capture's answer is bounded by
/// its script to a few MiB; anything larger is not a reply of ours.
const MAX_REPLY_BYTES: u64 = 16 << 20;

/// The socket of `session`'s daemon under `daemon_dir`. Every registry key
/// of the runtime's own directory is tried, in name order: the directory
/// holds only the runtime's daemon, whatever its working directory hashed to.
pub fn find(daemon_dir: &Path, session: &str) -> Result<PathBuf, SuspendError> {
    let mut keys: Vec<String> = std::fs::read_dir(daemon_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    keys.sort();
    for key in keys {
        let client = ClientInfo { workspace_dir: None, workspace_dir_hash: key };
        let Ok(Some(entry)) = find_session(daemon_dir, &client, session) else { continue };
        check_daemon(session, entry.version.as_deref().unwrap_or("(none)"))?;
        return entry.socket_path.map(PathBuf::from).ok_or(SuspendError::NoSocket(entry.file));
    }
    Err(SuspendError::NotOpen { session: session.to_owned(), dir: daemon_dir.to_owned() })
}

/// The daemon at one socket.
#[derive(Debug, Clone)]
pub struct Daemon {
    /// Its socket.
    pub socket: PathBuf,
    /// The working directory sent with each request (relative names resolve there).
    pub cwd: String,
}

impl Daemon {
    /// Runs `args` (`args[0]` the command) with `--raw` output and returns
    /// the result text; an error result is [`SuspendError::Daemon`].
    pub async fn run(
        &self,
        command: &'static str,
        args: Vec<String>,
        within: Duration,
    ) -> Result<String, SuspendError> {
        let mut positional = vec![command.to_owned()];
        positional.extend(args);
        let request = run_request(&Argv { positional, options: vec![] }, &self.cwd, true, false);
        let socket_error = |source| SuspendError::Socket { command, socket: self.socket.clone(), source };
        let exchange = async {
            let mut stream = UnixStream::connect(&self.socket).await?;
            stream.write_all(request.as_bytes()).await?;
            let mut line = Vec::with_capacity(4096);
            BufReader::new(stream.take(MAX_REPLY_BYTES)).read_until(b'\n', &mut line).await?;
            Ok::<_, std::io::Error>(line)
        };
        let line = match tokio::time::timeout(within, exchange).await {
            Err(_) => return Err(SuspendError::TimedOut { command, after: within }),
            Ok(result) => result.map_err(socket_error)?,
        };
        let Some(line) = line.strip_suffix(b"\n") else {
            let detail = format!("no complete reply line ({} bytes read)", line.len());
            return Err(SuspendError::Protocol { command, detail });
        };
        match parse_reply(line) {
            Ok(Reply::Result { is_error: false, text }) => Ok(text.unwrap_or_default()),
            Ok(Reply::Result { is_error: true, text }) => {
                Err(SuspendError::Daemon { command, message: short(&text.unwrap_or_default()) })
            }
            Ok(Reply::Error(message)) => Err(SuspendError::Daemon { command, message: short(&message) }),
            Err(err) => Err(SuspendError::Protocol { command, detail: err.to_string() }),
        }
    }
}

/// A daemon message cut to one short line: our scripts' errors name the
/// failing step, never a value, and anything longer is noise.
pub fn short(text: &str) -> String {
    let line = text.trim().trim_start_matches("### Error").trim();
    playpen_api::text::truncate(&line.replace('\n', " "), 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_session_file_names_the_socket_and_the_version_must_be_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(matches!(find(d, "demo"), Err(SuspendError::NotOpen { .. })));
        let pinned = crate::cli::fastpath::compat::BUILT_FOR_CORE;
        write(&d.join("aa/other.session"), &format!(r#"{{"name":"other","version":"{pinned}","socketPath":"/o"}}"#));
        write(&d.join("bb/demo.session"), &format!(r#"{{"name":"demo","version":"{pinned}","socketPath":"/s"}}"#));
        assert_eq!(find(d, "demo").unwrap(), PathBuf::from("/s"));
        write(&d.join("cc/old.session"), r#"{"name":"old","version":"1.50.0","socketPath":"/x"}"#);
        assert!(matches!(find(d, "old"), Err(SuspendError::Version(_))));
        write(&d.join("cc/bare.session"), &format!(r#"{{"name":"bare","version":"{pinned}"}}"#));
        assert!(matches!(find(d, "bare"), Err(SuspendError::NoSocket(_))));
    }

    #[test]
    fn daemon_errors_are_one_short_line() {
        assert_eq!(short("### Error\nError: boom\n  at x"), "Error: boom   at x");
        assert!(short(&"x".repeat(1000)).len() <= 300);
    }
}
