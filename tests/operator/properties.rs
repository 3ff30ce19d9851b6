//! Property, with the real API server as the oracle: every generated
//! BrowserSession spec (any Unicode, lengths at and past the bounds, each
//! optional field present or absent) is either refused at admission with a
//! field path, or accepted, and then its children build without panic, its
//! status computes, and the API server accepts every child (server-side
//! dry-run apply). Cases: `PROPTEST_CASES` (default 64); seed:
//! `PROPTEST_RNG_SEED` (fixed by tests/run.sh).

use std::fmt::Debug;

use anyhow::Context as _;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use playpen_api::naming::MANAGER;
use playpen_api::BrowserSession;
use playpen_operator::apply::Child;
use playpen_operator::children::{self, Identity};
use playpen_operator::recovery::Recovery;
use playpen_operator::status::{self, Observed};
use playpen_tests::fixtures::session_json;
use playpen_tests::{client, ensure_crd, settings, TestNamespace};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};

/// Text around a bound: short names, any Unicode, and runs of one- or
/// two-byte characters at and just past `limit`.
fn text(limit: usize) -> BoxedStrategy<String> {
    prop_oneof![
        16 => "[a-z]([a-z0-9-]{0,14}[a-z0-9])?",
        1 => any::<String>(),
        1 => (prop::sample::select(vec!["a", "é", " "]), limit - 1..=limit + 1).prop_map(|(c, n)| c.repeat(n)),
    ]
    .boxed()
}

/// Mostly a usable number, sometimes any.
fn number(usable: std::ops::Range<i64>) -> impl Strategy<Value = i64> {
    prop_oneof![4 => usable, 1 => any::<i64>()]
}

fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["1Gi", "512Mi", "1.5", "100m", "abc", "", "1e3", "-1Gi"]).prop_map(|q| json!(q)),
        (0i64..10_000).prop_map(|n| json!(n)),
        text(64).prop_map(Value::String),
    ]
}

fn list(item: impl Strategy<Value = Value>, max: usize) -> impl Strategy<Value = Value> {
    prop::collection::vec(item, 0..max).prop_map(Value::Array)
}

/// Inserts each present field.
fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
    Value::Object(fields.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))).collect::<Map<_, _>>())
}

fn launch_config() -> impl Strategy<Value = Value> {
    let secret = (text(253), prop::option::of(text(317))).prop_map(
        |(name, key)| json!({"secretRef": object(vec![("name", Some(json!(name))), ("key", key.map(Value::String))])}),
    );
    let fields = (
        prop::option::of(any::<bool>()),
        prop::option::of(text(4096)),
        prop::option::of(list(text(64).prop_map(Value::String), 4)),
    )
        .prop_map(|(headless, exe, args)| {
            object(vec![
                ("headless", headless.map(Value::Bool)),
                ("executablePath", exe.map(Value::String)),
                ("args", args),
            ])
        });
    prop_oneof![secret, fields]
}

fn snapshots() -> impl Strategy<Value = Value> {
    let volume = prop_oneof![
        Just(json!({})),
        quantity().prop_map(|q| json!({"emptyDir": {"sizeLimit": q}})),
        text(253).prop_map(|c| json!({"persistentVolumeClaim": {"claimName": c}})),
        (quantity(), prop::option::of(text(253))).prop_map(|(size, class)| {
            json!({"persistentVolumeClaim": object(vec![("size", Some(size)), ("storageClassName", class.map(Value::String))])})
        }),
    ];
    (volume, number(1..100_000), number(1..1000)).prop_map(
        |(volume, age, count)| json!({"volume": volume, "retention": {"maxAgeSeconds": age, "maxCount": count}}),
    )
}

fn pod_settings() -> impl Strategy<Value = Value> {
    let selector = prop::collection::btree_map("[a-z]{1,8}", text(63), 0..3)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k, json!(v))).collect()));
    let toleration = (text(317), prop::sample::select(vec!["Exists", "Equal"]))
        .prop_map(|(key, op)| json!({"key": key, "operator": op, "effect": "NoSchedule"}));
    (prop::option::of(quantity()), prop::option::of(selector), prop::option::of(list(toleration, 3)), any::<bool>())
        .prop_map(|(shm, selector, tolerations, account)| {
            object(vec![
                ("shmSize", shm),
                ("nodeSelector", selector),
                ("tolerations", tolerations),
                // Only an account that exists: a missing one is the Pod's
                // admission refusing it, which the operator reports.
                ("serviceAccountName", account.then(|| json!("default"))),
                ("resources", Some(json!({"limits": {"memory": "1Gi"}}))),
            ])
        })
}

fn agent() -> impl Strategy<Value = Value> {
    let env = (text(64), text(256)).prop_map(|(name, value)| json!({"name": name, "value": value}));
    (text(4096), prop::option::of(list(text(32).prop_map(Value::String), 3)), prop::option::of(list(env, 3))).prop_map(
        |(image, command, env)| object(vec![("image", Some(json!(image))), ("command", command), ("env", env)]),
    )
}

