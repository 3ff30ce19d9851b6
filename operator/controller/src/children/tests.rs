//! Exhaustive tests of the pure builders.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use playpen_api::BrowserSession;
use serde_json::json;

use super::*;
use crate::fixtures::SessionBuilder;

const UID: &str = "6f1c2a7e-0000-4000-8000-00000000abcd";

fn session(spec: serde_json::Value) -> BrowserSession {
    SessionBuilder::new(spec).namespace("team-a").uid(UID).build()
}

fn minimal() -> BrowserSession {
    session(json!({ "image": "playpen/browser:1" }))
}

fn build(bs: &BrowserSession) -> Children {
    let id = Identity::of(bs).expect("identity");
    super::build(bs, &id, &Settings::default()).expect("children")
}

fn browser(pod: &Pod) -> &Container {
    &pod.spec.as_ref().expect("spec").containers[0]
}

fn env_of(c: &Container) -> BTreeMap<String, String> {
    c.env.iter().flatten().filter_map(|e| Some((e.name.clone(), e.value.clone()?))).collect()
}

#[test]
fn identity_is_derived_from_name_and_uid() {
    let bs = minimal();
    let id = Identity::of(&bs).expect("identity");
    assert_eq!(id.session_name, "demo");
    assert_eq!(id.socket_namespace, playpen_api::naming::socket_namespace(UID));
    assert_eq!(id.owner.uid, UID);
    assert_eq!(id.owner.controller, Some(true));
    assert_eq!(id.owner.kind, "BrowserSession");
    assert_eq!(id.owner.api_version, "playpen.dev/v1alpha1");
}

#[test]
fn identity_refuses_objects_without_uid() {
    let mut bs = minimal();
    bs.metadata.uid = None;
    assert!(matches!(Identity::of(&bs), Err(crate::error::Error::MissingMetadata("uid"))));
}

#[test]
fn every_child_is_owned_labelled_and_namespaced() {
    let c = build(&minimal());
    let metas = [
        &c.launch_secret.as_ref().expect("secret").metadata,
        &c.runtime_config.metadata,
        &c.pod.metadata,
        &c.viewer_service.as_ref().expect("service").metadata,
        &c.network_policy.metadata,
    ];
    for m in metas {
        assert_eq!(m.namespace.as_deref(), Some("team-a"));
        let owners = m.owner_references.as_ref().expect("owner");
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].uid, UID);
        let labels = m.labels.as_ref().expect("labels");
        assert_eq!(labels["app.kubernetes.io/instance"], "demo");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "playpen-operator");
        assert_eq!(labels["playpen.dev/session"], "demo");
        // The controller's watch selector matches every child.
        let (key, value) = managed_selector().split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).expect("k=v");
        assert_eq!(labels[&key], value);
    }
    assert_eq!(c.pod.metadata.name.as_deref(), Some("demo-browser"));
    assert_eq!(c.viewer_service.expect("svc").metadata.name.as_deref(), Some("demo-view"));
}

#[test]
fn pod_env_reaches_the_session_from_any_shell() {
    let bs = minimal();
    let c = build(&bs);
    let env = env_of(browser(&c.pod));
    let ns = playpen_api::naming::socket_namespace(UID);
    assert_eq!(env["PLAYWRIGHT_CLI_SESSION"], "demo");
    assert_eq!(env["PWTEST_SOCKETS_DIR"], format!("/var/lib/playpen/pw/{ns}/s"));
    assert_eq!(env["PWTEST_DAEMON_SESSION_DIR"], format!("/var/lib/playpen/pw/{ns}/d"));
    assert_eq!(env["PLAYWRIGHT_MCP_CONFIG"], "/etc/playpen/launch/config.json");
    assert_eq!(env["PLAYWRIGHT_MCP_OUTPUT_DIR"], "/var/lib/playpen/snapshots");
    assert_eq!(env["NO_UPDATE_NOTIFIER"], "1");
    assert_eq!(env["PLAYPEN_RUNTIME_CONFIG"], "/etc/playpen/runtime/runtime.json");
}

