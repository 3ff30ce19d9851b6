//! The command line: `kubectl playpen <command>`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::duration::parse_duration;

/// Environment variable holding the default image of `new`.
pub const IMAGE_ENV: &str = "PLAYPEN_IMAGE";

/// How long a wait lasts when not told: `new --timeout`, and a bare
/// `suspend --wait` / `resume --wait`, so every wait of the plugin is alike.
pub const DEFAULT_WAIT: &str = "120s";

/// Playpen BrowserSessions from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-playpen",
    bin_name = "kubectl playpen",
    version,
    about = "Create, drive, view and inspect Playpen BrowserSessions",
    after_help = "Installed on PATH as kubectl-playpen, it runs as `kubectl playpen <command>`. \
                  Flags go after `playpen`: kubectl refuses flags before a plugin's name."
)]
pub struct Cli {
    /// Connection flags, accepted before or after the command.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Which cluster, namespace and identity.
#[derive(Debug, Clone, Default, Args)]
pub struct Global {
    /// Namespace (default: the kubeconfig context's, else "default").
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Kubeconfig context to use (default: the current context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Act as this user (impersonation; kubectl's own --as does not reach plugins).
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Act in this group as well (repeatable; needs --as).
    #[arg(long = "as-group", global = true, value_name = "GROUP", requires = "as_user")]
    pub as_group: Vec<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List BrowserSessions.
    #[command(visible_alias = "list")]
    Ls(LsArgs),
    /// Create a BrowserSession.
    New(NewArgs),
    /// Run `playwright-cli <args>` in the session's browser container.
    Run(RunArgs),
    /// Tunnel to the session's viewer and print its local URL.
    View(ViewArgs),
    /// Tunnel to the session's Chrome DevTools Protocol port.
    Cdp(CdpArgs),
    /// Print a container's logs.
    Logs(LogsArgs),
    /// Copy the newest snapshot out of the session.
    Snapshot(SnapshotArgs),
    /// Copy the session's recordings out.
    Record(RecordArgs),
    /// Print the session's egress log (host rules): each connection attempt and its verdict.
    Egress(EgressArgs),
    /// Park the session (spec.suspended: true): its state is kept, its Pod goes.
    Suspend(SuspendArgs),
    /// Bring a suspended session back (spec.suspended: false).
    Resume(SuspendArgs),
    /// Copy a running session's pages into a BrowserSnapshot and start N
    /// sessions from it (spec.from.snapshot).
    Fork(ForkArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
    /// Completions for kubectl's plugin completion (`kubectl_complete-playpen`
    /// runs `kubectl-playpen __complete <words>`): one per line, then cobra's
    /// `:<directive>`.
    #[command(name = "__complete", hide = true)]
    Complete(CompleteArgs),
}

/// `__complete`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The words typed after `playpen`, the last one being completed.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub words: Vec<String>,
}

/// `ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// List sessions in every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Output format: a table (default), wide, json or yaml.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ListFormat>,
}

/// Output formats of `ls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// More columns.
    Wide,
    /// A `List` as JSON.
    Json,
    /// A `List` as YAML.
    Yaml,
}

/// `new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Browser image built by playpen-imagebuild.
    #[arg(long, env = IMAGE_ENV)]
    pub image: Option<String>,
    /// Warm pool to take the browser from.
    #[arg(long)]
    pub pool: Option<String>,
    /// Pinned viewer port (default 9323).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1024..))]
    pub viewer_port: Option<u16>,
    /// Open the Chrome DevTools Protocol port (spec.cdp.enabled).
    #[arg(long)]
    pub cdp: bool,
    /// Wait until the session is Ready, then print how to drive and view it.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits.
    #[arg(long, default_value = DEFAULT_WAIT, value_parser = parse_duration)]
    pub timeout: Duration,
    /// YAML (or JSON) with more spec fields, or a whole BrowserSession; the flags win.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Arguments of playwright-cli, after `--`.
    #[arg(last = true, required = true, value_name = "PLAYWRIGHT_CLI_ARGS")]
    pub args: Vec<String>,
}

/// `view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Local port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Open the URL in a browser ($BROWSER, xdg-open or open).
    #[arg(long)]
    pub open: bool,
    /// How to reach the Pod: port-forward, or exec (a gVisor sandbox's own
    /// network stack is out of port-forward's reach); auto picks exec for
    /// Pods under a gVisor RuntimeClass.
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    pub via: Via,
}

/// `cdp`.
#[derive(Debug, Args)]
pub struct CdpArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Local port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// How to reach the Pod (as for `view`).
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    pub via: Via,
}

/// Containers of a browser Pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Container {
    /// The browser container (the session runtime).
    Browser,
    /// The optional agent sidecar.
    Agent,
}

impl Container {
    /// The container's name in the Pod.
    pub fn name(self) -> &'static str {
        match self {
            Self::Browser => "browser",
            Self::Agent => "agent",
        }
    }
}