/// A host rule: mostly one admission takes, sometimes one it refuses
/// (an IP literal, upper case, a wildcard inside, a bad port, any text).
fn host_rule() -> BoxedStrategy<String> {
    let label = "[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?";
    prop_oneof![
        8 => (prop::option::of(Just("*.")), prop::collection::vec(label, 0..3), "[a-z][a-z0-9]{0,5}", prop::option::of(0u32..70_000))
            .prop_map(|(wild, labels, last, port)| {
                let mut name = labels;
                name.push(last);
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                format!("{}{}{port}", wild.unwrap_or_default(), name.join("."))
            }),
        1 => prop::sample::select(vec!["10.0.0.1", "Example.com", "a.*.b.test", "[::1]", "a.test:080", "a..test", "a.test."])
            .prop_map(str::to_owned),
        1 => "[-a-zA-Z0-9.*:\\[\\]_]{0,12}",
        1 => text(253),
    ]
    .boxed()
}

fn network() -> impl Strategy<Value = Value> {
    let hosts = || prop::option::of(list(host_rule().prop_map(Value::String), 3));
    (prop::sample::select(vec!["Internet", "AllowListOnly", "DenyAll"]), hosts(), hosts()).prop_map(|(mode, allow, deny)| {
        json!({"egress": object(vec![("mode", Some(json!(mode))), ("allowHosts", allow), ("denyHosts", deny)])})
    })
}

fn spec() -> impl Strategy<Value = Value> {
    let browser = (
        text(4096),
        prop::option::of(prop::sample::select(vec!["Always", "IfNotPresent", "Never"])),
        prop::option::of(text(45)),
        prop::sample::select(vec!["Enforced", "Disabled"]),
        prop::option::of(launch_config()),
        prop::option::of((any::<bool>(), number(1024..65_536))),
        prop::option::of(snapshots()),
    );
    let rest = (
        prop::option::of(text(253)),
        prop::option::of(text(253)),
        prop::option::of(number(1..86_400)),
        prop::option::of(number(1..86_400)),
        prop::option::of(pod_settings()),
        prop::option::of(agent()),
        prop::option::of(list(text(253).prop_map(|n| json!({"name": n})), 3)),
        prop::option::of(network()),
    );
    (browser, rest).prop_map(
        |(
            (image, pull, session, sandbox, launch, viewer, snaps),
            (auth, profile, idle, life, pod, agent, pulls, network),
        )| {
            object(vec![
                ("image", Some(json!(image))),
                ("imagePullPolicy", pull.map(|p| json!(p))),
                ("sessionName", session.map(Value::String)),
                ("sandbox", Some(json!(sandbox))),
                ("launchConfig", launch),
                ("viewer", viewer.map(|(enabled, port)| json!({"enabled": enabled, "port": port}))),
                ("snapshots", snaps),
                ("authState", auth.map(|n| json!({"secretRef": {"name": n}}))),
                ("profile", profile.map(|c| json!({"claimName": c}))),
                ("idleTimeoutSeconds", idle.map(|s| json!(s))),
                ("maxLifetimeSeconds", life.map(|s| json!(s))),
                ("pod", pod),
                ("agent", agent),
                ("imagePullSecrets", pulls),
                ("network", network),
            ])
        },
    )
}

/// Server-side dry-run apply of one child, as the operator applies it.
async fn dry_apply<K: Child + Debug>(client: &kube::Client, ns: &str, obj: Option<&K>) -> anyhow::Result<()> {
    let Some(obj) = obj else { return Ok(()) };
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let params = PatchParams::apply(MANAGER).force().dry_run();
    api.patch(&obj.name_any(), &params, &Patch::Apply(obj))
        .await
        .with_context(|| format!("the API server refused the {} the operator built", K::KIND))?;
    Ok(())
}