#[test]
fn pod_runs_the_runtime_as_pid1_restricted() {
    let c = build(&minimal());
    let spec = c.pod.spec.as_ref().expect("spec");
    let b = browser(&c.pod);
    assert_eq!(b.command.as_deref(), Some(&["/usr/local/bin/playpen-session".to_owned()][..]));
    assert_eq!(b.args.as_deref(), Some(&["run".to_owned()][..]));
    let sc = b.security_context.as_ref().expect("sc");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(sc.capabilities.as_ref().and_then(|c| c.drop.clone()), Some(vec!["ALL".into()]));
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(spec.enable_service_links, Some(false));
    assert_eq!(spec.restart_policy.as_deref(), Some("OnFailure"));
    let (startup, probe) =
        (b.startup_probe.as_ref().expect("start-up probe"), b.readiness_probe.as_ref().expect("probe"));
    for p in [startup, probe] {
        assert!(p.exec.is_none(), "no process started per probe");
        let http = p.http_get.as_ref().expect("HTTP probe");
        assert_eq!((http.path.as_deref(), &http.port), (Some("/readyz"), &IntOrString::Int(9321)));
        assert!(http.host.is_none(), "the kubelet asks the Pod's own address");
    }
    assert!(probe.period_seconds > startup.period_seconds, "seldom once up");
    assert_eq!(probe.failure_threshold, Some(1), "an in-place restart flips readiness");
    let patience = startup.period_seconds.unwrap_or(10) * startup.failure_threshold.unwrap_or(3);
    assert!(patience >= 3600, "a slow start is never restarted by the kubelet ({patience} s)");
    let ports: Vec<_> = b.ports.iter().flatten().map(|p| (p.name.as_deref(), p.container_port)).collect();
    assert!(ports.contains(&(Some("readiness"), 9321)), "{ports:?}");
    let pod_ip = b.env.iter().flatten().find(|e| e.name == "PLAYPEN_POD_IP").expect("the Pod's address");
    let field = pod_ip.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).expect("downward API");
    assert_eq!(field.field_path, "status.podIP");
    assert_eq!(b.termination_message_policy.as_deref(), Some("FallbackToLogsOnError"));
    let psc = spec.security_context.as_ref().expect("psc");
    let seccomp = psc.seccomp_profile.as_ref().expect("seccomp");
    assert_eq!(seccomp.type_, "Localhost");
    assert_eq!(seccomp.localhost_profile.as_deref(), Some("playpen/chromium.json"));
}

#[test]
fn disabled_sandbox_gets_runtime_default_seccomp_and_config_says_so() {
    let bs = session(json!({ "image": "i", "sandbox": "Disabled" }));
    let c = build(&bs);
    let psc = c.pod.spec.as_ref().and_then(|s| s.security_context.clone()).expect("psc");
    assert_eq!(psc.seccomp_profile.expect("seccomp").type_, "RuntimeDefault");
    let cfg = launch_config_json(&bs.spec);
    assert_eq!(cfg["browser"]["launchOptions"]["chromiumSandbox"], json!(false));
}

#[test]
fn seccomp_choice_parses_and_rejects() {
    assert_eq!(SeccompChoice::parse("localhost/x/y.json"), Ok(SeccompChoice::Localhost("x/y.json".into())));
    assert_eq!(SeccompChoice::parse("unconfined"), Ok(SeccompChoice::Unconfined));
    assert_eq!(SeccompChoice::parse("runtime-default"), Ok(SeccompChoice::RuntimeDefault));
    for bad in ["localhost/", "Localhost", ""] {
        let err = SeccompChoice::parse(bad).expect_err(bad);
        assert!(err.contains("localhost/<path>"), "{err}");
    }
}

#[test]
fn launch_config_is_nested_and_sandboxed_by_default() {
    let bs = minimal();
    let cfg = launch_config_json(&bs.spec);
    assert_eq!(
        cfg,
        json!({"browser": {"browserName": "chromium",
            "launchOptions": {"chromiumSandbox": true, "headless": true}}})
    );
    assert!(cfg.get("browserName").is_none(), "flat browserName is ignored by the CLI");
    let secret = build(&bs).launch_secret.expect("secret");
    let bytes = &secret.data.expect("data")["config.json"].0;
    assert_eq!(serde_json::from_slice::<serde_json::Value>(bytes).expect("json"), cfg);
}

#[test]
fn launch_config_carries_generated_options() {
    let bs = session(json!({
        "image": "i",
        "launchConfig": {"headless": false, "executablePath": "/usr/bin/chromium", "args": ["--disable-quic"]},
        "profile": {"claimName": "p"}
    }));
    let cfg = launch_config_json(&bs.spec);
    let opts = &cfg["browser"]["launchOptions"];
    assert_eq!(opts["headless"], json!(false));
    assert_eq!(opts["executablePath"], json!("/usr/bin/chromium"));
    assert_eq!(opts["args"], json!(["--disable-quic"]));
    assert_eq!(cfg["browser"]["userDataDir"], json!("/var/lib/playpen/profile"));
}

