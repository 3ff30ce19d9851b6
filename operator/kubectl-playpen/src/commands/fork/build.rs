//! What `fork` creates, decided without a cluster: the snapshot's and the
//! forks' names (refused before anything is created when they cannot be
//! valid), the BrowserSnapshot, and each fork built from the source's spec.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// Most forks one command creates (a fork is a whole browser Pod each).
pub const MAX_COUNT: u32 = 20;

/// The label naming the session a fork was copied from.
pub const FORKED_FROM: &str = "playpen.dev/forked-from";

/// The BrowserSession name rule (CRD): the viewer Service `<name>-view` must
/// fit in 63 characters.
pub const SESSION_NAME_MAX: usize = 58;

/// The BrowserSnapshot name rule (CRD): its Secret `<name>-state` must fit
/// in 253 characters.
pub const SNAPSHOT_NAME_MAX: usize = 247;

/// Whether `name` is lowercase letters, digits and '-', alphanumeric at both
/// ends, and at most `max` long; a DNS-1035 label also starts with a letter.
fn valid_name(name: &str, max: usize, letter_first: bool) -> bool {
    let chars_ok = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let first_ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || (!letter_first && c.is_ascii_digit()));
    let last_ok = name.chars().last().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    !name.is_empty() && name.len() <= max && chars_ok && first_ok && last_ok
}

/// Five lowercase hex digits from random bytes (a name suffix, not a secret).
pub fn suffix(random: [u8; 3]) -> String {
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    hex[..5].to_owned()
}

/// The snapshot's name: `--snapshot`, checked against the CRD's rule, else
/// `<source>-fork-<suffix>`.
pub fn snapshot_name(source: &str, given: Option<&str>, suffix: &str) -> Result<String> {
    let Some(name) = given else { return Ok(format!("{source}-fork-{suffix}")) };
    if !valid_name(name, SNAPSHOT_NAME_MAX, false) {
        return Err(Error::Usage(format!(
            "--snapshot {name:?} is not a valid BrowserSnapshot name: lowercase letters, digits and '-', \
             starting and ending with a letter or digit, at most {SNAPSHOT_NAME_MAX} characters"
        )));
    }
    Ok(name.to_owned())
}

/// The forks' names, `<snapshot>-1` … `<snapshot>-<count>`; refused (before
/// anything exists) when the count is out of bounds or a name would break
/// the BrowserSession name rule.
pub fn session_names(snapshot: &str, count: u32) -> Result<Vec<String>> {
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(Error::Usage(format!("--count {count} is out of range: 1 to {MAX_COUNT} forks")));
    }
    let names: Vec<String> = (1..=count).map(|i| format!("{snapshot}-{i}")).collect();
    // The last name is the longest: if it fits, all do.
    let longest = names.last().map(String::as_str).unwrap_or_default();
    if !valid_name(longest, SESSION_NAME_MAX, true) {
        return Err(Error::Usage(format!(
            "the forks would be named {snapshot}-1 … {longest}, which is not a valid BrowserSession name \
             (a DNS-1035 label: starting with a letter, at most {SESSION_NAME_MAX} characters); nothing was \
             created: pass --snapshot with a shorter name (at most {} characters for --count {count})",
            SESSION_NAME_MAX - (longest.len() - snapshot.len())
        )));
    }
    Ok(names)
}

/// The BrowserSnapshot of session `source`, named `name`.
pub fn snapshot_object(name: &str, namespace: &str, source: &str) -> Value {
    json!({
        "apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserSnapshot",
        "metadata": {"name": name, "namespace": namespace, "labels": {FORKED_FROM: source}},
        "spec": {"source": {"session": source}},
    })
}

/// Fork `name`: the source's spec as stored, without `suspended` (a fork
/// runs), `authState` (the snapshot carries the cookies, and the CRD
/// refuses both) and `profile` (a PersistentVolumeClaim one browser holds
/// open: forks would fight over it), starting `from` the snapshot. None of the source's
/// metadata is copied but the label naming it.
pub fn fork_object(name: &str, namespace: &str, source: &str, source_spec: &Value, snapshot: &str) -> Result<Value> {
    let mut spec: Map<String, Value> = match source_spec {
        Value::Object(spec) => spec.clone(),
        other => {
            return Err(Error::Unavailable(format!(
                "BrowserSession {namespace}/{source} has no spec to copy (found {other})"
            )))
        }
    };
    spec.remove("suspended");
    spec.remove("authState");
    spec.remove("profile");
    spec.insert("from".into(), json!({"snapshot": snapshot}));
    Ok(json!({
        "apiVersion": "playpen.dev/v1alpha1",
        "kind": "BrowserSession",
        "metadata": {"name": name, "namespace": namespace, "labels": {FORKED_FROM: source}},
        "spec": spec,
    }))
}

/// What a fork's browser is, for the line saying it was created.
pub fn browser_of(object: &Value) -> String {
    let spec = &object["spec"];
    match (spec.pointer("/pool/name").and_then(Value::as_str), spec["image"].as_str()) {
        (Some(pool), _) => format!("pool {pool}"),
        (None, Some(image)) if !image.is_empty() => format!("image {image}"),
        _ => "image -".to_owned(),
    }
}

