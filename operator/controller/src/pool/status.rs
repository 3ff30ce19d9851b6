//! The pool's status, a pure function of the plan's counts.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use playpen_api::text::{truncate, CONDITION_MESSAGE_MAX_BYTES};
use playpen_api::v1alpha1::{BrowserPool, BrowserPoolStatus};

use super::plan::Counts;
use super::warm::warm_selector_string;
use crate::error::Refused;

/// The pool's one condition: `minReady` Pods of the current template are ready.
pub const READY: &str = "Ready";

/// Why a pool is short of warm browsers when the API server refuses to
/// create them (a missing RuntimeClass, a quota, an admission policy).
pub const CREATE_REFUSED: &str = "CreateRefused";

/// The status of `pool` whose plan left `counts`, at template `hash`;
/// `held`: its refills wait for sessions that do not fit on the nodes;
/// `refused`: the API server refused a warm browser's object for good.
pub fn compute(
    pool: &BrowserPool,
    name: &str,
    hash: &str,
    counts: Counts,
    (held, refused): (bool, Option<&Refused>),
    now: Timestamp,
) -> BrowserPoolStatus {
    let min_ready = pool.spec.min_ready;
    let generation = pool.metadata.generation;
    let ready = counts.ready >= min_ready;
    let (status, reason, message) = if ready {
        ("True", "MinReady", format!("{} of {min_ready} warm browsers ready", counts.ready))
    } else if let Some(r) = refused {
        (
            "False",
            CREATE_REFUSED,
            format!(
                "{} of {min_ready} warm browsers ready: the API server refused {} {}: {}; retried with backoff",
                counts.ready, r.kind, r.name, r.message
            ),
        )
    } else if held {
        (
            "False",
            "Yielding",
            format!(
                "{} of {min_ready} warm browsers ready, {} starting; refills wait while sessions wait for room on the nodes",
                counts.ready, counts.warming
            ),
        )
    } else {
        (
            "False",
            "Warming",
            format!("{} of {min_ready} warm browsers ready, {} starting", counts.ready, counts.warming),
        )
    };
    let previous = pool.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Time(now),
    };
    BrowserPoolStatus {
        ready: counts.ready,
        warming: counts.warming,
        claimed: counts.claimed,
        selector: Some(warm_selector_string(name)),
        template_hash: Some(hash.to_owned()),
        observed_generation: generation,
        conditions: vec![Condition {
            type_: READY.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: truncate(&message, CONDITION_MESSAGE_MAX_BYTES),
            observed_generation: generation,
            last_transition_time,
        }],
    }
}

#[cfg(test)]
mod tests {
    use playpen_api::v1alpha1::BrowserPoolSpec;
    use serde_json::json;

    use super::*;

    fn pool(min_ready: i32) -> BrowserPool {
        let template = serde_json::from_value(json!({"image": "i"})).expect("template");
        let mut pool = BrowserPool::new(
            "shop",
            BrowserPoolSpec { template, min_ready, max_size: None, when_empty: Default::default() },
        );
        pool.metadata.generation = Some(3);
        pool
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    #[test]
    fn ready_when_min_ready_are_ready() {
        let t0 = at("2026-12-01T12:00:00Z");
        let s = compute(&pool(2), "shop", "abc123", Counts { ready: 1, warming: 1, claimed: 4 }, (false, None), t0);
        assert_eq!((s.ready, s.warming, s.claimed), (1, 1, 4));
        assert_eq!(s.selector.as_deref(), Some("playpen.dev/pool=shop,playpen.dev/pool-state=warm"));
        assert_eq!((s.template_hash.as_deref(), s.observed_generation), (Some("abc123"), Some(3)));
        let c = &s.conditions[0];
        assert_eq!((c.type_.as_str(), c.status.as_str(), c.reason.as_str()), (READY, "False", "Warming"));
        assert_eq!(c.observed_generation, Some(3));

        // The transition time moves only when the status does.
        let mut p = pool(2);
        p.status = Some(s);
        let t1 = at("2026-12-01T12:01:00Z");
        let same = compute(&p, "shop", "abc123", Counts { ready: 1, warming: 1, claimed: 4 }, (false, None), t1);
        assert_eq!(same.conditions[0].last_transition_time, Time(t0));
        let ready = compute(&p, "shop", "abc123", Counts { ready: 2, warming: 0, claimed: 4 }, (false, None), t1);
        assert_eq!(
            (ready.conditions[0].status.as_str(), &ready.conditions[0].last_transition_time),
            ("True", &Time(t1))
        );
    }

    #[test]
    fn a_pool_short_while_sessions_wait_says_it_yields() {
        let t0 = at("2026-12-01T12:00:00Z");
        let s = compute(&pool(3), "shop", "abc123", Counts { ready: 1, warming: 0, claimed: 0 }, (true, None), t0);
        let c = &s.conditions[0];
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Yielding"));
        assert!(c.message.contains("1 of 3") && c.message.contains("sessions wait for room"), "{}", c.message);
        // Full, it is Ready whatever waits.
        let s = compute(&pool(1), "shop", "abc123", Counts { ready: 1, warming: 0, claimed: 0 }, (true, None), t0);
        assert_eq!(s.conditions[0].reason, "MinReady");
    }

    #[test]
    fn an_empty_pool_asked_for_nothing_is_ready() {
        let s = compute(&pool(0), "shop", "abc123", Counts::default(), (false, None), at("2026-12-01T12:00:00Z"));
        assert_eq!(s.conditions[0].status, "True");
    }

    #[test]
    fn a_refused_create_is_said_until_the_pool_is_ready_again() {
        let t0 = at("2026-12-01T12:00:00Z");
        let refused = Refused {
            kind: "Pod",
            name: "shop-w1".into(),
            message: "pod rejected: RuntimeClass \"gvisor\" not found".into(),
        };
        let counts = Counts { ready: 0, warming: 0, claimed: 0 };
        let s = compute(&pool(2), "shop", "abc123", counts, (true, Some(&refused)), t0);
        let c = &s.conditions[0];
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", CREATE_REFUSED), "the refusal before the room");
        assert!(
            c.message.contains("refused Pod shop-w1: pod rejected: RuntimeClass \"gvisor\" not found"),
            "{}",
            c.message
        );
        let long = Refused { message: "x".repeat(40_000), ..refused };
        let s = compute(&pool(2), "shop", "abc123", counts, (false, Some(&long)), t0);
        assert!(s.conditions[0].message.len() <= CONDITION_MESSAGE_MAX_BYTES, "a message the API server takes");
        let full = Counts { ready: 2, ..counts };
        let s = compute(&pool(2), "shop", "abc123", full, (false, Some(&long)), t0);
        assert_eq!(s.conditions[0].reason, "MinReady", "enough browsers: a refused surplus is no news");
    }
}
