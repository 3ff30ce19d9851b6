//! What in a pooled session contradicts its pool's template (pure): every
//! browser field the session sets, found by comparing its serialized
//! [`BrowserSpec`] with an unset one's, so a new browser field is covered
//! without a list to keep.

use std::fmt;

use playpen_api::v1alpha1::BrowserSpec;
use playpen_api::BrowserSessionSpec;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::error::{Error, Result};

/// Browser fields (below `spec.`) a pooled session keeps as its own: the
/// image stays empty (the CEL rules see to it) and the snapshots'
/// retention is the session's policy, enforced by its runtime.
const SESSION_OWNED: [&str; 2] = ["image", "snapshots.retention"];

/// Fields of a pooled session that the pool's template defines, by path, in
/// the order [`BrowserSpec`] declares them: each set one is refused
/// (silently ignoring it would run a browser other than the one asked for).
pub fn template_conflicts(session: &BrowserSessionSpec) -> Result<Vec<String>> {
    let serialize = |source| Error::Serialize { what: "a session's browser fields", source };
    let json = serde_json::to_string(&session.browser).map_err(serialize)?;
    let Members(set) = serde_json::from_str(&json).map_err(serialize)?;
    let unset = serde_json::to_value(BrowserSpec::default()).map_err(serialize)?;
    Ok(differing("", set.iter().map(|(key, value)| (key, value)), &unset))
}

/// `spec.<path>` of every member of `set` that differs from `unset`'s,
/// descending into a member only where part of it is [`SESSION_OWNED`].
fn differing<'a>(at: &str, set: impl IntoIterator<Item = (&'a String, &'a Value)>, unset: &Value) -> Vec<String> {
    set.into_iter()
        .filter(|(key, value)| unset.get(key.as_str()) != Some(*value))
        .flat_map(|(key, value)| {
            let path = format!("{at}{key}");
            let inner = format!("{path}.");
            match (value, unset.get(key.as_str())) {
                _ if SESSION_OWNED.contains(&path.as_str()) => Vec::new(),
                (Value::Object(members), Some(default)) if SESSION_OWNED.iter().any(|o| o.starts_with(&inner)) => {
                    differing(&inner, members, default)
                }
                _ => vec![format!("spec.{path}")],
            }
        })
        .collect()
}

/// A JSON object's members in the order they were written (serde_json's
/// own map sorts them): a serialized struct's fields in declaration order.
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pooled(extra: Value) -> BrowserSessionSpec {
        let mut spec = json!({"pool": {"name": "warm"}});
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn browser_fields_on_a_pooled_session_are_refused_by_path() {
        assert!(template_conflicts(&pooled(json!({}))).unwrap().is_empty());
        let s = pooled(
            json!({"sandbox": "Disabled", "viewer": {"port": 9400}, "pod": {"shmSize": "2Gi"}, "sessionName": "x"}),
        );
        assert_eq!(template_conflicts(&s).unwrap(), ["spec.sessionName", "spec.sandbox", "spec.viewer", "spec.pod"]);
    }

    #[test]
    fn the_session_owned_parts_and_values_equal_to_unset_ones_are_no_conflict() {
        let own = pooled(json!({
            "snapshots": {"retention": {"maxCount": 3}}, "viewer": {"enabled": true, "port": 9323},
            "sandbox": "Enforced", "imagePullSecrets": [], "idleTimeoutSeconds": 5, "recording": {"trace": true}
        }));
        assert!(template_conflicts(&own).unwrap().is_empty());
        let volume = pooled(json!({
            "snapshots": {"volume": {"emptyDir": {}}, "retention": {"maxCount": 3}},
            "imagePullPolicy": "Never", "imagePullSecrets": [{"name": "pull"}], "cdp": {"enabled": true},
            "launchConfig": {"headless": false}
        }));
        assert_eq!(
            template_conflicts(&volume).unwrap(),
            ["spec.imagePullPolicy", "spec.imagePullSecrets", "spec.launchConfig", "spec.cdp", "spec.snapshots.volume"]
        );
    }
}
