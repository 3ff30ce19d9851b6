//! `kubectl playpen egress NAME [--refused] [--json] [--tail N]`: the
//! session's egress log (host rules, docs/egress-hosts.md), read from the
//! browser container with `pods/exec`: the rotated file, then the current
//! one, each at most as large as the proxy lets it grow.

pub mod log;

use playpen_api::layout::{
    EGRESS_LOG_FILE, EGRESS_LOG_MAX_BYTES, EGRESS_LOG_ROTATED_FILE, RECORDINGS_DIR, RUNTIME_CONFIG_DIR,
    RUNTIME_CONFIG_KEY,
};

use crate::cli::EgressArgs;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use log::Selection;

/// The most of `runtime.json` read (a ConfigMap holds at most 1 MiB).
const MAX_RUNTIME_JSON_BYTES: u64 = 1024 * 1024;

/// Prints `$2` then `$3` in directory `$1`, each cut at `$4` bytes and
/// followed by a newline (a line cut short stays on its own); a file that
/// is not there, or is a symlink, prints nothing.
pub const PRINT_LOGS: &str = r#"cd -- "$1" 2>/dev/null || exit 0
for f in "$2" "$3"; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then head -c "$4" -- "$f"; printf '\n'; fi
done
exit 0"#;

/// The command that prints the egress log, oldest first.
pub fn print_logs_command() -> Vec<String> {
    [
        "sh",
        "-c",
        PRINT_LOGS,
        "sh",
        RECORDINGS_DIR,
        EGRESS_LOG_ROTATED_FILE,
        EGRESS_LOG_FILE,
        &EGRESS_LOG_MAX_BYTES.to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The command that prints `runtime.json`, bounded.
pub fn print_runtime_config_command() -> Vec<String> {
    let path = format!("{RUNTIME_CONFIG_DIR}/{RUNTIME_CONFIG_KEY}");
    ["head", "-c", &MAX_RUNTIME_JSON_BYTES.to_string(), "--", &path].map(str::to_owned).to_vec()
}

/// The most bytes [`print_logs_command`] sends an honest container: the
/// two files and their newlines. A container that sends more is cut here.
pub const MAX_LOG_OUTPUT_BYTES: u64 = 2 * (EGRESS_LOG_MAX_BYTES + 1);

/// Runs `egress`.
pub async fn run(cluster: &Cluster, args: EgressArgs) -> Result<()> {
    let (_, target) = super::browser(cluster, &args.name).await?;
    let config = target.capture_at_most(&print_runtime_config_command(), MAX_RUNTIME_JSON_BYTES).await?;
    let rules = log::host_rules_apply(&config).map_err(|why| {
        Error::Remote(format!(
            "reading {RUNTIME_CONFIG_KEY} in Pod {} of BrowserSession {}: {why}",
            target.pod, target.session
        ))
    })?;
    let raw = target.capture_at_most(&print_logs_command(), MAX_LOG_OUTPUT_BYTES).await?;
    let parsed = log::parse(&raw);
    if parsed.lines.is_empty() && parsed.skipped == 0 {
        match rules {
            false => println!(
                "host rules are off for BrowserSession {}: no spec.network.egress.allowHosts or denyHosts (nor the \
                 chart's), so the browser is not behind the egress proxy and there is no egress log",
                target.session
            ),
            true => println!("no connection attempt logged yet for BrowserSession {}", target.session),
        }
        return Ok(());
    }
    if !rules {
        eprintln!("host rules are off for BrowserSession {} now: this log is from while they applied", target.session);
    }
    let selection = Selection { refused_only: args.refused, tail: args.tail };
    let lines = log::select(&parsed.lines, selection);
    if args.json {
        print!("{}", log::json_lines(&lines));
    } else if lines.is_empty() {
        let which = if args.refused { "refused connection attempt" } else { "connection attempt selected" };
        println!("no {which} in the egress log of BrowserSession {}", target.session);
    } else {
        print!("{}", log::table(&lines));
    }
    if let Some(note) = log::skipped_note(parsed.skipped) {
        eprintln!("{note}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_name_the_files_the_runtime_writes_oldest_first() {
        let logs = print_logs_command();
        assert_eq!(logs[..2], ["sh", "-c"]);
        assert_eq!(
            logs[3..],
            ["sh", "/var/lib/playpen/snapshots/recordings", "egress.jsonl.1", "egress.jsonl", "4194304"]
        );
        assert_eq!(
            print_runtime_config_command(),
            ["head", "-c", "1048576", "--", "/etc/playpen/runtime/runtime.json"]
        );
    }

    #[test]
    fn the_log_script_prints_the_rotated_file_first_and_skips_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let run = |limit: &str| {
            let out = std::process::Command::new("sh")
                .args(["-c", PRINT_LOGS, "sh"])
                .arg(dir.path())
                .args([EGRESS_LOG_ROTATED_FILE, EGRESS_LOG_FILE, limit])
                .output()
                .unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(run("100"), "", "no log yet");
        std::fs::write(dir.path().join(EGRESS_LOG_FILE), "new\n").unwrap();
        assert_eq!(run("100"), "new\n\n");
        std::fs::write(dir.path().join(EGRESS_LOG_ROTATED_FILE), "old\n").unwrap();
        assert_eq!(run("100"), "old\n\nnew\n\n");
        assert_eq!(run("2"), "ol\nne\n", "each file is cut, and a cut line stays apart");
        std::fs::remove_file(dir.path().join(EGRESS_LOG_FILE)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join(EGRESS_LOG_FILE)).unwrap();
        assert_eq!(run("100"), "old\n\n", "a symlink is not followed");
        let gone = std::process::Command::new("sh")
            .args(["-c", PRINT_LOGS, "sh", "/nonexistent/dir", "a", "b", "1"])
            .output()
            .unwrap();
        assert!(gone.status.success() && gone.stdout.is_empty());
    }
}
