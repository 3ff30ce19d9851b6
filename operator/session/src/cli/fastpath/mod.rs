//! The native fast path of the `playwright-cli` wrapper: commands the
//! session's daemon serves are answered without starting Node.
//!
//! For a command the daemon serves through `run`, the Node client spends
//! about half a second starting Node and loading its bundle before it writes
//! one line to the session's socket. This module does what that client does
//! for those commands, from the same inputs (the installed package's
//! `help.json`, the session files, the environment) and with the same
//! output bytes and exit codes:
//!
//! - [`args`]: minimist and the checks of `program.js` (unknown options, too
//!   many arguments, session name, `--json`/`--raw`);
//! - [`registry`]: which session file the client would pick;
//! - [`compat`]: the pinned version, and the CLI's `isCompatible` rule;
//! - [`socket`]: the request line and the reply.
//!
//! Everything else is the Node client's: client-side commands (`open`,
//! `close`, `show`, `list`, …), help, version, unknown commands, input the
//! parser does not model, a session whose socket does not answer (the Node
//! client reports it and removes the stale socket), and a daemon `error`
//! reply (argument validation in the daemon, before any tool runs, so
//! running it again through the Node client is safe and prints the Node
//! client's own report). A version mismatch or a reply this client does not
//! understand is handed over too, after one line on stderr. See
//! `docs/fast-path.md`.

pub mod args;
pub mod compat;
pub(crate) mod help;
pub(crate) mod registry;
pub(crate) mod sha1;
pub(crate) mod socket;

use std::io::Write;
use std::path::{Path, PathBuf};

use args::{Plan, RunPlan, UsageError, UsageKind};
use compat::{Mismatch, BUILT_FOR_CLI, BUILT_FOR_CORE};
use socket::{ProtocolError, Reply};

/// Set (to anything but `0` or empty) to always use the Node client.
pub const NODE_ONLY_ENV: &str = "PLAYPEN_CLI_NODE_ONLY";
/// When set, one line per invocation saying which way it went is appended
/// to this file (for tests and benchmarks; stdout and stderr are untouched):
/// `fast\t<exit code>\t<µs from connect to reply>`, `node\t<why>` or
/// `fallback\t<why>`.
pub const REPORT_ENV: &str = "PLAYPEN_CLI_FAST_REPORT";
/// The client version override the Node client honours.
const VERSION_FOR_TEST_ENV: &str = "PLAYWRIGHT_CLI_VERSION_FOR_TEST";

/// Commands that only read, so that running one again through the Node
/// client after a reply this client did not understand cannot act twice.
pub const READ_ONLY: &[&str] = &[
    "tab-list",
    "snapshot",
    "find",
    "cookie-list",
    "cookie-get",
    "localstorage-list",
    "localstorage-get",
    "sessionstorage-list",
    "sessionstorage-get",
    "route-list",
    "request",
    "request-headers",
    "request-body",
    "response-headers",
    "response-body",
    "config-print",
    "generate-locator",
    "webmcp-list",
];

/// What the wrapper does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered here; exit with this code.
    Done(i32),
    /// Exec the Node client, silently: the case is its own by design.
    Node(String),
    /// Exec the Node client after printing this notice (one line) on stderr.
    Fallback(String),
}

