//! Size bounds on every string, list and map of the BrowserSession schema.
//!
//! Without them one tenant's object can be megabytes, every CEL rule's cost
//! is unbounded, and a value the operator copies into a child (an image
//! reference, a Chromium argument) can make that child unacceptable. The
//! generated schema mixes our own fields with Kubernetes types (affinity,
//! tolerations, env, resources), so the bounds are applied to the generated
//! schema from one table: exact paths for our fields, field names for the
//! embedded Kubernetes types. There is deliberately no catch-all: a new
//! field without a row stays unbounded and [`unbounded`] (run by the CRD's
//! tests) names it.

use serde_json::{json, Value};

use crate::layout::max_session_name_len;

/// One kind of bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// `maxLength` of a string, in characters (the API server's error says "bytes").
    Length(usize),
    /// `maxItems` of a list.
    Items(usize),
    /// `maxProperties` of a map.
    Properties(usize),
    /// An int-or-string quantity: a string form of at most this many characters.
    Quantity(usize),
}

/// Where a bound applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// One field, by its path (`spec.launchConfig.args[]` is an element of
    /// `args`, `spec.pod.nodeSelector{}` a value of the map).
    Path(&'static str),
    /// Every field whose last path segment is this (for embedded Kubernetes types).
    Field(&'static str),
}

/// A bound, where it applies, and why it is that big.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Where.
    pub at: Selector,
    /// How much.
    pub bound: Bound,
    /// Why this size (shown in docs/crd-reference.md).
    pub why: &'static str,
}

const fn path(at: &'static str, bound: Bound, why: &'static str) -> Limit {
    Limit { at: Selector::Path(at), bound, why }
}

const fn field(at: &'static str, bound: Bound, why: &'static str) -> Limit {
    Limit { at: Selector::Field(at), bound, why }
}

use Bound::{Items, Length, Properties, Quantity};

const IMAGE: &str = "OCI references with a digest fit well within it";
const DNS_NAME: &str = "a Kubernetes object name (DNS subdomain)";
const LABEL_KEY: &str = "a label key: 253-byte prefix, '/', 63-byte name";
const LABEL_VALUE: &str = "a label value";
const QUANTITY: &str = "a resource quantity such as 1536Mi";
/// The string form of a resource quantity (Kubernetes' own grammar).
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
const SELECTOR_TERMS: &str = "scheduling terms; more is a mistake, and each multiplies CEL cost";

