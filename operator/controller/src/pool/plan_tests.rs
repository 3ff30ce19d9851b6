use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

const NOW: &str = "2026-12-01T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().expect("now")
}

/// A Pod created `age` seconds ago.
fn pod(name: &str, hash: &str, state: PodState, ready: bool, age: i64) -> PoolPod {
    PoolPod {
        name: name.into(),
        template_hash: hash.into(),
        state,
        ready,
        failed: false,
        terminating: false,
        created: now() - k8s_openapi::jiff::SignedDuration::from_secs(age),
    }
}

fn warm(name: &str, hash: &str, ready: bool) -> PoolPod {
    pod(name, hash, PodState::Warm, ready, 30)
}

fn want(min_ready: i32, max_unclaimed: i32) -> Want<'static> {
    Want { min_ready, max_unclaimed, template_hash: "cur", hold: false }
}

fn deleted(p: &Plan) -> Vec<(&str, DeleteReason)> {
    p.delete.iter().map(|(n, r)| (n.as_str(), *r)).collect()
}

fn counts(ready: i32, warming: i32, claimed: i32) -> Counts {
    Counts { ready, warming, claimed }
}

#[test]
fn an_empty_pool_creates_min_ready() {
    let p = plan(want(2, 3), &[], now());
    assert_eq!((p.create, deleted(&p), p.counts), (2, vec![], counts(0, 2, 0)));
}

#[test]
fn a_hold_creates_nothing_and_keeps_old_ready_pods() {
    let held = Want { hold: true, ..want(2, 3) };
    let p = plan(held, &[warm("a", "cur", true)], now());
    assert_eq!((p.create, deleted(&p), p.counts), (0, vec![], counts(1, 0, 0)));
    // Full of old ready Pods: none is swapped for a new one while held.
    let p = plan(held, &[warm("o1", "old", true), warm("o2", "old", true), warm("o3", "old", true)], now());
    assert_eq!((p.create, p.delete.len()), (0, 1), "only the one beyond minReady goes: {p:?}");
    // Failed Pods still go.
    let mut failed = warm("f", "cur", false);
    failed.failed = true;
    let p = plan(held, &[failed], now());
    assert_eq!((p.create, deleted(&p)), (0, vec![("f", DeleteReason::Failed)]));
}

