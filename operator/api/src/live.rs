//! The live suspend path's protocol between the operator and the node agent
//! (`playpen-node-agent`): Pod annotations and labels only, so the two talk
//! through the API server and never to each other or to a tenant.
//!
//! - **Checkpoint.** The operator sets [`CHECKPOINT_REQUEST`] on a running
//!   Pod (its value names the request). The agent on that Pod's node
//!   checkpoints the Pod's gVisor sandbox into its node-local store, keyed by
//!   the Pod's UID, and answers with [`CHECKPOINT_RESULT`]
//!   ([`CheckpointResult`]). The sandbox stops.
//! - **Restore.** The operator creates the new Pod with the scheduling gate
//!   [`RESTORE_GATE`], the label [`RESTORE_NODE_LABEL`] (the node holding the
//!   checkpoint) and [`RESTORE_FROM`] (the checkpointed Pod's UID). The agent
//!   of that node checks the new Pod may have it (same namespace, same
//!   controlling owner), moves it to the directory the patched shim accepts
//!   for the new Pod's UID, sets [`GVISOR_RESTORE_IMAGE`] and lifts the gate.
//!   On a refusal it answers [`RESTORE_RESULT`] and leaves the gate, so no
//!   empty browser starts in the checkpoint's place.

use serde::{Deserialize, Serialize};

/// Set by the operator on a Pod to checkpoint: the request's id.
pub const CHECKPOINT_REQUEST: &str = "playpen.dev/checkpoint";
/// Set by the node agent: a [`CheckpointResult`] as JSON.
pub const CHECKPOINT_RESULT: &str = "playpen.dev/checkpoint-result";
/// The scheduling gate a Pod to be restored is created with.
pub const RESTORE_GATE: &str = "playpen.dev/restore";
/// The node whose agent stages a restore (a label, so each agent watches
/// only its own).
pub const RESTORE_NODE_LABEL: &str = "playpen.dev/restore-node";
/// The UID of the checkpointed Pod a new Pod is restored from.
pub const RESTORE_FROM: &str = "playpen.dev/restore-from";
/// Set by the node agent when it refuses or fails a restore: a
/// [`RestoreResult`] as JSON.
pub const RESTORE_RESULT: &str = "playpen.dev/restore-result";
/// The annotation gVisor's shim (with the carried change,
/// `tests/cluster/gvisor/playpen_restore.go`) restores a sandbox from.
pub const GVISOR_RESTORE_IMAGE: &str = "dev.gvisor.internal.restore.host-image-path";
/// The node-local root the patched shim accepts restore images under:
/// exactly `<root>/<the Pod's UID>`.
pub const RESTORE_ROOT: &str = "/var/lib/playpen/restore";
/// The longest [`CHECKPOINT_REQUEST`] value the agent accepts.
pub const MAX_REQUEST_ID: usize = 63;

/// The agent's answer to a checkpoint request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointResult {
    /// The request answered.
    pub request: String,
    /// Whether the checkpoint is stored.
    pub ok: bool,
    /// The node that holds it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// Bytes of the image on the node.
    #[serde(default)]
    pub bytes: u64,
    /// How long `runsc checkpoint` took.
    #[serde(default)]
    pub millis: u64,
    /// Why it failed (never the sandbox's memory or a secret).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// The agent's answer when it cannot stage a restore.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreResult {
    /// The checkpoint asked for.
    pub from: String,
    /// Why it was refused or failed.
    pub error: String,
}

/// Whether `s` is shaped like a Kubernetes UID (lowercase hex and dashes,
/// 36 characters): the only thing a path segment taken from an annotation
/// may be.
pub fn is_uid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

/// Whether `s` may name a checkpoint request: short, and characters that
/// need no escaping anywhere it is written.
pub fn is_request_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_REQUEST_ID
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uid_shaped_strings_are_uids() {
        assert!(is_uid("0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a47"));
        for bad in [
            "",
            "../../etc/passwd",
            "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a4",
            "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a477",
            "0EE1CB67-6DBF-4B50-9D2E-3F7D079A7A47",
            "0ee1cb67_6dbf-4b50-9d2e-3f7d079a7a47",
            "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7a/.",
            "0ee1cb67-6dbf-4b50-9d2e-3f7d079a7ag7",
        ] {
            assert!(!is_uid(bad), "{bad:?}");
        }
    }

    #[test]
    fn request_ids_are_short_and_plain() {
        assert!(is_request_id("suspend-7"));
        assert!(is_request_id(&"a".repeat(MAX_REQUEST_ID)));
        for bad in ["", "a b", "a/b", "a\"b", "é", &"a".repeat(MAX_REQUEST_ID + 1)] {
            assert!(!is_request_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn results_round_trip_and_leave_out_what_is_empty() {
        let ok = CheckpointResult {
            request: "r1".into(),
            ok: true,
            node: "n".into(),
            bytes: 5,
            millis: 7,
            error: String::new(),
        };
        let json = serde_json::to_string(&ok).unwrap();
        assert_eq!(json, r#"{"request":"r1","ok":true,"node":"n","bytes":5,"millis":7}"#);
        assert_eq!(serde_json::from_str::<CheckpointResult>(&json).unwrap(), ok);
        let failed: CheckpointResult = serde_json::from_str(r#"{"request":"r2","ok":false,"error":"x"}"#).unwrap();
        assert_eq!((failed.ok, failed.error.as_str(), failed.bytes), (false, "x", 0));
    }
}