#[test]
fn user_secret_is_mounted_and_nothing_is_generated() {
    let bs = session(json!({
        "image": "i",
        "launchConfig": {"secretRef": {"name": "mine", "key": "pw.json"}}
    }));
    let c = build(&bs);
    assert!(c.launch_secret.is_none());
    let vols = c.pod.spec.as_ref().and_then(|s| s.volumes.clone()).expect("vols");
    let launch = vols.iter().find(|v| v.name == "launch-config").expect("launch vol");
    // Projected: the launch Secret first, then the optional control token.
    let sources = launch.projected.as_ref().and_then(|p| p.sources.clone()).unwrap_or_default();
    let secrets: Vec<_> =
        sources.iter().filter_map(|s| s.secret.as_ref()).map(|s| (s.name.as_str(), s.optional)).collect();
    assert_eq!(secrets[0], ("mine", Some(false)));
    assert!(secrets[1].0.ends_with("-control") && secrets[1].1 == Some(true), "{secrets:?}");
    assert_eq!(env_of(browser(&c.pod))["PLAYWRIGHT_MCP_CONFIG"], "/etc/playpen/launch/pw.json");
}

#[test]
fn shm_and_snapshot_volumes_have_limits() {
    let c = build(&minimal());
    let vols = c.pod.spec.as_ref().and_then(|s| s.volumes.clone()).expect("vols");
    let shm = vols.iter().find(|v| v.name == "dshm").and_then(|v| v.empty_dir.clone()).expect("shm");
    assert_eq!(shm.medium.as_deref(), Some("Memory"));
    assert_eq!(shm.size_limit.expect("size").0, "1Gi");
    let snaps = vols.iter().find(|v| v.name == "snapshots").and_then(|v| v.empty_dir.clone());
    assert_eq!(snaps.and_then(|e| e.size_limit).expect("limit").0, "1Gi");
    let mounts = browser(&c.pod).volume_mounts.clone().expect("mounts");
    let at = |p: &str| mounts.iter().find(|m| m.mount_path == p).map(|m| (m.name.clone(), m.read_only));
    assert_eq!(at("/dev/shm"), Some(("dshm".into(), None)));
    assert_eq!(at("/var/lib/playpen/snapshots"), Some(("snapshots".into(), None)));
    assert_eq!(at("/etc/playpen/launch"), Some(("launch-config".into(), Some(true))));
}

#[test]
fn snapshot_claims_existing_or_created() {
    let existing = session(json!({"image": "i",
        "snapshots": {"volume": {"persistentVolumeClaim": {"claimName": "keep"}}}}));
    let c = build(&existing);
    assert!(c.snapshot_claim.is_none());
    let vols = c.pod.spec.and_then(|s| s.volumes).expect("vols");
    let v = vols.iter().find(|v| v.name == "snapshots").expect("snap");
    assert_eq!(v.persistent_volume_claim.as_ref().map(|p| p.claim_name.as_str()), Some("keep"));

    let created = session(json!({"image": "i",
        "snapshots": {"volume": {"persistentVolumeClaim": {"size": "5Gi", "storageClassName": "fast"}}}}));
    let c = build(&created);
    let pvc = c.snapshot_claim.expect("pvc");
    assert_eq!(pvc.metadata.name.as_deref(), Some("demo-snapshots"));
    let spec = pvc.spec.expect("spec");
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(spec.resources.and_then(|r| r.requests).expect("req")["storage"].0, "5Gi");
    let vols = c.pod.spec.and_then(|s| s.volumes).expect("vols");
    let v = vols.iter().find(|v| v.name == "snapshots").expect("snap");
    assert_eq!(v.persistent_volume_claim.as_ref().map(|p| p.claim_name.as_str()), Some("demo-snapshots"));
}

#[test]
fn viewer_service_pins_port_and_disabled_viewer_has_none() {
    let bs = session(json!({"image": "i", "viewer": {"port": 9400}}));
    let svc = build(&bs).viewer_service.expect("svc");
    let spec = svc.spec.expect("spec");
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "headless: no virtual IP for a port-forward target");
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(port.port, 9400);
    assert_eq!(port.target_port, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(9400)));
    assert_eq!(spec.selector.expect("sel")["playpen.dev/session"], "demo");

    let off = session(json!({"image": "i", "viewer": {"enabled": false}}));
    let c = build(&off);
    assert!(c.viewer_service.is_none());
    let names: Vec<_> = browser(&c.pod).ports.iter().flatten().filter_map(|p| p.name.clone()).collect();
    assert_eq!(names, ["readiness"], "only the kubelet's");
    assert_eq!(runtime_config(&off, &Identity::of(&off).expect("id"), &EgressDefaults::default()).viewer_port, None);
}

