//! Property: whatever a Pod reports (any phase, reasons, termination
//! message of any bytes and length, JSON or not) and whatever status the
//! session had before, status computation does not panic and every
//! condition is one the API server accepts. Cases: `PROPTEST_CASES`
//! (default 256); seed: `PROPTEST_RNG_SEED` (fixed by tests/run.sh).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use playpen_api::text::{is_condition_reason, CONDITION_MESSAGE_MAX_BYTES};
use playpen_api::v1alpha1::{BrowserSessionSpec, BrowserSessionStatus};
use playpen_api::BrowserSession;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::{compute, Observed};
use crate::children::{EgressDefaults, Identity};
use crate::recovery::Recovery;

/// Text as a Pod could write it: short words, any Unicode, or long runs
/// of multi-byte characters around the limits that matter.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z][A-Za-z0-9_]{0,12}",
        any::<String>(),
        (0usize..6000, prop::sample::select(vec!["é", "🦀", "a", "\u{0}", "\n"])).prop_map(|(n, c)| c.repeat(n)),
    ]
}

/// A termination message: a runtime report, a report with hostile fields, or any text.
fn termination_message() -> impl Strategy<Value = String> {
    prop_oneof![
        (text(), text()).prop_map(|(reason, message)| json!({"reason": reason, "message": message}).to_string()),
        text(),
        Just(String::new()),
        Just("{\"reason\": 5}".to_owned()),
    ]
}

fn container_state() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"running": {}})),
        text().prop_map(|reason| json!({"waiting": {"reason": reason}})),
        Just(json!({"waiting": {"reason": "CrashLoopBackOff"}})),
        (any::<i32>(), termination_message(), prop::option::of(text())).prop_map(|(code, message, reason)| {
            json!({"terminated": {"exitCode": code, "message": message, "reason": reason}})
        }),
    ]
}

fn pod() -> impl Strategy<Value = Pod> {
    let phase = prop::sample::select(vec!["Pending", "Running", "Succeeded", "Failed", "Unknown", "é"]);
    let scheduled = (prop::sample::select(vec!["True", "False", "Unknown"]), text(), text());
    let container = (any::<bool>(), any::<i32>(), container_state(), container_state());
    let containers = prop::collection::vec(container, 0..3);
    (phase, prop::option::of(scheduled), containers, any::<bool>(), prop::option::of(text())).prop_map(
        |(phase, scheduled, containers, deleting, message)| {
            let conditions: Vec<Value> = scheduled
                .map(|(status, reason, message)| {
                    json!({"type": "PodScheduled", "status": status, "reason": reason, "message": message})
                })
                .into_iter()
                .chain([json!({"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T11:00:00Z"})])
                .collect();
            let statuses: Vec<Value> = containers
                .into_iter()
                .enumerate()
                .map(|(i, (ready, restarts, state, last))| {
                    let name = if i == 0 { "browser" } else { "agent" };
                    json!({"name": name, "ready": ready, "restartCount": restarts, "image": "i", "imageID": "",
                        "state": state, "lastState": last})
                })
                .collect();
            let mut pod = json!({"metadata": {"name": "demo-browser"},
                "status": {"phase": phase, "conditions": conditions, "containerStatuses": statuses,
                    "message": message}});
            if deleting {
                pod["metadata"]["deletionTimestamp"] = json!("2026-11-29T11:59:00Z");
            }
            serde_json::from_value(pod).expect("a Pod")
        },
    )
}

/// A previous status as any earlier reconcile (or a hand edit) could leave it.
fn previous() -> impl Strategy<Value = Option<BrowserSessionStatus>> {
    let condition = (
        prop::sample::select(vec!["BrowserReady", "Ready", "ConfigResolved"]),
        prop::sample::select(vec!["True", "False"]),
        prop::sample::select(vec!["BrowserRecovering", "Recovered", "Running", "Starting"]),
        text(),
    )
        .prop_map(|(type_, status, reason, message)| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            observed_generation: Some(1),
            last_transition_time: Time("2026-11-29T10:00:00Z".parse().expect("ts")),
        });
    prop::option::of(prop::collection::vec(condition, 0..4))
        .prop_map(|c| c.map(|conditions| BrowserSessionStatus { conditions, ..BrowserSessionStatus::default() }))
}

/// Any decision the recovery phase can hand over, with outside text in it.
fn recovery() -> impl Strategy<Value = Recovery> {
    prop_oneof![
        Just(Recovery::None),
        (text(), text()).prop_map(|(reason, message)| Recovery::Replace { reason, message }),
        (text(), text()).prop_map(|(reason, message)| Recovery::Wait {
            until: "2026-11-29T12:01:00Z".parse().expect("ts"),
            reason,
            message
        }),
        (text(), any::<bool>()).prop_map(|(message, stop_pod)| Recovery::GiveUp { message, stop_pod }),
    ]
}

fn session(previous: Option<BrowserSessionStatus>, sandbox_disabled: bool, viewer: bool) -> BrowserSession {
    let spec: BrowserSessionSpec = serde_json::from_value(json!({"image": "i",
        "sandbox": if sandbox_disabled { "Disabled" } else { "Enforced" }, "viewer": {"enabled": viewer}}))
    .expect("spec");
    BrowserSession {
        metadata: ObjectMeta {
            name: Some("demo".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            generation: Some(2),
            ..ObjectMeta::default()
        },
        spec,
        status: previous,
    }
}

proptest! {
    #[test]
    fn any_pod_report_gives_conditions_the_api_server_accepts(
        pod in prop::option::of(pod()),
        previous in previous(),
        sandbox_disabled in any::<bool>(),
        viewer in any::<bool>(),
        recovery in recovery(),
    ) {
        let bs = session(previous, sandbox_disabled, viewer);
        let id = Identity::of(&bs).expect("identity");
        let now = "2026-11-29T12:00:00Z".parse().expect("ts");
        let observed = Observed { missing: &[], pod: pod.as_ref(), recovery: &recovery, refused: None, export: None };
        let status = compute(&bs, &id, observed, &EgressDefaults::default(), now);
        prop_assert_eq!(status.conditions.len(), 8, "one of each condition type");
        for c in &status.conditions {
            prop_assert!(is_condition_reason(&c.reason), "reason {:?} of {}", c.reason, c.type_);
            prop_assert!(c.message.len() <= CONDITION_MESSAGE_MAX_BYTES, "{} bytes in {}", c.message.len(), c.type_);
        }
    }
}