#[tokio::test]
async fn every_admitted_spec_builds_children_the_api_server_accepts() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "prop").await?;
    let n = ns.name.as_str();
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), n);
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64);
    // Config::default() reads PROPTEST_RNG_SEED.
    let mut runner = TestRunner::new(Config { cases, ..Config::default() });
    let strategy = spec();
    let (mut admitted, mut refused) = (0, 0);
    let mut findings = Vec::new();
    for case in 0..cases {
        let spec = strategy.new_tree(&mut runner).map_err(|e| anyhow::anyhow!("{e}"))?.current();
        let body = session_json(&format!("p{case}"), spec);
        // What the API server would store, or a refusal.
        let parsed = serde_json::from_value::<BrowserSession>(body.clone());
        let Ok(bs) = parsed else {
            // Types the operator cannot even hold (e.g. a number where a
            // string goes) must be refused by the schema too.
            let raw: Api<kube::api::DynamicObject> =
                Api::namespaced_with(client.clone(), n, &kube::api::ApiResource::erase::<BrowserSession>(&()));
            let object: kube::api::DynamicObject = serde_json::from_value(body.clone())?;
            match raw.create(&PostParams { dry_run: true, ..PostParams::default() }, &object).await {
                Err(kube::Error::Api(s)) if s.code == 422 => refused += 1,
                Ok(_) => findings.push(format!(
                    "case {case}: the API server stores a spec the operator cannot read ({:?}): {body}",
                    parsed.err()
                )),
                Err(other) => findings.push(format!("case {case}: admission failed without a field: {other}: {body}")),
            }
            continue;
        };
        match api.create(&PostParams { dry_run: true, ..PostParams::default() }, &bs).await {
            Err(kube::Error::Api(s))
                if s.code == 422 && (s.message.contains("spec") || s.message.contains("metadata")) =>
            {
                refused += 1;
            }
            Err(other) => findings.push(format!("case {case}: admission failed without a field: {other}: {body}")),
            Ok(stored) => {
                admitted += 1;
                let id = Identity::of(&stored)?;
                let children = match children::build(&stored, &id, &settings()) {
                    Ok(c) => c,
                    Err(e) => {
                        findings.push(format!("case {case}: admitted but not buildable: {e}: {body}"));
                        continue;
                    }
                };
                let observed =
                    Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
                let computed = status::compute(&stored, &id, observed, &settings().egress, Timestamp::now());
                let status_ok = computed.conditions.len() == 8;
                let applied = async {
                    dry_apply(&client, n, children.launch_secret.as_ref()).await?;
                    dry_apply(&client, n, Some(&children.runtime_config)).await?;
                    dry_apply(&client, n, children.snapshot_claim.as_ref()).await?;
                    dry_apply(&client, n, Some(&children.network_policy)).await?;
                    dry_apply(&client, n, children.viewer_service.as_ref()).await?;
                    dry_apply(&client, n, Some(&children.pod)).await
                };
                if let Err(e) = applied.await {
                    findings.push(format!("case {case}: {e:#}: {body}"));
                }
                // What admission let through, the runtime can enforce.
                let runtime: Result<playpen_api::runtime_config::RuntimeConfig, _> =
                    serde_json::from_str(&children.runtime_config.data.clone().unwrap_or_default()["runtime.json"]);
                match runtime.map(|r| r.egress_hosts.map(|h| h.parse())) {
                    Ok(None | Some(Ok(_))) => {}
                    Ok(Some(Err(e))) => {
                        findings.push(format!("case {case}: admitted host rules the runtime refuses: {e}: {body}"))
                    }
                    Err(e) => findings.push(format!("case {case}: runtime.json unreadable: {e}: {body}")),
                }
                if !status_ok {
                    findings.push(format!("case {case}: status without its seven conditions: {body}"));
                }
            }
        }
    }
    eprintln!("admission property: {cases} cases, {admitted} admitted, {refused} refused, {} findings", findings.len());
    assert!(findings.is_empty(), "{} finding(s):\n{}", findings.len(), findings.join("\n"));
    assert!(admitted > 0 && refused > 0, "the generator must reach both sides: {admitted} admitted, {refused} refused");
    Ok(())
}

#[tokio::test]
async fn host_rules_are_admitted_exactly_when_the_runtime_parses_them() -> anyhow::Result<()> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, "hosts").await?;
    let api: Api<BrowserSession> = Api::namespaced(client.clone(), &ns.name);
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64) * 2;
    let mut runner = TestRunner::new(Config { cases, ..Config::default() });
    let strategy = host_rule();
    let mut disagreements = Vec::new();
    let (mut admitted, mut refused) = (0, 0);
    for case in 0..cases {
        let host = strategy.new_tree(&mut runner).map_err(|e| anyhow::anyhow!("{e}"))?.current();
        let body =
            session_json(&format!("h{case}"), json!({"image": "i", "network": {"egress": {"denyHosts": [host]}}}));
        let bs: BrowserSession = serde_json::from_value(body)?;
        let by_server = match api.create(&PostParams { dry_run: true, ..PostParams::default() }, &bs).await {
            Ok(_) => true,
            Err(kube::Error::Api(s)) if s.code == 422 => false,
            Err(other) => anyhow::bail!("case {case}: {other}"),
        };
        let by_runtime = host.parse::<playpen_api::egress_hosts::HostRule>().is_ok();
        if by_server {
            admitted += 1
        } else {
            refused += 1
        }
        if by_server != by_runtime {
            disagreements.push(format!("{host:?}: API server {by_server}, runtime {by_runtime}"));
        }
    }
    eprintln!("host rules: {cases} cases, {admitted} admitted, {refused} refused");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert!(admitted > 0 && refused > 0, "{admitted} admitted, {refused} refused");
    Ok(())
}
