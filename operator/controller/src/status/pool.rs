//! The status parts of a session with `spec.pool` (pure): where its browser
//! came from (`PoolClaimed`, `status.pool`), that it waits for one, or why
//! it cannot run (`ConfigResolved`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase, PoolClaimStatus};

use super::{settle, Cond};
use crate::claim::source::{Refusal, Source, Template};

/// Adds `PoolClaimed` and `status.pool` (with the template its browser
/// runs) for a session of pool `pool`. A waiting session has no
/// `status.pool` (its browser came from nowhere yet) and is Pending, its
/// `Ready` saying what it waits for.
pub fn record_source(
    status: &mut BrowserSessionStatus,
    pool: &str,
    source: &Source,
    template: &Template,
    now: Timestamp,
) {
    let claimed = matches!(source, Source::Claimed(_));
    let previous = status.conditions.clone();
    let generation = status.observed_generation;
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
        Source::Cold { reason, message } => Cond::new(condition::POOL_CLAIMED, false, reason.as_str(), message.clone()),
        Source::Waiting { warming } => {
            let message = waiting_message(pool, *warming);
            let ready = Cond::new(condition::READY, false, POOL_WAITING, message.clone());
            replace(status, settle(ready, &previous, generation, now));
            status.phase = Some(Phase::Pending);
            status.pool = None;
            // The session's CLI name and sockets are the Pod's it will claim, not known yet.
            status.session_name = None;
            status.socket_namespace = None;
            let cond = Cond::new(condition::POOL_CLAIMED, false, POOL_WAITING, message);
            replace(status, settle(cond, &previous, generation, now));
            return;
        }
    };
    let same = status.pool.as_ref().filter(|p| p.name == pool && p.claimed == claimed).map(|p| p.time.clone());
    status.pool = Some(PoolClaimStatus {
        name: pool.to_owned(),
        claimed,
        time: same.unwrap_or(Time(now)),
        template_hash: Some(template.hash.clone()),
        template: Some(template.spec.clone()),
    });
    replace(status, settle(cond, &previous, generation, now));
}

/// The reason of a session waiting for a pool's browser.
pub const POOL_WAITING: &str = "PoolWaiting";

/// What a waiting session says: the pool, and whether anything is on its way.
pub fn waiting_message(pool: &str, warming: usize) -> String {
    let coming = match warming {
        0 => "none is warming (the pool is at spec.maxSize, or its spec.minReady is 0): raise them".to_owned(),
        1 => "1 is warming".to_owned(),
        n => format!("{n} are warming"),
    };
    format!("waiting for a ready browser of BrowserPool {pool:?} (spec.whenEmpty: Wait); {coming}")
}

/// Puts `cond` in place of the condition of its type.
fn replace(status: &mut BrowserSessionStatus, cond: k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition) {
    match status.conditions.iter_mut().find(|c| c.type_ == cond.type_) {
        Some(slot) => *slot = cond,
        None => status.conditions.push(cond),
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
        replace(status, settle(cond, previous, generation, now));
    }
    status.phase = Some(Phase::Failed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::source::ColdReason;
    use k8s_openapi::api::core::v1::Pod;

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn template() -> Template {
        let spec = serde_json::from_value(serde_json::json!({"image": "playpen/browser:pool"})).unwrap();
        Template { hash: "abc123".into(), spec }
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
        pod.metadata.name = Some("warm-abc123.x1y2z-browser".into());
        record_source(&mut s, "warm", &Source::Claimed(Box::new(pod)), &template(), now());
        assert_eq!(cond(&s, condition::POOL_CLAIMED).status, "True");
        assert!(cond(&s, condition::POOL_CLAIMED).message.contains("warm-abc123.x1y2z-browser"));
        assert!(s.pool.as_ref().unwrap().claimed);
        let placed = s.pool.as_ref().unwrap();
        assert_eq!(placed.template_hash.as_deref(), Some("abc123"), "the template is recorded at the claim");
        assert_eq!(placed.template.as_ref(), Some(&template().spec));
        let mut s = BrowserSessionStatus::default();
        let needs = "spec.recording starts with the browser".to_owned();
        record_source(
            &mut s,
            "warm",
            &Source::Cold { reason: ColdReason::NeedsColdStart, message: needs },
            &template(),
            now(),
        );
        let c = cond(&s, condition::POOL_CLAIMED);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "NeedsColdStart"));
        let empty = "BrowserPool \"warm\" had no ready browser".to_owned();
        record_source(
            &mut s,
            "warm",
            &Source::Cold { reason: ColdReason::PoolEmpty, message: empty },
            &template(),
            now(),
        );
        assert_eq!(cond(&s, condition::POOL_CLAIMED).reason, "PoolEmpty");
        assert_eq!(s.conditions.len(), 1, "one PoolClaimed condition");
    }

    #[test]
    fn a_waiting_session_is_pending_naming_the_pool_and_what_is_warming() {
        let mut s = BrowserSessionStatus {
            phase: Some(Phase::Pending),
            session_name: Some("mine".into()),
            socket_namespace: Some("0123abcd".into()),
            ..Default::default()
        };
        record_source(&mut s, "agents", &Source::Waiting { warming: 2 }, &template(), now());
        assert_eq!(s.phase, Some(Phase::Pending));
        assert_eq!(s.pool, None, "no browser came from the pool yet");
        assert_eq!((s.session_name.as_deref(), s.socket_namespace.as_deref()), (None, None));
        for type_ in [condition::POOL_CLAIMED, condition::READY] {
            let c = cond(&s, type_);
            assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", POOL_WAITING), "{type_}");
            assert!(
                c.message.contains("BrowserPool \"agents\"") && c.message.ends_with("2 are warming"),
                "{}",
                c.message
            );
        }
        assert_eq!(s.conditions.len(), 2);
        assert!(waiting_message("agents", 1).ends_with("1 is warming"));
        assert!(waiting_message("agents", 0).contains("none is warming"));
        // Then the claim: status.pool appears, PoolClaimed turns True.
        let mut pod = Pod::default();
        pod.metadata.name = Some("agents-abc123.x1y2z-browser".into());
        record_source(&mut s, "agents", &Source::Claimed(Box::new(pod)), &template(), now());
        assert_eq!(cond(&s, condition::POOL_CLAIMED).status, "True");
        assert!(s.pool.as_ref().is_some_and(|p| p.claimed));
    }

    #[test]
    fn a_refusal_fails_the_session_naming_the_field() {
        let mut s = BrowserSessionStatus { phase: Some(Phase::Pending), ..Default::default() };
        refuse(&mut s, &Refusal::TemplateConflict(vec!["spec.viewer".into()]), &[], now());
        assert_eq!(s.phase, Some(Phase::Failed));
        let c = cond(&s, condition::CONFIG_RESOLVED);
        assert_eq!(c.reason, "PoolTemplateConflict");
        assert!(c.message.starts_with("spec.viewer set on a session with spec.pool"), "{}", c.message);
        assert_eq!(cond(&s, condition::READY).status, "False");
        refuse(&mut s, &Refusal::PoolNotFound("nope".into()), &[], now());
        assert!(cond(&s, condition::READY).message.starts_with("spec.pool.name: no BrowserPool \"nope\""));
    }
}
