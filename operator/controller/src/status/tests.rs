//! Status is a pure function: every Pod situation the kubelet can report.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use serde_json::{json, Value};

use super::{compute, Observed};
use crate::children::{EgressDefaults, Identity};
use crate::fixtures::SessionBuilder;
use crate::recovery::Recovery;
use crate::validate::MissingReference;

fn session(spec: Value) -> BrowserSession {
    SessionBuilder::new(spec).generation(3).build()
}

fn pod(status: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "demo-browser"}, "status": status})).expect("pod")
}

fn scheduled() -> Value {
    json!({"type": "PodScheduled", "status": "True"})
}

fn now() -> Timestamp {
    "2026-11-29T12:00:00Z".parse().expect("ts")
}

fn run(bs: &BrowserSession, missing: &[MissingReference], pod: Option<&Pod>) -> BrowserSessionStatus {
    let id = Identity::of(bs).expect("id");
    compute(
        bs,
        &id,
        Observed { missing, pod, recovery: &Recovery::None, refused: None, export: None },
        &EgressDefaults::default(),
        now(),
    )
}

fn cond<'a>(s: &'a BrowserSessionStatus, t: &str) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    s.conditions.iter().find(|c| c.type_ == t).expect(t)
}

#[test]
fn no_pod_is_pending_and_reports_how_to_connect() {
    let bs = session(json!({"image": "i"}));
    let s = run(&bs, &[], None);
    assert_eq!(s.phase, Some(Phase::Pending));
    assert_eq!(cond(&s, condition::READY).status, "False");
    assert_eq!(s.session_name.as_deref(), Some("demo"));
    assert_eq!(s.socket_namespace.as_deref().map(str::len), Some(8));
    let v = s.viewer.clone().expect("viewer");
    assert_eq!(v.command, "kubectl -n ns port-forward svc/demo-view 9323:9323");
    assert_eq!(s.observed_generation, Some(3));
    assert!(cond(&s, condition::READY).observed_generation == Some(3));
    assert!(s.exec_hint.expect("hint").contains("kubectl -n ns exec demo-browser -c browser -- playwright-cli"));
    assert!(s.cdp.is_none(), "no CDP status unless enabled");
    let with_cdp = run(&session(json!({"image": "i", "cdp": {"enabled": true}})), &[], None);
    let cdp = with_cdp.cdp.expect("cdp status");
    assert_eq!((cdp.service.as_str(), cdp.port), ("demo-view", 9222));
    assert_eq!(cdp.command, "kubectl -n ns port-forward svc/demo-view 9222:9222");
    assert!(with_cdp.recording.is_none(), "no recording status unless it records");
    let recorded = run(&session(json!({"image": "i", "recording": {"trace": true}})), &[], None);
    let recording = recorded.recording.expect("recording status");
    assert_eq!(recording.directory, "/var/lib/playpen/snapshots/recordings");
    assert!(recording.trace && !recording.video);
    assert_eq!(recording.command, "kubectl playpen record demo -n ns");
}

#[test]
fn unschedulable_pod_says_why() {
    let bs = session(json!({"image": "i"}));
    let p = pod(json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/1 nodes are available: insufficient memory"}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(s.phase, Some(Phase::Pending));
    let ready = cond(&s, condition::READY);
    assert_eq!(ready.reason, "Unschedulable");
    assert!(ready.message.contains("insufficient memory"));
}

#[test]
fn a_refused_child_is_said_and_the_session_is_not_ready_whatever_its_pod() {
    let mut bs = session(json!({"image": "i"}));
    let id = Identity::of(&bs).expect("id");
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"running": {}}}]}));
    let refused = super::Refused {
        kind: "NetworkPolicy",
        name: "demo-isolate".into(),
        message: "networkpolicies.networking.k8s.io \"demo-isolate\" is forbidden: exceeded quota: np".into(),
    };
    let with = |bs: &BrowserSession, refused: Option<&super::Refused>| {
        let observed = Observed { missing: &[], pod: Some(&p), recovery: &Recovery::None, refused, export: None };
        compute(bs, &id, observed, &EgressDefaults::default(), now())
    };
    let s = with(&bs, Some(&refused));
    let applied = cond(&s, condition::CHILDREN_APPLIED);
    assert_eq!((applied.status.as_str(), applied.reason.as_str()), ("False", super::CHILD_REFUSED));
    assert!(applied.message.contains("NetworkPolicy demo-isolate") && applied.message.contains("exceeded quota"));
    let ready = cond(&s, condition::READY);
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", super::CHILD_REFUSED));
    assert_eq!(s.phase, Some(Phase::Starting), "its Pod runs, but it never was Ready");
    assert_eq!(s.pod_name.as_deref(), Some("demo-browser"), "the real Pod is named");
    // Once up, a refusal is a degradation; once accepted, Ready again.
    bs.status = Some(with(&bs, None));
    assert_eq!(bs.status.as_ref().and_then(|s| s.phase), Some(Phase::Ready));
    assert_eq!(cond(bs.status.as_ref().expect("status"), condition::CHILDREN_APPLIED).status, "True");
    assert_eq!(with(&bs, Some(&refused)).phase, Some(Phase::Degraded));
}

