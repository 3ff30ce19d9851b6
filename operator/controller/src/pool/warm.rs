//! Pure builders of a pool's objects: a warm browser's children (the
//! session builders, run on a BrowserSession synthesised from the
//! template), the pool's NetworkPolicy and the template hash.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use k8s_openapi::api::core::v1::{ConfigMap, KeyToPath, Pod, Secret, SecretVolumeSource, Volume, VolumeMount};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use playpen_api::layout::{AUTH_STATE_DIR, AUTH_STATE_FILE};
use playpen_api::naming::{
    pool_template_hash, socket_namespace, warm_auth_secret, ChildNames, POOL_LABEL, POOL_STATE_LABEL, POOL_STATE_WARM,
    POOL_TEMPLATE_LABEL, SESSION_LABEL, WARM_NAME_ANNOTATION, WARM_SESSION_NAME_ANNOTATION,
    WARM_SOCKET_NAMESPACE_ANNOTATION,
};
use playpen_api::v1alpha1::BrowserSpec;
use playpen_api::BrowserSession;

use crate::children::{self, child_labels, Identity, Settings};
use crate::error::{Error, Result};

/// Characters of the random suffix of a warm name.
pub const SUFFIX_LEN: usize = 5;

/// The hash of `template` (its canonical JSON: fields in a fixed order).
pub fn template_hash(template: &BrowserSpec) -> Result<String> {
    let value = serde_json::to_value(template).map_err(|source| Error::Serialize { what: "pool template", source })?;
    Ok(pool_template_hash(&value.to_string()))
}

/// What makes one warm browser unique: its name and the random UID its
/// socket namespace derives from (a warm Pod has no resource of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fresh {
    /// `<pool>-<hash6>.<rand5>`: the dot makes it a name no BrowserSession
    /// can have (theirs are DNS-1035 labels), so a session's children and
    /// its `playpen.dev/session` label never meet a warm browser's.
    pub warm_name: String,
    /// The stand-in UID.
    pub uid: String,
    /// The warm browser's control token (empty when the OS gave no random
    /// bytes: then a suspend makes one when it needs it).
    pub control_token: String,
}

impl Fresh {
    /// A new warm name and UID for `pool` at template `hash` (random).
    pub fn new(pool: &str, hash: &str) -> Self {
        Self {
            warm_name: format!("{pool}-{hash}.{}", random_token(SUFFIX_LEN)),
            uid: random_token(32),
            control_token: children::suspend::random_token().unwrap_or_default(),
        }
    }
}

/// `len` random characters from [a-z0-9]. The standard library's per-process
/// random hash keys are the source: names need to be unlikely to collide
/// (a collision is a refused create, retried), not secret.
fn random_token(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    let mut bits = 0u64;
    for i in 0..len {
        if i % 8 == 0 {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_usize(i);
            hasher.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            );
            bits = hasher.finish();
        }
        let index = usize::try_from(bits % 36).unwrap_or(0);
        bits /= 36;
        out.push(char::from(ALPHABET[index]));
    }
    out
}

/// Who the pool is, for the builders.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolIdentity {
    /// The pool's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The controller owner reference every object of the pool carries.
    pub owner: OwnerReference,
}

/// A warm browser's objects, created in this order.
#[derive(Debug, Clone)]
pub struct WarmChildren {
    /// Generated launch config; `None` when the template names its own Secret.
    pub launch_secret: Option<Secret>,
    /// The runtime ConfigMap.
    pub runtime_config: ConfigMap,
    /// The browser Pod, `<warm name>-browser`.
    pub pod: Pod,
    /// Its control token, `<warm name>-control`: there when the browser
    /// starts, so a suspend or a resume's reopen after a claim waits for no
    /// volume sync to deliver it.
    pub control_secret: Option<Secret>,
}

