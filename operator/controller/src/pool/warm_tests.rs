use playpen_api::naming::{MANAGER, POOL_STATE_CLAIMED};
use playpen_api::v1alpha1::{BrowserPool, BrowserPoolSpec};
use serde_json::json;

use super::*;
use crate::children::{pod_selector, MANAGED_BY_LABEL};

fn template(value: serde_json::Value) -> BrowserSpec {
    serde_json::from_value(value).expect("template")
}

fn pool_id(name: &str) -> PoolIdentity {
    let mut pool = BrowserPool::new(
        name,
        BrowserPoolSpec {
            template: template(json!({"image": "i"})),
            min_ready: 1,
            max_size: None,
            when_empty: Default::default(),
        },
    );
    pool.metadata.namespace = Some("ns".into());
    pool.metadata.uid = Some("pool-uid".into());
    let owner = kube::Resource::controller_owner_ref(&pool, &()).expect("owner");
    PoolIdentity { name: name.into(), namespace: "ns".into(), owner }
}

fn fresh(pool: &str) -> Fresh {
    Fresh { warm_name: format!("{pool}-abc123.x1y2z"), uid: "u-1".into(), control_token: "t0k3n".into() }
}

#[test]
fn the_hash_is_six_hex_stable_and_follows_the_template() {
    let a = template_hash(&template(json!({"image": "a"}))).expect("hash");
    assert_eq!(a.len(), 6);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_eq!(a, template_hash(&template(json!({"image": "a"}))).expect("hash"));
    assert_ne!(a, template_hash(&template(json!({"image": "b"}))).expect("hash"));
    assert_ne!(a, template_hash(&template(json!({"image": "a", "sandbox": "Disabled"}))).expect("hash"));
}

