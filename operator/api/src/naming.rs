//! Deterministic names for a BrowserSession's children and its socket
//! namespace. Everything is derived from the resource's name and UID, so a
//! restarted operator or container computes the same answer.

use sha2::{Digest, Sha256};

use crate::layout::{max_session_name_len, SOCKET_NAMESPACE_HEX};

/// Label values and the field manager used everywhere.
pub const APP_NAME: &str = "playpen-browser";
/// `app.kubernetes.io/managed-by` value and server-side-apply field manager.
pub const MANAGER: &str = "playpen-operator";
/// Label naming the owning BrowserSession on every child.
pub const SESSION_LABEL: &str = "playpen.dev/session";
/// Label naming the BrowserPool a Pod was started for (kept after a claim).
pub const POOL_LABEL: &str = "playpen.dev/pool";
/// Label of a pool Pod: [`POOL_STATE_WARM`] until a session claims it, then [`POOL_STATE_CLAIMED`].
pub const POOL_STATE_LABEL: &str = "playpen.dev/pool-state";
/// An unclaimed pool Pod.
pub const POOL_STATE_WARM: &str = "warm";
/// A pool Pod a session took.
pub const POOL_STATE_CLAIMED: &str = "claimed";
/// Label with the hash of the pool template a Pod runs.
pub const POOL_TEMPLATE_LABEL: &str = "playpen.dev/pool-template";
/// Annotation of a warm pool Pod: the name its children were built for
/// (`<pool>-<hash6>.<rand5>`; the Pod is `<warm name>-browser`). The dot
/// keeps it apart from every session's name (a DNS-1035 label, no dots), so
/// no session's children or `playpen.dev/session` label can be a warm Pod's.
pub const WARM_NAME_ANNOTATION: &str = "playpen.dev/warm-name";
/// Annotation of a warm pool Pod: the playwright-cli session name it runs.
pub const WARM_SESSION_NAME_ANNOTATION: &str = "playpen.dev/session-name";
/// Annotation of a warm pool Pod: its socket namespace (8 hex), which a
/// claiming session reports instead of the one its own UID would give.
pub const WARM_SOCKET_NAMESPACE_ANNOTATION: &str = "playpen.dev/socket-namespace";
/// Annotation of a claimed pool Pod: a digest of the per-session settings
/// delivered to it (runtime config, auth state). Changing it makes the
/// kubelet sync the Pod, which refreshes its ConfigMap and Secret volumes at
/// once instead of at its next periodic sync (about a minute).
pub const DELIVERED_ANNOTATION: &str = "playpen.dev/delivered";

/// The optional Secret a warm Pod mounts at the auth state path: empty while
/// warm, written with the claiming session's auth state.
pub fn warm_auth_secret(warm_name: &str) -> String {
    format!("{warm_name}-auth")
}

/// Annotation on every child the operator applies: a digest of the object
/// as built. Compared before an apply, it catches a field the operator
/// stopped setting, which a field-by-field comparison with the live object
/// cannot see.
pub const APPLIED_ANNOTATION: &str = "playpen.dev/applied";

/// The digest for [`APPLIED_ANNOTATION`] of an object serialised as `json`.
pub fn applied_digest(json: &str) -> String {
    hex_digest(&[json])[..16].to_owned()
}

/// A short digest of `parts` (for [`DELIVERED_ANNOTATION`]).
pub fn delivery_digest(parts: &[&str]) -> String {
    hex_digest(parts)[..16].to_owned()
}

/// Hex characters of a pool template hash (label value and warm-name part).
pub const POOL_TEMPLATE_HASH_HEX: usize = 6;

/// Names of the child objects of one BrowserSession.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildNames {
    /// The browser Pod.
    pub pod: String,
    /// The generated launch-config Secret.
    pub launch_secret: String,
    /// The runtime ConfigMap.
    pub runtime_config: String,
    /// The viewer Service (`<name>-view`).
    pub viewer_service: String,
    /// The NetworkPolicy.
    pub network_policy: String,
    /// The snapshot PersistentVolumeClaim, when one is templated.
    pub snapshot_claim: String,
    /// The bearer token the operator's suspend request carries, created
    /// once (never rotated by a reconcile) and mounted beside the launch config.
    pub control_secret: String,
    /// A suspended session's saved state, until its resume is Ready.
    pub suspended_state: String,
}

