//! Child processes: spawned with a scrubbed environment, in their own process
//! group (so the whole tree can be stopped), and with `PR_SET_PDEATHSIG`
//! through `setpriv` when it is installed (std offers no safe hook to set it
//! between fork and exec), so they die with the runtime. Restarts back off.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::run::process::reaper::Managed;

/// `setpriv` from util-linux: sets the parent-death signal, then execs.
const SETPRIV: &str = "/usr/bin/setpriv";

/// What to run.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Short name for logs.
    pub name: &'static str,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The complete environment (nothing else is inherited).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
}

impl ChildSpec {
    /// The argv actually executed: wrapped by `setpriv --pdeathsig KILL` when `setpriv` exists.
    pub fn argv(&self, setpriv: Option<&Path>) -> (PathBuf, Vec<String>) {
        match setpriv {
            Some(setpriv) => {
                let mut args = vec!["--pdeathsig".to_owned(), "KILL".to_owned(), "--".to_owned()];
                args.push(self.program.display().to_string());
                args.extend(self.args.iter().cloned());
                (setpriv.to_owned(), args)
            }
            None => (self.program.clone(), self.args.clone()),
        }
    }

    /// Spawns the child in its own process group with piped stdio.
    pub fn spawn(&self) -> std::io::Result<Child> {
        let setpriv = Path::new(SETPRIV);
        let (program, args) = self.argv(setpriv.exists().then_some(setpriv));
        Command::new(program)
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.cwd)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
    }
}

/// Sends `signal` to the process group led by `pid` (ignoring a group that is already gone).
pub fn signal_group(pid: u32, signal: Signal) {
    let Ok(raw) = i32::try_from(pid) else { return };
    if let Err(err) = killpg(Pid::from_raw(raw), signal) {
        if err != nix::errno::Errno::ESRCH {
            tracing::warn!(pid, ?signal, %err, "killpg failed");
        }
    }
}

/// Exponential restart delay, reset once a child has run long enough to be
/// considered healthy.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    stable: Duration,
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Duration::from_millis(250), Duration::from_secs(30), Duration::from_secs(30))
    }
}

impl Backoff {
    /// Starts at `initial`, doubles up to `max`, resets after a run of `stable`.
    pub fn new(initial: Duration, max: Duration, stable: Duration) -> Self {
        Self { initial, max, stable, next: initial }
    }

    /// The delay before the next start, given how long the last run lasted.
    pub fn after_run(&mut self, ran: Duration) -> Duration {
        if ran >= self.stable {
            self.next = self.initial;
        }
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }
}

/// Runs a short CLI command (`close`, `state-load`) and waits (bounded) for it.
pub async fn run_to_end(spec: &ChildSpec, timeout: Duration, managed: &Managed) {
    let _ = run_for_answer(spec, timeout, managed).await;
}

/// Why a command gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// It could not run, exited non-zero, or answered `### Error`.
    #[error("{0}")]
    Failed(String),
    /// It did not finish in time (killed): on a slow node, worth another try.
    #[error("{0}")]
    TimedOut(String),
}

/// [`run_to_end`], returning what the command printed, or why it did not
/// succeed (it could not run, timed out, exited non-zero, or answered
/// `### Error`, the CLI's mark of a failed verb).
pub async fn run_for_answer(spec: &ChildSpec, timeout: Duration, managed: &Managed) -> Result<String, Unanswered> {
    let child = match spec.spawn() {
        Ok(child) => child,
        Err(err) => {
            tracing::error!(%err, args = ?spec.args, "cannot run playwright-cli");
            return Err(Unanswered::Failed(format!("cannot run {}: {err}", spec.program.display())));
        }
    };
    let pid = child.id().unwrap_or_default();
    managed.add(pid);
    let answer = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => {
            let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            tracing::info!(status = %out.status, %stdout, %stderr, args = ?spec.args, "playwright-cli");
            if out.status.success() && !stdout.contains("### Error") {
                Ok(stdout)
            } else {
                Err(Unanswered::Failed(
                    format!("{} ({}): {stdout} {stderr}", spec.args.join(" "), out.status).trim().to_owned(),
                ))
            }
        }
        Ok(Err(err)) => {
            tracing::warn!(%err, args = ?spec.args, "playwright-cli failed");
            Err(Unanswered::Failed(format!("{}: {err}", spec.args.join(" "))))
        }
        Err(_) => {
            tracing::warn!(?timeout, args = ?spec.args, "playwright-cli timed out");
            signal_group(pid, Signal::SIGKILL);
            Err(Unanswered::TimedOut(format!("{} did not finish within {timeout:?}", spec.args.join(" "))))
        }
    };
    managed.remove(pid);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_resets_after_a_stable_run() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(700), Duration::from_secs(10));
        let short = ms(5);
        assert_eq!(b.after_run(short), ms(100));
        assert_eq!(b.after_run(short), ms(200));
        assert_eq!(b.after_run(short), ms(400));
        assert_eq!(b.after_run(short), ms(700));
        assert_eq!(b.after_run(short), ms(700));
        assert_eq!(b.after_run(Duration::from_secs(11)), ms(100));
        assert_eq!(b.after_run(short), ms(200));
    }

    #[test]
    fn argv_is_wrapped_by_setpriv_when_present() {
        let spec = ChildSpec {
            name: "t",
            program: "/usr/bin/node".into(),
            args: vec!["a.js".into(), "x".into()],
            env: vec![],
            cwd: "/".into(),
        };
        let (p, a) = spec.argv(Some(Path::new("/usr/bin/setpriv")));
        assert_eq!(p, PathBuf::from("/usr/bin/setpriv"));
        assert_eq!(a, ["--pdeathsig", "KILL", "--", "/usr/bin/node", "a.js", "x"]);
        let (p, a) = spec.argv(None);
        assert_eq!(p, PathBuf::from("/usr/bin/node"));
        assert_eq!(a, ["a.js", "x"]);
    }

    #[tokio::test]
    async fn children_get_only_the_given_env_and_their_own_group() {
        let spec = ChildSpec {
            name: "env",
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "echo \"$ONLY:${HOME:-unset}\"; ps -o pgid= -p $$".into()],
            env: vec![("ONLY".into(), "yes".into()), ("PATH".into(), "/usr/bin:/bin".into())],
            cwd: "/".into(),
        };
        let child = spec.spawn().unwrap();
        let pid = child.id().unwrap();
        let out = child.wait_with_output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("yes:unset"));
        assert_eq!(lines.next().map(str::trim), Some(pid.to_string().as_str()));
    }
}
