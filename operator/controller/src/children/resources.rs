//! The browser container's resources: the cluster's defaults (chart value
//! `sessions.resources`) under what the session or the pool template sets
//! itself (`spec.pod.resources`), key by key. Without requests the scheduler
//! puts any number of browsers on a node; with them, a session that does not
//! fit waits `Pending` with the scheduler's reason.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use playpen_api::quantity::millis;

/// The defaults the operator ships with; the chart's `sessions.resources`
/// says the same (a chart test compares them). The figures behind them are
/// in docs/operations.md ("Sizing").
pub const DEFAULT_BROWSER_RESOURCES: &str = r#"{"requests":{"cpu":"100m","memory":"384Mi"},"limits":{"memory":"2Gi"}}"#;

/// Resource names the defaults may set: what a browser container consumes.
const DEFAULTABLE: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// Parses and checks the operator's defaults (`--browser-resources`): JSON
/// of a container's `resources` with `requests` and `limits` only, each a
/// valid quantity of cpu, memory or ephemeral-storage, no request above its
/// limit.
pub fn parse_defaults(json: &str) -> Result<ResourceRequirements, String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("not JSON ({e}); expected e.g. {DEFAULT_BROWSER_RESOURCES}"))?;
    if let Some(other) = value.as_object().and_then(|o| o.keys().find(|k| *k != "requests" && *k != "limits")) {
        return Err(format!("{other:?} is not settable here: only requests and limits"));
    }
    let resources: ResourceRequirements =
        serde_json::from_value(value).map_err(|e| format!("not a container's resources: {e}"))?;
    for (kind, list) in [("requests", &resources.requests), ("limits", &resources.limits)] {
        for (name, quantity) in list.iter().flatten() {
            if !DEFAULTABLE.contains(&name.as_str()) {
                return Err(format!("{kind}.{name}: only {} have defaults", DEFAULTABLE.join(", ")));
            }
            if millis(&quantity.0).is_none() {
                return Err(format!("{kind}.{name}: {:?} is not a quantity (e.g. 100m, 384Mi, 2Gi)", quantity.0));
            }
        }
    }
    for (name, request) in resources.requests.iter().flatten() {
        let limit = resources.limits.as_ref().and_then(|l| l.get(name));
        if let Some(limit) = limit.filter(|limit| above(request, limit)) {
            return Err(format!("requests.{name} ({}) is above limits.{name} ({})", request.0, limit.0));
        }
    }
    Ok(resources)
}

/// `a > b`, for quantities that parse (others compare as not above).
fn above(a: &Quantity, b: &Quantity) -> bool {
    matches!((millis(&a.0), millis(&b.0)), (Some(a), Some(b)) if a > b)
}

/// The browser container's resources: `own` (the session's or the pool
/// template's) wins key by key over `defaults`. A default never makes the
/// result invalid: a default request above the container's own limit comes
/// down to that limit, and a default limit below its own request goes up to
/// that request.
pub fn browser_resources(defaults: &ResourceRequirements, own: Option<&ResourceRequirements>) -> ResourceRequirements {
    let Some(own) = own else { return defaults.clone() };
    let merged = |default: &Option<BTreeMap<String, Quantity>>, own: &Option<BTreeMap<String, Quantity>>| {
        let mut list = default.clone().unwrap_or_default();
        list.extend(own.clone().unwrap_or_default());
        list
    };
    let mut requests = merged(&defaults.requests, &own.requests);
    let mut limits = merged(&defaults.limits, &own.limits);
    let own_has =
        |list: &Option<BTreeMap<String, Quantity>>, name: &str| list.as_ref().is_some_and(|l| l.contains_key(name));
    for (name, request) in &mut requests {
        let Some(limit) = limits.get_mut(name) else { continue };
        if !above(request, limit) {
            continue;
        }
        match (own_has(&own.requests, name), own_has(&own.limits, name)) {
            (false, _) => *request = limit.clone(),
            (true, false) => *limit = request.clone(),
            // Both the container's own: the API server says what is wrong.
            (true, true) => {}
        }
    }
    ResourceRequirements {
        requests: (!requests.is_empty()).then_some(requests),
        limits: (!limits.is_empty()).then_some(limits),
        claims: own.claims.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resources(value: serde_json::Value) -> ResourceRequirements {
        serde_json::from_value(value).unwrap()
    }

    fn defaults() -> ResourceRequirements {
        parse_defaults(DEFAULT_BROWSER_RESOURCES).unwrap()
    }

    #[test]
    fn the_shipped_defaults_parse_and_request_cpu_and_memory_with_a_memory_limit() {
        let d = defaults();
        let requests = d.requests.unwrap();
        assert!(requests.contains_key("cpu") && requests.contains_key("memory"));
        assert!(d.limits.unwrap().contains_key("memory"));
    }

    #[test]
    fn bad_defaults_are_refused_naming_the_key_and_the_fix() {
        let refused = |text: &str| parse_defaults(text).unwrap_err();
        assert!(refused("{").contains("not JSON"));
        assert!(refused(r#"{"requests":{"cpu":"lots"}}"#).contains("requests.cpu"));
        assert!(refused(r#"{"requests":{"nvidia.com/gpu":"1"}}"#).contains("only cpu, memory"));
        assert!(refused(r#"{"claims":[{"name":"x"}]}"#).contains("only requests and limits"));
        let above = refused(r#"{"requests":{"memory":"3Gi"},"limits":{"memory":"2Gi"}}"#);
        assert!(above.contains("requests.memory (3Gi) is above limits.memory (2Gi)"), "{above}");
        assert_eq!(parse_defaults("{}").unwrap(), ResourceRequirements::default(), "no defaults at all is a choice");
    }

    #[test]
    fn without_own_resources_the_defaults_apply() {
        assert_eq!(browser_resources(&defaults(), None), defaults());
    }

    #[test]
    fn own_keys_win_and_the_rest_stays_default() {
        let own = resources(json!({"requests": {"cpu": "1"}}));
        let r = browser_resources(&defaults(), Some(&own));
        let requests = r.requests.unwrap();
        assert_eq!(requests["cpu"].0, "1");
        assert_eq!(requests["memory"].0, "384Mi");
        assert_eq!(r.limits.unwrap()["memory"].0, "2Gi");
    }

    #[test]
    fn a_default_never_makes_the_container_invalid() {
        let own = resources(json!({"limits": {"memory": "256Mi"}}));
        let r = browser_resources(&defaults(), Some(&own));
        assert_eq!(r.requests.unwrap()["memory"].0, "256Mi", "the default request comes down to the own limit");
        let own = resources(json!({"requests": {"memory": "4Gi"}}));
        let r = browser_resources(&defaults(), Some(&own));
        assert_eq!(r.limits.unwrap()["memory"].0, "4Gi", "the default limit goes up to the own request");
        let own = resources(json!({"requests": {"memory": "4Gi"}, "limits": {"memory": "1Gi"}}));
        let r = browser_resources(&defaults(), Some(&own));
        assert_eq!((r.requests.unwrap()["memory"].0.as_str(), r.limits.unwrap()["memory"].0.as_str()), ("4Gi", "1Gi"));
    }

    #[test]
    fn empty_defaults_leave_the_container_as_it_asks() {
        let none = ResourceRequirements::default();
        assert_eq!(browser_resources(&none, None), none);
        let own = resources(json!({"requests": {"cpu": "50m"}}));
        assert_eq!(browser_resources(&none, Some(&own)), own);
    }
}