/// Why the fast path cannot be taken for this install or session.
#[derive(Debug, thiserror::Error)]
pub enum FastError {
    /// A version is not the pinned one.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// The installed package could not be read.
    #[error("cannot read the installed CLI: {0}")]
    Install(String),
    /// The session registry could not be read as the Node client reads it.
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    /// The session file lacks a field the Node client needs.
    #[error("session '{session}' has no {field} in {file}")]
    SessionFile {
        /// The session.
        session: String,
        /// The missing field.
        field: &'static str,
        /// The session file.
        file: PathBuf,
    },
    /// The exchange with the daemon went wrong after the request was sent.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

/// The installed CLI as far as the fast path needs it.
#[derive(Debug)]
pub struct Install {
    /// playwright-core, resolved through symlinks.
    pub core_real: PathBuf,
    /// Its help.json.
    pub help: help::Help,
}

fn read_json(path: &Path) -> Result<serde_json::Value, FastError> {
    let text = std::fs::read(path).map_err(|e| FastError::Install(format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| FastError::Install(format!("{}: {e}", path.display())))
}

/// Checks the installed `@playwright/cli` at `package` and the playwright-core
/// serving it (nested copy first, then the hoisted sibling) against the
/// pinned versions, and the client version the Node client would report.
pub fn load_install(package: &Path, version_override: Option<&str>) -> Result<Install, FastError> {
    // Node resolves the entry script through symlinks and looks for
    // playwright-core from there.
    let package =
        &std::fs::canonicalize(package).map_err(|e| FastError::Install(format!("{}: {e}", package.display())))?;
    let cli = read_json(&package.join("package.json"))?;
    let cli_version = cli.get("version").and_then(|v| v.as_str()).unwrap_or("(none)");
    if cli_version != BUILT_FOR_CLI {
        return Err(Mismatch::Cli { found: cli_version.to_owned() }.into());
    }
    let mut core = None;
    for dir in crate::cli_install::core_candidates(package) {
        if let Ok(manifest) = read_json(&dir.join("package.json")) {
            if manifest.get("name").and_then(|n| n.as_str()) == Some("playwright-core") {
                core = Some((dir, manifest));
                break;
            }
        }
    }
    let Some((core, manifest)) = core else {
        return Err(FastError::Install(format!("no playwright-core serves {}", package.display())));
    };
    let installed = manifest.get("version").and_then(|v| v.as_str()).unwrap_or("(none)");
    let client = version_override.filter(|v| !v.is_empty()).unwrap_or(installed);
    if installed != BUILT_FOR_CORE {
        return Err(Mismatch::Client { found: format!("{installed} (the installed playwright-core)") }.into());
    }
    if client != BUILT_FOR_CORE {
        return Err(Mismatch::Client { found: format!("{client} ({VERSION_FOR_TEST_ENV})") }.into());
    }
    let core_real = std::fs::canonicalize(&core).map_err(|e| FastError::Install(format!("{}: {e}", core.display())))?;
    let help_path = core_real.join("lib/tools/cli-client/help.json");
    let text =
        std::fs::read_to_string(&help_path).map_err(|e| FastError::Install(format!("{}: {e}", help_path.display())))?;
    let help = help::Help::parse(&text).map_err(|e| FastError::Install(format!("{}: {e}", help_path.display())))?;
    Ok(Install { core_real, help })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether the environment forces the Node client.
pub fn node_only() -> bool {
    env(NODE_ONLY_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `args` (the CLI's own arguments, after the wrapper's snapshot rule)
/// natively when it can; says what the wrapper should do next.
pub fn run(args: &[String], package: &Path) -> Outcome {
    let mut daemon = None;
    let outcome = decide(args, package, &mut daemon);
    if let Some(file) = env(REPORT_ENV).filter(|f| !f.is_empty()) {
        let line = match &outcome {
            Outcome::Done(code) => format!("fast\t{code}\t{}\n", daemon.map_or(0, |d| d.as_micros())),
            Outcome::Node(why) => format!("node\t{why}\n"),
            Outcome::Fallback(why) => format!("fallback\t{why}\n"),
        };
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(file) {
            let _ = f.write_all(line.as_bytes());
        }
    }
    outcome
}

/// `daemon` receives the time from connecting to the reply, when a request was made.
fn decide(args: &[String], package: &Path, daemon: &mut Option<std::time::Duration>) -> Outcome {
    if node_only() {
        return Outcome::Node(format!("{NODE_ONLY_ENV} is set"));
    }
    let install = match load_install(package, env(VERSION_FOR_TEST_ENV).as_deref()) {
        Ok(install) => install,
        Err(why) => return fallback(&why),
    };
    let run = match args::plan(args, &install.help, env("PLAYWRIGHT_CLI_SESSION").as_deref()) {
        Plan::Delegate(why) => return Outcome::Node(why),
        Plan::Usage(usage) => return print_usage(&usage),
        Plan::Run(run) => run,
    };
    let Some(cwd) = std::env::current_dir().ok().and_then(|d| d.to_str().map(str::to_owned)) else {
        return Outcome::Node("a working directory that is not UTF-8 or gone".into());
    };
    let Some(client) = registry::ClientInfo::new(Path::new(&cwd), &install.core_real) else {
        return Outcome::Node("a path that is not UTF-8".into());
    };
    let Some(base) = registry::base_daemon_dir(env) else {
        return Outcome::Node("no HOME to find the session registry".into());
    };
    match run_in_session(&run, &client, &base, &cwd, daemon) {
        Ok(outcome) => outcome,
        Err(FastError::Protocol(ProtocolError::Connect { .. })) => {
            Outcome::Node("the session's socket does not answer; the Node client reports it".into())
        }
        Err(FastError::Protocol(why)) => after_sent(&run, &why),
        Err(why) => fallback(&why),
    }
}

fn fallback(why: &dyn std::fmt::Display) -> Outcome {
    Outcome::Fallback(one_line(&format!("playwright-cli: fast path off ({why}); using the Node client")))
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The request may have been acted on: replay only what only reads.
fn after_sent(run: &RunPlan, why: &ProtocolError) -> Outcome {
    if READ_ONLY.contains(&run.command.as_str()) {
        return Outcome::Fallback(one_line(&format!(
            "playwright-cli: fast path off ({why}); running the read-only {} again through the Node client",
            run.command
        )));
    }
    let message = one_line(&format!(
        "playwright-cli: fast path: {why}; {} may already have run, so it is not repeated through the Node client \
         (set {NODE_ONLY_ENV}=1 to use the Node client)",
        run.command
    ));
    write_out(&[], format!("{message}\n").as_bytes());
    Outcome::Done(1)
}

fn run_in_session(
    run: &RunPlan,
    client: &registry::ClientInfo,
    base: &Path,
    cwd: &str,
    daemon: &mut Option<std::time::Duration>,
) -> Result<Outcome, FastError> {
    let Some(entry) = registry::find_session(base, client, &run.session)? else {
        return Ok(print_not_open(&run.session, run.json));
    };
    let field = |field| FastError::SessionFile { session: run.session.clone(), field, file: entry.file.clone() };
    let version = entry.version.as_deref().ok_or_else(|| field("version"))?;
    compat::check_daemon(&run.session, version)?;
    let socket_path = entry.socket_path.as_deref().ok_or_else(|| field("socketPath"))?;
    let request = socket::run_request(&run.args, cwd, run.raw, run.json);
    let started = std::time::Instant::now();
    let line = socket::exchange(socket_path, &request)?;
    *daemon = Some(started.elapsed());
    match socket::parse_reply(&line)? {
        Reply::Result { is_error, text } => {
            let mut out = text.unwrap_or_else(|| "undefined".into()).into_bytes();
            out.push(b'\n');
            write_out(&out, &[]);
            Ok(Outcome::Done(i32::from(is_error)))
        }
        Reply::Error(_) => Ok(Outcome::Node("the daemon rejected the arguments; the Node client reports it".into())),
    }
}

fn write_out(stdout: &[u8], stderr: &[u8]) {
    if !stderr.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(stderr);
        let _ = err.flush();
    }
    if !stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(stdout);
        let _ = out.flush();
    }
}

/// `JSON.stringify({ isError: true, error }, null, 2)` and a newline.
fn json_error(error: &str) -> String {
    format!("{{\n  \"isError\": true,\n  \"error\": {}\n}}\n", args::json_string(error))
}

/// The bytes `TextOutput`/`JsonOutput` print for a usage error: (stdout, stderr).
pub fn usage_output(usage: &UsageError) -> (String, String) {
    let message = match &usage.kind {
        UsageKind::UnknownOptions(opts) => format!(
            "Unknown option{}: {}",
            if opts.len() > 1 { "s" } else { "" },
            opts.iter().map(|o| format!("--{o}")).collect::<Vec<_>>().join(", ")
        ),
        UsageKind::TooManyArguments { expected, received } => {
            format!("error: too many arguments: expected {expected}, received {received}")
        }
    };
    if usage.json {
        (json_error(&message), String::new())
    } else {
        (format!("\n{}\n", usage.help), format!("{message}\n"))
    }
}

/// The bytes of `errorBrowserNotOpenForTool`: (stdout, stderr).
pub fn not_open_output(session: &str, json: bool) -> (String, String) {
    let message = format!("The browser '{session}' is not open, please run open first");
    if json {
        return (json_error(&message), String::new());
    }
    let flag = if session == "default" { String::new() } else { format!(" -s={session}") };
    (format!("{message}\n\n  playwright-cli{flag} open [params]\n"), String::new())
}

fn print_usage(usage: &UsageError) -> Outcome {
    let (stdout, stderr) = usage_output(usage);
    write_out(stdout.as_bytes(), stderr.as_bytes());
    Outcome::Done(1)
}

fn print_not_open(session: &str, json: bool) -> Outcome {
    let (stdout, stderr) = not_open_output(session, json);
    write_out(stdout.as_bytes(), stderr.as_bytes());
    Outcome::Done(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_messages_are_the_node_clients() {
        let usage = |json, kind| UsageError { json, kind, help: "HELP".into() };
        assert_eq!(
            usage_output(&usage(false, UsageKind::UnknownOptions(vec!["foo".into()]))),
            ("\nHELP\n".into(), "Unknown option: --foo\n".into())
        );
        assert_eq!(
            usage_output(&usage(false, UsageKind::UnknownOptions(vec!["a".into(), "b".into()]))).1,
            "Unknown options: --a, --b\n"
        );
        assert_eq!(
            usage_output(&usage(false, UsageKind::TooManyArguments { expected: 2, received: 3 })).1,
            "error: too many arguments: expected 2, received 3\n"
        );
        assert_eq!(
            usage_output(&usage(true, UsageKind::UnknownOptions(vec!["x\"".into()]))),
            ("{\n  \"isError\": true,\n  \"error\": \"Unknown option: --x\\\"\"\n}\n".into(), String::new())
        );
    }

    #[test]
    fn not_open_messages_are_the_node_clients() {
        assert_eq!(
            not_open_output("default", false).0,
            "The browser 'default' is not open, please run open first\n\n  playwright-cli open [params]\n"
        );
        assert_eq!(
            not_open_output("demo", false).0,
            "The browser 'demo' is not open, please run open first\n\n  playwright-cli -s=demo open [params]\n"
        );
        assert!(not_open_output("demo", true).0.starts_with("{\n  \"isError\": true,\n  \"error\": \"The browser"));
    }

    #[test]
    fn notices_are_one_line() {
        let Outcome::Fallback(notice) = fallback(&"a\nb") else { panic!() };
        assert_eq!(notice, "playwright-cli: fast path off (a b); using the Node client");
    }

    fn package_with(cli: &str, core: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("node_modules/@playwright/cli");
        let core_dir = dir.path().join("node_modules/playwright-core");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::create_dir_all(core_dir.join("lib/tools/cli-client")).unwrap();
        std::fs::write(pkg.join("package.json"), format!(r#"{{"name":"@playwright/cli","version":"{cli}"}}"#)).unwrap();
        std::fs::write(core_dir.join("package.json"), format!(r#"{{"name":"playwright-core","version":"{core}"}}"#))
            .unwrap();
        std::fs::write(
            core_dir.join("lib/tools/cli-client/help.json"),
            r#"{"global":"","booleanOptions":[],"commands":{}}"#,
        )
        .unwrap();
        dir
    }

    #[test]
    fn only_the_pinned_install_is_spoken_for() {
        let pkg = |d: &tempfile::TempDir| d.path().join("node_modules/@playwright/cli");
        let good = package_with(BUILT_FOR_CLI, BUILT_FOR_CORE);
        assert!(load_install(&pkg(&good), None).is_ok());
        assert!(load_install(&pkg(&good), Some("")).is_ok());
        let err = load_install(&pkg(&good), Some("9.9.9")).unwrap_err().to_string();
        assert!(err.contains("client version is 9.9.9"), "{err}");
        let other_cli = package_with("0.1.23", BUILT_FOR_CORE);
        let err = load_install(&pkg(&other_cli), None).unwrap_err().to_string();
        assert!(err.contains("@playwright/cli is 0.1.23"), "{err}");
        let other_core = package_with(BUILT_FOR_CLI, "1.65.0");
        assert!(load_install(&pkg(&other_core), None).is_err());
        assert!(load_install(Path::new("/nonexistent"), None).is_err());
    }
}
