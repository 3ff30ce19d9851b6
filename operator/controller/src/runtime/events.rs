//! Events about the objects we reconcile, each written once
//! (`events.k8s.io/v1`, only while this replica may write). Not kube's
//! `Recorder`: it keeps every Event it published for six minutes to fold
//! repeats into a series, and under churn that cache was most of the
//! operator's heap (docs/operations.md, "Memory under churn"). Where an
//! announcement repeats it is rate-limited already ([`super::guard::announce`]).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::events::EventType;
use kube::Client;
use playpen_api::text::{truncate, EVENT_NOTE_MAX_BYTES};
use tracing::warn;

use super::leader::Fence;

/// Who writes the Events: the controller's name, and this replica.
#[derive(Debug, Clone)]
pub struct Publisher {
    controller: String,
    instance: String,
}

impl Publisher {
    /// Events reported by `controller`, from this Pod (`POD_NAME`) when set.
    pub fn new(controller: &str) -> Self {
        let instance = std::env::var("POD_NAME").unwrap_or_else(|_| controller.to_owned());
        Self { controller: controller.to_owned(), instance }
    }

    /// The Event saying `reason: note` about `object` at `now`. The note
    /// carries text from outside, so it is cut to what the API server accepts.
    pub fn event(&self, object: &ObjectReference, type_: EventType, reason: &str, note: &str, now: Timestamp) -> Event {
        let subject = object.name.as_deref().unwrap_or(&self.controller);
        Event {
            metadata: ObjectMeta {
                namespace: object.namespace.clone(),
                name: Some(format!("{subject}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            action: Some("Reconcile".to_owned()),
            reason: Some(reason.to_owned()),
            note: Some(truncate(note, EVENT_NOTE_MAX_BYTES)),
            type_: Some(match type_ {
                EventType::Normal => "Normal".to_owned(),
                EventType::Warning => "Warning".to_owned(),
            }),
            event_time: Some(MicroTime(now)),
            regarding: Some(object.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        }
    }

    /// Writes that Event now, while `fence` is open; skips it otherwise.
    /// Best effort: a failure is logged, never the reconcile's error.
    pub async fn publish(
        &self,
        client: &Client,
        fence: &Fence,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
    ) {
        let namespace = object.namespace.as_deref().unwrap_or("default");
        let Ok(api) = fence.writer::<Event>(client, namespace) else { return };
        let event = self.event(object, type_, reason, note, Timestamp::now());
        if let Err(error) = api.create(&PostParams::default(), &event).await {
            warn!(%error, reason, "could not publish event");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_names_its_object_reporter_and_time_and_cuts_its_note() {
        let publisher = Publisher { controller: "playpen-operator".into(), instance: "op-0".into() };
        let object = ObjectReference {
            kind: Some("BrowserSession".into()),
            namespace: Some("ns".into()),
            name: Some("demo".into()),
            uid: Some("u".into()),
            ..ObjectReference::default()
        };
        let now = Timestamp::from_second(1_800_000_000).expect("a time");
        let long = "x".repeat(EVENT_NOTE_MAX_BYTES * 2);
        let event = publisher.event(&object, EventType::Warning, "ReconcileFailed", &long, now);
        assert_eq!(event.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(event.metadata.name, Some(format!("demo.{:x}", now.as_nanosecond())));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert_eq!(event.regarding.as_ref(), Some(&object));
        assert_eq!(event.reporting_instance.as_deref(), Some("op-0"));
        assert!(event.note.as_ref().is_some_and(|n| n.len() <= EVENT_NOTE_MAX_BYTES), "note cut");
        assert_eq!(event.series, None, "one Event per announcement, never a series");
    }
}
