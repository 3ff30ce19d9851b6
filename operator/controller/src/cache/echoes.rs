//! Pods this process created, by the resourceVersion the API server gave
//! each create: the watch event that shows one at that version says
//! nothing its reconcile did not know, so it wakes nobody.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::core::ObjectMeta;

/// A create whose event never came (its Pod deleted first, or the event
/// came before the create's answer) is forgotten after this long.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// Below this many entries the map is never swept.
const SWEEP_FROM: usize = 1024;

/// A Pod's namespace and name.
type Key = (String, String);

/// Key → (resourceVersion, when created).
#[derive(Debug, Clone, Default)]
pub struct Echoes(Arc<Mutex<HashMap<Key, (String, Instant)>>>);

impl Echoes {
    /// Expects the event of `namespace/name` at `resource_version`.
    pub fn expect(&self, namespace: &str, name: &str, resource_version: Option<&str>) {
        let (Some(version), Ok(mut map)) = (resource_version, self.0.lock()) else { return };
        map.insert((namespace.to_owned(), name.to_owned()), (version.to_owned(), Instant::now()));
        if map.len() >= SWEEP_FROM && map.len().is_power_of_two() {
            map.retain(|_, (_, at)| at.elapsed() < FORGET_AFTER);
        }
    }

    /// Whether `namespace/name` was created here and the watch has not
    /// shown it yet.
    pub fn awaits(&self, namespace: &str, name: &str) -> bool {
        self.0.lock().is_ok_and(|map| map.contains_key(&(namespace.to_owned(), name.to_owned())))
    }

    /// Whether `meta` is the object as this process created it (then
    /// forgotten: any later event is news).
    pub fn heard(&self, meta: &ObjectMeta) -> bool {
        let (Some(ns), Some(name), Some(version)) = (&meta.namespace, &meta.name, &meta.resource_version) else {
            return false;
        };
        let Ok(mut map) = self.0.lock() else { return false };
        let key = (ns.clone(), name.clone());
        match map.get(&key) {
            Some((expected, _)) if expected == version => {
                map.remove(&key);
                true
            }
            // Another version: ours was replaced or went; stop expecting it.
            Some(_) => {
                map.remove(&key);
                false
            }
            None => false,
        }
    }

    /// How many creates are expected (for tests).
    pub fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn only_the_created_version_is_an_echo_and_only_once() {
        let echoes = Echoes::default();
        assert!(!echoes.heard(&meta("p", "5")), "not created here");
        echoes.expect("ns", "p", Some("5"));
        assert!(echoes.awaits("ns", "p"));
        assert!(echoes.heard(&meta("p", "5")));
        assert!(!echoes.awaits("ns", "p"), "the watch showed it");
        assert!(!echoes.heard(&meta("p", "5")), "heard once");
        assert!(echoes.is_empty());

        echoes.expect("ns", "q", Some("7"));
        assert!(!echoes.heard(&meta("q", "8")), "changed since: news");
        assert!(!echoes.heard(&meta("q", "7")), "no longer expected");
        echoes.expect("ns", "r", None);
        assert!(echoes.is_empty(), "no version: nothing to recognise it by");
    }
}
