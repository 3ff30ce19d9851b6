//! Every CEL rule in the CRD, refused by the real API server with its message.

use kube::api::{Api, Patch, PatchParams};
use playpen_api::v1alpha1::BrowserPool;
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, TestNamespace};
use serde_json::{json, Value};

use crate::{create, session};

/// Creates `body` and expects the API server to refuse it with `message`.
async fn refused(client: &kube::Client, ns: &str, body: Value, message: &str) {
    match create(client, ns, body.clone()).await {
        Ok(_) => panic!("accepted, expected refusal with {message:?}: {body}"),
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert!(status.message.contains(message), "expected {message:?} in {:?}", status.message);
        }
        Err(other) => panic!("unexpected error {other}"),
    }
}

#[tokio::test]
async fn every_create_rule_refuses_with_its_message() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "cel").await?;
    let n = ns.name.as_str();
    let s3 = |field: &str, value: Value| {
        let mut s3 = json!({"endpoint": "https://s3.test", "bucket": "rec", "credentialsSecret": {"name": "keys"}});
        s3[field] = value;
        json!({"image": "i", "recording": {"video": true, "export": {"s3": s3}}})
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "export-endpoint-path",
            s3("endpoint", json!("https://s3.test/bucket")),
            "spec.recording.export.s3.endpoint must be a URL like https://s3.example.com",
        ),
        (
            "export-endpoint-userinfo",
            s3("endpoint", json!("https://key:secret@s3.test")),
            "spec.recording.export.s3.endpoint must be a URL like https://s3.example.com",
        ),
        (
            "export-bucket",
            s3("bucket", json!("Rec_Ordings")),
            "spec.recording.export.s3.bucket must be an S3 bucket name",
        ),
        ("export-region", s3("region", json!("US East")), "spec.recording.export.s3.region must be a region name"),
        (
            "export-prefix-uid",
            s3("prefix", json!("{namespace}/{name}")),
            "spec.recording.export.s3.prefix must hold {uid}",
        ),
        ("export-prefix-dots", s3("prefix", json!("../{uid}")), "spec.recording.export.s3.prefix must hold {uid}"),
        (
            "export-secret",
            s3("credentialsSecret", json!({"name": "Keys!"})),
            "credentialsSecret.name must name a Secret in the BrowserSession's namespace",
        ),
        (
            "segment-short",
            json!({"image": "i", "recording": {"video": true, "segmentSeconds": 5}}),
            "spec.recording.segmentSeconds must be between 10 and 3600",
        ),
        ("low-port", json!({"image": "i", "viewer": {"port": 80}}), "spec.viewer.port must be between 1024 and 65535"),
        (
            "high-port",
            json!({"image": "i", "viewer": {"port": 70000}}),
            "spec.viewer.port must be between 1024 and 65535",
        ),
        (
            "cdp-low-port",
            json!({"image": "i", "cdp": {"enabled": true, "port": 22}}),
            "spec.cdp.port must be between 1024 and 65535",
        ),
        (
            "cdp-on-viewer-port",
            json!({"image": "i", "cdp": {"enabled": true, "port": 9323}}),
            "spec.cdp.port must differ from spec.viewer.port",
        ),
        (
            "bad-chars",
            json!({"image": "i", "sessionName": "Agent One"}),
            "spec.sessionName must start with a lowercase letter or digit",
        ),
        (
            "long-name",
            json!({"image": "i", "sessionName": "a".repeat(46)}),
            "spec.sessionName: Too long: may not be more than 45",
        ),
        (
            "zero-age",
            json!({"image": "i", "snapshots": {"retention": {"maxAgeSeconds": 0}}}),
            "spec.snapshots.retention.maxAgeSeconds must be positive",
        ),
        (
            "zero-count",
            json!({"image": "i", "snapshots": {"retention": {"maxCount": 0}}}),
            "spec.snapshots.retention.maxCount must be positive",
        ),
        ("idle", json!({"image": "i", "idleTimeoutSeconds": -1}), "spec.idleTimeoutSeconds must be positive"),
        ("lifetime", json!({"image": "i", "maxLifetimeSeconds": 0}), "spec.maxLifetimeSeconds must be positive"),
        (
            "exclusive",
            json!({"image": "i", "launchConfig": {"secretRef": {"name": "mine"}, "headless": false}}),
            "spec.launchConfig.secretRef is exclusive with headless, executablePath and args",
        ),
        (
            "exclusive-args",
            json!({"image": "i", "launchConfig": {"secretRef": {"name": "mine"}, "args": ["--x"]}}),
            "spec.launchConfig.secretRef is exclusive",
        ),
        ("empty-image", json!({"image": ""}), "set exactly one of spec.image"),
        (
            "two-volumes",
            json!({"image": "i", "snapshots": {"volume": {"emptyDir": {}, "persistentVolumeClaim": {"claimName": "c"}}}}),
            "set either emptyDir or persistentVolumeClaim, not both",
        ),
        (
            "claim-both",
            json!({"image": "i", "snapshots": {"volume": {"persistentVolumeClaim": {"claimName": "c", "size": "1Gi"}}}}),
            "set claimName to use an existing claim, or size",
        ),
        (
            "empty-secret",
            json!({"image": "i", "authState": {"secretRef": {"name": ""}}}),
            "secretRef.name must name a Secret",
        ),
        ("empty-agent", json!({"image": "i", "agent": {"image": ""}}), "spec.agent.image must name the agent's image"),
        (
            "empty-profile",
            json!({"image": "i", "profile": {"claimName": ""}}),
            "spec.profile.claimName must name a PersistentVolumeClaim",
        ),
        (
            "host-bits",
            json!({"image": "i", "network": {"egress": {"allowCIDRs": ["10.0.0.1/8"]}}}),
            "spec.network.egress.allowCIDRs: every entry must be a canonical CIDR",
        ),
        (
            "not-a-cidr",
            json!({"image": "i", "network": {"egress": {"allowCIDRs": ["fixture"]}}}),
            "spec.network.egress.allowCIDRs: every entry must be a canonical CIDR",
        ),
        (
            "alias-not-an-ip",
            json!({"image": "i", "pod": {"hostAliases": [{"ip": "fixture", "hostnames": ["a.test"]}]}}),
            "spec.pod.hostAliases[].ip must be an IP address in canonical form",
        ),
        (
            "alias-not-canonical",
            json!({"image": "i", "pod": {"hostAliases": [{"ip": "2001:DB8:0:0::1", "hostnames": ["a.test"]}]}}),
            "spec.pod.hostAliases[].ip must be an IP address in canonical form",
        ),
        (
            "alias-bad-name",
            json!({"image": "i", "pod": {"hostAliases": [{"ip": "10.96.3.4", "hostnames": ["A_B"]}]}}),
            "spec.pod.hostAliases[0].hostnames[0]: Invalid value",
        ),
        (
            "alias-no-name",
            json!({"image": "i", "pod": {"hostAliases": [{"ip": "10.96.3.4", "hostnames": []}]}}),
            "spec.pod.hostAliases[0].hostnames: Invalid value",
        ),
        (
            "deny-all-with-list",
            json!({"image": "i", "network": {"egress": {"mode": "DenyAll", "allowCIDRs": ["10.0.0.0/8"]}}}),
            "allowCIDRs, allowPeers and allowHosts cannot be used with mode DenyAll",
        ),
        (
            "deny-all-with-hosts",
            json!({"image": "i", "network": {"egress": {"mode": "DenyAll", "allowHosts": ["example.com"]}}}),
            "allowCIDRs, allowPeers and allowHosts cannot be used with mode DenyAll",
        ),
        (
            "host-ip-literal",
            json!({"image": "i", "network": {"egress": {"allowHosts": ["10.0.0.1"]}}}),
            "spec.network.egress.allowHosts: every entry must be a lowercase DNS name",
        ),
        (
            "host-upper-case",
            json!({"image": "i", "network": {"egress": {"allowHosts": ["ok.test", "Example.com"]}}}),
            "spec.network.egress.allowHosts: every entry must be a lowercase DNS name",
        ),
        (
            "host-inner-wildcard",
            json!({"image": "i", "network": {"egress": {"denyHosts": ["a.*.example.com"]}}}),
            "spec.network.egress.denyHosts: every entry must be a lowercase DNS name",
        ),
        (
            "host-port",
            json!({"image": "i", "network": {"egress": {"denyHosts": ["example.com:65536"]}}}),
            "spec.network.egress.denyHosts: every entry must be a lowercase DNS name",
        ),
        (
            "peer-namespace",
            json!({"image": "i", "network": {"egress": {"allowPeers": [{"namespace": "Team_A"}]}}}),
            "spec.network.egress.allowPeers[].namespace must be a namespace name",
        ),
        (
            "runtime-class",
            json!({"image": "i", "pod": {"runtimeClassName": "gVisor"}}),
            "spec.pod.runtimeClassName must name a RuntimeClass",
        ),
        (
            "peer-label",
            json!({"image": "i", "network": {"egress": {"allowPeers": [{"podLabels": {"bad key!": "x"}}]}}}),
            "spec.network.egress.allowPeers[].podLabels must hold label keys",
        ),
    ];
    for (name, spec, message) in cases {
        refused(&client, n, session(name, spec), message).await;
    }
    // Names: the viewer Service is <name>-view, a DNS-1035 label.
    let long = "a".repeat(59);
    refused(&client, n, session(&long, json!({"image": "i"})), "metadata.name must be a DNS-1035 label").await;
    refused(&client, n, session("9lives", json!({"image": "i"})), "metadata.name must be a DNS-1035 label").await;
    // Unknown fields are pruned or refused, never silently kept (sent raw:
    // our own type would drop them before they left).
    let raw: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), n, &kube::api::ApiResource::erase::<BrowserSession>(&()));
    let mut unknown =
        session("unknown", json!({"image": "i", "sneaky": true, "viewer": {"port": 9400, "bindAll": true}}));
    unknown["status"] = json!({"phase": "Ready"});
    let object: kube::api::DynamicObject = serde_json::from_value(unknown)?;
    let kept = match raw.create(&kube::api::PostParams::default(), &object).await {
        Ok(stored) => Some(stored.data),
        Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => None,
        Err(other) => return Err(other.into()),
    };
    if let Some(stored) = kept {
        assert!(stored["spec"].get("sneaky").is_none(), "an unknown spec field was kept: {stored}");
        assert!(stored["spec"]["viewer"].get("bindAll").is_none(), "an unknown nested field was kept: {stored}");
        assert_eq!(stored["spec"]["viewer"]["port"], 9400, "known fields beside them are kept");
        assert!(stored.get("status").is_none(), "status is not set through the main resource: {stored}");
    }
    let created = create(&client, n, session("ok", json!({"image": "i", "sessionName": "a".repeat(45)}))).await?;
    assert_eq!(created.spec.browser.session_name.as_deref().map(str::len), Some(45));
    assert_eq!(created.spec.browser.viewer.port, 9323, "documented default port");
    assert!(created.spec.browser.viewer.enabled);
    assert!(!created.spec.browser.cdp.enabled, "CDP is opt-in");
    assert_eq!(created.spec.browser.cdp.port, 9222, "documented default CDP port");
    // The same port is fine when the viewer, which would hold it, is off.
    create(
        &client,
        n,
        session(
            "cdp-only",
            json!({"image": "i", "viewer": {"enabled": false}, "cdp": {"enabled": true, "port": 9323}}),
        ),
    )
    .await?;
    Ok(())
}