#[test]
fn table() {
    use DeleteReason::*;
    use PodState::*;
    type Row = (&'static str, Want<'static>, Vec<PoolPod>, i32, Vec<(&'static str, DeleteReason)>, Counts);
    let rows: Vec<Row> = vec![
        (
            "steady: two ready",
            want(2, 3),
            vec![warm("a", "cur", true), warm("b", "cur", true)],
            0,
            vec![],
            counts(2, 0, 0),
        ),
        ("one warming, one missing", want(2, 3), vec![warm("a", "cur", false)], 1, vec![], counts(0, 2, 0)),
        (
            "claimed are counted, never deleted, and replaced",
            want(1, 2),
            vec![pod("c", "cur", Claimed, true, 30), pod("d", "old", Claimed, false, 9999)],
            1,
            vec![],
            counts(0, 1, 2),
        ),
        ("scale to zero", want(0, 1), vec![warm("a", "cur", true)], 0, vec![("a", Surplus)], counts(0, 0, 0)),
        (
            "scale down keeps the ready and oldest",
            want(1, 2),
            vec![pod("young", "cur", Warm, true, 10), pod("old", "cur", Warm, true, 50), warm("w", "cur", false)],
            0,
            vec![("young", Surplus), ("w", Surplus)],
            counts(1, 0, 0),
        ),
        (
            "failed is replaced",
            want(1, 2),
            vec![PoolPod { failed: true, ..warm("f", "cur", false) }],
            1,
            vec![("f", Failed)],
            counts(0, 1, 0),
        ),
        (
            "never ready in 5 minutes is replaced",
            want(1, 2),
            vec![pod("slow", "cur", Warm, false, 301)],
            1,
            vec![("slow", NeverReady)],
            counts(0, 1, 0),
        ),
        ("ready late is fine", want(1, 2), vec![pod("late", "cur", Warm, true, 3000)], 0, vec![], counts(1, 0, 0)),
        (
            "terminating are ignored",
            want(1, 2),
            vec![PoolPod { terminating: true, ..warm("t", "cur", true) }],
            1,
            vec![],
            counts(0, 1, 0),
        ),
        (
            "template change with room: old ones stay while new ones warm",
            want(2, 3),
            vec![warm("o1", "old", true), warm("o2", "old", true)],
            1,
            vec![],
            counts(0, 3, 0),
        ),
        (
            "template change: a new one ready lets one old go and the next start",
            want(2, 3),
            vec![warm("o1", "old", true), warm("o2", "old", true), warm("n1", "cur", true)],
            1,
            vec![("o2", Outdated)],
            counts(1, 2, 0),
        ),
        (
            "template change: all new ready, old gone",
            want(2, 3),
            vec![warm("o1", "old", true), warm("n1", "cur", true), warm("n2", "cur", true)],
            0,
            vec![("o1", Outdated)],
            counts(2, 0, 0),
        ),
        (
            "template change without room: one old goes at once",
            want(2, 2),
            vec![warm("o1", "old", true), warm("o2", "old", true)],
            1,
            vec![("o2", Outdated)],
            counts(0, 2, 0),
        ),
        (
            "template change without room: wait while a new one warms",
            want(2, 2),
            vec![warm("o1", "old", true), warm("n1", "cur", false)],
            0,
            vec![],
            counts(0, 2, 0),
        ),
        (
            "an old Pod still warming goes at once",
            want(1, 3),
            vec![warm("o1", "old", false)],
            1,
            vec![("o1", Outdated)],
            counts(0, 1, 0),
        ),
        (
            "over the bound (maxSize lowered): old ones go first",
            want(1, 1),
            vec![warm("o1", "old", true), warm("o2", "old", true), warm("n1", "cur", false)],
            0,
            vec![("o1", Outdated), ("o2", Outdated)],
            counts(0, 1, 0),
        ),
    ];
    for (name, w, pods, create, delete, c) in rows {
        let p = plan(w, &pods, now());
        assert_eq!((p.create, deleted(&p), p.counts), (create, delete, c), "{name}");
    }
}

/// Carries a plan out: deleted Pods vanish, created ones appear warming.
fn apply(pods: &mut Vec<PoolPod>, p: &Plan, seq: &mut u32, hash: &str) {
    let gone: BTreeSet<&str> = p.delete.iter().map(|(n, _)| n.as_str()).collect();
    pods.retain(|pod| !gone.contains(pod.name.as_str()));
    for _ in 0..p.create {
        *seq += 1;
        pods.push(pod(&format!("new{seq}"), hash, PodState::Warm, false, 0));
    }
}

#[test]
fn a_template_change_converges_with_readiness_never_below_min_ready_given_room() {
    let mut pods: Vec<PoolPod> = (0..3).map(|i| warm(&format!("o{i}"), "old", true)).collect();
    let mut seq = 0;
    let w = want(3, 4);
    for _ in 0..20 {
        let p = plan(w, &pods, now());
        apply(&mut pods, &p, &mut seq, "cur");
        let ready = pods.iter().filter(|p| p.ready).count();
        assert!(ready >= 3, "ready dipped to {ready}: {pods:?}");
        assert!(pods.len() <= 4);
        // The warming ones become ready.
        for pod in &mut pods {
            pod.ready = true;
        }
    }
    assert!(pods.iter().all(|p| p.template_hash == "cur") && pods.len() == 3, "{pods:?}");
    assert_eq!(plan(w, &pods, now()), Plan { counts: counts(3, 0, 0), ..Plan::default() });
}

fn arb_pod() -> impl Strategy<Value = PoolPod> {
    (
        0u32..1000,
        prop_oneof![Just("cur"), Just("old"), Just("older")],
        prop_oneof![3 => Just(PodState::Warm), 1 => Just(PodState::Claimed)],
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        0i64..600,
    )
        .prop_map(|(id, hash, state, ready, failed, terminating, age)| PoolPod {
            failed,
            terminating,
            ..pod(&format!("p{id}"), hash, state, ready, age)
        })
}

fn arb_pods() -> impl Strategy<Value = Vec<PoolPod>> {
    prop::collection::vec(arb_pod(), 0..12).prop_map(|mut pods| {
        let mut seen = BTreeSet::new();
        pods.retain(|p| seen.insert(p.name.clone()));
        pods
    })
}

proptest! {
    #[test]
    fn invariants(pods in arb_pods(), min_ready in 0i32..6, extra in 0i32..4) {
        let max_unclaimed = min_ready.max(1) + extra;
        let w = want(min_ready, max_unclaimed);
        let p = plan(w, &pods, now());
        let by_name = |n: &str| pods.iter().find(|p| p.name == n).expect("deleted a Pod that is not there");
        let gone: BTreeSet<&str> = p.delete.iter().map(|(n, _)| n.as_str()).collect();
        prop_assert_eq!(gone.len(), p.delete.len(), "a Pod deleted twice");
        for name in &gone {
            let pod = by_name(name);
            prop_assert_eq!(pod.state, PodState::Warm, "deleted a claimed Pod");
            prop_assert!(!pod.terminating, "deleted a Pod being deleted");
        }
        let unclaimed_after = pods
            .iter()
            .filter(|p| p.state == PodState::Warm && !p.terminating && !gone.contains(p.name.as_str()))
            .count();
        let unclaimed_after = i32::try_from(unclaimed_after).expect("small") + p.create;
        prop_assert!(unclaimed_after <= max_unclaimed, "{} unclaimed > {}", unclaimed_after, max_unclaimed);
        prop_assert!(p.create >= 0);
        prop_assert_eq!(p.counts.ready + p.counts.warming, unclaimed_after);
        prop_assert_eq!(
            p.counts.claimed,
            i32::try_from(pods.iter().filter(|p| p.state == PodState::Claimed && !p.terminating).count()).expect("small")
        );
        // Current Pods, ready or warming, reach minReady unless the bound is full.
        let current_after = pods
            .iter()
            .filter(|q| q.state == PodState::Warm && !q.terminating && q.template_hash == "cur")
            .filter(|q| !gone.contains(q.name.as_str()))
            .count();
        let current_after = i32::try_from(current_after).expect("small") + p.create;
        prop_assert!(current_after == min_ready || unclaimed_after == max_unclaimed,
            "current {} minReady {} unclaimed {}", current_after, min_ready, unclaimed_after);
        // Replacement is safe: a ready Pod of an older template goes only when
        // the current ones cover minReady, or to stay within the bound.
        let ready_after = pods
            .iter()
            .filter(|q| q.state == PodState::Warm && !q.terminating && q.ready && !q.failed)
            .filter(|q| !gone.contains(q.name.as_str()))
            .count();
        let ready_after = i32::try_from(ready_after).expect("small");
        let old_ready_deleted = p.delete.iter().any(|(n, r)| *r == DeleteReason::Outdated && by_name(n).ready);
        if old_ready_deleted {
            prop_assert!(ready_after >= min_ready || unclaimed_after == max_unclaimed,
                "ready {} < minReady {} with room to spare", ready_after, min_ready);
        }
    }
}