/// Every bound of the schema. Exact paths win over field names.
pub fn limits() -> Vec<Limit> {
    let session_name = max_session_name_len();
    vec![
        // Our own fields.
        path("spec.image", Length(4096), IMAGE),
        path("spec.agent.image", Length(4096), IMAGE),
        path("spec.imagePullSecrets", Items(16), "pull Secrets of one Pod"),
        path(
            "spec.sessionName",
            Length(session_name),
            "the longest name whose socket path stays under the 103-byte AF_UNIX limit",
        ),
        path("spec.launchConfig.executablePath", Length(4096), "PATH_MAX on Linux"),
        path("spec.launchConfig.args", Items(256), "Chromium switches; real launch configs use a few dozen"),
        path("spec.launchConfig.args[]", Length(4096), "one switch with its value"),
        path("spec.agent.command", Items(256), "an entrypoint and its words"),
        path("spec.agent.command[]", Length(4096), "one word of a command line"),
        path("spec.agent.args", Items(256), "arguments of the agent"),
        path("spec.agent.args[]", Length(4096), "one argument"),
        path("spec.agent.env", Items(256), "environment variables of the agent"),
        path("spec.agent.env[].value", Length(32_768), "one environment value (a token, a small config)"),
        path("spec.pod.nodeSelector", Properties(64), "node labels to match"),
        path("spec.pod.nodeSelector{}", Length(63), LABEL_VALUE),
        path("spec.pod.tolerations", Items(64), "tolerations of one Pod"),
        path("spec.pod.tolerations[].value", Length(63), LABEL_VALUE),
        path("status.conditions", Items(16), "the operator writes six"),
        path("status.conditions[].message", Length(32_768), "metav1.Condition's own bound"),
        path("status.conditions[].reason", Length(1024), "metav1.Condition's own bound"),
        path("status.conditions[].type", Length(316), "metav1.Condition's own bound"),
        path("status.conditions[].status", Length(16), "True, False or Unknown"),
        path("status.conditions[].lastTransitionTime", Length(64), "an RFC 3339 time"),
        path("status.execHint", Length(1024), "one kubectl command line"),
        path("status.viewer.command", Length(1024), "one kubectl command line"),
        path("status.viewer.service", Length(63), "a Service name (DNS label)"),
        path("status.podName", Length(253), DNS_NAME),
        path("status.sessionName", Length(session_name), "the same bound as spec.sessionName"),
        path("status.socketNamespace", Length(16), "8 hex digits"),
        // Fields of embedded Kubernetes types (and ours with the same meaning).
        field("name", Length(253), DNS_NAME),
        field("claimName", Length(253), DNS_NAME),
        field("storageClassName", Length(253), DNS_NAME),
        field("priorityClassName", Length(253), DNS_NAME),
        field("serviceAccountName", Length(253), DNS_NAME),
        field("volumeName", Length(253), DNS_NAME),
        field("containerName", Length(253), DNS_NAME),
        field("request", Length(253), DNS_NAME),
        field("key", Length(317), LABEL_KEY),
        field("topologyKey", Length(317), LABEL_KEY),
        field("operator", Length(32), "an operator name such as In or Exists"),
        field("effect", Length(32), "a taint effect such as NoSchedule"),
        field("apiVersion", Length(64), "an API version such as v1"),
        field("fieldPath", Length(256), "a field path such as metadata.labels['x']"),
        field("resource", Length(256), "a resource name such as limits.memory"),
        field("path", Length(4096), "PATH_MAX on Linux"),
        field("values", Items(64), "values one expression matches"),
        field("values[]", Length(253), "a label value or a node field value"),
        field("matchExpressions", Items(16), SELECTOR_TERMS),
        field("matchFields", Items(16), SELECTOR_TERMS),
        field("nodeSelectorTerms", Items(16), SELECTOR_TERMS),
        field("requiredDuringSchedulingIgnoredDuringExecution", Items(16), SELECTOR_TERMS),
        field("preferredDuringSchedulingIgnoredDuringExecution", Items(16), SELECTOR_TERMS),
        field("matchLabels", Properties(64), "labels one selector matches"),
        field("matchLabels{}", Length(63), LABEL_VALUE),
        field("matchLabelKeys", Items(16), SELECTOR_TERMS),
        field("matchLabelKeys[]", Length(317), LABEL_KEY),
        field("mismatchLabelKeys", Items(16), SELECTOR_TERMS),
        field("mismatchLabelKeys[]", Length(317), LABEL_KEY),
        field("namespaces", Items(64), "namespaces one term names"),
        field("namespaces[]", Length(63), "a namespace name (DNS label)"),
        field("claims", Items(16), "dynamic resource claims of one container"),
        field("limits", Properties(16), "resource names of one container"),
        field("requests", Properties(16), "resource names of one container"),
        field("limits{}", Quantity(64), QUANTITY),
        field("requests{}", Quantity(64), QUANTITY),
        field("divisor", Quantity(64), QUANTITY),
        field("shmSize", Quantity(64), QUANTITY),
        field("sizeLimit", Quantity(64), QUANTITY),
        field("size", Quantity(64), QUANTITY),
    ]
}

/// What a schema node needs bounding as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    String,
    List,
    Map,
    IntOrString,
}

fn kind_of(schema: &Value) -> Option<Kind> {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return Some(Kind::IntOrString);
    }
    match schema.get("type").and_then(Value::as_str) {
        // An enum is bounded by its values.
        Some("string") if schema.get("enum").is_none() => Some(Kind::String),
        Some("array") => Some(Kind::List),
        Some("object") if schema.get("additionalProperties").is_some_and(Value::is_object) => Some(Kind::Map),
        _ => None,
    }
}

/// Whether the node already carries a bound of its kind.
fn is_bounded(schema: &Value, kind: Kind) -> bool {
    match kind {
        Kind::List => schema.get("maxItems").is_some(),
        Kind::Map => schema.get("maxProperties").is_some(),
        Kind::String | Kind::IntOrString => schema.get("maxLength").is_some(),
    }
}

fn lookup(limits: &[Limit], at: &str) -> Option<Bound> {
    let last = at.rsplit('.').next().unwrap_or(at);
    let exact = limits.iter().find(|l| matches!(l.at, Selector::Path(p) if p == at));
    exact.or_else(|| limits.iter().find(|l| matches!(l.at, Selector::Field(f) if f == last))).map(|l| l.bound)
}

/// Sets `bound` on `schema` when it fits the node's kind.
fn set(schema: &mut Value, kind: Kind, bound: Bound) {
    let Some(object) = schema.as_object_mut() else { return };
    match (kind, bound) {
        (Kind::String, Length(n)) => {
            object.insert("maxLength".into(), json!(n));
        }
        (Kind::List, Items(n)) => {
            object.insert("maxItems".into(), json!(n));
        }
        (Kind::Map, Properties(n)) => {
            object.insert("maxProperties".into(), json!(n));
        }
        // maxLength and pattern constrain only the string form; a CEL rule
        // would be costed as if the string were unbounded.
        (Kind::IntOrString, Quantity(n)) => {
            object.insert("maxLength".into(), json!(n));
            object.insert("pattern".into(), json!(QUANTITY_PATTERN));
        }
        // A row of the wrong kind leaves the node unbounded; `unbounded` reports it.
        _ => {}
    }
}