impl ChildNames {
    /// Child names for the BrowserSession called `name`.
    pub fn for_session(name: &str) -> Self {
        Self {
            pod: format!("{name}-browser"),
            launch_secret: format!("{name}-launch"),
            runtime_config: format!("{name}-runtime"),
            viewer_service: format!("{name}-view"),
            network_policy: format!("{name}-isolate"),
            snapshot_claim: format!("{name}-snapshots"),
            control_secret: format!("{name}-control"),
            suspended_state: format!("{name}-suspended"),
        }
    }
}

/// The label naming the BrowserSnapshot an object belongs to.
pub const SNAPSHOT_LABEL: &str = "playpen.dev/snapshot";

/// Names of the objects of one BrowserSnapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotNames {
    /// The Secret holding its bytes (owned by the snapshot).
    pub state_secret: String,
    /// The NetworkPolicy that admits the operator to its source's runtime
    /// while it is taken.
    pub read_policy: String,
}

impl SnapshotNames {
    /// Names for the BrowserSnapshot called `name`.
    pub fn for_snapshot(name: &str) -> Self {
        Self { state_secret: format!("{name}-state"), read_policy: format!("{name}-read") }
    }
}

fn hex_digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The per-session socket namespace: 8 hex characters stable for the
/// resource's UID, so a restarted container reaches the same daemon.
pub fn socket_namespace(uid: &str) -> String {
    hex_digest(&["playpen/socket-namespace", uid])[..SOCKET_NAMESPACE_HEX].to_owned()
}

/// The hash of a pool template: the first [`POOL_TEMPLATE_HASH_HEX`] hex
/// characters of the SHA-256 of its canonical JSON (object keys sorted).
pub fn pool_template_hash(canonical_json: &str) -> String {
    let digest = Sha256::digest(canonical_json.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect::<String>()[..POOL_TEMPLATE_HASH_HEX].to_owned()
}

/// The session name used when the spec leaves it out: the resource name when
/// it fits the socket budget, else a prefix of it plus a stable hash.
pub fn generated_session_name(resource_name: &str, uid: &str) -> String {
    let max = max_session_name_len();
    if resource_name.len() <= max {
        return resource_name.to_owned();
    }
    let hash = &hex_digest(&["playpen/session-name", uid])[..8];
    // Resource names are ASCII (DNS-1123), so byte slicing is safe.
    let prefix = resource_name[..max - hash.len() - 1].trim_end_matches(['-', '.']);
    format!("{prefix}-{hash}")
}

/// Is `name` acceptable as a session name? Mirrors the CRD's CEL rule.
pub fn is_valid_session_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max_session_name_len()
        && bytes[0].is_ascii_lowercase() | bytes[0].is_ascii_digit()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_is_eight_hex_and_stable() {
        let a = socket_namespace("0b8a6c1e-1111-2222-3333-444455556666");
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(a, socket_namespace("0b8a6c1e-1111-2222-3333-444455556666"));
        assert_ne!(a, socket_namespace("0b8a6c1e-1111-2222-3333-444455556667"));
    }

    #[test]
    fn short_resource_names_are_the_session_name() {
        assert_eq!(generated_session_name("checkout-bot", "u"), "checkout-bot");
    }

    #[test]
    fn long_resource_names_are_shortened_validly_and_stably() {
        let long = format!("{}-x.y", "a".repeat(60));
        let s = generated_session_name(&long, "uid-1");
        assert!(s.len() <= max_session_name_len(), "{s}");
        assert!(is_valid_session_name(&s), "{s}");
        assert_eq!(s, generated_session_name(&long, "uid-1"));
        assert_ne!(s, generated_session_name(&long, "uid-2"));
        // a cut that would end in '-' is trimmed before the hash
        let dashy = format!("{}{}", "b".repeat(35), "-".repeat(30));
        let s = generated_session_name(&dashy, "u");
        assert!(!s.contains("--"), "{s}");
    }

    #[test]
    fn session_name_charset() {
        for ok in ["a", "0", "agent-1", "a.b_c", &"z".repeat(45)] {
            assert!(is_valid_session_name(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", "A", "a b", "a/b", "ä", &"z".repeat(46)] {
            assert!(!is_valid_session_name(bad), "{bad}");
        }
    }

    #[test]
    fn pool_template_hash_is_six_hex_of_the_sha256() {
        // sha256("{}") = 44136fa3...
        assert_eq!(pool_template_hash("{}"), "44136f");
        assert_ne!(pool_template_hash(r#"{"image":"a"}"#), pool_template_hash(r#"{"image":"b"}"#));
    }

    #[test]
    fn child_names_are_deterministic() {
        let n = ChildNames::for_session("demo");
        assert_eq!(n.viewer_service, "demo-view");
        assert_eq!(n.pod, "demo-browser");
        assert_eq!(n.launch_secret, "demo-launch");
    }
}