/// The children of one warm browser: the session builders' Secret,
/// ConfigMap and Pod for a session named after the warm name (the Service,
/// claim and NetworkPolicy are the claiming session's to create), owned by
/// the pool and labelled and annotated for the claim.
pub fn warm_children(
    pool: &PoolIdentity,
    template: &BrowserSpec,
    hash: &str,
    fresh: &Fresh,
    settings: &Settings,
) -> Result<WarmChildren> {
    let mut bs = BrowserSession::new(&fresh.warm_name, template.warm_session_spec());
    bs.metadata.namespace = Some(pool.namespace.clone());
    let id = Identity {
        name: fresh.warm_name.clone(),
        namespace: pool.namespace.clone(),
        owner: pool.owner.clone(),
        session_name: template.session_name.clone().unwrap_or_else(|| pool.name.clone()),
        socket_namespace: socket_namespace(&fresh.uid),
        names: ChildNames::for_session(&fresh.warm_name),
    };
    let built = children::build(&bs, &id, settings)?;
    let annotations = BTreeMap::from([
        (WARM_NAME_ANNOTATION.to_owned(), id.name.clone()),
        (WARM_SESSION_NAME_ANNOTATION.to_owned(), id.session_name.clone()),
        (WARM_SOCKET_NAMESPACE_ANNOTATION.to_owned(), id.socket_namespace.clone()),
    ]);
    let pool_labels = BTreeMap::from([
        (POOL_LABEL.to_owned(), pool.name.clone()),
        (POOL_STATE_LABEL.to_owned(), POOL_STATE_WARM.to_owned()),
        (POOL_TEMPLATE_LABEL.to_owned(), hash.to_owned()),
    ]);
    let mark = |meta: &mut ObjectMeta| {
        meta.labels.get_or_insert_with(BTreeMap::new).extend(pool_labels.clone());
        meta.annotations.get_or_insert_with(BTreeMap::new).extend(annotations.clone());
    };
    let mut launch_secret = built.launch_secret;
    // Not the session builders' own: this one says the browser is warm.
    let mut runtime_config = children::warm_runtime_config_map(&bs, &id, &settings.egress)?;
    let mut pod = built.pod;
    if let Some(secret) = launch_secret.as_mut() {
        mark(&mut secret.metadata);
    }
    mark(&mut runtime_config.metadata);
    mark(&mut pod.metadata);
    mount_auth_state_slot(&mut pod, &fresh.warm_name);
    let mut control_secret = (!fresh.control_token.is_empty())
        .then(|| children::suspend::control_secret(&id, fresh.control_token.as_bytes()));
    if let Some(secret) = control_secret.as_mut() {
        mark(&mut secret.metadata);
    }
    Ok(WarmChildren { launch_secret, runtime_config, pod, control_secret })
}

/// The warm browser's slot for a claiming session's auth state: an optional
/// Secret that does not exist while the Pod is warm (an empty directory),
/// written by the claim; the kubelet then fills the mount in place.
fn mount_auth_state_slot(pod: &mut Pod, warm_name: &str) {
    let Some(spec) = pod.spec.as_mut() else { return };
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: AUTH_STATE_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(warm_auth_secret(warm_name)),
            items: Some(vec![KeyToPath { key: AUTH_STATE_FILE.into(), path: AUTH_STATE_FILE.into(), mode: None }]),
            default_mode: Some(0o440),
            optional: Some(true),
        }),
        ..Volume::default()
    });
    if let Some(browser) = spec.containers.iter_mut().find(|c| c.name == children::BROWSER_CONTAINER) {
        browser.volume_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
            name: AUTH_STATE_VOLUME.into(),
            mount_path: AUTH_STATE_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
}

/// The warm Pod's auth state volume (the name a cold session's uses).
const AUTH_STATE_VOLUME: &str = "auth-state";

/// `<pool>-warm`: no ingress and no egress for the pool's Pods (a warm
/// browser loads nothing). It selects claimed Pods too, which keep the pool
/// label: policies add up, and one without rules adds nothing, so a claimed
/// Pod has exactly its session's policy once that exists and none of the
/// network before. A claim need not wait for the session's policy.
pub fn pool_network_policy(pool: &PoolIdentity) -> NetworkPolicy {
    let mut labels = child_labels(&pool.name, "network-policy");
    // Not a session's object.
    labels.remove(SESSION_LABEL);
    labels.insert(POOL_LABEL.to_owned(), pool.name.clone());
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(network_policy_name(&pool.name)),
            namespace: Some(pool.namespace.clone()),
            labels: Some(labels),
            owner_references: Some(vec![pool.owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(POOL_LABEL.to_owned(), pool.name.clone())])),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            // `None`, not empty lists: the API server drops empty lists, which
            // would make every apply a change.
            ingress: None,
            egress: None,
        }),
    }
}

/// The pool NetworkPolicy's name.
pub fn network_policy_name(pool: &str) -> String {
    format!("{pool}-warm")
}

/// The labels of a pool's unclaimed Pods.
pub fn warm_selector(pool: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (POOL_LABEL.to_owned(), pool.to_owned()),
        (POOL_STATE_LABEL.to_owned(), POOL_STATE_WARM.to_owned()),
    ])
}

/// [`warm_selector`] in label-selector syntax (the status's `selector`).
pub fn warm_selector_string(pool: &str) -> String {
    warm_selector(pool).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The Secret and ConfigMap names of the warm browser `warm_name`.
pub fn child_names(warm_name: &str) -> ChildNames {
    ChildNames::for_session(warm_name)
}

#[cfg(test)]
#[path = "warm_tests.rs"]
mod tests;