#[test]
fn ready_container_makes_the_session_ready() {
    let bs = session(json!({"image": "i"}));
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"running": {}}}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(s.phase, Some(Phase::Ready));
    for t in [condition::READY, condition::BROWSER_READY, condition::VIEWER_READY, condition::SANDBOX_ENFORCED] {
        assert_eq!(cond(&s, t).status, "True", "{t}");
    }
    assert_eq!(s.pod_name.as_deref(), Some("demo-browser"));
}

#[test]
fn crash_loop_surfaces_the_runtime_report() {
    let bs = session(json!({"image": "i"}));
    let report = r#"{"reason":"NoUsableSandbox","message":"No usable sandbox! Install the playpen seccomp profile on the node"}"#;
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 3, "image": "i", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 70, "message": report}}}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(s.phase, Some(Phase::Degraded));
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!(b.reason, "NoUsableSandbox");
    assert!(b.message.contains("seccomp profile"));
    assert_eq!(cond(&s, condition::READY).reason, "NoUsableSandbox");
    assert_eq!(s.restarts, Some(3));
}

#[test]
fn recovered_session_is_ready_and_says_what_happened() {
    let bs = session(json!({"image": "i"}));
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
            "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 1, "message": "{\"reason\":\"BrowserExited\",\"message\":\"chromium was killed\"}"}}}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(s.phase, Some(Phase::Ready));
    let b = cond(&s, condition::BROWSER_READY);
    assert!(b.message.contains("recovered after 1 restart(s)"), "{}", b.message);
    assert!(b.message.contains("BrowserExited"));
}

#[test]
fn container_config_errors_pass_through() {
    let bs = session(json!({"image": "i"}));
    let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"waiting": {"reason": "CreateContainerError", "message": "cannot load seccomp profile"}}}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(s.phase, Some(Phase::Starting));
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!((b.reason.as_str(), b.message.as_str()), ("CreateContainerError", "cannot load seccomp profile"));
}

#[test]
fn finished_and_failed_pods() {
    let bs = session(json!({"image": "i"}));
    let done = pod(json!({"phase": "Succeeded", "conditions": [scheduled()]}));
    assert_eq!(run(&bs, &[], Some(&done)).phase, Some(Phase::Completed));
    let failed = pod(json!({"phase": "Failed", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"terminated": {"exitCode": 78, "message": "{\"reason\":\"SocketBudgetExceeded\",\"message\":\"too long\"}"}}}]}));
    let s = run(&bs, &[], Some(&failed));
    assert_eq!(s.phase, Some(Phase::Failed));
    assert_eq!(cond(&s, condition::BROWSER_READY).reason, "SocketBudgetExceeded");
}

#[test]
fn raw_termination_text_is_kept() {
    let bs = session(json!({"image": "i"}));
    let p = pod(json!({"phase": "Failed", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"terminated": {"exitCode": 2, "message": "exec: playpen-session: not found"}}}]}));
    let s = run(&bs, &[], Some(&p));
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!((b.reason.as_str(), b.message.as_str()), ("BrowserContainerFailed", "exec: playpen-session: not found"));
}

#[test]
fn missing_reference_fails_with_field_and_fix() {
    let bs = session(json!({"image": "i", "authState": {"secretRef": {"name": "login"}}}));
    let missing =
        [MissingReference { field: "spec.authState.secretRef", kind: "Secret", name: "login".into(), key: None }];
    let s = run(&bs, &missing, None);
    assert_eq!(s.phase, Some(Phase::Failed));
    let r = cond(&s, condition::CONFIG_RESOLVED);
    assert_eq!((r.status.as_str(), r.reason.as_str()), ("False", "SecretNotFound"));
    assert!(r.message.contains("spec.authState.secretRef: Secret ns/login not found"));
    assert_eq!(cond(&s, condition::READY).reason, "SecretNotFound");
}