/// `logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Follow the log.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Which container.
    #[arg(short = 'c', long, value_enum, default_value_t = Container::Browser)]
    pub container: Container,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<i64>,
    /// The previous (crashed) instance of the container.
    #[arg(short = 'p', long)]
    pub previous: bool,
}

/// `snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Where to write it: a file, or an existing directory (default: the current directory).
    #[arg(short = 'o', long = "output", value_name = "FILE|DIR")]
    pub output: Option<PathBuf>,
}

/// `record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Directory to copy into (default: ./<name>-recordings).
    #[arg(short = 'o', long = "output", visible_alias = "to", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Where from: the object store when the session exports its recordings
    /// (spec.recording.export), the Pod otherwise.
    #[arg(long, value_enum, default_value_t = RecordFrom::Auto)]
    pub from: RecordFrom,
    /// First finish the video segment in progress (and, with an export, wait
    /// until it is uploaded), so the copy holds the video up to now.
    #[arg(long, visible_alias = "now")]
    pub rotate: bool,
}

/// Where `record` copies from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecordFrom {
    /// The store when the session has an export, else the Pod.
    Auto,
    /// The Pod's recordings directory (pods/exec).
    Pod,
    /// The session's object store, with the keys of its credentials Secret (get secrets).
    Store,
}

/// `egress`.
#[derive(Debug, Args)]
pub struct EgressArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Only the refused attempts.
    #[arg(long)]
    pub refused: bool,
    /// The log's JSON lines as written (validated), not a table.
    #[arg(long)]
    pub json: bool,
    /// Only the last N attempts (of those shown).
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
}

/// `suspend` and `resume`: the same arguments, the opposite patch.
#[derive(Debug, Args)]
pub struct SuspendArgs {
    /// Name of the BrowserSession.
    pub name: String,
    /// Wait until the session gets there (Suspended, or Ready for resume),
    /// printing each phase, for at most DURATION (default 120s). The `=` is
    /// needed (`--wait=5m`): a bare `--wait NAME` must leave NAME the session.
    #[arg(
        long,
        value_name = "DURATION",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_WAIT,
        value_parser = parse_duration
    )]
    pub wait: Option<Duration>,
}

/// `fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// Name of the running BrowserSession to copy.
    pub source: String,
    /// How many sessions to start from the snapshot (named <snapshot>-1 … <snapshot>-N).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub count: u32,
    /// Name of the BrowserSnapshot (default: <source>-fork-<5 random hex digits>).
    #[arg(long, value_name = "NAME")]
    pub snapshot: Option<String>,
    /// Wait until every fork is Ready, for at most DURATION (default 120s);
    /// the snapshot itself is always waited for (60s, or DURATION if longer).
    /// The `=` is needed (`--wait=5m`): a bare `--wait SOURCE` must leave SOURCE the session.
    #[arg(
        long,
        value_name = "DURATION",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_WAIT,
        value_parser = parse_duration
    )]
    pub wait: Option<Duration>,
}

/// `completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// Shells with completion scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// bash.
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
    /// The `kubectl_complete-playpen` script through which kubectl's own
    /// completion (`kubectl playpen <TAB>`) asks the plugin.
    Kubectl,
}

