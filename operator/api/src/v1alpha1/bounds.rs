//! Size bounds on every string, list and map of the BrowserSession and
//! BrowserPool schemas (a pool's `spec.template.*`, and a session's record of
//! it in `status.pool.template.*`, take `spec.*`'s bounds).
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

/// The form a string must have where Kubernetes itself checks it in the
/// child the operator builds (a Pod, a claim): refused at admission with the
/// field's path instead of failing every reconcile later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// What the docs call it.
    pub name: &'static str,
    /// The `pattern` (RE2, as the API server evaluates it).
    pub pattern: &'static str,
}

/// An object name: a lowercase RFC 1123 subdomain.
pub const DNS_SUBDOMAIN: Shape = Shape {
    name: "DNS subdomain",
    pattern: r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$",
};
/// A namespace name: a lowercase RFC 1123 label.
pub const DNS_LABEL: Shape = Shape { name: "DNS label", pattern: r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" };
/// A label key: an optional DNS prefix and '/', then a name of at most 63
/// characters; empty allowed where Kubernetes allows it (a toleration).
pub const LABEL_KEY_SHAPE: Shape = Shape {
    name: "label key",
    pattern: r"^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
};
/// A label value (possibly empty).
pub const LABEL_VALUE_SHAPE: Shape =
    Shape { name: "label value", pattern: r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$" };
/// A Secret or ConfigMap key.
pub const DATA_KEY: Shape = Shape { name: "Secret/ConfigMap key", pattern: r"^[-._a-zA-Z0-9]+$" };
/// An environment variable name: printable ASCII but '='.
pub const ENV_NAME: Shape = Shape { name: "printable ASCII except '='", pattern: r"^[\x20-\x3C\x3E-\x7E]+$" };
/// An image reference: no surrounding whitespace (the kubelet refuses it).
pub const IMAGE_REFERENCE: Shape = Shape { name: "no surrounding whitespace", pattern: r"^\S(.*\S)?$" };
/// A session's image: empty when a BrowserPool's template names it (the
/// schema's default, which the API server checks against the pattern too).
pub const OPTIONAL_IMAGE_REFERENCE: Shape =
    Shape { name: "empty, or no surrounding whitespace", pattern: r"^(\S(.*\S)?)?$" };

/// A bound, where it applies, and why it is that big.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Where.
    pub at: Selector,
    /// How much.
    pub bound: Bound,
    /// The form of a string, where Kubernetes checks it in a child.
    pub shape: Option<Shape>,
    /// For a list whose items a child keys by this field (server-side apply
    /// refuses duplicates there): a list-map, so admission refuses them.
    pub key: Option<&'static str>,
    /// Why this size (shown in docs/crd-reference.md).
    pub why: &'static str,
}

impl Limit {
    /// The same limit, with a required form.
    const fn shaped(self, shape: Shape) -> Self {
        Self { shape: Some(shape), ..self }
    }

    /// The same limit on a list keyed by `key`.
    const fn keyed_by(self, key: &'static str) -> Self {
        Self { key: Some(key), ..self }
    }
}

const fn path(at: &'static str, bound: Bound, why: &'static str) -> Limit {
    Limit { at: Selector::Path(at), bound, shape: None, key: None, why }
}

const fn field(at: &'static str, bound: Bound, why: &'static str) -> Limit {
    Limit { at: Selector::Field(at), bound, shape: None, key: None, why }
}

use Bound::{Items, Length, Properties, Quantity};

const IMAGE: &str = "OCI references with a digest fit well within it";
const DNS_NAME: &str = "a Kubernetes object name (DNS subdomain)";
const LABEL_KEY: &str = "a label key: 253-byte prefix, '/', 63-byte name";
const LABEL_VALUE: &str = "a label value";
const QUANTITY: &str = "a resource quantity such as 1536Mi";
/// The string form of a resource quantity (Kubernetes' own grammar, without
/// a minus: every quantity here is a size, and the kubelet refuses a negative one).
pub const QUANTITY_PATTERN: &str =
    r"^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
const SELECTOR_TERMS: &str = "scheduling terms; more is a mistake, and each multiplies CEL cost";

/// Every bound of the schema. Exact paths win over field names.
pub fn limits() -> Vec<Limit> {
    let session_name = max_session_name_len();
    vec![
        // Our own fields.
        path("spec.image", Length(4096), IMAGE).shaped(OPTIONAL_IMAGE_REFERENCE),
        path("spec.agent.image", Length(4096), IMAGE).shaped(IMAGE_REFERENCE),
        path("spec.imagePullSecrets", Items(16), "pull Secrets of one Pod").keyed_by("name"),
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
        path("spec.agent.env", Items(256), "environment variables of the agent").keyed_by("name"),
        path("spec.agent.env[].name", Length(253), "an environment variable name").shaped(ENV_NAME),
        path("spec.agent.env[].value", Length(32_768), "one environment value (a token, a small config)"),
        path("spec.agent.env[].valueFrom.secretKeyRef.key", Length(253), "a Secret key").shaped(DATA_KEY),
        path("spec.agent.env[].valueFrom.configMapKeyRef.key", Length(253), "a ConfigMap key").shaped(DATA_KEY),
        path("spec.agent.env[].valueFrom.fileKeyRef.key", Length(253), "a key in an env file"),
        path("spec.launchConfig.secretRef.key", Length(253), "a Secret key").shaped(DATA_KEY),
        path("spec.authState.secretRef.key", Length(253), "a Secret key").shaped(DATA_KEY),
        path("spec.from.snapshot", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        path("spec.source.session", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        path("spec.agent.resources.claims[].name", Length(63), "a claim in the Pod (DNS label)").shaped(DNS_LABEL),
        path("spec.pod.resources.claims[].name", Length(63), "a claim in the Pod (DNS label)").shaped(DNS_LABEL),
        path("spec.pod.nodeSelector", Properties(64), "node labels to match"),
        path("spec.pod.nodeSelector{}", Length(63), LABEL_VALUE).shaped(LABEL_VALUE_SHAPE),
        path("spec.pod.tolerations", Items(64), "tolerations of one Pod"),
        path("spec.pod.tolerations[].value", Length(63), LABEL_VALUE).shaped(LABEL_VALUE_SHAPE),
        path("spec.pod.hostAliases", Items(16), "addresses a Pod names in its /etc/hosts"),
        path("spec.pod.hostAliases[].ip", Length(45), "an IPv6 address in its longest text form"),
        path("spec.pod.hostAliases[].hostnames", Items(16), "names for one address"),
        path("spec.pod.hostAliases[].hostnames[]", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        path("status.conditions", Items(16), "the operator writes one of each type (ten today)"),
        path("status.conditions[].message", Length(32_768), "metav1.Condition's own bound"),
        path("status.conditions[].reason", Length(1024), "metav1.Condition's own bound"),
        path("status.conditions[].type", Length(316), "metav1.Condition's own bound"),
        path("status.conditions[].status", Length(16), "True, False or Unknown"),
        path("status.conditions[].lastTransitionTime", Length(64), "an RFC 3339 time"),
        path("status.execHint", Length(1024), "one kubectl command line"),
        path("status.viewer.command", Length(1024), "one kubectl command line"),
        path("status.viewer.service", Length(63), "a Service name (DNS label)"),
        path("status.cdp.command", Length(1024), "one kubectl command line"),
        path("status.cdp.service", Length(63), "a Service name (DNS label)"),
        path("status.recording.directory", Length(4096), "PATH_MAX on Linux"),
        path("status.recording.command", Length(1024), "one kubectl command line"),
        path(
            "status.recording.export.destination",
            Length(1100),
            "s3:// and a bucket and prefix, cut by ExportStatus::bounded",
        ),
        path("status.recording.export.lastError", Length(1024), "the store's answer, cut to MAX_ERROR_CHARS"),
        path("status.recording.export.lastUpload", Length(64), "an RFC 3339 time"),
        path("status.podName", Length(253), DNS_NAME),
        path("status.sessionName", Length(session_name), "the same bound as spec.sessionName"),
        path("status.socketNamespace", Length(16), "8 hex digits"),
        path("status.podReplacements.lastReason", Length(1024), "a Pod's reason, like a condition's"),
        path("status.podReplacements.lastTime", Length(64), "an RFC 3339 time"),
        path("status.pool.time", Length(64), "an RFC 3339 time"),
        path("status.pool.templateHash", Length(64), "a BrowserPool template's hash"),
        path("status.suspend.path", Length(16), "Live, State or Empty"),
        path("status.suspend.reason", Length(1024), "one sentence, like a condition's reason"),
        path("status.suspend.stateSecret", Length(253), DNS_NAME),
        path("status.suspend.node", Length(253), "a node's name"),
        path("status.suspend.checkpoint", Length(36), "a Pod's UID"),
        path("status.suspend.suspendedAt", Length(64), "an RFC 3339 time"),
        path("status.suspend.resumeRequestedAt", Length(64), "an RFC 3339 time"),
        path("status.suspend.expiredAt", Length(64), "an RFC 3339 time"),
        path("status.path", Length(16), "State"),
        path("status.reason", Length(64), "one word, like a condition's reason"),
        path("status.message", Length(1024), "one sentence, like a condition's message"),
        path("status.sourceUID", Length(64), "a UID"),
        path("status.stateSecret", Length(253), DNS_NAME),
        path("status.takenAt", Length(64), "an RFC 3339 time"),
        path("status.selector", Length(1024), "a BrowserPool's label selector (three labels)"),
        path("status.templateHash", Length(64), "a BrowserPool template's hash"),
        // Fields of embedded Kubernetes types (and ours with the same meaning).
        field("name", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        field("claimName", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        field("storageClassName", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        field("priorityClassName", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        field("serviceAccountName", Length(253), DNS_NAME).shaped(DNS_SUBDOMAIN),
        field("volumeName", Length(253), DNS_NAME),
        field("containerName", Length(253), DNS_NAME),
        field("request", Length(253), DNS_NAME),
        field("key", Length(317), LABEL_KEY).shaped(LABEL_KEY_SHAPE),
        field("topologyKey", Length(317), LABEL_KEY).shaped(LABEL_KEY_SHAPE),
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
        field("matchLabels{}", Length(63), LABEL_VALUE).shaped(LABEL_VALUE_SHAPE),
        field("matchLabelKeys", Items(16), SELECTOR_TERMS),
        field("matchLabelKeys[]", Length(317), LABEL_KEY).shaped(LABEL_KEY_SHAPE),
        field("mismatchLabelKeys", Items(16), SELECTOR_TERMS),
        field("mismatchLabelKeys[]", Length(317), LABEL_KEY).shaped(LABEL_KEY_SHAPE),
        field("namespaces", Items(64), "namespaces one term names"),
        field("namespaces[]", Length(63), "a namespace name (DNS label)").shaped(DNS_LABEL),
        field("claims", Items(16), "dynamic resource claims of one container").keyed_by("name"),
        field("limits", Properties(16), "resource names of one container"),
        field("requests", Properties(16), "resource names of one container"),
        field("limits{}", Quantity(64), QUANTITY),
        field("requests{}", Quantity(64), QUANTITY),
        field("divisor", Quantity(64), QUANTITY),
        field("shmSize", Quantity(64), QUANTITY),
        field("sizeLimit", Quantity(64), QUANTITY),
        field("size", Quantity(64), QUANTITY),
        field("maxTotalSize", Quantity(64), QUANTITY),
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

fn lookup<'a>(limits: &'a [Limit], at: &str) -> Option<&'a Limit> {
    // A BrowserPool's template (and the copy a session records of it) is a
    // BrowserSession spec's browser-defining part: the same bounds.
    let template = ["spec.template.", "status.pool.template."].iter().find_map(|prefix| at.strip_prefix(prefix));
    let at = &match template {
        Some(rest) => format!("spec.{rest}"),
        None => at.to_owned(),
    };
    let last = at.rsplit('.').next().unwrap_or(at);
    let exact = limits.iter().find(|l| matches!(l.at, Selector::Path(p) if p == at));
    exact.or_else(|| limits.iter().find(|l| matches!(l.at, Selector::Field(f) if f == last)))
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
            object.insert("minimum".into(), json!(0));
        }
        // A row of the wrong kind leaves the node unbounded; `unbounded` reports it.
        _ => {}
    }
}

/// Makes `list` a list-map keyed by `key` (the key required in each item).
fn key_list(list: &mut Value, key: &str) {
    let Some(object) = list.as_object_mut() else { return };
    if object.contains_key("x-kubernetes-list-type") {
        return;
    }
    object.insert("x-kubernetes-list-type".into(), json!("map"));
    object.insert("x-kubernetes-list-map-keys".into(), json!([key]));
    if let Some(items) = object.get_mut("items").and_then(Value::as_object_mut) {
        let required = items.entry("required").or_insert_with(|| json!([]));
        if let Some(required) = required.as_array_mut().filter(|r| !r.iter().any(|k| k == key)) {
            required.push(json!(key));
        }
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

/// Gives an `int32` its range: the API server does not enforce the format,
/// so without it a tenant could store a number no 32-bit field holds, and
/// the operator could not read that object, nor the list it is in, which
/// would stop reconciling for every namespace it watches.
fn bound_int32(node: &mut Value) {
    let is_int32 = node.get("type").and_then(Value::as_str) == Some("integer")
        && node.get("format").and_then(Value::as_str) == Some("int32");
    if let Some(object) = node.as_object_mut().filter(|_| is_int32) {
        object.entry("minimum").or_insert_with(|| json!(i32::MIN));
        object.entry("maximum").or_insert_with(|| json!(i32::MAX));
    }
}

/// Bounds every node of `schema` (an `openAPIV3Schema`) that [`limits`] names
/// and that has no bound of its own yet, and every `int32` to its range.
pub fn apply(schema: &mut Value) {
    let limits = limits();
    walk(schema, "", &mut |at, node| {
        bound_int32(node);
        let Some(kind) = kind_of(node) else { return };
        if is_bounded(node, kind) {
            return;
        }
        if let Some(limit) = lookup(&limits, at) {
            set(node, kind, limit.bound);
            let shape = limit.shape.filter(|_| kind == Kind::String && node.get("pattern").is_none());
            if let (Some(shape), Some(object)) = (shape, node.as_object_mut()) {
                object.insert("pattern".into(), json!(shape.pattern));
            }
            if let Some(key) = limit.key.filter(|_| kind == Kind::List) {
                key_list(node, key);
            }
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
        let int32 = node.get("format").and_then(Value::as_str) == Some("int32");
        if int32 && (node.get("minimum").is_none() || node.get("maximum").is_none()) {
            found.push(format!("{at} (int32 without its range)"));
        }
    });
    found
}

/// The bounds as a Markdown table, for docs/crd-reference.md (a test keeps them equal).
pub fn markdown_table() -> String {
    let mut out = String::from("| where | bound | form | why |\n| --- | --- | --- | --- |\n");
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
        let form = match (limit.shape, limit.key) {
            (Some(shape), _) => shape.name.to_owned(),
            (None, Some(key)) => format!("unique `{key}`"),
            (None, None) => String::new(),
        };
        out.push_str(&format!("| {at} | {bound} | {form} | {} |\n", limit.why));
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
                    "port": {"type": "integer", "format": "int32"},
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
        assert_eq!(spec["image"]["pattern"], OPTIONAL_IMAGE_REFERENCE.pattern);
        let port = &spec["pod"]["properties"]["port"];
        assert_eq!((port["minimum"].as_i64(), port["maximum"].as_i64()), (Some(-2_147_483_648), Some(2_147_483_647)));
        assert_eq!(spec["pod"]["properties"]["shmSize"]["maxLength"], 64);
        assert_eq!(spec["pod"]["properties"]["shmSize"]["pattern"], QUANTITY_PATTERN);
        assert!(spec["sandbox"].get("maxLength").is_none(), "enums are bounded by their values");
    }

    #[test]
    fn keyed_lists_refuse_duplicates_and_require_their_key() {
        let mut list =
            json!({"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}});
        key_list(&mut list, "name");
        assert_eq!(list["x-kubernetes-list-type"], "map");
        assert_eq!(list["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(list["items"]["required"], json!(["name"]));
        key_list(&mut list, "name");
        assert_eq!(list["items"]["required"], json!(["name"]), "idempotent");
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
