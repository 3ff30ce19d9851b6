//! Field ownership of a child created with a plain POST. Its fields belong
//! to this operator's `Update` entry, so a later server-side apply that no
//! longer sets one (a session's egress turned `DenyAll`: no rules) would
//! leave it: an apply removes only what its own `Apply` entry owns. The
//! first apply that finds such an entry hands its fields to the `Apply`
//! entry (what `kubectl`'s csaupgrade does) and applies again.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::Value;

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";

/// `entries` with `manager`'s `Update` entry of the object itself (not a
/// subresource) merged into its `Apply` entry (made from it when there is
/// none); `None` when there is nothing to hand over.
pub fn adopted(entries: &[ManagedFieldsEntry], manager: &str) -> Option<Vec<ManagedFieldsEntry>> {
    let is = |e: &ManagedFieldsEntry, operation: &str| {
        e.manager.as_deref() == Some(manager)
            && e.operation.as_deref() == Some(operation)
            && e.subresource.as_deref().unwrap_or_default().is_empty()
    };
    let update = entries.iter().position(|e| is(e, UPDATE))?;
    let mut kept: Vec<ManagedFieldsEntry> = entries.to_vec();
    let from = kept.remove(update);
    match kept.iter_mut().find(|e| is(e, APPLY)) {
        Some(apply) => {
            let mut fields = apply.fields_v1.take().map(|f| f.0).unwrap_or(Value::Object(Default::default()));
            if let Some(FieldsV1(more)) = from.fields_v1 {
                merge(&mut fields, more);
            }
            apply.fields_v1 = Some(FieldsV1(fields));
        }
        None => kept.push(ManagedFieldsEntry { operation: Some(APPLY.to_owned()), ..from }),
    }
    Some(kept)
}

/// Union of two field sets (`fieldsV1` is a tree of objects).
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(Into::into),
            fields_v1: Some(FieldsV1(fields)),
            fields_type: Some("FieldsV1".into()),
            ..ManagedFieldsEntry::default()
        }
    }

    #[test]
    fn a_created_objects_update_entry_becomes_the_apply_entry() {
        let created = entry("op", "Update", None, json!({"f:spec": {"f:egress": {}}}));
        let other = entry("kubectl", "Update", None, json!({"f:metadata": {"f:labels": {"f:x": {}}}}));
        let adopted = adopted(&[created, other.clone()], "op").expect("something to hand over");
        assert_eq!(adopted.len(), 2);
        assert_eq!(adopted[0], other, "another manager's entry is left alone");
        assert_eq!(adopted[1].operation.as_deref(), Some("Apply"));
        assert_eq!(adopted[1].fields_v1, Some(FieldsV1(json!({"f:spec": {"f:egress": {}}}))));
    }

    #[test]
    fn into_an_existing_apply_entry_the_fields_are_merged() {
        let applied = entry("op", "Apply", None, json!({"f:spec": {"f:ports": {"k:1": {}}}, "f:metadata": {}}));
        let created = entry("op", "Update", None, json!({"f:spec": {"f:type": {}, "f:ports": {"k:2": {}}}}));
        let adopted = adopted(&[applied, created], "op").unwrap();
        assert_eq!(adopted.len(), 1);
        let want = json!({"f:spec": {"f:ports": {"k:1": {}, "k:2": {}}, "f:type": {}}, "f:metadata": {}});
        assert_eq!(adopted[0].fields_v1, Some(FieldsV1(want)));
    }

    #[test]
    fn nothing_to_hand_over_without_an_update_entry_of_the_object_itself() {
        assert_eq!(adopted(&[entry("op", "Apply", None, json!({}))], "op"), None);
        assert_eq!(adopted(&[entry("op", "Update", Some("status"), json!({}))], "op"), None, "status is not ours");
        assert_eq!(adopted(&[entry("kubectl", "Update", None, json!({}))], "op"), None, "not ours to take");
        assert_eq!(adopted(&[], "op"), None);
    }
}
