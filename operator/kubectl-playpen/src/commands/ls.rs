//! `kubectl playpen ls`: the sessions of a namespace (or all), as a table,
//! wide table, JSON or YAML.

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use playpen_api::BrowserSession;

use crate::cli::{ListFormat, LsArgs};
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::output::{format_age, render_table};
use crate::sessions;

/// Headers and rows of the table for `items` at `now` (seconds since the epoch).
pub fn table(items: &[BrowserSession], now: i64, all_namespaces: bool, wide: bool) -> String {
    let mut headers = vec![];
    if all_namespaces {
        headers.push("NAMESPACE");
    }
    headers.extend(["NAME", "PHASE", "READY", "AGE", "POD", "POOL"]);
    if wide {
        headers.extend(["SESSION", "VIEWER-PORT", "CDP-PORT", "IMAGE"]);
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|s| {
            let status = s.status.as_ref();
            let mut row = vec![];
            if all_namespaces {
                row.push(s.metadata.namespace.clone().unwrap_or_default());
            }
            let age = s
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| format_age(now - t.0.as_second()))
                .unwrap_or_else(|| "-".to_owned());
            let dash = || "-".to_owned();
            row.extend([
                sessions::name(s),
                sessions::phase(status).to_owned(),
                sessions::ready(status),
                age,
                status.and_then(|st| st.pod_name.clone()).filter(|p| !p.is_empty()).unwrap_or_else(dash),
                sessions::pool_of(s).unwrap_or_else(dash),
            ]);
            if wide {
                let port = match status.and_then(|st| st.viewer.as_ref()) {
                    Some(viewer) => viewer.port.to_string(),
                    None if s.spec.browser.viewer.enabled => s.spec.browser.viewer.port.to_string(),
                    None => "off".to_owned(),
                };
                let cdp = match status.and_then(|st| st.cdp.as_ref()) {
                    Some(cdp) => cdp.port.to_string(),
                    None if s.spec.browser.cdp.enabled => s.spec.browser.cdp.port.to_string(),
                    None => "off".to_owned(),
                };
                row.extend([
                    status.and_then(|st| st.session_name.clone()).unwrap_or_else(dash),
                    port,
                    cdp,
                    s.spec.browser.image.clone(),
                ]);
            }
            row
        })
        .collect();
    render_table(&headers, &rows)
}

/// Sorts by namespace, then name.
pub fn sort(items: &mut [BrowserSession]) {
    items.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
}

/// The `List` kubectl prints for `-o json|yaml`.
pub fn list_object(items: &[BrowserSession]) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

/// Runs `ls`.
pub async fn run(cluster: &Cluster, args: LsArgs) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let (api, scope): (Api<BrowserSession>, Option<&str>) = if args.all_namespaces {
        (Api::all(cluster.client.clone()), None)
    } else {
        (sessions::api(cluster, ns), Some(ns))
    };
    let what = scope.map(|n| format!("in namespace {n}")).unwrap_or_else(|| "in all namespaces".into());
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        sessions::api_error(
            e,
            &crate::rbac::Attempt::sessions("list", scope),
            None,
            ns,
            format!("list BrowserSessions {what}"),
        )
    })?;
    let mut items = list.items;
    sort(&mut items);
    match args.output {
        Some(ListFormat::Json) => {
            let text = serde_json::to_string_pretty(&list_object(&items))
                .map_err(|e| Error::Usage(format!("printing JSON: {e}")))?;
            println!("{text}");
        }
        Some(ListFormat::Yaml) => {
            let text =
                serde_yaml::to_string(&list_object(&items)).map_err(|e| Error::Usage(format!("printing YAML: {e}")))?;
            print!("{text}");
        }
        format => {
            if items.is_empty() {
                eprintln!("No BrowserSessions found {what}.");
                return Ok(());
            }
            let wide = format == Some(ListFormat::Wide);
            print!("{}", table(&items, Timestamp::now().as_second(), args.all_namespaces, wide));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn session(
        ns: &str,
        name: &str,
        created: i64,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> BrowserSession {
        let created = Timestamp::from_second(created).unwrap().to_string();
        serde_json::from_value(json!({
            "apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserSession",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    fn items() -> Vec<BrowserSession> {
        let ready = json!({"phase": "Ready", "podName": "demo-browser", "sessionName": "demo",
            "viewer": {"service": "demo-view", "port": 9400, "command": "kubectl port-forward ..."},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                "lastTransitionTime": "2027-01-15T08:00:00Z"}]});
        let mut items = vec![
            session("team-b", "zeta", NOW - 40, json!({"image": "img:1", "viewer": {"enabled": false}}), json!({})),
            session("team-a", "demo", NOW - 3 * 86400 - 4 * 3600, json!({"image": "img:2"}), ready),
            session(
                "team-a",
                "alpha",
                NOW - 130,
                json!({"image": "img:3", "cdp": {"enabled": true}}),
                json!({"phase": "Pending"}),
            ),
        ];
        sort(&mut items);
        items
    }

    #[test]
    fn sorted_by_namespace_then_name() {
        let names: Vec<_> = items().iter().map(sessions::name).collect();
        assert_eq!(names, ["alpha", "demo", "zeta"]);
    }

    #[test]
    fn table_shows_phase_ready_age_pod_and_pool() {
        assert_eq!(
            table(&items(), NOW, false, false),
            "NAME    PHASE     READY   AGE     POD            POOL\n\
             alpha   Pending   -       2m10s   -              -\n\
             demo    Ready     True    3d4h    demo-browser   -\n\
             zeta    -         -       40s     -              -\n"
        );
    }

    #[test]
    fn all_namespaces_and_wide_add_columns() {
        assert_eq!(
            table(&items(), NOW, true, true),
            "NAMESPACE   NAME    PHASE     READY   AGE     POD            POOL   SESSION   VIEWER-PORT   CDP-PORT   IMAGE\n\
             team-a      alpha   Pending   -       2m10s   -              -      -         9323          9222       img:3\n\
             team-a      demo    Ready     True    3d4h    demo-browser   -      demo      9400          off        img:2\n\
             team-b      zeta    -         -       40s     -              -      -         off           off        img:1\n"
        );
    }

    #[test]
    fn json_list_round_trips() {
        let object = list_object(&items());
        assert_eq!(object["kind"], "List");
        assert_eq!(object["items"][1]["status"]["podName"], "demo-browser");
        let back: Vec<BrowserSession> = serde_json::from_value(object["items"].clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(items()).unwrap());
        assert!(serde_yaml::to_string(&object).unwrap().contains("kind: List"));
    }

    #[test]
    fn a_session_without_a_creation_time_has_no_age() {
        let mut s = items().remove(0);
        s.metadata.creation_timestamp = None;
        assert!(table(&[s], NOW, false, false).lines().nth(1).unwrap().contains("-       -"));
    }
}
