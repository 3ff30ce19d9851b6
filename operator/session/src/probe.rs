//! The readiness verdict: what `playpen-session probe` prints and what the
//! runtime's `GET /readyz` answers the kubelet (`run/expose/health.rs`). Ready when the daemon's
//! socket accepts a connection and, when the viewer is enabled, the relay on
//! the pinned port answers that it can start the dashboard (which runs only
//! while someone views), and a recorded session once its
//! recordings run. Fails once for every in-place daemon
//! restart it has not reported yet ([`crate::restarts`]); passes without the
//! daemon while a fresh browser starts after an agent's own close
//! ([`crate::agent_close`]). A resumed session waits for its suspended
//! state's reopen ([`crate::run::suspend::at_start`]).
//!
//! Until it has passed once, the probe waits for readiness (up to a little
//! less than the probe's timeout) instead of failing at once: the kubelet
//! probes a container as soon as it starts, and a failure then would leave
//! a fresh session unready for a whole probe period after its browser is up.
//! After the first pass it answers at once, so a restart still fails it.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use playpen_api::runtime_config::RuntimeConfig;

use crate::run::browser::{daemon_sockets, not_yet_recording};
use crate::run::expose::viewer_ready;
use crate::run::suspend::at_start;
use crate::{agent_close, restarts};

/// Written beside the restart record once the probe has passed.
pub const PASSED_FILE: &str = "probe-passed";

/// How long the probe waits for the first readiness: under the probe's
/// timeout, with room for the exec itself.
pub fn startup_wait() -> Duration {
    Duration::from_secs(playpen_api::layout::READINESS_PROBE_TIMEOUT_SECONDS.unsigned_abs().into())
        .saturating_sub(Duration::from_millis(500))
}

const RETRY: Duration = Duration::from_millis(50);

/// Why the session is not ready (`Ok` when it is). Before the first pass,
/// waits up to `wait` for readiness.
pub async fn check_waiting(config: &RuntimeConfig, wait: Duration) -> Result<(), String> {
    let namespace = restarts::record_dir(&config.sockets_dir);
    if let Some(message) = namespace.as_deref().and_then(restarts::unreported) {
        return Err(message);
    }
    // Without a writable record directory the probe would wait on every
    // failure; it then only reports later, never passes wrongly.
    let starting = namespace.as_deref().is_some_and(|dir| !dir.join(PASSED_FILE).exists());
    let deadline = Instant::now() + wait;
    loop {
        match ready_now(config, namespace.as_deref()).await {
            Ok(()) => {
                if starting {
                    if let Some(dir) = namespace.as_deref() {
                        let _ = std::fs::write(dir.join(PASSED_FILE), b"");
                    }
                }
                return Ok(());
            }
            Err(_) if starting && Instant::now() + RETRY < deadline => tokio::time::sleep(RETRY).await,
            Err(why) => return Err(why),
        }
    }
}

/// Why the session is not ready now (`Ok` when it is), without waiting.
pub async fn check(config: &RuntimeConfig) -> Result<(), String> {
    check_waiting(config, Duration::ZERO).await
}