#[test]
fn disabled_sandbox_and_viewer_are_recorded() {
    let bs = session(json!({"image": "i", "sandbox": "Disabled", "viewer": {"enabled": false}}));
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"running": {}}}]}));
    let s = run(&bs, &[], Some(&p));
    let sb = cond(&s, condition::SANDBOX_ENFORCED);
    assert_eq!((sb.status.as_str(), sb.reason.as_str()), ("False", "Disabled"));
    assert_eq!(cond(&s, condition::VIEWER_READY).reason, "Disabled");
    assert_eq!(cond(&s, condition::READY).status, "True", "a disabled viewer does not block readiness");
    assert!(s.viewer.is_none());
}

#[test]
fn transition_time_is_kept_while_status_is_unchanged() {
    let mut bs = session(json!({"image": "i"}));
    let earlier: Timestamp = "2026-11-29T11:00:00Z".parse().expect("ts");
    let id = Identity::of(&bs).expect("id");
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    bs.status = Some(compute(&bs, &id, observed, &EgressDefaults::default(), earlier));
    let s = run(&bs, &[], None);
    assert_eq!(cond(&s, condition::READY).last_transition_time, Time(earlier));
    let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"running": {}}}]}));
    let s = run(&bs, &[], Some(&p));
    assert_eq!(cond(&s, condition::READY).last_transition_time, Time(now()));
    assert_eq!(cond(&s, condition::SANDBOX_ENFORCED).last_transition_time, Time(earlier));
}

fn running(ready: bool, restarts: i32) -> Pod {
    pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": ready, "restartCount": restarts, "image": "i",
            "imageID": "", "state": {"running": {}}}]}))
}

/// Reconciles `bs` against `pod` at `at`, keeping the status as the operator would.
fn step(bs: &mut BrowserSession, pod: &Pod, at: &str) -> BrowserSessionStatus {
    let id = Identity::of(bs).expect("id");
    let observed = Observed { missing: &[], pod: Some(pod), recovery: &Recovery::None, refused: None, export: None };
    let s = compute(bs, &id, observed, &EgressDefaults::default(), at.parse().expect("ts"));
    bs.status = Some(s.clone());
    s
}

#[test]
fn an_in_place_restart_is_remembered_once_the_browser_is_back() {
    let mut bs = session(json!({"image": "i"}));
    // Starting up is not a recovery.
    let s = step(&mut bs, &running(false, 0), "2026-11-29T12:00:00Z");
    assert_eq!((s.phase, cond(&s, condition::BROWSER_READY).reason.as_str()), (Some(Phase::Starting), "Starting"));
    step(&mut bs, &running(true, 0), "2026-11-29T12:00:02Z");
    // Up, then unready while the container keeps running: the runtime restarts the browser.
    let s = step(&mut bs, &running(false, 0), "2026-11-29T12:05:00Z");
    assert_eq!(s.phase, Some(Phase::Degraded));
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!((b.status.as_str(), b.reason.as_str()), ("False", "BrowserRecovering"));
    assert!(b.message.contains("2026-11-29T12:05:00Z"), "{}", b.message);
    let s = step(&mut bs, &running(false, 0), "2026-11-29T12:05:01Z");
    assert_eq!(cond(&s, condition::BROWSER_READY).reason, "BrowserRecovering", "still recovering");
    // Back: Ready, and the status says what happened, for as long as nothing else happens.
    for at in ["2026-11-29T12:05:03Z", "2026-11-29T12:30:00Z"] {
        let s = step(&mut bs, &running(true, 0), at);
        assert_eq!(s.phase, Some(Phase::Ready));
        let b = cond(&s, condition::BROWSER_READY);
        assert_eq!((b.status.as_str(), b.reason.as_str()), ("True", "Recovered"));
        assert!(b.message.contains("restarted in place") && b.message.contains("12:05:00Z"), "{}", b.message);
        assert!(b.message.contains("back at 2026-11-29T12:05:03Z"), "{}", b.message);
    }
    // A container restart tells its own story instead.
    let restarted = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
            "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 70, "message": "boom"}}}]}));
    let s = step(&mut bs, &restarted, "2026-11-29T13:00:00Z");
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!(b.reason, "Running");
    assert!(b.message.contains("recovered after 1 restart(s)"), "{}", b.message);
}