#[test]
fn cdp_is_off_by_default_and_when_on_is_pinned_on_container_service_and_runtime() {
    let plain = build(&minimal());
    let names: Vec<_> = browser(&plain.pod).ports.iter().flatten().filter_map(|p| p.name.clone()).collect();
    assert_eq!(names, ["viewer", "readiness"], "no CDP port unless asked for");
    assert_eq!(
        runtime_config(&minimal(), &Identity::of(&minimal()).expect("id"), &EgressDefaults::default()).cdp_port,
        None
    );

    let bs = session(json!({"image": "i", "cdp": {"enabled": true, "port": 9333}}));
    let c = build(&bs);
    let ports: Vec<_> = browser(&c.pod)
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
        .collect();
    assert_eq!(ports, [("viewer".to_owned(), 9323), ("cdp".to_owned(), 9333), ("readiness".to_owned(), 9321)]);
    let service_ports: Vec<_> = c
        .viewer_service
        .and_then(|s| s.spec)
        .and_then(|s| s.ports)
        .expect("ports")
        .into_iter()
        .map(|p| (p.name.unwrap_or_default(), p.port))
        .collect();
    assert_eq!(service_ports, ports[..2], "port-forward svc/<name>-view reaches both, and not the readiness port");
    assert_eq!(runtime_config(&bs, &Identity::of(&bs).expect("id"), &EgressDefaults::default()).cdp_port, Some(9333));
    let rc = runtime_config(&bs, &Identity::of(&bs).expect("id"), &EgressDefaults::default());
    assert!(!rc.record_video && !rc.record_trace, "nothing is recorded unless asked for");
    let recorded = session(json!({"image": "i", "recording": {"video": true, "trace": true}}));
    let rc = runtime_config(&recorded, &Identity::of(&recorded).expect("id"), &EgressDefaults::default());
    assert!(rc.record_video && rc.record_trace);

    // CDP alone still gets the Service, with only its port.
    let alone = session(json!({"image": "i", "viewer": {"enabled": false}, "cdp": {"enabled": true}}));
    let svc = build(&alone).viewer_service.expect("a Service for the CDP port");
    let only: Vec<_> = svc.spec.and_then(|s| s.ports).expect("ports").into_iter().map(|p| p.port).collect();
    assert_eq!(only, [9222]);
}

#[test]
fn network_policy_denies_all_ingress_to_the_pod_and_limits_egress() {
    let np = build(&minimal()).network_policy;
    let spec = np.spec.expect("spec");
    assert_eq!(spec.policy_types, Some(vec!["Ingress".into(), "Egress".into()]));
    assert_eq!(spec.ingress, None, "no rule: deny all");
    assert_eq!(spec.egress.map(|e| e.len()), Some(3), "DNS, IPv4 internet, IPv6 internet");
    let sel = spec.pod_selector.and_then(|s| s.match_labels).expect("sel");
    assert_eq!(sel, pod_selector("demo"));
}

#[test]
fn runtime_config_carries_policy_and_paths() {
    let bs = session(json!({"image": "i", "idleTimeoutSeconds": 600, "maxLifetimeSeconds": 7200,
        "snapshots": {"retention": {"maxAgeSeconds": 60, "maxCount": 7}},
        "authState": {"secretRef": {"name": "login"}}}));
    let id = Identity::of(&bs).expect("id");
    let rc = runtime_config(&bs, &id, &EgressDefaults::default());
    assert_eq!(rc.session_name, "demo");
    assert_eq!(rc.viewer_port, Some(9323));
    assert_eq!(rc.snapshot_max_age_seconds, 60);
    assert_eq!(rc.snapshot_max_count, 7);
    assert_eq!(rc.idle_timeout_seconds, Some(600));
    assert_eq!(rc.max_lifetime_seconds, Some(7200));
    assert_eq!(rc.auth_state_file.as_deref(), Some("/etc/playpen/auth/state.json"));
    assert!(rc.sockets_dir.ends_with(&format!("{}/s", id.socket_namespace)));
    let cm = build(&bs).runtime_config;
    let text = &cm.data.expect("data")["runtime.json"];
    let parsed: playpen_api::runtime_config::RuntimeConfig = serde_json::from_str(text).expect("parse");
    assert_eq!(parsed, rc);
}

