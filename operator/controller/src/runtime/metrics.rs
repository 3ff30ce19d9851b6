//! Prometheus metrics, served as text on `/metrics`.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Label of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// [`crate::Error::metric_label`].
    pub error: String,
}

/// Label of the phase gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// BrowserSession phase.
    pub phase: String,
}

/// Label of the operator's own bookkeeping gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TrackedLabels {
    /// Which record: `written`, `deferred`, `failing`, `baselines`.
    pub record: String,
}

/// Label of the pool gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolStateLabels {
    /// ready, warming or claimed.
    pub state: String,
}

/// Label of the claim histograms: how the claim ended (no pool label, as
/// no metric here is per object: a pool per tenant would multiply series).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClaimLabels {
    /// [`crate::claim::outcome::ClaimResult::as_str`]: claimed, cold, waiting or refused.
    pub result: String,
}

/// Labels of the per-session egress gauge: one series per session with
/// host rules and per verdict and rule its proxy counted (at most
/// [`playpen_api::egress_report::MAX_RULES`] per session), removed when the
/// session goes. The one per-object metric: it is what a platform team
/// alerts on ("this agent is hammering a refused host").
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EgressLabels {
    /// The session's namespace.
    pub namespace: String,
    /// The session.
    pub session: String,
    /// `allowed`, `refused` or `failed`.
    pub verdict: String,
    /// The rule that decided.
    pub rule: String,
}

/// Buckets of the claim histograms, 5 ms to 60 s: a claim is one list and
/// one patch (milliseconds); a wait for a cold or warming browser takes
/// seconds to a minute.
pub const CLAIM_BUCKETS: [f64; 13] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

fn claim_histogram() -> Histogram {
    Histogram::new(CLAIM_BUCKETS)
}

/// The operator's metrics.
#[derive(Debug)]
pub struct Metrics {
    /// Reconciles started.
    pub reconciles: Counter,
    /// Reconcile failures by error.
    pub failures: Family<ErrorLabels, Counter>,
    /// Reconciles that panicked (caught; the object is retried with backoff).
    pub panics: Counter,
    /// Reconcile duration.
    pub duration: Histogram,
    /// Sessions by phase (from the controller's cache).
    pub sessions: Family<PhaseLabels, Gauge>,
    /// 1 while this replica holds the leader Lease.
    pub leader: Gauge,
    /// Pool Pods by state, over every pool (from the pool controller's cache).
    pub pool_pods: Family<PoolStateLabels, Gauge>,
    /// The claim phase of a pooled session's reconcile, by result; only
    /// reconciles that decide (a session without its browser yet).
    pub claim_duration: Family<ClaimLabels, Histogram>,
    /// From a pooled session's creation to its browser (claimed, or the cold
    /// start decided), by result (claimed or cold); once per session.
    pub pool_wait: Family<ClaimLabels, Histogram>,
    /// Session Pods the scheduler cannot place for want of resources.
    pub sessions_waiting_for_room: Gauge,
    /// Warm Pods deleted to make room for sessions.
    pub warm_pods_yielded: Counter,
    /// Entries in the session controller's per-object records, by record.
    pub tracked: Family<TrackedLabels, Gauge>,
    /// Connection attempts of each session with host rules, as its runtime
    /// counted them since it started (read every minute).
    pub session_egress: Family<EgressLabels, Gauge>,
    /// `EgressRefused` Events published.
    pub egress_refused_events: Counter,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("playpen");
        let reconciles = Counter::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        let panics = Counter::default();
        let duration = Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]);
        let sessions = Family::<PhaseLabels, Gauge>::default();
        let leader = Gauge::default();
        let pool_pods = Family::<PoolStateLabels, Gauge>::default();
        let claim_duration = Family::<ClaimLabels, Histogram>::new_with_constructor(claim_histogram as fn() -> _);
        let pool_wait = Family::<ClaimLabels, Histogram>::new_with_constructor(claim_histogram as fn() -> _);
        let sessions_waiting_for_room = Gauge::default();
        let warm_pods_yielded = Counter::default();
        let tracked = Family::<TrackedLabels, Gauge>::default();
        let session_egress = Family::<EgressLabels, Gauge>::default();
        let egress_refused_events = Counter::default();
        registry.register(
            "session_egress_connections",
            "Connection attempts of a session with host rules through its runtime's egress proxy, by verdict and rule, since the runtime started (read every minute)",
            session_egress.clone(),
        );
        registry.register(
            "egress_refused_events",
            "EgressRefused Events published (at most one per session per five minutes)",
            egress_refused_events.clone(),
        );
        registry.register("reconciles", "BrowserSession reconciles started", reconciles.clone());
        registry.register("reconcile_errors", "BrowserSession reconciles that failed, by error", failures.clone());
        registry.register(
            "reconcile_panics",
            "BrowserSession reconciles that panicked and were caught",
            panics.clone(),
        );
        registry.register("reconcile_duration_seconds", "Duration of one reconcile", duration.clone());
        registry.register("sessions", "BrowserSessions by phase", sessions.clone());
        registry.register("leader", "1 while this replica holds the leader Lease", leader.clone());
        registry.register("pool_pods", "BrowserPool Pods by state (ready, warming, claimed)", pool_pods.clone());
        registry.register(
            "pool_claim_duration_seconds",
            "Duration of a pooled session's claim phase, by result (claimed, cold, waiting, refused)",
            claim_duration.clone(),
        );
        registry.register(
            "pool_wait_seconds",
            "From a pooled session's creation to its browser, by result (claimed, cold)",
            pool_wait.clone(),
        );
        registry.register(
            "sessions_waiting_for_room",
            "Session Pods the scheduler cannot place for want of resources (warm Pods yield to them)",
            sessions_waiting_for_room.clone(),
        );
        registry.register(
            "tracked_objects",
            "Entries in the operator's per-object records (its own writes, deferred first statuses, failing objects, namespace baselines); they follow what exists",
            tracked.clone(),
        );
        registry.register(
            "warm_pods_yielded",
            "Warm pool Pods deleted to make room for sessions",
            warm_pods_yielded.clone(),
        );
        Self {
            reconciles,
            failures,
            panics,
            duration,
            sessions,
            leader,
            pool_pods,
            claim_duration,
            pool_wait,
            sessions_waiting_for_room,
            warm_pods_yielded,
            tracked,
            session_egress,
            egress_refused_events,
            registry,
        }
    }
}