/// A pool's template is the session's browser (one `BrowserSpec`): the
/// browser's own rules refuse it with their messages, under the template's
/// path, and so do the pool's (an image, no snapshot claim).
#[tokio::test]
async fn a_pool_template_is_refused_by_the_browser_rules_and_the_pool_rules() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "cel-pool").await?;
    let pools: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &kube::api::ApiResource::erase::<BrowserPool>(&()));
    // Each refusal names the field (the API server's path) and the rule's message.
    let cases: Vec<(&str, Value, [&str; 2])> = vec![
        (
            "cdp-on-viewer-port",
            json!({"image": "i", "cdp": {"enabled": true, "port": 9323}}),
            ["spec.template:", "spec.cdp.port must differ from spec.viewer.port"],
        ),
        (
            "bad-chars",
            json!({"image": "i", "sessionName": "Agent One"}),
            ["spec.template.sessionName:", "spec.sessionName must start with a lowercase letter or digit"],
        ),
        (
            "low-port",
            json!({"image": "i", "viewer": {"port": 80}}),
            ["spec.template.viewer.port:", "spec.viewer.port must be between 1024 and 65535"],
        ),
        ("no-image", json!({}), ["spec.template.image:", "spec.template.image must name a browser image"]),
        (
            "claim",
            json!({"image": "i", "snapshots": {"volume": {"persistentVolumeClaim": {"claimName": "c"}}}}),
            ["spec.template:", "spec.template.snapshots.volume.persistentVolumeClaim is not for pools"],
        ),
    ];
    for (name, template, wanted) in cases {
        let pool = json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool",
            "metadata": {"name": name}, "spec": {"template": template}});
        match pools.create(&kube::api::PostParams::default(), &serde_json::from_value(pool)?).await {
            Ok(_) => panic!("pool {name} accepted, expected refusal with {wanted:?}"),
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{status:?}");
                for part in wanted {
                    assert!(status.message.contains(part), "{name}: expected {part:?} in {:?}", status.message);
                }
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn browser_fields_are_immutable_and_policy_fields_are_not() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "immut").await?;
    create(&client, &ns.name, session("s", json!({"image": "img:1", "idleTimeoutSeconds": 60}))).await?;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), &ns.name);
    let changes: Vec<(Value, &str)> = vec![
        (json!({"image": "img:2"}), "spec.image is immutable"),
        (json!({"sessionName": "other"}), "spec.sessionName is immutable"),
        (json!({"sandbox": "Disabled"}), "spec.sandbox is immutable"),
        (json!({"launchConfig": {"headless": false}}), "spec.launchConfig is immutable"),
        (json!({"viewer": {"port": 9400}}), "spec.viewer is immutable"),
        (json!({"cdp": {"enabled": true}}), "spec.cdp is immutable"),
        (json!({"recording": {"trace": true}}), "spec.recording is immutable"),
        (json!({"snapshots": {"volume": {"emptyDir": {"sizeLimit": "2Gi"}}}}), "spec.snapshots.volume is immutable"),
        (json!({"authState": {"secretRef": {"name": "x"}}}), "spec.authState is immutable"),
        (json!({"profile": {"claimName": "p"}}), "spec.profile is immutable"),
        (json!({"pod": {"shmSize": "2Gi"}}), "spec.pod is immutable"),
        (json!({"agent": {"image": "a"}}), "spec.agent is immutable"),
    ];
    for (spec, message) in changes {
        let err =
            api.patch("s", &PatchParams::default(), &Patch::Merge(json!({"spec": spec}))).await.expect_err(message);
        match err {
            kube::Error::Api(s) => assert!(s.message.contains(message), "expected {message:?} in {:?}", s.message),
            other => panic!("unexpected {other}"),
        }
    }
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"idleTimeoutSeconds": 120, "maxLifetimeSeconds": 3600,
                "snapshots": {"retention": {"maxCount": 10, "maxAgeSeconds": 30}}}})),
        )
        .await?;
    assert_eq!(patched.spec.idle_timeout_seconds, Some(120));
    // The egress policy applies to the running Pod, so it may change too.
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"network": {"egress": {"mode": "DenyAll"}}}})),
        )
        .await?;
    assert_eq!(patched.spec.network.egress.mode, playpen_api::v1alpha1::EgressMode::DenyAll);
    // Host rules too, and a deny-list is allowed with every mode.
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"network": {"egress": {"denyHosts": ["*.ads.example.com", "x.test:8443"]}}}}),
            ),
        )
        .await?;
    assert_eq!(patched.spec.network.egress.deny_hosts, ["*.ads.example.com", "x.test:8443"]);
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"network": {"egress": {"mode": "AllowListOnly",
                "allowHosts": ["*.example.com", "sso.corp.test:443", "xn--bcher-kva.example"]}}}})),
        )
        .await?;
    assert_eq!(patched.spec.network.egress.allow_hosts.len(), 3);
    assert_eq!(patched.spec.browser.snapshots.retention.max_count, 10);
    Ok(())
}