#[test]
fn host_rules_reach_runtime_json_with_the_charts_and_the_floor() {
    let bs = session(json!({"image": "i", "network": {"egress": {"mode": "AllowListOnly",
        "allowHosts": ["*.example.com"], "denyHosts": ["ads.example.com"]}}}));
    let settings = Settings {
        egress: EgressDefaults {
            deny_hosts: vec!["tracker.test".into()],
            cluster_cidrs: vec!["10.96.0.0/12".parse().expect("cidr")],
            ..EgressDefaults::default()
        },
        ..Settings::default()
    };
    let built = super::build(&bs, &Identity::of(&bs).expect("id"), &settings).expect("build");
    let text = &built.runtime_config.data.expect("data")["runtime.json"];
    let parsed: playpen_api::runtime_config::RuntimeConfig = serde_json::from_str(text).expect("parse");
    let hosts = parsed.egress_hosts.expect("egressHosts");
    assert_eq!(hosts.allow_hosts, ["*.example.com"]);
    assert_eq!(hosts.deny_hosts, ["ads.example.com", "tracker.test"]);
    assert!(hosts.denied_cidrs.contains(&"169.254.0.0/16".to_owned()));
    assert!(!hosts.denied_cidrs.contains(&"10.96.0.0/12".to_owned()), "inside 10.0.0.0/8, so left out as covered");
    let plain = session(json!({"image": "i"}));
    let built = super::build(&plain, &Identity::of(&plain).expect("id"), &Settings::default()).expect("build");
    assert!(
        !built.runtime_config.data.expect("data")["runtime.json"].contains("egressHosts"),
        "no host rules, no proxy"
    );
}

#[test]
fn runtime_config_states_the_snapshot_volume_size_and_when_the_session_started() {
    let sized = |snapshots: serde_json::Value| {
        let mut bs = session(json!({"image": "i", "snapshots": snapshots}));
        bs.metadata.creation_timestamp = Some(Time("2026-12-01T08:00:00Z".parse().expect("ts")));
        runtime_config(&bs, &Identity::of(&bs).expect("id"), &EgressDefaults::default())
    };
    let default = sized(json!({}));
    assert_eq!(default.snapshot_volume_bytes, Some(1 << 30), "the default emptyDir limit, 1Gi");
    assert_eq!(default.snapshot_max_total_bytes, None);
    assert_eq!(default.session_started_at.as_deref(), Some("2026-12-01T08:00:00Z"));
    // Time spent suspended does not count toward maxLifetimeSeconds: the start moves later.
    let mut parked = session(json!({"image": "i"}));
    parked.metadata.creation_timestamp = Some(Time("2026-12-01T08:00:00Z".parse().expect("ts")));
    let suspend = playpen_api::v1alpha1::SuspendStatus { suspended_seconds: Some(5400), ..Default::default() };
    parked.status = Some(playpen_api::v1alpha1::BrowserSessionStatus { suspend: Some(suspend), ..Default::default() });
    let config = runtime_config(&parked, &Identity::of(&parked).expect("id"), &EgressDefaults::default());
    assert_eq!(config.session_started_at.as_deref(), Some("2026-12-01T09:30:00Z"));
    let empty_dir = sized(json!({"volume": {"emptyDir": {"sizeLimit": "200Mi"}},
        "retention": {"maxTotalSize": "100M"}}));
    assert_eq!(
        (empty_dir.snapshot_volume_bytes, empty_dir.snapshot_max_total_bytes),
        (Some(200 << 20), Some(100_000_000))
    );
    let created = sized(json!({"volume": {"persistentVolumeClaim": {"size": "5Gi"}}}));
    assert_eq!(created.snapshot_volume_bytes, Some(5 << 30));
    let existing = sized(json!({"volume": {"persistentVolumeClaim": {"claimName": "shared"}}}));
    assert_eq!(existing.snapshot_volume_bytes, None, "an existing claim's filesystem is measured by the runtime");
}

#[test]
fn auth_state_is_mounted_read_only_for_the_browser_only() {
    let bs = session(json!({"image": "i", "authState": {"secretRef": {"name": "login", "key": "s.json"}},
        "agent": {"image": "agent:1"}}));
    let c = build(&bs);
    let spec = c.pod.spec.expect("spec");
    let vol = spec.volumes.as_ref().expect("v").iter().find(|v| v.name == "auth-state").cloned().expect("auth");
    let secret = vol.secret.expect("secret");
    assert_eq!(secret.secret_name.as_deref(), Some("login"));
    let item = &secret.items.expect("items")[0];
    assert_eq!((item.key.as_str(), item.path.as_str(), item.mode), ("s.json", "state.json", Some(0o440)));
    let agent = &spec.containers[1];
    assert!(agent.volume_mounts.iter().flatten().all(|m| m.name != "auth-state"));
}

