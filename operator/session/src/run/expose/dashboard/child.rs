//! One run of the dashboard process. `show --port 0 --host 127.0.0.1` is
//! only a parent that spawns `<playwright-core>/lib/entry/dashboardApp.js`
//! and waits for it; measured on 0.1.22, that grandchild neither exits when
//! stdin closes nor dies with its parent, so it would outlive a killed
//! runtime. The runtime therefore spawns `dashboardApp.js` itself with the
//! arguments `show` passes (see `program.js`, case "show"), as its own child
//! under the parent-death signal. Its stdin is still held open for its whole
//! life (it watches for stdin closing). Its `Listening on` line gives the
//! address, which counts only once the port answers HTTP.

use std::net::SocketAddr;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStdin};

use crate::run::expose::relay::{answers_http, parse_listening};
use crate::run::process::output::{pump, Tail};
use crate::run::process::reaper::Managed;
use crate::run::process::supervisor::{signal_group, ChildSpec};

/// What `show --port 0 --host 127.0.0.1` runs for `session` (no workspace):
/// an OS-assigned port, bound on loopback explicitly (the default listener is
/// IPv6-only; `0.0.0.0` is never passed).
pub fn dashboard_args(entry: &str, session: &str) -> Vec<String> {
    vec![
        entry.to_owned(),
        "--workspaceDir=".to_owned(),
        format!("--sessionName={session}"),
        "--port=0".to_owned(),
        "--host=127.0.0.1".to_owned(),
    ]
}

/// Why a start did not give a dashboard that answers.
#[derive(Debug, thiserror::Error)]
pub enum StartFailed {
    /// The process could not be created.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The spawn error.
        source: std::io::Error,
    },
    /// It exited (or closed its stdout) before printing its address.
    #[error("it exited before printing its address")]
    Exited,
    /// No address within the start timeout.
    #[error("no `Listening on` line within {0:?}")]
    NoAddress(Duration),
    /// It printed an address that does not answer HTTP.
    #[error("{addr} did not answer HTTP within {within:?}")]
    NotAnswering {
        /// The printed address.
        addr: SocketAddr,
        /// The start timeout.
        within: Duration,
    },
}

/// A dashboard that printed its address and answers HTTP there.
#[derive(Debug)]
pub struct Running {
    child: Child,
    /// Its PID (and process group).
    pub pid: u32,
    /// Where it serves.
    pub addr: SocketAddr,
    /// Held until the process is gone: closing it would end the dashboard.
    stdin: Option<ChildStdin>,
}

/// Starts the dashboard and waits (at most `timeout` per step) until it
/// answers. A start that fails is torn down (its process group killed and
/// reaped) and its output logged before the error is returned.
pub async fn start(spec: &ChildSpec, timeout: Duration, managed: &Managed) -> Result<Running, StartFailed> {
    let mut child =
        spec.spawn().map_err(|source| StartFailed::Spawn { program: spec.program.display().to_string(), source })?;
    let pid = child.id().unwrap_or_default();
    managed.add(pid);
    let stdin = child.stdin.take();
    let tail = Tail::default();
    if let Some(stderr) = child.stderr.take() {
        drop(pump(spec.name, "stderr", stderr, tail.clone()));
    }
    let mut lines = child.stdout.take().map(|s| pump(spec.name, "stdout", s, tail.clone()));
    let listening = async {
        while let Some(line) = lines.as_mut()?.recv().await {
            if let Some(addr) = parse_listening(&line) {
                return Some(addr);
            }
        }
        None
    };
    let outcome = match tokio::time::timeout(timeout, listening).await {
        Err(_) => Err(StartFailed::NoAddress(timeout)),
        Ok(None) => Err(StartFailed::Exited),
        Ok(Some(addr)) if wait_healthy(addr, timeout).await => Ok(addr),
        Ok(Some(addr)) => Err(StartFailed::NotAnswering { addr, within: timeout }),
    };
    let running = Running { child, pid, addr: SocketAddr::from(([127, 0, 0, 1], 0)), stdin };
    match outcome {
        Ok(addr) => Ok(Running { addr, ..running }),
        Err(failed) => {
            tracing::warn!(pid, %failed, output = %tail.text(), "dashboard start failed");
            running.stop(managed).await;
            Err(failed)
        }
    }
}

impl Running {
    /// Resolves when the process exits by itself.
    pub async fn exited(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Kills its process group and reaps it.
    pub async fn stop(mut self, managed: &Managed) {
        signal_group(self.pid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait().await;
        managed.remove(self.pid);
        drop(self.stdin.take());
    }
}

async fn wait_healthy(addr: SocketAddr, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if answers_http(addr, Duration::from_secs(2)).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dashboard_binds_loopback_on_an_ephemeral_port() {
        let args = dashboard_args("/c/lib/entry/dashboardApp.js", "demo");
        assert_eq!(
            args,
            ["/c/lib/entry/dashboardApp.js", "--workspaceDir=", "--sessionName=demo", "--port=0", "--host=127.0.0.1"]
        );
        assert!(!args.iter().any(|a| a.contains("0.0.0.0") || a.ends_with("=::")));
    }

    fn sh(script: &str) -> ChildSpec {
        ChildSpec {
            name: "fake-show",
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: "/".into(),
        }
    }

    #[tokio::test]
    async fn starts_that_give_no_answering_address_say_why() {
        let managed = Managed::default();
        let t = Duration::from_millis(500);
        let exited = start(&sh("echo starting; exit 3"), t, &managed).await.unwrap_err();
        assert!(matches!(exited, StartFailed::Exited), "{exited}");
        let silent = start(&sh("sleep 30"), t, &managed).await.unwrap_err();
        assert_eq!(silent.to_string(), "no `Listening on` line within 500ms");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let deaf = start(&sh(&format!("echo 'Listening on http://{closed}'; sleep 30")), t, &managed).await;
        assert!(matches!(deaf, Err(StartFailed::NotAnswering { addr, .. }) if addr == closed));
    }
}
