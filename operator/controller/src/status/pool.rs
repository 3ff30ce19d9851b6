//! The status parts of a session with `spec.pool` (pure): where its browser
//! came from (`PoolClaimed`, `status.pool`), or why it cannot run
//! (`ConfigResolved`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase, PoolClaimStatus};

use super::{settle, Cond};
use crate::claim::{Refusal, Source};

/// Adds `PoolClaimed` and `status.pool` for a session of pool `pool`.
pub fn record_source(status: &mut BrowserSessionStatus, pool: &str, source: &Source, now: Timestamp) {
    let claimed = matches!(source, Source::Claimed(_));
    let cond = match source {
        Source::Claimed(pod) => Cond::new(
            condition::POOL_CLAIMED,
            true,
            "Claimed",
            format!(
                "took the warm browser Pod {} from BrowserPool {pool:?}",
                pod.metadata.name.as_deref().unwrap_or_default()
            ),
        ),
        Source::Cold(reason) => Cond::new(condition::POOL_CLAIMED, false, cold_reason_word(reason), reason.clone()),
    };
    let previous = status.conditions.clone();
    let same = status.pool.as_ref().filter(|p| p.name == pool && p.claimed == claimed).map(|p| p.time.clone());
    status.pool = Some(PoolClaimStatus { name: pool.to_owned(), claimed, time: same.unwrap_or(Time(now)) });
    status.conditions.retain(|c| c.type_ != condition::POOL_CLAIMED);
    status.conditions.push(settle(cond, &previous, status.observed_generation, now));
}

/// A one-word reason for a cold start's message.
fn cold_reason_word(reason: &str) -> &'static str {
    if reason.starts_with("spec.") {
        "NeedsColdStart"
    } else {
        "PoolEmpty"
    }
}

/// Marks the session unresolvable for `refusal`: `ConfigResolved` and
/// `Ready` False naming the field and the fix, phase Failed.
pub fn refuse(
    status: &mut BrowserSessionStatus,
    refusal: &Refusal,
    previous: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    now: Timestamp,
) {
    let generation = status.observed_generation;
    for type_ in [condition::CONFIG_RESOLVED, condition::READY] {
        let cond = Cond::new(type_, false, refusal.reason(), refusal.message());
        let settled = settle(cond, previous, generation, now);
        match status.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(slot) => *slot = settled,
            None => status.conditions.push(settled),
        }
    }
    status.phase = Some(Phase::Failed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn cond<'a>(
        s: &'a BrowserSessionStatus,
        type_: &str,
    ) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        s.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn a_claim_and_a_cold_start_say_where_the_browser_came_from() {
        let mut s = BrowserSessionStatus::default();
        let mut pod = Pod::default();
        pod.metadata.name = Some("warm-abc123-x1y2z-browser".into());
        record_source(&mut s, "warm", &Source::Claimed(Box::new(pod)), now());
        assert_eq!(cond(&s, condition::POOL_CLAIMED).status, "True");
        assert!(cond(&s, condition::POOL_CLAIMED).message.contains("warm-abc123-x1y2z-browser"));
        assert!(s.pool.as_ref().unwrap().claimed);
        let mut s = BrowserSessionStatus::default();
        record_source(&mut s, "warm", &Source::Cold("spec.authState is loaded when the browser starts".into()), now());
        let c = cond(&s, condition::POOL_CLAIMED);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "NeedsColdStart"));
        record_source(&mut s, "warm", &Source::Cold("BrowserPool \"warm\" had no ready browser".into()), now());
        assert_eq!(cond(&s, condition::POOL_CLAIMED).reason, "PoolEmpty");
        assert_eq!(s.conditions.len(), 1, "one PoolClaimed condition");
    }

    #[test]
    fn a_refusal_fails_the_session_naming_the_field() {
        let mut s = BrowserSessionStatus { phase: Some(Phase::Pending), ..Default::default() };
        refuse(&mut s, &Refusal::TemplateConflict(vec!["spec.viewer"]), &[], now());
        assert_eq!(s.phase, Some(Phase::Failed));
        let c = cond(&s, condition::CONFIG_RESOLVED);
        assert_eq!(c.reason, "PoolTemplateConflict");
        assert!(c.message.starts_with("spec.viewer set on a session with spec.pool"), "{}", c.message);
        assert_eq!(cond(&s, condition::READY).status, "False");
        refuse(&mut s, &Refusal::PoolNotFound("nope".into()), &[], now());
        assert!(cond(&s, condition::READY).message.starts_with("spec.pool.name: no BrowserPool \"nope\""));
    }
}