#[test]
fn a_flip_too_short_to_see_is_read_from_the_pods_ready_transition() {
    let mut bs = session(json!({"image": "i"}));
    let ready_since = |t: &str| {
        pod(json!({"phase": "Running", "conditions": [scheduled(),
                {"type": "Ready", "status": "True", "lastTransitionTime": t}],
            "containerStatuses": [{"name": "browser", "ready": true, "restartCount": 0, "image": "i",
                "imageID": "", "state": {"running": {}}}]}))
    };
    let s = step(&mut bs, &ready_since("2026-11-29T12:00:01Z"), "2026-11-29T12:00:02Z");
    assert_eq!(cond(&s, condition::BROWSER_READY).reason, "Running", "the first Ready is no recovery");
    let s = step(&mut bs, &ready_since("2026-11-29T12:00:01Z"), "2026-11-29T12:01:00Z");
    assert_eq!(cond(&s, condition::BROWSER_READY).reason, "Running");
    // Unready and back between two reconciles: only the Pod's transition time tells.
    for at in ["2026-11-29T12:10:05Z", "2026-11-29T12:20:00Z"] {
        let s = step(&mut bs, &ready_since("2026-11-29T12:10:00Z"), at);
        let b = cond(&s, condition::BROWSER_READY);
        assert_eq!((b.status.as_str(), b.reason.as_str()), ("True", "Recovered"));
        assert!(b.message.contains("restarted in place after 2026-11-29T12:00:02Z"), "{}", b.message);
        assert!(b.message.ends_with("(back at 2026-11-29T12:10:00Z)"), "{}", b.message);
    }
}

#[test]
fn an_agent_sidecars_readiness_flip_is_not_a_browser_restart() {
    let mut bs = session(json!({"image": "i"}));
    let with_agent = |t: &str| {
        pod(json!({"phase": "Running", "conditions": [scheduled(),
                {"type": "Ready", "status": "True", "lastTransitionTime": t}],
            "containerStatuses": [
                {"name": "browser", "ready": true, "restartCount": 0, "image": "i", "imageID": "", "state": {"running": {}}},
                {"name": "agent", "ready": true, "restartCount": 1, "image": "a", "imageID": "", "state": {"running": {}}}]}))
    };
    step(&mut bs, &with_agent("2026-11-29T12:00:01Z"), "2026-11-29T12:00:02Z");
    let s = step(&mut bs, &with_agent("2026-11-29T12:10:00Z"), "2026-11-29T12:10:05Z");
    assert_eq!(cond(&s, condition::BROWSER_READY).reason, "Running");
}

#[test]
fn the_egress_policy_in_force_is_a_condition() {
    let default = run(&session(json!({"image": "i"})), &[], None);
    let c = cond(&default, condition::EGRESS_POLICY);
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Internet"));
    assert!(c.message.contains("the internet except 10.0.0.0/8") && c.message.ends_with("ingress denied"), "{c:?}");
    let deny = run(&session(json!({"image": "i", "network": {"egress": {"mode": "DenyAll"}}})), &[], None);
    let c = cond(&deny, condition::EGRESS_POLICY);
    assert_eq!((c.reason.as_str(), c.message.as_str()), ("DenyAll", "no egress at all; ingress denied"));
    // The policy says nothing about readiness.
    assert_eq!(cond(&deny, condition::READY).status, cond(&default, condition::READY).status);
}

/// A browser container running again, not ready, after an exit with `last`.
fn restarted_after(last: Value) -> Pod {
    pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 1, "image": "i", "imageID": "",
            "state": {"running": {}}, "lastState": {"terminated": last}}]}))
}

#[test]
fn a_session_that_was_never_up_is_starting_after_a_kill_not_degraded() {
    let mut bs = session(json!({"image": "i"}));
    let killed = restarted_after(json!({"exitCode": 137, "reason": "OOMKilled"}));
    let s = step(&mut bs, &killed, "2026-11-29T12:00:00Z");
    assert_eq!(s.phase, Some(Phase::Starting), "a slow or short node is not a broken session");
    let b = cond(&s, condition::BROWSER_READY);
    assert_eq!(b.reason, "OOMKilled", "the last error is in the status");
    assert!(b.message.contains("137"), "{}", b.message);
    // Once it was up, the same exit is a session that broke.
    step(&mut bs, &running(true, 1), "2026-11-29T12:01:00Z");
    let again = pod(json!({"phase": "Running", "conditions": [scheduled()],
        "containerStatuses": [{"name": "browser", "ready": false, "restartCount": 2, "image": "i", "imageID": "",
            "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}));
    assert_eq!(step(&mut bs, &again, "2026-11-29T12:02:00Z").phase, Some(Phase::Degraded));
}

#[test]
fn what_the_runtime_gives_up_on_is_the_sessions_own_and_degrades_at_once() {
    let mut bs = session(json!({"image": "i"}));
    let report = r#"{"reason":"BrowserRevisionAbsent","message":"chromium-1247 is not in /opt/playpen/browsers"}"#;
    let broken = restarted_after(json!({"exitCode": 1, "message": report}));
    let s = step(&mut bs, &broken, "2026-11-29T12:00:00Z");
    assert_eq!(s.phase, Some(Phase::Degraded));
    assert_eq!(cond(&s, condition::READY).reason, "BrowserRevisionAbsent");
}
