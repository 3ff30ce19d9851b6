//! Leader election on a `coordination.k8s.io/v1` Lease, so several operator
//! replicas are safe: only the holder reconciles. Writes use the Lease's
//! resourceVersion, so two candidates can never both win the same term.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;
use tokio::time::Instant;

/// Where the Lease lives and who we are.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Lease name.
    pub name: String,
    /// Lease namespace (the operator's own).
    pub namespace: String,
    /// This replica's identity (its Pod name).
    pub identity: String,
    /// How long a holder's claim lasts without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews and candidates retry.
    pub retry_period: Duration,
}

/// What to do with the Lease as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it (or the holder let it expire): take it.
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds a live claim.
    Standby {
        /// The current holder.
        holder: String,
    },
}

/// Pure decision from the Lease's spec, our identity and the time.
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else { return Decision::Acquire };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder.is_empty() {
        return Decision::Acquire;
    }
    if holder == identity {
        return Decision::Renew;
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15)));
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()).map(|t| t.0);
    match renewed {
        Some(at) if at + duration > now => Decision::Standby { holder },
        _ => Decision::Acquire,
    }
}

fn claimed(previous: Option<&LeaseSpec>, cfg: &LeaseConfig, now: Timestamp, decision: &Decision) -> LeaseSpec {
    let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
    let acquire_time = match decision {
        Decision::Renew => previous.and_then(|s| s.acquire_time.clone()),
        _ => None,
    };
    LeaseSpec {
        holder_identity: Some(cfg.identity.clone()),
        lease_duration_seconds: Some(i32::try_from(cfg.lease_duration.as_secs()).unwrap_or(15)),
        acquire_time: acquire_time.or(Some(MicroTime(now))),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if *decision == Decision::Acquire && previous.is_some() {
            transitions + 1
        } else {
            transitions
        }),
        ..LeaseSpec::default()
    }
}