#[test]
fn the_launch_config_is_the_browsers_alone() {
    let bs = session(json!({"image": "i", "agent": {"image": "agent:1"},
        "launchConfig": {"secretRef": {"name": "with-proxy-password"}}}));
    let spec = build(&bs).pod.spec.expect("spec");
    let (browser, agent) = (&spec.containers[0], &spec.containers[1]);
    let names = |c: &Container| c.volume_mounts.iter().flatten().map(|m| m.name.clone()).collect::<Vec<_>>();
    assert!(names(browser).contains(&"launch-config".to_owned()));
    assert!(!names(agent).contains(&"launch-config".to_owned()), "{:?}", names(agent));
    assert!(env_of(browser).contains_key("PLAYWRIGHT_MCP_CONFIG"));
    assert!(!env_of(agent).contains_key("PLAYWRIGHT_MCP_CONFIG"), "the variable would name a file the agent lacks");
    assert_eq!(env_of(agent)["PWTEST_SOCKETS_DIR"], env_of(browser)["PWTEST_SOCKETS_DIR"]);
}

#[test]
fn agent_sidecar_shares_sockets_and_env_with_session_env_winning() {
    let bs = session(json!({"image": "i", "agent": {"image": "agent:1", "command": ["sleep", "infinity"],
        "env": [{"name": "PLAYWRIGHT_CLI_SESSION", "value": "hijack"}, {"name": "TASK", "value": "x"}]}}));
    let c = build(&bs);
    let spec = c.pod.spec.expect("spec");
    assert_eq!(spec.containers.len(), 2);
    let agent = &spec.containers[1];
    assert_eq!(agent.name, "agent");
    let env = env_of(agent);
    assert_eq!(env["PLAYWRIGHT_CLI_SESSION"], "demo");
    assert_eq!(env["TASK"], "x");
    assert_eq!(env["PWTEST_SOCKETS_DIR"], env_of(&spec.containers[0])["PWTEST_SOCKETS_DIR"]);
    let mounts: Vec<_> = agent.volume_mounts.iter().flatten().map(|m| m.mount_path.as_str()).collect();
    assert!(mounts.contains(&"/var/lib/playpen"));
    assert_eq!(agent.security_context.as_ref().and_then(|s| s.allow_privilege_escalation), Some(false));
}

