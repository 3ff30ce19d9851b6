//! The egress proxy (issue 36, docs/egress-hosts.md): an HTTP forward proxy
//! on 127.0.0.1 that Chromium is launched through whenever host rules apply.
//! Each attempt is checked by host ([`head`] reads what the browser asks
//! for), resolved by the proxy itself and checked by address ([`dial`]),
//! answered 403 with a one-line reason when refused, and logged
//! ([`log`]). The rules are re-read from `runtime.json` ([`follow`]), so a
//! change applies to the running browser.

mod connection;
mod dial;
mod head;
pub(crate) mod launch;
mod log;
mod record;
mod tally;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use playpen_api::egress_hosts::{Floor, HostRules};
use playpen_api::runtime_config::{EgressConfigError, RuntimeConfig};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

pub(crate) use dial::Policy;
pub(crate) use log::EgressLog;
pub use tally::Tally;

/// What a hostile page may make the proxy hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Time to send the request head (a slow sender holds a slot no longer).
    pub head_timeout: Duration,
    /// Time to resolve, and then to connect to each address.
    pub connect_timeout: Duration,
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
}

/// The limits the runtime runs with.
pub(crate) const LIMITS: Limits =
    Limits { head_timeout: Duration::from_secs(10), connect_timeout: Duration::from_secs(10), max_connections: 256 };

/// What the connections read: the policy, and whether attempts are logged
/// (not while a warm Pod's browser is nobody's: a file in the snapshot
/// volume would count as a use of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Live {
    /// Rules and floor.
    pub policy: Policy,
    /// Log attempts to `egress.jsonl`.
    pub logged: bool,
}

/// The live state `config` asks for; `None` without host rules.
pub(crate) fn live_of(config: &RuntimeConfig) -> Option<Result<Live, EgressConfigError>> {
    let hosts = config.egress_hosts.as_ref()?;
    Some(hosts.parse().map(|(rules, floor)| Live { policy: Policy { rules, floor }, logged: !config.warm }))
}

/// Binds the proxy's listener on 127.0.0.1, on a port the kernel picks:
/// only the Chromium of this Pod connects, told the port by its launch
/// switch, so no pinned port can collide with one a session pins (its
/// viewer's, its CDP's, a sidecar's).
pub(crate) fn bind_loopback() -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// The recordings directory's egress log for the snapshot directory
/// `output_dir`, counting into `tally`.
pub(crate) fn log_for(output_dir: &Path, tally: Arc<Tally>) -> EgressLog {
    EgressLog::new(&crate::run::browser::recording::dir(output_dir)).counting_into(tally)
}

/// Accepts connections for as long as the runtime runs.
pub(crate) async fn serve(
    listener: TcpListener,
    live: watch::Receiver<Arc<Live>>,
    log: Arc<EgressLog>,
    limits: Limits,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(err) => {
                tracing::warn!("egress proxy accept: {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let state = live.borrow().clone();
        let log = log.clone();
        tokio::spawn(async move {
            connection::handle(client, &state, &log, &limits).await;
            drop(slot);
        });
    }
}

/// The proxy with fixed rules and the runtime's [`LIMITS`], logging every
/// attempt to `<recordings>/egress.jsonl`: what `examples/egress_bench/`
/// measures (the runtime runs [`serve`] with rules [`follow`] re-reads).
pub async fn serve_fixed(listener: TcpListener, rules: HostRules, floor: Floor, recordings: &Path) {
    let (_tell, live) = watch::channel(Arc::new(Live { policy: Policy { rules, floor }, logged: true }));
    serve(listener, live, Arc::new(EgressLog::new(recordings)), LIMITS).await;
}

/// Re-reads `runtime.json` every `every` and publishes changed rules. A
/// file the runtime cannot use keeps the rules in force (fail closed: never
/// none); rules removed while the browser runs through the proxy leave the
/// mode and floor with no host rule.
pub(crate) async fn follow(config_path: PathBuf, tell: watch::Sender<Arc<Live>>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Ok(config) = crate::config::load(&config_path) else { continue };
        let fresh = match live_of(&config) {
            Some(Ok(live)) => live,
            Some(Err(err)) => {
                tracing::warn!("runtime.json egressHosts cannot be enforced, keeping the rules in force: {err}");
                continue;
            }
            None => {
                let current = tell.borrow().clone();
                let mut rules = current.policy.rules.clone();
                rules.allow.clear();
                rules.deny.clear();
                Live { policy: Policy { rules, ..current.policy.clone() }, logged: !config.warm }
            }
        };
        if **tell.borrow() != fresh {
            tracing::info!(
                allow = fresh.policy.rules.allow.len(),
                deny = fresh.policy.rules.deny.len(),
                "egress host rules changed: applied to the running browser"
            );
            tell.send_replace(Arc::new(fresh));
        }
    }
}

#[cfg(test)]
mod tests;
