use serde_json::json;

use super::*;

fn pod(value: serde_json::Value) -> Pod {
    serde_json::from_value(value).expect("pod")
}

fn unschedulable(message: &str) -> serde_json::Value {
    json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]})
}

const NO_CPU: &str = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";

fn waiting(ns: &str, name: &str) -> WaitingPod {
    WaitingPod { uid: format!("uid-{ns}-{name}"), namespace: ns.into(), name: name.into() }
}

fn warm(ns: &str, pool: &str, name: &str, scheduled: bool, ready: bool, created: i64) -> WarmPod {
    WarmPod {
        uid: format!("uid-{name}"),
        resource_version: Some("1".into()),
        namespace: ns.into(),
        name: name.into(),
        pool: pool.into(),
        scheduled,
        ready,
        terminating: false,
        created: Timestamp::from_second(created).expect("time"),
    }
}

fn names(picks: &[Pick], warm: &[WarmPod]) -> Vec<String> {
    picks.iter().map(|p| warm[p.warm].name.clone()).collect()
}

#[test]
fn only_want_of_resources_is_waiting_for_room() {
    for message in
        [NO_CPU, "0/3 nodes are available: 3 Insufficient memory.", "0/1 nodes are available: 1 Too many pods."]
    {
        let p = pod(json!({"status": unschedulable(message)}));
        assert_eq!(waits_for_room(&p), Some(message), "{message}");
    }
    for status in [
        unschedulable("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."),
        unschedulable("0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."),
        json!({"conditions": [{"type": "PodScheduled", "status": "True"}]}),
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": NO_CPU}]}),
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        json!({}),
    ] {
        assert_eq!(waits_for_room(&pod(json!({"status": status}))), None, "{status}");
    }
}

#[test]
fn a_session_pod_waits_a_warm_or_terminating_one_does_not() {
    let meta =
        |labels: serde_json::Value| json!({"name": "s-browser", "namespace": "a", "uid": "u1", "labels": labels});
    let session = pod(json!({"metadata": meta(json!({})), "status": unschedulable(NO_CPU)}));
    assert_eq!(
        WaitingPod::of(&session),
        Some(WaitingPod { uid: "u1".into(), namespace: "a".into(), name: "s-browser".into() })
    );
    let claimed = pod(
        json!({"metadata": meta(json!({POOL_LABEL: "p", POOL_STATE_LABEL: "claimed"})), "status": unschedulable(NO_CPU)}),
    );
    assert!(WaitingPod::of(&claimed).is_some(), "a claimed Pod is a session's");
    let warm_pod = pod(
        json!({"metadata": meta(json!({POOL_LABEL: "p", POOL_STATE_LABEL: "warm"})), "status": unschedulable(NO_CPU)}),
    );
    assert_eq!(WaitingPod::of(&warm_pod), None);
    let mut going = session.clone();
    going.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH));
    assert_eq!(WaitingPod::of(&going), None);
}

#[test]
fn a_warm_pod_is_read_from_its_labels_node_and_conditions() {
    let p = pod(json!({
        "metadata": {"name": "w1", "namespace": "a", "uid": "u", "resourceVersion": "7",
            "creationTimestamp": "2026-12-01T12:00:00Z", "labels": {POOL_LABEL: "p", POOL_STATE_LABEL: "warm"}},
        "spec": {"nodeName": "n1", "containers": []},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }));
    let w = WarmPod::of(&p).expect("warm");
    assert_eq!((w.pool.as_str(), w.scheduled, w.ready, w.terminating), ("p", true, true, false));
    assert_eq!(w.resource_version.as_deref(), Some("7"));
    let mut claimed = p.clone();
    claimed.metadata.labels.as_mut().expect("labels").insert(POOL_STATE_LABEL.into(), "claimed".into());
    assert_eq!(WarmPod::of(&claimed), None, "a claimed Pod is never a candidate");
    let unlabelled = pod(json!({"metadata": {"name": "x", "namespace": "a", "uid": "u"}}));
    assert_eq!(WarmPod::of(&unlabelled), None);
}

#[test]
fn nothing_goes_while_nobody_waits() {
    let pods = [warm("a", "p", "w1", true, true, 1), warm("a", "p", "w2", false, false, 2)];
    assert!(plan(&[], &pods, &Ledger::default(), Instant::now()).is_empty());
}

