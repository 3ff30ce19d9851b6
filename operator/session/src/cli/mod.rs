//! `playpen-session cli <args…>`: the logic of the `playwright-cli` wrapper the
//! image puts on PATH. The wrapper script pins the
//! verified Node interpreter and the package (`PLAYPEN_NODE`,
//! `PLAYPEN_CLI_PACKAGE`) and execs this; this execs
//! `<node> <package>/playwright-cli.js <args…>`, giving a bare `snapshot` a
//! unique `--filename` in the snapshot directory so that stdout carries a
//! path (about 150 bytes) instead of the whole tree. Commands the session's
//! daemon serves are answered natively first ([`crate::cli::fastpath`]).

pub mod fastpath;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use playpen_api::layout::env;

use crate::agent_close::{self, ALL_SESSIONS};

/// Options of the CLI that take their value as the next argument.
const VALUE_OPTIONS: &[&str] = &["-s", "--session", "--config", "--browser", "--profile"];
/// Commands that end a session's browser on purpose ([`crate::agent_close`]).
const CLOSING_COMMANDS: &[&str] = &["close", "close-all", "kill-all"];

/// A `cli` call's arguments, read once, in one pass, for the wrapper's own
/// rules (the snapshot filename, the close note). The fast path reads them
/// again with the CLI's minimist rules ([`fastpath::args::plan`]), which
/// need the installed `help.json`; the wrapper's rules run before and
/// without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    args: &'a [String],
    /// The CLI command: the first positional argument.
    pub command: Option<&'a str>,
    /// The session named by the last `-s`/`--session` (`Some(None)`: named
    /// last with no value after it).
    named_session: Option<Option<&'a str>>,
    /// Whether a `--filename` is given.
    has_filename: bool,
}

impl<'a> Call<'a> {
    /// Reads `args` (the CLI's own arguments).
    pub fn parse(args: &'a [String]) -> Self {
        let mut call = Call { args, command: None, named_session: None, has_filename: false };
        let (mut skip_value, mut session_value) = (false, false);
        for arg in args {
            call.has_filename |= arg == "--filename" || arg.starts_with("--filename=");
            if std::mem::take(&mut session_value) {
                call.named_session = Some(Some(arg));
            } else if let Some(value) = arg.strip_prefix("-s=").or_else(|| arg.strip_prefix("--session=")) {
                call.named_session = Some(Some(value));
            } else if arg == "-s" || arg == "--session" {
                call.named_session = Some(None);
                session_value = true;
            }
            if call.command.is_none() {
                if skip_value {
                    skip_value = false;
                } else if arg.starts_with('-') {
                    skip_value = VALUE_OPTIONS.contains(&arg.as_str());
                } else {
                    call.command = Some(arg);
                }
            }
        }
        call
    }

    /// The arguments, with `--filename=<output_dir>/snapshot-<unique>.yml`
    /// added to a bare `snapshot` (one without `--filename`).
    pub fn with_snapshot_file(&self, output_dir: &str, unique: &str) -> Vec<String> {
        let mut out = self.args.to_vec();
        if self.command == Some("snapshot") && !self.has_filename {
            out.push(format!("--filename={}/snapshot-{unique}.yml", output_dir.trim_end_matches('/')));
        }
        out
    }

    /// The session a `close` ends, as the CLI resolves it: `-s`/`--session`,
    /// else `PLAYWRIGHT_CLI_SESSION` (`env_session`), else `default`;
    /// [`ALL_SESSIONS`] for `close-all` and `kill-all`; `None` for any other
    /// command.
    pub fn closed_session(&self, env_session: Option<&str>) -> Option<String> {
        let command = self.command.filter(|c| CLOSING_COMMANDS.contains(c))?;
        if command != "close" {
            return Some(ALL_SESSIONS.to_owned());
        }
        let named = self.named_session.flatten().map(str::to_owned);
        Some(
            named
                .or_else(|| env_session.map(str::to_owned))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "default".into()),
        )
    }
}

/// The CLI command in `args`: the first positional argument.
pub fn command_of(args: &[String]) -> Option<&str> {
    Call::parse(args).command
}