async fn ready_now(config: &RuntimeConfig, namespace: Option<&Path>) -> Result<(), String> {
    let sockets = daemon_sockets(Path::new(&config.sockets_dir), &config.session_name);
    let reopening =
        || namespace.is_some_and(|dir| agent_close::reopening(dir, &config.session_name, SystemTime::now()));
    // While a fresh browser starts after an agent's own close, nothing failed.
    if !sockets.iter().any(|s| UnixStream::connect(s).is_ok()) && !reopening() {
        return Err(format!("the daemon does not answer (sockets found: {sockets:?})"));
    }
    // A resumed session is Ready only with its tabs back (bounded by the reopen).
    if let Some(why) = namespace.and_then(at_start::pending) {
        return Err(why);
    }
    if let Some(port) = config.viewer_port {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        viewer_ready(addr, Duration::from_secs(1))
            .await
            .map_err(|why| format!("the viewer does not answer on {addr}: {why}"))?;
    }
    if config.record_video || config.record_trace {
        if let Some(why) = not_yet_recording(Path::new(&config.output_dir)) {
            return Err(why);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_only_when_a_listening_socket_of_the_session_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = tmp.path().display().to_string();
        config.viewer_port = None;
        assert!(check(&config).await.unwrap_err().contains("daemon"));
        std::fs::create_dir_all(tmp.path().join("cli")).unwrap();
        let _other =
            std::os::unix::net::UnixListener::bind(tmp.path().join("cli/0123456789abcdef-other.sock")).unwrap();
        assert!(check(&config).await.is_err(), "another session's socket does not count");
        let path = tmp.path().join("cli/0123456789abcdef-demo.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        check(&config).await.unwrap();
        drop(listener);
        assert!(check(&config).await.is_err(), "a stale socket file does not count");
    }

    #[tokio::test]
    async fn while_a_browser_reopens_after_an_agents_close_the_missing_daemon_is_not_a_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let sockets = tmp.path().join("s");
        std::fs::create_dir_all(sockets.join("cli")).unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = sockets.display().to_string();
        config.viewer_port = None;
        assert!(check(&config).await.is_err());
        agent_close::announce(tmp.path(), "other", SystemTime::now()).unwrap();
        assert!(check(&config).await.is_err(), "another session's close covers nothing");
        agent_close::announce(tmp.path(), &config.session_name, SystemTime::now()).unwrap();
        check(&config).await.unwrap();
        agent_close::clear(tmp.path());
        assert!(check(&config).await.is_err(), "once the note is gone the daemon must answer again");
    }

    #[tokio::test]
    async fn the_first_pass_is_awaited_later_failures_answer_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let sockets = tmp.path().join("s");
        std::fs::create_dir_all(sockets.join("cli")).unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = sockets.display().to_string();
        config.viewer_port = None;
        let path = sockets.join("cli/0123456789abcdef-demo.sock");
        let late = path.clone();
        let binder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::os::unix::net::UnixListener::bind(late).unwrap()
        });
        let started = Instant::now();
        check_waiting(&config, Duration::from_secs(5)).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(250), "it waited for the daemon");
        assert!(tmp.path().join(PASSED_FILE).exists());
        drop(binder.join().unwrap());
        let started = Instant::now();
        assert!(check_waiting(&config, Duration::from_secs(5)).await.is_err(), "the stale socket fails it");
        assert!(started.elapsed() < Duration::from_secs(1), "after the first pass it never waits");
    }

    #[tokio::test]
    async fn a_restart_fails_the_probe_at_once_even_while_starting() {
        let tmp = tempfile::tempdir().unwrap();
        let sockets = tmp.path().join("s");
        std::fs::create_dir_all(sockets.join("cli")).unwrap();
        let _l = std::os::unix::net::UnixListener::bind(sockets.join("cli/0123456789abcdef-demo.sock")).unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = sockets.display().to_string();
        config.viewer_port = None;
        restarts::record(tmp.path(), "signal: 9 (SIGKILL)", 1).unwrap();
        let started = Instant::now();
        assert!(check_waiting(&config, Duration::from_secs(5)).await.unwrap_err().contains("restarted"));
        assert!(started.elapsed() < Duration::from_secs(1));
        check_waiting(&config, Duration::from_secs(5)).await.unwrap();
    }

    #[test]
    fn the_wait_leaves_room_under_the_probe_timeout() {
        let timeout = Duration::from_secs(playpen_api::layout::READINESS_PROBE_TIMEOUT_SECONDS.unsigned_abs().into());
        assert!(startup_wait() > Duration::from_secs(1) && startup_wait() + Duration::from_millis(400) < timeout);
    }

    #[tokio::test]
    async fn the_viewer_must_answer_when_enabled() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("cli")).unwrap();
        let _l = std::os::unix::net::UnixListener::bind(tmp.path().join("cli/0123456789abcdef-demo.sock")).unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = tmp.path().display().to_string();
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        config.viewer_port = Some(free);
        assert!(check(&config).await.unwrap_err().contains("viewer"));
    }
}