/// One round: returns whether we hold the Lease afterwards.
async fn try_hold(api: &Api<Lease>, cfg: &LeaseConfig) -> Result<bool, kube::Error> {
    let now = Timestamp::now();
    let current = api.get_opt(&cfg.name).await?;
    let spec = current.as_ref().and_then(|l| l.spec.as_ref());
    let decision = decide(spec, &cfg.identity, now);
    if let Decision::Standby { .. } = decision {
        return Ok(false);
    }
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(cfg.name.clone()),
            namespace: Some(cfg.namespace.clone()),
            resource_version: current.as_ref().and_then(|l| l.metadata.resource_version.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(claimed(spec, cfg, now, &decision)),
    };
    let written = match current {
        None => api.create(&PostParams::default(), &lease).await,
        Some(_) => api.replace(&cfg.name, &PostParams::default(), &lease).await,
    };
    match written {
        Ok(_) => Ok(true),
        // Someone else wrote first: their term.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Until when this replica may write, on its own monotonic clock. Every
/// write of the operator checks it just before it is sent, so a replica
/// that was paused (SIGSTOP, a frozen VM, a stalled network) and resumes
/// after its term writes nothing, whatever work it had queued: its clock
/// kept running while it was paused, and another replica may lead by now.
#[derive(Debug, Clone)]
pub struct Fence(Arc<Mutex<Term>>);

#[derive(Debug, Clone, Copy)]
enum Term {
    /// No leader election: a single replica always may write.
    Unconditional,
    /// Leadership held until this instant (`None`: not held).
    Until(Option<Instant>),
}

impl Fence {
    /// A fence that always allows writes (no leader election).
    pub fn unconditional() -> Self {
        Self(Arc::new(Mutex::new(Term::Unconditional)))
    }

    /// A fence that allows nothing until a term is granted.
    pub fn closed() -> Self {
        Self(Arc::new(Mutex::new(Term::Until(None))))
    }

    fn term(&self) -> Term {
        self.0.lock().map(|t| *t).unwrap_or(Term::Until(None))
    }

    fn set(&self, until: Option<Instant>) {
        if let Ok(mut term) = self.0.lock() {
            *term = Term::Until(until);
        }
    }

    /// An `Api` to write `K` in `namespace` with, while this replica holds
    /// its term: the one check every write of the operator passes just
    /// before it is sent (a replica that lost its term, paused or cut off,
    /// writes nothing). Reads need no fence: they use the client.
    pub fn writer<K>(&self, client: &Client, namespace: &str) -> crate::error::Result<Api<K>>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        if !self.is_open() {
            return Err(crate::error::Error::NotLeader);
        }
        Ok(Api::namespaced(client.clone(), namespace))
    }

    /// Whether a write may be sent now.
    fn is_open(&self) -> bool {
        match self.term() {
            Term::Unconditional => true,
            Term::Until(until) => until.is_some_and(|t| Instant::now() < t),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.term() {
            Term::Unconditional => None,
            Term::Until(until) => until,
        }
    }
}

/// Runs forever, publishing `true` while we hold the Lease and keeping
/// `fence` to the term. A round that succeeds at `t` (taken before the
/// request is sent) grants writes until `t + leaseDuration - retryPeriod`:
/// others may take over only after `leaseDuration` from the renewal they
/// see, which is later. A round is bounded by `retryPeriod`, so a hung API
/// call cannot keep a stale leader going; and leadership is dropped at the
/// deadline itself, not at the next round.
pub async fn run(client: Client, cfg: LeaseConfig, leading: watch::Sender<bool>, fence: Fence) {
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    let term = cfg.lease_duration.saturating_sub(cfg.retry_period);
    let publish = |fence: &Fence| {
        let holding = fence.is_open();
        if *leading.borrow() != holding {
            tracing::info!(identity = %cfg.identity, holding, "leadership changed");
            leading.send_replace(holding);
        }
    };
    loop {
        let started = Instant::now();
        match tokio::time::timeout(cfg.retry_period, try_hold(&api, &cfg)).await {
            Ok(Ok(true)) => fence.set(Some(started + term)),
            Ok(Ok(false)) => fence.set(None),
            Ok(Err(error)) => tracing::warn!(%error, lease = %cfg.name, "leader election round failed"),
            Err(_) => tracing::warn!(lease = %cfg.name, timeout = ?cfg.retry_period, "leader election round timed out"),
        }
        publish(&fence);
        let next_round = started + cfg.retry_period;
        loop {
            let wake = fence.deadline().filter(|d| *d < next_round).unwrap_or(next_round);
            tokio::time::sleep_until(wake).await;
            publish(&fence);
            if Instant::now() >= next_round {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("ts")
    }

    fn held_by(who: &str, renewed: &str) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(who.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(ts(renewed))),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_fence_is_open_only_within_its_term() {
        assert!(Fence::unconditional().is_open());
        let fence = Fence::closed();
        assert!(!fence.is_open());
        fence.set(Some(Instant::now() + Duration::from_secs(60)));
        assert!(fence.is_open());
        fence.set(Some(Instant::now()));
        assert!(!fence.is_open(), "a term ends at its deadline");
        fence.set(None);
        assert!(!fence.is_open());
    }

    #[test]
    fn absent_or_empty_lease_is_acquired() {
        let now = ts("2026-11-29T12:00:00Z");
        assert_eq!(decide(None, "a", now), Decision::Acquire);
        assert_eq!(decide(Some(&LeaseSpec::default()), "a", now), Decision::Acquire);
    }

    #[test]
    fn live_foreign_claim_means_standby_and_expired_means_acquire() {
        let spec = held_by("b", "2026-11-29T12:00:00Z");
        assert_eq!(decide(Some(&spec), "a", ts("2026-11-29T12:00:14Z")), Decision::Standby { holder: "b".into() });
        assert_eq!(decide(Some(&spec), "a", ts("2026-11-29T12:00:16Z")), Decision::Acquire);
    }

    #[test]
    fn own_claim_is_renewed_keeping_acquire_time() {
        let now = ts("2026-11-29T12:00:05Z");
        let mut spec = held_by("a", "2026-11-29T12:00:00Z");
        spec.acquire_time = Some(MicroTime(ts("2026-11-29T11:00:00Z")));
        spec.lease_transitions = Some(2);
        assert_eq!(decide(Some(&spec), "a", now), Decision::Renew);
        let cfg = LeaseConfig {
            name: "l".into(),
            namespace: "n".into(),
            identity: "a".into(),
            lease_duration: Duration::from_secs(15),
            retry_period: Duration::from_secs(2),
        };
        let renewed = claimed(Some(&spec), &cfg, now, &Decision::Renew);
        assert_eq!(renewed.acquire_time, spec.acquire_time);
        assert_eq!(renewed.renew_time, Some(MicroTime(now)));
        assert_eq!(renewed.lease_transitions, Some(2));
        let taken = claimed(Some(&held_by("b", "2026-11-29T10:00:00Z")), &cfg, now, &Decision::Acquire);
        assert_eq!(taken.lease_transitions, Some(1));
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
    }
}
