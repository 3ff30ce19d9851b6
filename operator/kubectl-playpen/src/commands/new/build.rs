//! The BrowserSession `new` creates, from its flags and an optional file:
//! pure, so every precedence rule is tested without a cluster.

use playpen_api::BrowserSession;
use serde_json::{Map, Value};

use crate::cli::IMAGE_ENV;
use crate::error::{Error, Result};

/// What `new` was asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// metadata.name.
    pub name: String,
    /// metadata.namespace.
    pub namespace: String,
    /// `--image`.
    pub image_flag: Option<String>,
    /// `$PLAYPEN_IMAGE`.
    pub image_env: Option<String>,
    /// `--pool`.
    pub pool: Option<String>,
    /// `--viewer-port`.
    pub viewer_port: Option<u16>,
    /// `--cdp`.
    pub cdp: bool,
    /// `-f`: the file's text and its name (for messages).
    pub file: Option<(String, String)>,
}

/// The parts of `-f`'s document `new` uses.
#[derive(Debug, Default, PartialEq)]
struct Extra {
    spec: Map<String, Value>,
    labels: Option<Value>,
    annotations: Option<Value>,
}

/// `-f`: either spec fields, or a whole BrowserSession (whose spec, labels
/// and annotations are taken; a name or namespace in it must match).
fn parse_extra(text: &str, file: &str, name: &str, namespace: &str) -> Result<Extra> {
    let bad = |why: String| Error::Usage(format!("-f {file}: {why}"));
    let yaml: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| bad(format!("not YAML or JSON: {e}")))?;
    let value = serde_json::to_value(yaml).map_err(|e| bad(format!("not representable as JSON: {e}")))?;
    let mut map = match value {
        Value::Object(map) => map,
        Value::Null => return Ok(Extra::default()),
        _ => return Err(bad("expected a mapping of spec fields, or a whole BrowserSession".into())),
    };
    let is_manifest = map.contains_key("kind") || map.contains_key("apiVersion") || map.contains_key("metadata");
    if !is_manifest {
        return Ok(Extra { spec: map, ..Extra::default() });
    }
    if let Some(kind) = map.get("kind") {
        if kind != "BrowserSession" {
            return Err(bad(format!("kind is {kind}, not BrowserSession")));
        }
    }
    let mut extra = Extra::default();
    if let Some(Value::Object(mut meta)) = map.remove("metadata") {
        for (field, want) in [("name", name), ("namespace", namespace)] {
            match meta.get(field) {
                Some(Value::String(got)) if got != want => {
                    return Err(bad(format!("metadata.{field} is {got:?}, but the command says {want:?}")));
                }
                _ => {}
            }
        }
        extra.labels = meta.remove("labels");
        extra.annotations = meta.remove("annotations");
    }
    match map.remove("spec") {
        Some(Value::Object(spec)) => extra.spec = spec,
        Some(Value::Null) | None => {}
        Some(_) => return Err(bad("spec must be a mapping".into())),
    }
    Ok(extra)
}

/// Sets `spec[key][field]`, keeping `spec[key]`'s other fields (a
/// non-mapping `spec[key]` is replaced).
fn set(spec: &mut Map<String, Value>, key: &str, field: &str, value: Value) {
    let mut inner = match spec.remove(key) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    inner.insert(field.to_owned(), value);
    spec.insert(key.to_owned(), Value::Object(inner));
}