/// `args`, with `--filename=<output_dir>/snapshot-<unique>.yml` added to a
/// bare `snapshot` (one without `--filename`).
pub fn with_snapshot_file(args: &[String], output_dir: &str, unique: &str) -> Vec<String> {
    Call::parse(args).with_snapshot_file(output_dir, unique)
}

/// The session a `close` in `args` ends ([`Call::closed_session`]).
pub fn closed_session(args: &[String], env_session: Option<&str>) -> Option<String> {
    Call::parse(args).closed_session(env_session)
}

/// Leaves the note that tells the runtime a close is the agent's own, before
/// the CLI runs it. Best effort and silent: the CLI's output stays its own.
fn announce_close(call: &Call<'_>) {
    let env_session = std::env::var(env::CLI_SESSION).ok();
    let Some(session) = call.closed_session(env_session.as_deref()) else { return };
    let Some(dir) = std::env::var(env::SOCKETS_DIR).ok().and_then(|s| crate::restarts::record_dir(&s)) else {
        return;
    };
    let _ = agent_close::announce(&dir, &session, SystemTime::now());
}

/// Millisecond timestamp plus PID: unique per process, sortable by time.
pub fn unique_suffix() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("{ms}-{}", std::process::id())
}

/// Runs the CLI: through the native fast path when it can answer (see
/// [`crate::cli::fastpath`]), else by exec'ing the Node client. Returns the exit
/// code to use (the exec only returns on failure).
pub fn exec(args: &[String]) -> i32 {
    let Some(package) = std::env::var_os(playpen_api::layout::env::CLI_PACKAGE) else {
        eprintln!("playpen-session cli: PLAYPEN_CLI_PACKAGE must name the @playwright/cli package directory");
        return 2;
    };
    let call = Call::parse(args);
    announce_close(&call);
    let args = match std::env::var(env::MCP_OUTPUT_DIR) {
        Ok(dir) if !dir.is_empty() => call.with_snapshot_file(&dir, &unique_suffix()),
        _ => args.to_vec(),
    };
    match crate::cli::fastpath::run(&args, Path::new(&package)) {
        crate::cli::fastpath::Outcome::Done(code) => return code,
        crate::cli::fastpath::Outcome::Node(_) => {}
        crate::cli::fastpath::Outcome::Fallback(notice) => eprintln!("{notice}"),
    }
    let node = std::env::var_os(playpen_api::layout::env::NODE).unwrap_or_else(|| "node".into());
    let err = std::process::Command::new(&node).arg(Path::new(&package).join("playwright-cli.js")).args(&args).exec();
    eprintln!("playpen-session cli: cannot exec {}: {err}", Path::new(&node).display());
    127
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_command_is_the_first_positional_argument() {
        assert_eq!(command_of(&v(&["snapshot"])), Some("snapshot"));
        assert_eq!(command_of(&v(&["-s=demo", "snapshot"])), Some("snapshot"));
        assert_eq!(command_of(&v(&["-s", "demo", "snapshot"])), Some("snapshot"));
        assert_eq!(command_of(&v(&["--json", "goto", "http://x"])), Some("goto"));
        assert_eq!(command_of(&v(&["--version"])), None);
    }

    #[test]
    fn a_bare_snapshot_gets_a_unique_file_in_the_snapshot_dir() {
        let out = with_snapshot_file(&v(&["-s=demo", "snapshot"]), "/var/lib/playpen/snapshots/", "1-2");
        assert_eq!(out, v(&["-s=demo", "snapshot", "--filename=/var/lib/playpen/snapshots/snapshot-1-2.yml"]));
        let partial = with_snapshot_file(&v(&["snapshot", "e5", "--depth=2"]), "/s", "u");
        assert_eq!(partial.last().map(String::as_str), Some("--filename=/s/snapshot-u.yml"));
    }

    #[test]
    fn an_explicit_filename_and_other_commands_are_left_alone() {
        for args in [
            v(&["snapshot", "--filename=mine.yml"]),
            v(&["snapshot", "--filename", "mine.yml"]),
            v(&["goto", "snapshot"]),
            v(&[]),
        ] {
            assert_eq!(with_snapshot_file(&args, "/s", "u"), args);
        }
    }

    #[test]
    fn a_close_names_the_session_the_cli_would_close() {
        assert_eq!(closed_session(&v(&["close"]), Some("shop")), Some("shop".into()));
        assert_eq!(closed_session(&v(&["close"]), None), Some("default".into()));
        assert_eq!(closed_session(&v(&["close"]), Some("")), Some("default".into()));
        assert_eq!(closed_session(&v(&["-s=cart", "close"]), Some("shop")), Some("cart".into()));
        assert_eq!(closed_session(&v(&["-s", "cart", "close"]), Some("shop")), Some("cart".into()));
        assert_eq!(closed_session(&v(&["close", "--session=cart"]), None), Some("cart".into()));
        assert_eq!(closed_session(&v(&["close-all"]), Some("shop")), Some(ALL_SESSIONS.into()));
        assert_eq!(closed_session(&v(&["kill-all"]), None), Some(ALL_SESSIONS.into()));
        assert_eq!(closed_session(&v(&["goto", "https://example.com"]), Some("shop")), None);
        assert_eq!(closed_session(&v(&["-s=close", "list"]), None), None, "a session named close is not a close");
    }

    /// The two scans the wrapper made before [`Call`] read the arguments
    /// once, kept to check that one pass gives the same answers.
    mod two_scans {
        use super::super::{ALL_SESSIONS, CLOSING_COMMANDS, VALUE_OPTIONS};

        pub fn command_of(args: &[String]) -> Option<&str> {
            let mut skip_value = false;
            for arg in args {
                if skip_value {
                    skip_value = false;
                } else if arg.starts_with('-') {
                    skip_value = VALUE_OPTIONS.contains(&arg.as_str());
                } else {
                    return Some(arg);
                }
            }
            None
        }

        pub fn with_snapshot_file(args: &[String], output_dir: &str, unique: &str) -> Vec<String> {
            let mut out = args.to_vec();
            let has_filename = args.iter().any(|a| a == "--filename" || a.starts_with("--filename="));
            if command_of(args) == Some("snapshot") && !has_filename {
                out.push(format!("--filename={}/snapshot-{unique}.yml", output_dir.trim_end_matches('/')));
            }
            out
        }

        pub fn closed_session(args: &[String], env_session: Option<&str>) -> Option<String> {
            let command = command_of(args).filter(|c| CLOSING_COMMANDS.contains(c))?;
            if command != "close" {
                return Some(ALL_SESSIONS.to_owned());
            }
            let mut named = None;
            let mut args_iter = args.iter();
            while let Some(arg) = args_iter.next() {
                if let Some(value) = arg.strip_prefix("-s=").or_else(|| arg.strip_prefix("--session=")) {
                    named = Some(value.to_owned());
                } else if arg == "-s" || arg == "--session" {
                    named = args_iter.next().cloned();
                }
            }
            Some(
                named
                    .or_else(|| env_session.map(str::to_owned))
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "default".into()),
            )
        }
    }

    proptest::proptest! {
        #[test]
        fn one_pass_answers_as_the_two_scans_did(
            args in proptest::collection::vec(
                proptest::sample::select(vec![
                    "close", "close-all", "kill-all", "snapshot", "goto", "x", "", "-s", "--session", "-s=a",
                    "--session=", "--config", "--browser", "--json", "--filename", "--filename=f.yml", "-",
                ]),
                0..7,
            ),
            env_session in proptest::option::of(proptest::sample::select(vec!["", "shop"])),
        ) {
            let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
            proptest::prop_assert_eq!(command_of(&args), two_scans::command_of(&args));
            proptest::prop_assert_eq!(with_snapshot_file(&args, "/s/", "u"), two_scans::with_snapshot_file(&args, "/s/", "u"));
            proptest::prop_assert_eq!(closed_session(&args, env_session), two_scans::closed_session(&args, env_session));
        }
    }

    #[test]
    fn suffixes_differ_over_time() {
        let a = unique_suffix();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_ne!(a, unique_suffix());
    }
}