#[test]
fn one_warm_pod_per_waiting_session_and_unscheduled_ones_all_go() {
    let pods = [
        warm("a", "p", "ready-old", true, true, 1),
        warm("a", "p", "ready-young", true, true, 5),
        warm("a", "p", "pending", false, false, 6),
        warm("a", "p", "warming", true, false, 3),
    ];
    let picks = plan(&[waiting("a", "s1"), waiting("a", "s2")], &pods, &Ledger::default(), Instant::now());
    assert_eq!(names(&picks, &pods), ["pending", "warming", "ready-young"]);
    assert_eq!(picks[0].reason, Reason::Competes);
    assert_eq!(picks[1].reason, Reason::MakesRoomFor("uid-a-s1".into()));
    assert_eq!(picks[2].reason, Reason::MakesRoomFor("uid-a-s2".into()));
}

#[test]
fn the_sessions_namespace_first_then_the_largest_pool() {
    let pods = [
        warm("b", "big", "b1", true, false, 1),
        warm("a", "small", "a1", true, true, 1),
        warm("a", "big", "a2", true, true, 1),
        warm("a", "big", "a3", true, true, 2),
    ];
    let picks = plan(&[waiting("a", "s1")], &pods, &Ledger::default(), Instant::now());
    assert_eq!(names(&picks, &pods), ["a3"], "own namespace before warming elsewhere; the bigger pool; the younger");
    // With its namespace's Pods gone, another namespace's go.
    let picks = plan(&[waiting("c", "s1")], &pods, &Ledger::default(), Instant::now());
    assert_eq!(names(&picks, &pods), ["b1"]);
    // Each pick shrinks its pool, so the loss is spread: then the pools are
    // even, and the name decides.
    let picks =
        plan(&[waiting("a", "s1"), waiting("a", "s2"), waiting("a", "s3")], &pods, &Ledger::default(), Instant::now());
    assert_eq!(names(&picks, &pods), ["a3", "a1", "a2"]);
}

#[test]
fn terminating_and_claimed_pods_are_not_candidates_and_candidates_run_out() {
    let mut going = warm("a", "p", "going", true, true, 1);
    going.terminating = true;
    let pods = [going, warm("a", "p", "w1", true, true, 2)];
    let picks = plan(&[waiting("a", "s1"), waiting("a", "s2")], &pods, &Ledger::default(), Instant::now());
    assert_eq!(names(&picks, &pods), ["w1"]);
}

#[test]
fn a_session_gets_another_only_after_its_first_is_gone_and_settled() {
    let t0 = Instant::now();
    let pods = vec![warm("a", "p", "w1", true, true, 1), warm("a", "p", "w2", true, true, 2)];
    let wait = [waiting("a", "s1")];
    let mut ledger = Ledger::default();
    let picks = plan(&wait, &pods, &ledger, t0);
    assert_eq!(names(&picks, &pods), ["w2"]);
    ledger.give("uid-a-s1", "uid-w2");
    // Still there (terminating): nothing more.
    let mut terminating = pods.clone();
    terminating[1].terminating = true;
    ledger.update(&wait, &terminating, t0);
    assert!(plan(&wait, &terminating, &ledger, t0 + SETTLE * 2).is_empty());
    // Gone: nothing until SETTLE has passed, then the next.
    let left = vec![pods[0].clone()];
    let t1 = t0 + Duration::from_secs(1);
    ledger.update(&wait, &left, t1);
    assert!(plan(&wait, &left, &ledger, t1 + SETTLE - Duration::from_millis(1)).is_empty());
    assert_eq!(names(&plan(&wait, &left, &ledger, t1 + SETTLE), &left), ["w1"]);
    // The session is scheduled: forgotten.
    ledger.update(&[], &left, t1);
    assert!(ledger.is_empty());
}

#[test]
fn a_round_is_bounded() {
    let pods: Vec<WarmPod> = (0..30).map(|i| warm("a", "p", &format!("w{i:02}"), i % 2 == 0, true, i)).collect();
    let wait: Vec<WaitingPod> = (0..30).map(|i| waiting("a", &format!("s{i:02}"))).collect();
    let picks = plan(&wait, &pods, &Ledger::default(), Instant::now());
    let competes = picks.iter().filter(|p| p.reason == Reason::Competes).count();
    assert_eq!((competes, picks.len() - competes), (MAX_PER_ROUND, MAX_PER_ROUND));
    let mut warm_picked: Vec<usize> = picks.iter().map(|p| p.warm).collect();
    warm_picked.sort_unstable();
    warm_picked.dedup();
    assert_eq!(warm_picked.len(), picks.len(), "no Pod picked twice");
}