#[test]
fn scheduling_and_resources_are_passed_through() {
    let bs = session(json!({"image": "i", "imagePullPolicy": "Never",
        "imagePullSecrets": [{"name": "reg"}],
        "pod": {"nodeSelector": {"pool": "browsers"}, "shmSize": "2Gi",
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "resources": {"limits": {"memory": "2Gi"}}, "serviceAccountName": "agent-sa",
            "runtimeClassName": "gvisor"}}));
    let c = build(&bs);
    let spec = c.pod.spec.clone().expect("spec");
    assert_eq!(spec.node_selector.expect("ns")["pool"], "browsers");
    assert_eq!(spec.tolerations.expect("t")[0].key.as_deref(), Some("k"));
    assert_eq!(spec.image_pull_secrets.expect("ps")[0].name, "reg");
    assert_eq!(spec.service_account_name.as_deref(), Some("agent-sa"));
    assert_eq!(spec.automount_service_account_token, Some(true));
    assert_eq!(spec.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(build(&minimal()).pod.spec.expect("spec").runtime_class_name, None, "the cluster default otherwise");
    let gvisor_default = Settings { runtime_class: Some("gvisor-default".into()), ..Settings::default() };
    let id = Identity::of(&minimal()).expect("id");
    let defaulted = super::build(&minimal(), &id, &gvisor_default).expect("children").pod.spec.expect("spec");
    assert_eq!(defaulted.runtime_class_name.as_deref(), Some("gvisor-default"), "the chart's default");
    let id = Identity::of(&bs).expect("id");
    let own = super::build(&bs, &id, &gvisor_default).expect("children").pod.spec.expect("spec");
    assert_eq!(own.runtime_class_name.as_deref(), Some("gvisor"), "the session's own wins");
    // Seccomp follows the RuntimeClass where the settings name one.
    let seccomp_of = |bs: &BrowserSession, settings: &Settings| {
        let id = Identity::of(bs).expect("id");
        let pod = super::build(bs, &id, settings).expect("children").pod;
        pod.spec.and_then(|s| s.security_context).and_then(|s| s.seccomp_profile).expect("seccomp")
    };
    let by_class = Settings {
        seccomp_by_runtime_class: [("gvisor".to_owned(), SeccompChoice::RuntimeDefault)].into(),
        ..Settings::default()
    };
    assert_eq!(seccomp_of(&bs, &by_class).type_, "RuntimeDefault", "the session's own RuntimeClass");
    let mapped_default = Settings { runtime_class: Some("gvisor".into()), ..by_class.clone() };
    assert_eq!(seccomp_of(&minimal(), &mapped_default).type_, "RuntimeDefault", "the chart's default class");
    let unmapped = seccomp_of(&minimal(), &by_class);
    assert_eq!(
        (unmapped.type_.as_str(), unmapped.localhost_profile.as_deref()),
        ("Localhost", Some(super::pod::DEFAULT_SECCOMP_PROFILE)),
        "no class: the operator's choice"
    );
    let other_class = Settings { runtime_class: Some("kata".into()), ..by_class };
    assert_eq!(seccomp_of(&minimal(), &other_class).type_, "Localhost", "a class the map does not name");
    let b = browser(&c.pod);
    assert_eq!(b.image_pull_policy.as_deref(), Some("Never"));
    assert_eq!(b.resources.as_ref().and_then(|r| r.limits.clone()).expect("l")["memory"].0, "2Gi");
    let shm = spec.volumes.expect("v").into_iter().find(|v| v.name == "dshm").and_then(|v| v.empty_dir);
    assert_eq!(shm.and_then(|e| e.size_limit).expect("shm").0, "2Gi");
}

#[test]
fn builders_are_deterministic() {
    let a = serde_json::to_value(build(&minimal()).pod).expect("a");
    let b = serde_json::to_value(build(&minimal()).pod).expect("b");
    assert_eq!(a, b);
}

#[test]
fn the_baseline_policy_isolates_every_browser_pod_of_the_namespace_and_nothing_else() {
    let baseline = baseline_policy("team-a");
    let meta = &baseline.metadata;
    assert_eq!((meta.name.as_deref(), meta.namespace.as_deref()), (Some(BASELINE_POLICY), Some("team-a")));
    // It serves every session: no owner, no session label, but the
    // controller's watch selector, so the cache shows it.
    assert!(meta.owner_references.is_none());
    let labels = meta.labels.as_ref().expect("labels");
    assert!(!labels.contains_key("playpen.dev/session"));
    let (key, value) = managed_selector().split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).expect("k=v");
    assert_eq!(labels[&key], value);
    assert_eq!(labels["app.kubernetes.io/component"], COMPONENT_BASELINE);
    // Both directions isolated, nothing allowed: beside a session's own
    // policy (NetworkPolicies add up) it changes nothing.
    let spec = baseline.spec.as_ref().expect("spec");
    assert_eq!(spec.policy_types.as_deref(), Some(&["Ingress".to_owned(), "Egress".to_owned()][..]));
    assert!(spec.ingress.is_none() && spec.egress.is_none());
    let selects = |pod_labels: &BTreeMap<String, String>| {
        let wanted = spec.pod_selector.as_ref().and_then(|s| s.match_labels.as_ref()).expect("match labels");
        assert!(spec.pod_selector.as_ref().is_some_and(|s| s.match_expressions.is_none()));
        wanted.iter().all(|(k, v)| pod_labels.get(k) == Some(v))
    };
    // Every session's browser Pod, whatever its name…
    for name in ["demo", "other"] {
        let mut bs = minimal();
        bs.metadata.name = Some(name.into());
        let c = build(&bs);
        assert!(selects(c.pod.metadata.labels.as_ref().expect("pod labels")), "{name}'s Pod");
        // …and none of its other children (a policy selects Pods only, but
        // the labels say what is meant).
        assert!(!selects(c.runtime_config.metadata.labels.as_ref().expect("labels")));
    }
    // A Pod of someone else's in the namespace is left alone.
    let foreign = BTreeMap::from([("app.kubernetes.io/component".to_owned(), COMPONENT_BROWSER.to_owned())]);
    assert!(!selects(&foreign), "a Pod the operator did not make");
    // Its name is no session's child: every child name ends with a suffix of its kind.
    let n = playpen_api::naming::ChildNames::for_session("x");
    for child in [n.pod, n.launch_secret, n.runtime_config, n.viewer_service, n.network_policy, n.snapshot_claim] {
        let suffix = child.strip_prefix('x').expect("x-suffix");
        assert!(!BASELINE_POLICY.ends_with(suffix), "{BASELINE_POLICY} could be a session's {suffix}");
    }
}

#[test]
fn host_aliases_reach_the_pod_and_are_absent_otherwise() {
    let bs = session(json!({"image": "i", "pod": {"hostAliases": [
        {"ip": "10.96.3.4", "hostnames": ["a.allowed.test", "c.allowed.test"]},
        {"ip": "2001:db8::1", "hostnames": ["b.other.test"]}]}}));
    let aliases = build(&bs).pod.spec.expect("spec").host_aliases.expect("host aliases");
    let pairs: Vec<(&str, Vec<String>)> =
        aliases.iter().map(|a| (a.ip.as_str(), a.hostnames.clone().unwrap_or_default())).collect();
    assert_eq!(
        pairs,
        [
            ("10.96.3.4", vec!["a.allowed.test".to_owned(), "c.allowed.test".to_owned()]),
            ("2001:db8::1", vec!["b.other.test".to_owned()])
        ]
    );
    assert_eq!(build(&minimal()).pod.spec.expect("spec").host_aliases, None);
    let empty = session(json!({"image": "i", "pod": {"hostAliases": []}}));
    assert_eq!(build(&empty).pod.spec.expect("spec").host_aliases, None, "an empty list is no field");
}