/// The BrowserSession as JSON (sent as is, so the API server's strict field
/// validation sees every field the file names), checked against the
/// playpen-api types first. Precedence: flags, then the file, then
/// `$PLAYPEN_IMAGE` for the image.
pub fn build(request: &Request) -> Result<Value> {
    let extra = match &request.file {
        Some((text, file)) => parse_extra(text, file, &request.name, &request.namespace)?,
        None => Extra::default(),
    };
    let mut spec = extra.spec;
    let file_image = spec.get("image").and_then(Value::as_str).filter(|i| !i.is_empty()).map(str::to_owned);
    if let Some(pool) = &request.pool {
        // The pool's template defines the browser: nothing here may name one.
        let clashes = [
            ("--image", request.image_flag.as_ref().is_some_and(|i| !i.is_empty())),
            ("spec.image in the -f file", file_image.is_some()),
            ("--viewer-port", request.viewer_port.is_some()),
            ("--cdp", request.cdp),
        ];
        if let Some((what, _)) = clashes.iter().find(|(_, set)| *set) {
            return Err(Error::Usage(format!(
                "--pool {pool} and {what} exclude each other: the BrowserPool's template defines the browser; leave out {what}, or --pool"
            )));
        }
        spec.remove("image");
        spec.insert("pool".into(), serde_json::json!({"name": pool}));
    } else {
        let image = request
            .image_flag
            .clone()
            .filter(|i| !i.is_empty())
            .or(file_image)
            .or_else(|| request.image_env.clone().filter(|i| !i.is_empty()))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no browser image: pass --image IMAGE (an image built by playpen-imagebuild, e.g. \
                     playpen/browser:latest), set {IMAGE_ENV}, put spec.image in the -f file, or take a warm \
                     browser with --pool POOL"
                ))
            })?;
        spec.insert("image".into(), Value::String(image));
    }
    if let Some(port) = request.viewer_port {
        set(&mut spec, "viewer", "port", Value::from(port));
    }
    if request.cdp {
        set(&mut spec, "cdp", "enabled", Value::Bool(true));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(request.name.clone()));
    metadata.insert("namespace".into(), Value::String(request.namespace.clone()));
    if let Some(labels) = extra.labels {
        metadata.insert("labels".into(), labels);
    }
    if let Some(annotations) = extra.annotations {
        metadata.insert("annotations".into(), annotations);
    }
    let object = serde_json::json!({
        "apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserSession",
        "metadata": metadata,
        "spec": spec,
    });
    serde_json::from_value::<BrowserSession>(object.clone())
        .map_err(|e| Error::Usage(format!("the BrowserSession would be invalid: {e}")))?;
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Request {
        Request {
            name: "demo".into(),
            namespace: "team-a".into(),
            image_flag: Some("img:1".into()),
            ..Request::default()
        }
    }

    fn with_file(text: &str) -> Request {
        Request { file: Some((text.into(), "extra.yaml".into())), ..request() }
    }

    #[test]
    fn flags_alone_make_a_minimal_session() {
        let object = build(&Request { viewer_port: Some(9400), ..request() }).unwrap();
        assert_eq!(
            object,
            json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
                "metadata": {"name": "demo", "namespace": "team-a"},
                "spec": {"image": "img:1", "viewer": {"port": 9400}}})
        );
        let typed: BrowserSession = serde_json::from_value(object).unwrap();
        assert_eq!(typed.spec.browser.viewer.port, 9400);
        assert!(typed.spec.browser.viewer.enabled);
    }

    #[test]
    fn image_precedence_flag_then_file_then_env() {
        let env = Some("env:1".to_owned());
        let file = "image: file:1\n";
        let pick = |flag: Option<&str>, file: Option<&str>, env: Option<String>| {
            let r = Request {
                image_flag: flag.map(str::to_owned),
                image_env: env,
                file: file.map(|f| (f.to_owned(), "f".to_owned())),
                ..request()
            };
            build(&r).map(|o| o["spec"]["image"].as_str().unwrap().to_owned())
        };
        assert_eq!(pick(Some("flag:1"), Some(file), env.clone()).unwrap(), "flag:1");
        assert_eq!(pick(None, Some(file), env.clone()).unwrap(), "file:1");
        assert_eq!(pick(None, None, env.clone()).unwrap(), "env:1");
        assert_eq!(pick(Some(""), None, env).unwrap(), "env:1", "an empty flag counts as none");
        let err = pick(None, None, None).unwrap_err().to_string();
        assert!(err.contains("pass --image IMAGE") && err.contains("PLAYPEN_IMAGE"), "{err}");
        assert!(pick(None, Some("image: ''\n"), Some(String::new())).is_err());
    }

    #[test]
    fn spec_fields_from_a_file_merge_under_the_flags() {
        let object = build(&Request {
            viewer_port: Some(9500),
            ..with_file("idleTimeoutSeconds: 600\nviewer:\n  enabled: true\n  port: 9400\nsandbox: Disabled\n")
        })
        .unwrap();
        assert_eq!(object["spec"]["idleTimeoutSeconds"], 600);
        assert_eq!(object["spec"]["viewer"], json!({"enabled": true, "port": 9500}));
        assert_eq!(object["spec"]["sandbox"], "Disabled");
        let object = build(&with_file("{\"maxLifetimeSeconds\": 60}")).unwrap();
        assert_eq!(object["spec"]["maxLifetimeSeconds"], 60, "JSON is YAML too");
        let object = build(&with_file("")).unwrap();
        assert_eq!(object["spec"], json!({"image": "img:1"}), "an empty file adds nothing");
    }

    #[test]
    fn a_whole_manifest_gives_spec_labels_and_annotations() {
        let manifest = "apiVersion: playpen.dev/v1alpha1\nkind: BrowserSession\nmetadata:\n  name: demo\n  \
                        labels: {team: a}\n  annotations: {note: x}\nspec:\n  image: file:2\n  \
                        idleTimeoutSeconds: 30\n";
        let object = build(&Request { image_flag: None, ..with_file(manifest) }).unwrap();
        assert_eq!(
            object["metadata"],
            json!({"name": "demo", "namespace": "team-a", "labels": {"team": "a"},
            "annotations": {"note": "x"}})
        );
        assert_eq!(object["spec"], json!({"image": "file:2", "idleTimeoutSeconds": 30}));
    }

    #[test]
    fn a_manifest_for_another_object_is_refused() {
        for (text, want) in [
            ("kind: Pod\nspec: {}\n", "kind is \"Pod\", not BrowserSession"),
            (
                "kind: BrowserSession\nmetadata: {name: other}\n",
                "metadata.name is \"other\", but the command says \"demo\"",
            ),
            ("kind: BrowserSession\nmetadata: {namespace: b}\n", "metadata.namespace is \"b\""),
            ("kind: BrowserSession\nspec: [1]\n", "spec must be a mapping"),
            ("- a\n- b\n", "expected a mapping"),
            ("a: [unclosed\n", "not YAML or JSON"),
        ] {
            let err = build(&with_file(text)).unwrap_err().to_string();
            assert!(err.starts_with("-f extra.yaml: ") && err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn typed_validation_catches_wrong_types_before_the_server() {
        for text in ["viewer: {port: high}\n", "sandbox: Sometimes\n", "idleTimeoutSeconds: soon\n"] {
            let err = build(&with_file(text)).unwrap_err().to_string();
            assert!(err.starts_with("the BrowserSession would be invalid: "), "{text}: {err}");
        }
        // A non-mapping viewer in the file is replaced by the flag's mapping.
        let object = build(&Request { viewer_port: Some(9400), ..with_file("viewer: 5\n") }).unwrap();
        assert_eq!(object["spec"]["viewer"], json!({"port": 9400}));
    }

    #[test]
    fn unknown_fields_are_kept_for_the_servers_strict_validation() {
        let object = build(&with_file("imagePullPolicy: Never\nnotAField: 1\n")).unwrap();
        assert_eq!(object["spec"]["notAField"], 1);
    }

    #[test]
    fn cdp_turns_the_endpoint_on_and_keeps_a_files_port() {
        let object = build(&Request { cdp: true, ..request() }).unwrap();
        assert_eq!(object["spec"]["cdp"], json!({"enabled": true}));
        let typed: BrowserSession = serde_json::from_value(object).unwrap();
        assert!(typed.spec.browser.cdp.enabled);
        assert_eq!(typed.spec.browser.cdp.port, 9222);
        let object = build(&Request { cdp: true, ..with_file("cdp: {port: 9300}\n") }).unwrap();
        assert_eq!(object["spec"]["cdp"], json!({"enabled": true, "port": 9300}));
        let object = build(&with_file("cdp: {enabled: true}\n")).unwrap();
        assert_eq!(object["spec"]["cdp"]["enabled"], true, "the file alone may turn it on");
    }

    #[test]
    fn a_pool_replaces_the_image_and_excludes_browser_flags() {
        let pooled = Request { pool: Some("warm".into()), image_flag: None, ..request() };
        let v = build(&Request { image_env: Some("env/image".into()), ..pooled.clone() }).unwrap();
        assert_eq!(v["spec"]["pool"]["name"], "warm");
        assert!(v["spec"].get("image").is_none(), "$PLAYPEN_IMAGE is a default, not a clash: {v}");
        let err = build(&Request { image_flag: Some("x".into()), ..pooled.clone() }).unwrap_err().to_string();
        assert!(err.contains("--pool warm and --image exclude each other"), "{err}");
        let err = build(&Request { cdp: true, ..pooled.clone() }).unwrap_err().to_string();
        assert!(err.contains("--cdp"), "{err}");
        let file = Some(("image: a/b\n".to_owned(), "s.yaml".to_owned()));
        let err = build(&Request { file, ..pooled }).unwrap_err().to_string();
        assert!(err.contains("spec.image in the -f file"), "{err}");
    }
}