/// Calls `visit(path, node)` on every node below `schema`, parents first.
fn walk(schema: &mut Value, at: &str, visit: &mut dyn FnMut(&str, &mut Value)) {
    visit(at, schema);
    let join = |name: &str| if at.is_empty() { name.to_owned() } else { format!("{at}.{name}") };
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, child) in properties.iter_mut() {
            walk(child, &join(name), visit);
        }
    }
    if let Some(items) = schema.get_mut("items").filter(|i| i.is_object()) {
        walk(items, &format!("{at}[]"), visit);
    }
    if let Some(values) = schema.get_mut("additionalProperties").filter(|v| v.is_object()) {
        walk(values, &format!("{at}{{}}"), visit);
    }
}

/// Bounds every node of `schema` (an `openAPIV3Schema`) that [`limits`] names
/// and that has no bound of its own yet.
pub fn apply(schema: &mut Value) {
    let limits = limits();
    walk(schema, "", &mut |at, node| {
        let Some(kind) = kind_of(node) else { return };
        if is_bounded(node, kind) {
            return;
        }
        if let Some(bound) = lookup(&limits, at) {
            set(node, kind, bound);
        }
    });
}

/// Paths of every string, list, map or quantity in `schema` without a bound.
pub fn unbounded(schema: &Value) -> Vec<String> {
    let mut copy = schema.clone();
    let mut found = Vec::new();
    walk(&mut copy, "", &mut |at, node| {
        if let Some(kind) = kind_of(node).filter(|k| !is_bounded(node, *k)) {
            found.push(format!("{at} ({kind:?})"));
        }
    });
    found
}

/// The bounds as a Markdown table, for docs/crd-reference.md (a test keeps them equal).
pub fn markdown_table() -> String {
    let mut out = String::from("| where | bound | why |\n| --- | --- | --- |\n");
    for limit in limits() {
        let at = match limit.at {
            Selector::Path(p) => format!("`{p}`"),
            Selector::Field(f) => format!("any `…{f}`"),
        };
        let bound = match limit.bound {
            Length(n) => format!("at most {n} characters"),
            Items(n) => format!("at most {n} items"),
            Properties(n) => format!("at most {n} entries"),
            Quantity(n) => format!("a quantity of at most {n} characters"),
        };
        out.push_str(&format!("| {at} | {bound} | {} |\n", limit.why));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "image": {"type": "string"},
                "sandbox": {"type": "string", "enum": ["Enforced", "Disabled"]},
                "launchConfig": {"type": "object", "properties": {
                    "args": {"type": "array", "items": {"type": "string"}}}},
                "pod": {"type": "object", "properties": {
                    "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                    "shmSize": {"x-kubernetes-int-or-string": true},
                    "priorityClassName": {"type": "string", "maxLength": 7}}},
                "unknownNewField": {"type": "string"}}}}})
    }

    #[test]
    fn applies_exact_paths_field_names_and_quantities_and_keeps_existing_bounds() {
        let mut s = schema();
        apply(&mut s);
        let spec = &s["properties"]["spec"]["properties"];
        assert_eq!(spec["image"]["maxLength"], 4096);
        assert_eq!(spec["launchConfig"]["properties"]["args"]["maxItems"], 256);
        assert_eq!(spec["launchConfig"]["properties"]["args"]["items"]["maxLength"], 4096);
        assert_eq!(spec["pod"]["properties"]["nodeSelector"]["maxProperties"], 64);
        assert_eq!(spec["pod"]["properties"]["nodeSelector"]["additionalProperties"]["maxLength"], 63);
        assert_eq!(spec["pod"]["properties"]["priorityClassName"]["maxLength"], 7, "an own bound wins");
        assert_eq!(spec["pod"]["properties"]["shmSize"]["maxLength"], 64);
        assert_eq!(spec["pod"]["properties"]["shmSize"]["pattern"], QUANTITY_PATTERN);
        assert!(spec["sandbox"].get("maxLength").is_none(), "enums are bounded by their values");
    }

    #[test]
    fn a_field_without_a_row_is_reported_not_guessed() {
        let mut s = schema();
        apply(&mut s);
        assert_eq!(unbounded(&s), vec!["spec.unknownNewField (String)".to_owned()]);
        let raw = unbounded(&schema());
        assert!(raw.len() >= 6, "{raw:?}");
    }

    #[test]
    fn applying_twice_changes_nothing() {
        let mut once = schema();
        apply(&mut once);
        let mut twice = once.clone();
        apply(&mut twice);
        assert_eq!(once, twice);
    }

    #[test]
    fn every_row_is_unique_and_the_table_lists_it() {
        let limits = limits();
        let table = markdown_table();
        for (i, l) in limits.iter().enumerate() {
            assert!(!limits[..i].iter().any(|o| o.at == l.at), "{:?} twice", l.at);
            let name = match l.at {
                Selector::Path(p) | Selector::Field(p) => p,
            };
            assert!(table.contains(name), "{name}");
        }
    }
}