/// How a tunnel reaches the session's Pod (`view`, `cdp`); see `via.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// Exec where the Pod runs under a gVisor RuntimeClass, port-forward otherwise.
    Auto,
    /// `pods/portforward` (the `playpen-viewer` role's right).
    PortForward,
    /// `pods/exec` of `playpen-session pipe` (the `playpen-driver` role's right).
    Exec,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kubectl-playpen").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_go_before_or_after_the_command() {
        let cli = parse(&["-n", "a", "ls"]).unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("a"));
        let cli =
            parse(&["ls", "--namespace", "b", "--context", "c", "--as", "u", "--as-group", "g1", "--as-group", "g2"])
                .unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("b"));
        assert_eq!(cli.global.context.as_deref(), Some("c"));
        assert_eq!(cli.global.as_user.as_deref(), Some("u"));
        assert_eq!(cli.global.as_group, ["g1", "g2"]);
        assert!(parse(&["ls", "--as-group", "g"]).is_err(), "--as-group needs --as");
    }

    #[test]
    fn run_takes_everything_after_the_double_dash() {
        let cli = parse(&["run", "demo", "-n", "x", "--", "goto", "https://example.com", "--flag", "-n"]).unwrap();
        let Command::Run(run) = cli.command else { panic!("not run") };
        assert_eq!(run.name, "demo");
        assert_eq!(run.args, ["goto", "https://example.com", "--flag", "-n"]);
        assert_eq!(cli.global.namespace.as_deref(), Some("x"));
        assert!(parse(&["run", "demo"]).is_err(), "no playwright-cli arguments");
    }

    #[test]
    fn new_defaults_and_limits() {
        let cli = parse(&["new", "demo", "--image", "i"]).unwrap();
        let Command::New(new) = cli.command else { panic!("not new") };
        assert_eq!(new.timeout, Duration::from_secs(120));
        assert!(!new.wait && !new.cdp && new.pool.is_none() && new.viewer_port.is_none());
        let cli = parse(&["new", "demo", "--timeout", "1m30s", "--viewer-port", "9400", "--wait", "--cdp"]).unwrap();
        let Command::New(new) = cli.command else { panic!("not new") };
        assert_eq!(
            (new.timeout, new.viewer_port, new.wait, new.cdp),
            (Duration::from_secs(90), Some(9400), true, true)
        );
        assert!(parse(&["new", "demo", "--viewer-port", "80"]).is_err(), "privileged port");
        assert!(parse(&["new", "demo", "--timeout", "soon"]).is_err());
    }

    #[test]
    fn ls_formats_and_logs_containers() {
        let cli = parse(&["ls", "-A", "-o", "wide"]).unwrap();
        let Command::Ls(ls) = cli.command else { panic!("not ls") };
        assert!(ls.all_namespaces);
        assert_eq!(ls.output, Some(ListFormat::Wide));
        assert!(parse(&["ls", "-o", "xml"]).is_err());
        let cli = parse(&["logs", "demo", "-f", "-c", "agent", "--tail", "10"]).unwrap();
        let Command::Logs(logs) = cli.command else { panic!("not logs") };
        assert_eq!((logs.follow, logs.container.name(), logs.tail), (true, "agent", Some(10)));
        assert!(parse(&["logs", "demo", "-c", "sidecar"]).is_err());
    }

    #[test]
    fn egress_flags() {
        let cli = parse(&["egress", "demo", "--refused", "--json", "--tail", "20"]).unwrap();
        let Command::Egress(egress) = cli.command else { panic!("not egress") };
        assert_eq!((egress.name.as_str(), egress.refused, egress.json, egress.tail), ("demo", true, true, Some(20)));
        let cli = parse(&["egress", "demo"]).unwrap();
        let Command::Egress(egress) = cli.command else { panic!("not egress") };
        assert!(!egress.refused && !egress.json && egress.tail.is_none());
        assert!(parse(&["egress", "demo", "--tail", "-1"]).is_err());
        assert!(parse(&["egress"]).is_err(), "a session is named");
    }

    #[test]
    fn suspend_and_resume_wait_only_when_asked_and_120s_by_default() {
        let cli = parse(&["suspend", "demo", "-n", "team-a"]).unwrap();
        let Command::Suspend(args) = cli.command else { panic!("not suspend") };
        assert_eq!((args.name.as_str(), args.wait), ("demo", None));
        assert_eq!(cli.global.namespace.as_deref(), Some("team-a"));
        let cli = parse(&["resume", "--wait", "demo"]).unwrap();
        let Command::Resume(args) = cli.command else { panic!("not resume") };
        assert_eq!((args.name.as_str(), args.wait), ("demo", Some(Duration::from_secs(120))), "NAME is not a duration");
        let cli = parse(&["suspend", "demo", "--wait=1m30s"]).unwrap();
        let Command::Suspend(args) = cli.command else { panic!("not suspend") };
        assert_eq!(args.wait, Some(Duration::from_secs(90)));
        assert!(parse(&["suspend", "demo", "--wait=soon"]).is_err());
        assert!(parse(&["resume", "demo", "--wait", "5m"]).is_err(), "5m would be a second session name");
        assert!(parse(&["suspend"]).is_err(), "a session is named");
    }

    #[test]
    fn fork_counts_one_by_default_and_waits_only_when_asked() {
        let cli = parse(&["fork", "demo", "-n", "team-a"]).unwrap();
        let Command::Fork(args) = cli.command else { panic!("not fork") };
        assert_eq!((args.source.as_str(), args.count, args.snapshot, args.wait), ("demo", 1, None, None));
        assert_eq!(cli.global.namespace.as_deref(), Some("team-a"));
        let cli = parse(&["fork", "--wait", "demo", "--count", "20", "--snapshot", "snap"]).unwrap();
        let Command::Fork(args) = cli.command else { panic!("not fork") };
        assert_eq!(
            (args.source.as_str(), args.count, args.snapshot.as_deref(), args.wait),
            ("demo", 20, Some("snap"), Some(Duration::from_secs(120))),
            "SOURCE is not a duration"
        );
        let cli = parse(&["fork", "demo", "--wait=5m"]).unwrap();
        let Command::Fork(args) = cli.command else { panic!("not fork") };
        assert_eq!(args.wait, Some(Duration::from_secs(300)));
        for bad in [
            &["fork", "demo", "--count", "0"][..],
            &["fork", "demo", "--count", "21"],
            &["fork", "demo", "--count", "-1"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&["fork", "demo", "--wait", "5m"]).is_err(), "5m would be a second source");
        assert!(parse(&["fork", "demo", "--wait=soon"]).is_err());
        assert!(parse(&["fork"]).is_err(), "a source is named");
    }

    #[test]
    fn completion_shells() {
        for shell in ["bash", "zsh", "fish"] {
            assert!(parse(&["completion", shell]).is_ok(), "{shell}");
        }
        assert!(parse(&["completion", "tcsh"]).is_err());
    }
}