#[test]
fn fresh_names_are_pool_hash_and_five_random_characters() {
    let a = Fresh::new("pool", "abc123");
    let b = Fresh::new("pool", "abc123");
    let suffix = a.warm_name.strip_prefix("pool-abc123.").expect("prefix");
    assert_eq!(suffix.len(), SUFFIX_LEN);
    assert!(suffix.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{suffix}");
    assert_ne!(a.warm_name, b.warm_name);
    assert_ne!(a.uid, b.uid);
}

#[test]
fn a_warm_pod_is_labelled_annotated_and_owned_by_the_pool() {
    let pool = pool_id("shop");
    let f = fresh("shop");
    let t = template(json!({"image": "playpen/browser:1"}));
    let built = warm_children(&pool, &t, "abc123", &f, &Settings::default()).expect("build");
    let pod = &built.pod;
    assert_eq!(pod.metadata.name.as_deref(), Some("shop-abc123.x1y2z-browser"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
    let labels = pod.metadata.labels.clone().expect("labels");
    assert_eq!(labels[POOL_LABEL], "shop");
    assert_eq!(labels[POOL_STATE_LABEL], POOL_STATE_WARM);
    assert_ne!(labels[POOL_STATE_LABEL], POOL_STATE_CLAIMED);
    assert_eq!(labels[POOL_TEMPLATE_LABEL], "abc123");
    assert_eq!(labels[MANAGED_BY_LABEL], MANAGER);
    for (k, v) in pod_selector(&f.warm_name) {
        assert_eq!(labels[&k], v, "{k}");
    }
    let annotations = pod.metadata.annotations.clone().expect("annotations");
    assert_eq!(annotations[WARM_NAME_ANNOTATION], "shop-abc123.x1y2z");
    assert_eq!(annotations[WARM_SESSION_NAME_ANNOTATION], "shop");
    assert_eq!(annotations[WARM_SOCKET_NAMESPACE_ANNOTATION], socket_namespace("u-1"));
    let owners = pod.metadata.owner_references.clone().expect("owners");
    assert_eq!(owners.len(), 1);
    assert_eq!((owners[0].kind.as_str(), owners[0].uid.as_str()), ("BrowserPool", "pool-uid"));
    assert_eq!(owners[0].controller, Some(true));
    let spec = pod.spec.clone().expect("spec");
    assert_eq!(spec.containers[0].image.as_deref(), Some("playpen/browser:1"));
    let env: BTreeMap<_, _> = spec.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    assert_eq!(env["PLAYWRIGHT_CLI_SESSION"], "shop");
    assert!(env["PWTEST_SOCKETS_DIR"].contains(&socket_namespace("u-1")));

    let secret = built.launch_secret.expect("generated launch config");
    let cm = &built.runtime_config;
    assert_eq!(secret.metadata.name.as_deref(), Some("shop-abc123.x1y2z-launch"));
    assert_eq!(cm.metadata.name.as_deref(), Some("shop-abc123.x1y2z-runtime"));
    for meta in [&secret.metadata, &cm.metadata] {
        assert_eq!(meta.owner_references.as_deref(), Some(&owners[..]));
        assert_eq!(meta.labels.as_ref().expect("labels")[POOL_LABEL], "shop");
        assert_eq!(meta.annotations.as_ref().expect("annotations")[WARM_NAME_ANNOTATION], "shop-abc123.x1y2z");
    }
}

#[test]
fn template_session_name_and_user_launch_secret_are_honoured() {
    let pool = pool_id("shop");
    let t = template(json!({"image": "i", "sessionName": "agent-1",
        "launchConfig": {"secretRef": {"name": "mine"}}}));
    let built = warm_children(&pool, &t, "abc123", &fresh("shop"), &Settings::default()).expect("build");
    assert!(built.launch_secret.is_none());
    let annotations = built.pod.metadata.annotations.expect("annotations");
    assert_eq!(annotations[WARM_SESSION_NAME_ANNOTATION], "agent-1");
}

#[test]
fn no_session_can_be_named_like_a_warm_browser() {
    // A BrowserSession's name, by its CRD's rule: a DNS-1035 label.
    let session_name_ok = |n: &str| {
        n.len() <= 58
            && n.starts_with(|c: char| c.is_ascii_lowercase())
            && !n.ends_with('-')
            && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    assert!(session_name_ok("shop-abc123-x1y2z"), "the rule as the CRD states it");
    for pool in ["shop", "a", &format!("p{}", "a".repeat(39))] {
        let f = Fresh::new(pool, "abc123");
        assert!(!session_name_ok(&f.warm_name), "{} could be a session's name", f.warm_name);
        // Still a valid Pod name (DNS subdomain) and label value.
        let pod = format!("{}-browser", f.warm_name);
        assert!(pod.len() <= 63 && pod.split('.').all(|part| !part.is_empty() && !part.starts_with('-')), "{pod}");
    }
}

#[test]
fn names_fit_63_characters_for_the_longest_pool_name() {
    let name = format!("p{}", "a".repeat(39));
    assert_eq!(name.len(), 40, "the CRD's longest pool name");
    let f = Fresh::new(&name, "abc123");
    let built = warm_children(&pool_id(&name), &template(json!({"image": "i"})), "abc123", &f, &Settings::default())
        .expect("build");
    let names = [
        built.pod.metadata.name.clone(),
        built.runtime_config.metadata.name.clone(),
        built.launch_secret.and_then(|s| s.metadata.name),
        Some(network_policy_name(&name)),
    ];
    for n in names.into_iter().flatten() {
        assert!(n.len() <= 63, "{n} is {} characters", n.len());
    }
    for v in built.pod.metadata.labels.expect("labels").values() {
        assert!(v.len() <= 63, "label value {v}");
    }
}

#[test]
fn the_pool_policy_denies_all_traffic_of_its_pods_warm_or_claimed() {
    let np = pool_network_policy(&pool_id("shop"));
    assert_eq!(np.metadata.name.as_deref(), Some("shop-warm"));
    let labels = np.metadata.labels.clone().expect("labels");
    assert!(!labels.contains_key(SESSION_LABEL));
    assert_eq!(labels[POOL_LABEL], "shop");
    assert_eq!(np.metadata.owner_references.expect("owner")[0].kind, "BrowserPool");
    let spec = np.spec.expect("spec");
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned(), "Egress".to_owned()]));
    assert_eq!((spec.ingress, spec.egress), (None, None), "no rule at all: deny everything");
    let selector = spec.pod_selector.and_then(|s| s.match_labels).expect("selector");
    // A claimed Pod keeps the pool label (the claim sets it), so it stays
    // covered until its session's policy adds what the session allows.
    assert_eq!(selector, BTreeMap::from([(POOL_LABEL.to_owned(), "shop".to_owned())]));
    assert!(selector.iter().all(|(k, v)| warm_selector("shop").get(k) == Some(v)));
    assert_eq!(warm_selector_string("shop"), "playpen.dev/pool=shop,playpen.dev/pool-state=warm");
}

#[test]
fn the_warm_spec_has_no_egress_so_the_session_policy_is_never_needed() {
    let spec = template(json!({"image": "i"})).warm_session_spec();
    assert_eq!(spec.network.egress.mode, playpen_api::v1alpha1::EgressMode::DenyAll);
}

#[test]
fn a_warm_pod_has_an_optional_read_only_slot_for_a_claims_auth_state() {
    let built = warm_children(
        &pool_id("shop"),
        &template(json!({"image": "i"})),
        "abc123",
        &fresh("shop"),
        &Settings::default(),
    )
    .expect("build");
    let spec = built.pod.spec.expect("spec");
    let volume = spec.volumes.iter().flatten().find(|v| v.name == AUTH_STATE_VOLUME).expect("volume");
    let secret = volume.secret.clone().expect("a Secret volume");
    assert_eq!(secret.secret_name.as_deref(), Some("shop-abc123.x1y2z-auth"));
    assert_eq!(secret.optional, Some(true), "the Secret exists only once a session with auth state claims the Pod");
    assert_eq!(secret.default_mode, Some(0o440));
    let browser = spec.containers.iter().find(|c| c.name == children::BROWSER_CONTAINER).expect("browser");
    let mount = browser.volume_mounts.iter().flatten().find(|m| m.name == AUTH_STATE_VOLUME).expect("mount");
    assert_eq!((mount.mount_path.as_str(), mount.read_only), (AUTH_STATE_DIR, Some(true)));
    for other in spec.containers.iter().filter(|c| c.name != children::BROWSER_CONTAINER) {
        assert!(other.volume_mounts.iter().flatten().all(|m| m.name != AUTH_STATE_VOLUME), "{}", other.name);
    }
}
