//! What a claim decision means beyond the status (pure): the label it is
//! counted under, the Event that announces it, how long the session waited.
//! The Event and the wait are keyed on the status transition (`status.pool`
//! not yet set), so they come once per session, not once per reconcile.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use playpen_api::v1alpha1::PoolClaimStatus;

use super::{ColdReason, Pooled, Refusal, Source};

/// How a claim attempt ended: the `result` label of the claim metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimResult {
    /// A warm Pod was taken.
    Claimed,
    /// The session starts cold from the pool's template.
    Cold,
    /// No ready Pod, and the pool says wait (`whenEmpty: Wait`).
    Waiting,
    /// The session cannot run (no such pool, a template field set).
    Refused,
}

impl ClaimResult {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Cold => "cold",
            Self::Waiting => "waiting",
            Self::Refused => "refused",
        }
    }

    /// The result of `source`.
    pub fn of(source: &Source) -> Self {
        match source {
            Source::Claimed(_) => Self::Claimed,
            Source::Cold { .. } => Self::Cold,
            Source::Waiting { .. } => Self::Waiting,
        }
    }
}

/// The result of this reconcile's claim attempt; `None` when it made none
/// (the session already had its browser, and only re-read it): counting
/// those would bury the claims' latency under cheap re-reads.
pub fn attempt(resolved: &Result<Pooled, Refusal>) -> Option<ClaimResult> {
    match resolved {
        Err(_) => Some(ClaimResult::Refused),
        Ok(pooled) if pooled.decided => Some(ClaimResult::of(&pooled.source)),
        Ok(_) => None,
    }
}

/// An Event to publish on the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Announcement {
    /// Normal or Warning.
    pub type_: EventType,
    /// `Claimed` or `ColdStart`.
    pub reason: &'static str,
    /// What happened, naming the Pod or the field.
    pub note: String,
}

/// The Event for a session that has just got its browser (`before`, the
/// stored `status.pool`, is not set yet); `None` otherwise, and while it waits.
///
/// A cold start for an empty pool is a Warning: the pool was sized too
/// small for its demand, which its owner can fix (`minReady`) and wants to
/// find among `type=Warning` Events. A cold start the session's own fields
/// require is Normal: nothing is wrong, and no pool size would change it.
pub fn announcement(before: Option<&PoolClaimStatus>, pool: &str, source: &Source) -> Option<Announcement> {
    if before.is_some() {
        return None;
    }
    match source {
        Source::Claimed(pod) => Some(Announcement {
            type_: EventType::Normal,
            reason: "Claimed",
            note: format!(
                "claimed warm browser Pod {} from BrowserPool {pool}",
                pod.metadata.name.as_deref().unwrap_or_default()
            ),
        }),
        Source::Cold { reason, message } => Some(Announcement {
            type_: match reason {
                ColdReason::PoolEmpty => EventType::Warning,
                ColdReason::NeedsColdStart => EventType::Normal,
            },
            reason: "ColdStart",
            note: format!("{}: {message}", reason.as_str()),
        }),
        Source::Waiting { .. } => None,
    }
}

/// Seconds from the session's creation to `now` (never negative: clocks of
/// the API server and the operator may disagree a little).
pub fn waited(created: Option<&Time>, now: Timestamp) -> Option<f64> {
    let created = created?.0;
    let span = now.since(created).ok()?;
    let seconds = span.total(k8s_openapi::jiff::Unit::Second).ok()?;
    Some(seconds.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn claimed() -> Source {
        let mut pod = Pod::default();
        pod.metadata.name = Some("agents-abc123.x1y2z-browser".into());
        Source::Claimed(Box::new(pod))
    }

    fn cold(reason: ColdReason) -> Source {
        Source::Cold { reason, message: "spec.recording starts with the browser".into() }
    }

    #[test]
    fn every_source_has_its_label_and_a_re_read_counts_nothing() {
        let spec = serde_json::from_value(serde_json::json!({"pool": {"name": "agents"}})).unwrap();
        let mut session = playpen_api::BrowserSession::new("s", spec);
        session.metadata.namespace = Some("ns".into());
        session.metadata.uid = Some("uid".into());
        let id = crate::children::Identity::of(&session).unwrap();
        let template = crate::claim::Template {
            hash: "abc123".into(),
            spec: serde_json::from_value(serde_json::json!({"image": "i"})).unwrap(),
        };
        let pooled = |source: Source, decided: bool| Pooled {
            session: session.clone(),
            template: template.clone(),
            id: id.clone(),
            source,
            decided,
        };
        let cases = [
            (Ok(pooled(claimed(), true)), Some("claimed")),
            (Ok(pooled(cold(ColdReason::PoolEmpty), true)), Some("cold")),
            (Ok(pooled(Source::Waiting { warming: 1 }, true)), Some("waiting")),
            (Err(Refusal::PoolNotFound("p".into())), Some("refused")),
            (Ok(pooled(claimed(), false)), None),
            (Ok(pooled(cold(ColdReason::NeedsColdStart), false)), None),
        ];
        for (resolved, want) in cases {
            assert_eq!(attempt(&resolved).map(ClaimResult::as_str), want, "{resolved:?}");
        }
    }

    #[test]
    fn a_session_is_announced_once_when_it_gets_its_browser() {
        let a = announcement(None, "agents", &claimed()).unwrap();
        assert_eq!((a.type_, a.reason), (EventType::Normal, "Claimed"));
        assert!(a.note.contains("agents-abc123.x1y2z-browser") && a.note.contains("BrowserPool agents"), "{}", a.note);
        let empty = announcement(None, "agents", &cold(ColdReason::PoolEmpty)).unwrap();
        assert_eq!((empty.type_, empty.reason), (EventType::Warning, "ColdStart"));
        assert!(empty.note.starts_with("PoolEmpty: "), "{}", empty.note);
        let needs = announcement(None, "agents", &cold(ColdReason::NeedsColdStart)).unwrap();
        assert_eq!(needs.type_, EventType::Normal);
        assert!(needs.note.starts_with("NeedsColdStart: spec.recording"), "{}", needs.note);
        assert_eq!(announcement(None, "agents", &Source::Waiting { warming: 2 }), None, "waiting is no browser yet");
        let placed = PoolClaimStatus {
            name: "agents".into(),
            claimed: true,
            time: Time(Timestamp::UNIX_EPOCH),
            template_hash: None,
            template: None,
        };
        for source in [claimed(), cold(ColdReason::PoolEmpty), cold(ColdReason::NeedsColdStart)] {
            assert_eq!(announcement(Some(&placed), "agents", &source), None, "said already");
        }
    }

    #[test]
    fn the_wait_counts_from_creation_and_is_never_negative() {
        let now = Timestamp::from_second(1_800_000_100).unwrap();
        let created = Time(Timestamp::from_millisecond(1_800_000_097_500).unwrap());
        assert_eq!(waited(Some(&created), now), Some(2.5));
        let later = Time(Timestamp::from_second(1_800_000_101).unwrap());
        assert_eq!(waited(Some(&later), now), Some(0.0));
        assert_eq!(waited(None, now), None);
    }
}
