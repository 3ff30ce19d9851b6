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

/// Label of the pool gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolStateLabels {
    /// ready, warming or claimed.
    pub state: String,
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
        Self { reconciles, failures, panics, duration, sessions, leader, pool_pods, registry }
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
}
