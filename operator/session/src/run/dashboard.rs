//! The dashboard (`playwright-cli show`) as a supervised child. `show --port
//! 0 --host 127.0.0.1` is only a parent that spawns
//! `<playwright-core>/lib/entry/dashboardApp.js` and waits for it; measured
//! on 0.1.22, that grandchild neither exits when stdin closes nor dies with
//! its parent, so it would outlive a killed runtime. The runtime therefore
//! spawns `dashboardApp.js` itself with the arguments `show` passes (see
//! `program.js`, case "show"), as its own child under the parent-death
//! signal. Its stdin is still held open for its whole life (it watches for
//! stdin closing). Its `Listening on` line gives the upstream of the viewer
//! relay, published only once the port answers HTTP. On exit the upstream is
//! withdrawn, the process group stopped, and it is started again with
//! backoff while the pinned listener stays bound.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::run::output::{pump, Tail};
use crate::run::reaper::Managed;
use crate::run::relay::{answers_http, parse_listening};
use crate::run::supervisor::{signal_group, Backoff, ChildSpec};

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

/// Runs the dashboard until `stop`; publishes its address on `upstream`.
pub async fn supervise(
    spec: ChildSpec,
    start_timeout: Duration,
    managed: Managed,
    upstream: watch::Sender<Option<SocketAddr>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::default();
    while !*stop.borrow() {
        let started = Instant::now();
        match spec.spawn() {
            Ok(mut child) => {
                let pid = child.id().unwrap_or_default();
                managed.add(pid);
                // Held until the child is gone: closing it would end the dashboard.
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
                let addr = tokio::time::timeout(start_timeout, listening).await.ok().flatten();
                let healthy = match addr {
                    Some(addr) => wait_healthy(addr, start_timeout).await,
                    None => false,
                };
                if let (Some(addr), true) = (addr, healthy) {
                    tracing::info!(pid, %addr, "dashboard running");
                    let _ = upstream.send(Some(addr));
                    tokio::select! {
                        status = child.wait() => tracing::warn!(pid, ?status, "dashboard exited"),
                        _ = stop.changed() => {}
                    }
                } else {
                    tracing::warn!(pid, output = %tail.text(), "dashboard start failed");
                }
                let _ = upstream.send(None);
                signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait().await;
                managed.remove(pid);
                drop(stdin);
            }
            Err(err) => tracing::error!(%err, program = %spec.program.display(), "cannot spawn the dashboard"),
        }
        if *stop.borrow() {
            break;
        }
        let delay = backoff.after_run(started.elapsed());
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = stop.changed() => {}
        }
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

    #[tokio::test]
    async fn a_dashboard_that_needs_stdin_is_kept_alive_and_published() {
        // A stand-in that, like `show`, exits when its stdin closes and prints a
        // Listening line, for an HTTP server the test runs.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = [0u8; 256];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(b"HTTP/1.1 302 Found\r\n\r\n").await;
            }
        });
        let spec = ChildSpec {
            name: "fake-show",
            program: "/bin/sh".into(),
            args: vec!["-c".into(), format!("echo 'Listening on http://{addr}'; cat >/dev/null; echo stdin-closed")],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: "/".into(),
        };
        let (tx, mut rx) = watch::channel(None);
        let (stop_tx, stop) = watch::channel(false);
        let task = tokio::spawn(supervise(spec, Duration::from_secs(5), Managed::default(), tx, stop));
        let published = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(Option::is_some)).await.unwrap();
        assert_eq!(*published.unwrap(), Some(addr));
        // Still up a while later: stdin is held open.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(*rx.borrow(), Some(addr));
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
        assert_eq!(*rx.borrow(), None);
    }
}