/// Whether the object's spec has the CDP endpoint on (for the usage hints).
pub fn cdp_enabled(object: &Value) -> bool {
    object.pointer("/spec/cdp/enabled").and_then(Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_is_five_lowercase_hex_digits() {
        assert_eq!(suffix([0xab, 0x01, 0xff]), "ab01f");
        assert_eq!(suffix([0, 0, 0]), "00000");
        for bytes in [[0xff, 0xff, 0xff], [0x12, 0x34, 0x56]] {
            let s = suffix(bytes);
            assert!(s.len() == 5 && s.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{s}");
        }
    }

    #[test]
    fn the_snapshot_is_named_by_the_flag_or_after_the_source() {
        assert_eq!(snapshot_name("demo", None, "ab01f").unwrap(), "demo-fork-ab01f");
        assert_eq!(snapshot_name("demo", Some("snap"), "ab01f").unwrap(), "snap");
        assert_eq!(snapshot_name("demo", Some("0snap"), "x").unwrap(), "0snap", "the snapshot rule allows a digit");
        let long = "a".repeat(SNAPSHOT_NAME_MAX);
        assert_eq!(snapshot_name("demo", Some(&long), "x").unwrap(), long);
        for bad in ["", "Snap", "snap.x", "snap-", "-snap", "snap_x", &"a".repeat(SNAPSHOT_NAME_MAX + 1)] {
            let err = snapshot_name("demo", Some(bad), "x").unwrap_err().to_string();
            assert!(err.contains("is not a valid BrowserSnapshot name"), "{bad}: {err}");
        }
    }

    #[test]
    fn forks_are_numbered_from_one_and_the_count_is_bounded() {
        assert_eq!(session_names("snap", 1).unwrap(), ["snap-1"]);
        assert_eq!(session_names("snap", 3).unwrap(), ["snap-1", "snap-2", "snap-3"]);
        assert_eq!(session_names("snap", MAX_COUNT).unwrap().last().unwrap(), "snap-20");
        for count in [0, MAX_COUNT + 1, u32::MAX] {
            let err = session_names("snap", count).unwrap_err().to_string();
            assert_eq!(err, format!("--count {count} is out of range: 1 to 20 forks"));
        }
    }

    #[test]
    fn names_too_long_for_a_session_are_refused_with_the_length_that_fits() {
        let fits = "a".repeat(SESSION_NAME_MAX - 2);
        assert_eq!(session_names(&fits, 9).unwrap().len(), 9);
        let err = session_names(&fits, 10).unwrap_err().to_string();
        assert!(err.contains(&format!("{fits}-10, which is not a valid BrowserSession name")), "{err}");
        assert!(
            err.contains(
                "nothing was created: pass --snapshot with a shorter name (at most 55 characters for --count 10)"
            ),
            "{err}"
        );
        // The default name of a 45-character source just fits one digit of forks.
        let source = "s".repeat(45);
        let default = snapshot_name(&source, None, "ab01f").unwrap();
        assert_eq!(session_names(&default, 9).unwrap().last().unwrap().len(), SESSION_NAME_MAX);
        assert!(session_names(&default, 10).is_err());
        assert!(session_names(&snapshot_name(&"s".repeat(46), None, "ab01f").unwrap(), 1).is_err());
    }

    #[test]
    fn a_snapshot_name_starting_with_a_digit_cannot_name_sessions() {
        let err = session_names("0snap", 1).unwrap_err().to_string();
        assert!(err.contains("0snap-1, which is not a valid BrowserSession name"), "{err}");
    }

    #[test]
    fn the_snapshot_names_its_source() {
        assert_eq!(
            snapshot_object("snap", "team-a", "demo"),
            json!({
                "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSnapshot",
                "metadata": {"name": "snap", "namespace": "team-a", "labels": {"playpen.dev/forked-from": "demo"}},
                "spec": {"source": {"session": "demo"}},
            })
        );
    }

    #[test]
    fn a_fork_copies_the_spec_but_suspended_and_auth_state_and_starts_from_the_snapshot() {
        let source = json!({
            "image": "playpen/browser:1", "suspended": true, "idleTimeoutSeconds": 600,
            "authState": {"secretRef": {"name": "cookies"}}, "cdp": {"enabled": true, "port": 9222},
            "from": {"snapshot": "older"}, "profile": {"claimName": "home"},
        });
        let fork = fork_object("snap-1", "team-a", "demo", &source, "snap").unwrap();
        assert_eq!(
            fork,
            json!({
                "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
                "metadata": {"name": "snap-1", "namespace": "team-a", "labels": {"playpen.dev/forked-from": "demo"}},
                "spec": {
                    "image": "playpen/browser:1", "idleTimeoutSeconds": 600,
                    "cdp": {"enabled": true, "port": 9222}, "from": {"snapshot": "snap"},
                },
            })
        );
        assert!(cdp_enabled(&fork));
        assert_eq!(browser_of(&fork), "image playpen/browser:1");
    }

    #[test]
    fn a_pooled_source_gives_pooled_forks() {
        let fork = fork_object("snap-1", "n", "demo", &json!({"pool": {"name": "p"}}), "snap").unwrap();
        assert_eq!(fork["spec"], json!({"pool": {"name": "p"}, "from": {"snapshot": "snap"}}));
        assert_eq!(browser_of(&fork), "pool p");
        assert!(!cdp_enabled(&fork));
    }

    #[test]
    fn a_source_without_a_spec_object_is_refused() {
        for spec in [Value::Null, json!("x"), json!([1])] {
            let err = fork_object("snap-1", "n", "demo", &spec, "snap").unwrap_err().to_string();
            assert!(err.starts_with("BrowserSession n/demo has no spec to copy"), "{err}");
        }
        assert_eq!(browser_of(&json!({"spec": {}})), "image -");
    }
}