/// The chart's cluster-wide destination is checked by the operator in
/// Rust (`RecordingExport::check`), never by the API server: both must
/// take and refuse the same destinations.
#[tokio::test]
async fn the_operators_check_of_a_destination_agrees_with_the_api_server() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "export-check").await?;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), &ns.name);
    let cases = [
        ("endpoint", json!("http://store.rec.svc:8333")),
        ("endpoint", json!("https://10.0.0.5")),
        ("endpoint", json!("ftp://store")),
        ("endpoint", json!("https://user:pw@store")),
        ("endpoint", json!("https://store/path")),
        ("endpoint", json!("https://store:123456")),
        ("endpoint", json!("https://")),
        ("bucket", json!("agent-recordings.v2")),
        ("bucket", json!("ab")),
        ("bucket", json!("Agent")),
        ("bucket", json!("-agent")),
        ("bucket", json!("a".repeat(64))),
        ("region", json!("eu-west-1")),
        ("region", json!("EU")),
        ("prefix", json!("{date}/{namespace}/{uid}")),
        ("prefix", json!("{namespace}/{name}")),
        ("prefix", json!("/{uid}")),
        ("prefix", json!("a/../{uid}")),
        ("prefix", json!("a//{uid}")),
        ("credentialsSecret", json!({"name": "recordings.s3"})),
        ("credentialsSecret", json!({"name": "Keys"})),
    ];
    let dry = kube::api::PostParams { dry_run: true, ..Default::default() };
    for (i, (field, value)) in cases.into_iter().enumerate() {
        let mut s3 = json!({"endpoint": "https://s3.test", "bucket": "rec", "credentialsSecret": {"name": "keys"}});
        s3[field] = value.clone();
        let spec = json!({"image": "i", "recording": {"video": true, "export": {"s3": s3.clone()}}});
        let bs: BrowserSession = serde_json::from_value(session(&format!("check-{i}"), spec))?;
        let server = api.create(&dry, &bs).await.is_ok();
        let export: playpen_api::v1alpha1::RecordingExport = serde_json::from_value(json!({"s3": s3}))?;
        let operator = export.check();
        assert_eq!(
            server,
            operator.is_ok(),
            "{field} = {value}: the API server says {server}, the operator {operator:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn examples_are_accepted_by_the_api_server() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "examples").await?;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), &ns.name);
    for file in ["minimal.yaml", "full.yaml"] {
        let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let bs: BrowserSession = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
        let created = api.create(&kube::api::PostParams { dry_run: true, ..Default::default() }, &bs).await?;
        assert_eq!(created.spec, bs.spec, "{file} is stored as written");
    }
    Ok(())
}

#[tokio::test]
async fn over_long_values_are_refused_with_the_field_path_and_the_limit() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "bounds").await?;
    let n = ns.name.as_str();
    let long = |n: usize| "a".repeat(n);
    let many = |n: usize| vec!["--x"; n];
    let labels: serde_json::Map<String, Value> = (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
    let cases: Vec<(&str, Value, &str)> = vec![
        ("image", json!({"image": long(4097)}), "spec.image: Too long: may not be more than 4096 bytes"),
        (
            "exe",
            json!({"image": "i", "launchConfig": {"executablePath": format!("/{}", "é".repeat(4096))}}),
            "spec.launchConfig.executablePath: Too long: may not be more than 4096 bytes",
        ),
        (
            "args",
            json!({"image": "i", "launchConfig": {"args": many(257)}}),
            "spec.launchConfig.args: Too many: 257: must have at most 256 items",
        ),
        (
            "arg",
            json!({"image": "i", "launchConfig": {"args": [long(4097)]}}),
            "spec.launchConfig.args[0]: Too long: may not be more than 4096 bytes",
        ),
        (
            "selector",
            json!({"image": "i", "pod": {"nodeSelector": labels}}),
            "spec.pod.nodeSelector: Too many: 65: must have at most 64 items",
        ),
        (
            "shm",
            json!({"image": "i", "pod": {"shmSize": long(65)}}),
            "spec.pod.shmSize: Too long: may not be more than 64 bytes",
        ),
        (
            "aliases",
            json!({"image": "i", "pod": {"hostAliases": vec![json!({"ip": "10.0.0.1", "hostnames": ["a.test"]}); 17]}}),
            "spec.pod.hostAliases: Too many: 17: must have at most 16 items",
        ),
        (
            "alias-names",
            json!({"image": "i", "pod": {"hostAliases": [{"ip": "10.0.0.1", "hostnames": vec!["a.test"; 17]}]}}),
            "spec.pod.hostAliases[0].hostnames: Too many: 17: must have at most 16 items",
        ),
        (
            "hosts",
            json!({"image": "i", "network": {"egress": {"allowHosts": vec!["a.test"; 65]}}}),
            "spec.network.egress.allowHosts: Too many: 65: must have at most 64 items",
        ),
        (
            "host",
            json!({"image": "i", "network": {"egress": {"denyHosts": [format!("{}.test", long(250))]}}}),
            "spec.network.egress.denyHosts[0]: Too long: may not be more than 253 bytes",
        ),
        (
            "env",
            json!({"image": "i", "agent": {"image": "a", "env": [{"name": "T", "value": long(32_769)}]}}),
            "spec.agent.env[0].value: Too long: may not be more than 32768 bytes",
        ),
        (
            "secret",
            json!({"image": "i", "authState": {"secretRef": {"name": long(254)}}}),
            "spec.authState.secretRef.name: Too long: may not be more than 253 bytes",
        ),
        (
            "env-name",
            json!({"image": "i", "agent": {"image": "a", "env": [{"name": "A=B", "value": "v"}]}}),
            "spec.agent.env[0].name: Invalid value",
        ),
        (
            "dup-pull",
            json!({"image": "i", "imagePullSecrets": [{"name": "p"}, {"name": "p"}]}),
            "spec.imagePullSecrets[1]: Duplicate value",
        ),
        ("image-space", json!({"image": " playpen/browser"}), "spec.image: Invalid value"),
        ("neg-shm", json!({"image": "i", "pod": {"shmSize": "-1Gi"}}), "spec.pod.shmSize: Invalid value"),
    ];
    for (name, spec, message) in cases {
        refused(&client, n, session(name, spec), message).await;
    }
    // A number no int32 field holds: refused, or the operator could not read
    // the object (nor any list holding it). Sent raw: our own type cannot hold it.
    let raw: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), n, &kube::api::ApiResource::erase::<BrowserSession>(&()));
    let huge: kube::api::DynamicObject = serde_json::from_value(session(
        "int32",
        json!({"image": "i", "snapshots": {"retention": {"maxCount": 1_u64 << 40}}}),
    ))?;
    match raw.create(&kube::api::PostParams::default(), &huge).await {
        Err(kube::Error::Api(s)) => assert!(s.message.contains("spec.snapshots.retention.maxCount"), "{}", s.message),
        other => panic!("a 2^40 maxCount must be refused: {other:?}"),
    }
    // At the limits, accepted.
    let at_limit = json!({"image": long(4096), "launchConfig": {"args": many(256)},
        "pod": {"shmSize": "1536Mi"}, "agent": {"image": "a", "env": [{"name": "T", "value": long(32_768)}]}});
    create(&client, n, session("at-limit", at_limit)).await?;
    Ok(())
}

#[tokio::test]
async fn the_api_server_accepts_the_crd_so_every_cel_rule_is_within_its_cost_budget() -> anyhow::Result<()> {
    // The API server estimates each rule's worst-case cost from the schema's
    // bounds and refuses a CRD over budget; a dry-run apply asks it.
    let client = client().await?;
    let text = std::fs::read_to_string(playpen_tests::CRD_PATH)?;
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_yaml::from_str(&text)?;
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client);
    let params = PatchParams { dry_run: true, ..PatchParams::apply("playpen-tests").force() };
    let name = crd.metadata.name.clone().unwrap_or_default();
    api.patch(&name, &params, &Patch::Apply(&crd)).await?;
    Ok(())
}