impl Metrics {
    /// Counts a reconcile and times it until the guard drops.
    pub fn reconcile_started(&self) -> ReconcileTimer<'_> {
        self.reconciles.inc();
        ReconcileTimer { start: Instant::now(), metrics: self }
    }

    /// Counts a failed reconcile.
    pub fn reconcile_failed(&self, error: &crate::Error) {
        self.failures.get_or_create(&ErrorLabels { error: error.metric_label().to_owned() }).inc();
    }

    /// Observes a claim phase that ended in `result` after `seconds`.
    pub fn claim_decided(&self, result: &str, seconds: f64) {
        self.claim_duration.get_or_create(&ClaimLabels { result: result.to_owned() }).observe(seconds);
    }

    /// Observes a session that got its browser (`result`) `seconds` after its creation.
    pub fn session_placed(&self, result: &str, seconds: f64) {
        self.pool_wait.get_or_create(&ClaimLabels { result: result.to_owned() }).observe(seconds);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Observes a reconcile's duration on drop.
#[derive(Debug)]
pub struct ReconcileTimer<'a> {
    start: Instant,
    metrics: &'a Metrics,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics.duration.observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histogram() {
        let m = Metrics::default();
        drop(m.reconcile_started());
        m.reconcile_failed(&crate::Error::MissingMetadata("uid"));
        m.sessions.get_or_create(&PhaseLabels { phase: "Ready".into() }).set(2);
        let text = m.render();
        assert!(text.contains("playpen_reconciles_total 1"), "{text}");
        assert!(text.contains("playpen_reconcile_errors_total{error=\"missing_metadata\"} 1"), "{text}");
        assert!(text.contains("playpen_reconcile_duration_seconds_count 1"), "{text}");
        assert!(text.contains("playpen_reconcile_panics_total 0"), "{text}");
        assert!(text.contains("playpen_sessions{phase=\"Ready\"} 2"), "{text}");
    }

    #[test]
    fn renders_the_claim_histograms_by_result_from_5_ms_to_60_s() {
        let m = Metrics::default();
        m.claim_decided("claimed", 0.004);
        m.claim_decided("claimed", 0.02);
        m.claim_decided("waiting", 0.5);
        m.session_placed("cold", 61.0);
        let text = m.render();
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        has("# TYPE playpen_pool_claim_duration_seconds histogram");
        has("playpen_pool_claim_duration_seconds_count{result=\"claimed\"} 2");
        has("playpen_pool_claim_duration_seconds_bucket{le=\"0.005\",result=\"claimed\"} 1");
        has("playpen_pool_claim_duration_seconds_bucket{le=\"0.025\",result=\"claimed\"} 2");
        has("playpen_pool_claim_duration_seconds_bucket{le=\"0.25\",result=\"waiting\"} 0");
        has("playpen_pool_claim_duration_seconds_bucket{le=\"0.5\",result=\"waiting\"} 1");
        has("# TYPE playpen_pool_wait_seconds histogram");
        has("playpen_pool_wait_seconds_bucket{le=\"60.0\",result=\"cold\"} 0");
        has("playpen_pool_wait_seconds_bucket{le=\"+Inf\",result=\"cold\"} 1");
        has("playpen_pool_wait_seconds_sum{result=\"cold\"} 61.0");
        assert!(!text.contains("result=\"refused\""), "no series before its first observation");
    }
}