fn exporting(recording: serde_json::Value) -> BrowserSession {
    session(json!({ "image": "playpen/browser:1", "recording": recording }))
}

const EXPORT: &str = r#"{"s3": {"endpoint": "http://store.objects.svc:8333", "bucket": "rec", "pathStyle": true,
    "credentialsSecret": {"name": "s3-keys"}}}"#;

#[test]
fn an_export_adds_the_exporter_sidecar_which_alone_mounts_the_credentials() {
    let export: serde_json::Value = serde_json::from_str(EXPORT).expect("json");
    let c = build(&exporting(json!({"video": true, "export": export})));
    let spec = c.pod.spec.as_ref().expect("spec");
    let init = spec.init_containers.as_deref().expect("init containers");
    assert_eq!(init.len(), 1);
    let exporter = &init[0];
    assert_eq!(exporter.name, EXPORTER_CONTAINER);
    assert_eq!(exporter.restart_policy.as_deref(), Some("Always"), "a native sidecar, stopped after the browser");
    assert_eq!(exporter.image.as_deref(), Some("playpen/browser:1"));
    assert_eq!(exporter.args.as_deref(), Some(&["export".to_owned()][..]));
    let mounts: Vec<(&str, &str)> =
        exporter.volume_mounts.iter().flatten().map(|m| (m.name.as_str(), m.mount_path.as_str())).collect();
    assert!(mounts.contains(&("export-credentials", playpen_api::layout::EXPORT_CREDENTIALS_DIR)), "{mounts:?}");
    assert!(mounts.contains(&("snapshots", playpen_api::layout::SNAPSHOT_DIR)), "{mounts:?}");
    for container in &spec.containers {
        assert!(
            container.volume_mounts.iter().flatten().all(|m| m.name != "export-credentials"),
            "{} must not see the credentials",
            container.name
        );
    }
    let volume = spec.volumes.iter().flatten().find(|v| v.name == "export-credentials").expect("the Secret volume");
    assert_eq!(volume.secret.as_ref().and_then(|s| s.secret_name.as_deref()), Some("s3-keys"));
    let security = exporter.security_context.as_ref().expect("security");
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(spec.termination_grace_period_seconds, Some(90), "room for the final pass");
    // runtime.json names the destination with its defaults, and no secret.
    let config = super::runtime::runtime_config(
        &exporting(json!({"video": true, "export": export})),
        &Identity::of(&exporting(json!({"video": true}))).expect("id"),
        &EgressDefaults::default(),
    );
    let export = config.recording_export.expect("the destination");
    assert_eq!((export.region.as_str(), export.prefix.as_str()), ("us-east-1", "{namespace}/{name}/{uid}"));
    assert_eq!((export.namespace.as_str(), export.uid.as_str()), ("team-a", UID));
    assert!(export.path_style);
    assert_eq!(config.video_segment_seconds, Some(60), "segments by default with an export");
}

#[test]
fn video_segments_follow_the_spec_and_need_a_video() {
    let id = Identity::of(&minimal()).expect("id");
    let config = |recording: serde_json::Value| {
        super::runtime::runtime_config(&exporting(recording), &id, &EgressDefaults::default()).video_segment_seconds
    };
    assert_eq!(config(json!({"video": true, "segmentSeconds": 15})), Some(15));
    assert_eq!(config(json!({"video": true})), None, "one video per browser start without an export");
    assert_eq!(config(json!({"trace": true, "segmentSeconds": 15})), None, "no video, nothing to rotate");
}

#[test]
fn no_export_without_a_store_or_without_anything_recorded() {
    let export: serde_json::Value = serde_json::from_str(EXPORT).expect("json");
    for recording in [json!({"video": true}), json!({"export": export})] {
        let c = build(&exporting(recording.clone()));
        let spec = c.pod.spec.as_ref().expect("spec");
        assert!(spec.init_containers.is_none(), "{recording}");
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert!(spec.volumes.iter().flatten().all(|v| v.name != "export-credentials"));
        assert!(c.runtime_config.data.as_ref().expect("data").values().all(|j| !j.contains("recordingExport")));
    }
}
