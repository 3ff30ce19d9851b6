//! The state every controller's context starts from.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use kube::{Client, Resource};

use super::events::Publisher;
use super::guard::Failures;
use super::leader::Fence;
use super::metrics::Metrics;
use crate::children::Settings;

/// The client, settings, metrics, Event publisher, failure streaks and
/// fence of one controller. Each controller's context derefs to its own.
pub struct Shared {
    /// API client (reads; writes go through [`Fence::writer`]).
    pub client: Client,
    /// Operator-wide settings.
    pub settings: Settings,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    events: Publisher,
    pub(crate) failures: Failures,
    pub(crate) fence: Fence,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl Shared {
    /// Shared state publishing Events as `reporter` (this Pod's name, when
    /// set, as the instance), writing only while `fence` is open.
    pub fn new(client: Client, settings: Settings, metrics: Arc<Metrics>, reporter: &str, fence: Fence) -> Self {
        Self { events: Publisher::new(reporter), client, settings, metrics, failures: Failures::default(), fence }
    }

    /// Publishes an Event about `object`, a session or a pool (best effort, only while leading).
    pub(crate) async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        self.publish_about(&object.object_ref(&()), type_, reason, note).await;
    }

    /// Publishes an Event about the object `object` refers to (best effort, only while leading).
    pub(crate) async fn publish_about(&self, object: &ObjectReference, type_: EventType, reason: &str, note: String) {
        self.events.publish(&self.client, &self.fence, object, type_, reason, &note).await;
    }
}
