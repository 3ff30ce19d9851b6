//! What suspend and resume add to a session's children (pure): the
//! launch-config directory as a projected volume that also carries the
//! control token, the saved state a resuming browser mounts, and the two
//! Secrets the suspend stage writes ([`crate::suspend`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    KeyToPath, ProjectedVolumeSource, Secret, SecretProjection, SecretVolumeSource, Volume, VolumeMount,
    VolumeProjection,
};
use k8s_openapi::ByteString;
use playpen_api::layout::{CONTROL_TOKEN_FILE, RESUME_STATE_DIR, RESUME_STATE_FILE};
use playpen_api::BrowserSession;

use super::labels::child_meta;
use super::Identity;

/// `type` of the Secret holding a suspended session's state.
pub const SUSPENDED_STATE_TYPE: &str = "playpen.dev/suspended-state";
/// Name of the resume volume and mount.
const RESUME_VOLUME: &str = "resume-state";

/// The Secret whose saved state a browser built now reopens: the one the
/// status names while `spec.suspended` is false again (a resume).
pub fn resume_state_secret(bs: &BrowserSession) -> Option<&str> {
    if bs.spec.suspended {
        return None;
    }
    bs.status.as_ref()?.suspend.as_ref()?.state_secret.as_deref()
}

/// The launch-config directory: the launch Secret's keys, plus the control
/// token from the session's control Secret. That Secret is created only
/// when a suspend is first asked for, so it is optional: the kubelet adds
/// the file when the operator makes the Pod sync (its delivery annotation).
pub fn launch_config_volume(name: &str, launch_secret: &str, id: &Identity, mode: i32) -> Volume {
    let secret = |name: &str, items: Option<Vec<KeyToPath>>, optional: bool| VolumeProjection {
        secret: Some(SecretProjection { name: name.to_owned(), items, optional: Some(optional) }),
        ..VolumeProjection::default()
    };
    let token = KeyToPath { key: CONTROL_TOKEN_FILE.into(), path: CONTROL_TOKEN_FILE.into(), mode: None };
    Volume {
        name: name.into(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(mode),
            sources: Some(vec![
                secret(launch_secret, None, false),
                secret(&id.names.control_secret, Some(vec![token]), true),
            ]),
        }),
        ..Volume::default()
    }
}

/// The saved state's volume and the browser's mount of it, for a resume.
/// Optional: a Secret deleted by hand starts a fresh browser, which the
/// runtime says in its log, rather than a Pod that never starts.
pub fn resume_volume(bs: &BrowserSession, mode: i32) -> Option<(Volume, VolumeMount)> {
    let secret = resume_state_secret(bs)?;
    let items = vec![KeyToPath { key: RESUME_STATE_FILE.into(), path: RESUME_STATE_FILE.into(), mode: None }];
    let volume = Volume {
        name: RESUME_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            items: Some(items),
            default_mode: Some(mode),
            optional: Some(true),
        }),
        ..Volume::default()
    };
    let mount = VolumeMount {
        name: RESUME_VOLUME.into(),
        mount_path: RESUME_STATE_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    Some((volume, mount))
}

/// Where the runtime finds the saved state of a resume.
pub fn resume_state_file(bs: &BrowserSession) -> Option<String> {
    resume_state_secret(bs).map(|_| format!("{RESUME_STATE_DIR}/{RESUME_STATE_FILE}"))
}

/// Random bytes of a control token.
const TOKEN_BYTES: usize = 32;

/// A new control token: [`TOKEN_BYTES`] from the OS's CSPRNG, as hex.
pub fn random_token() -> Result<String, getrandom::Error> {
    let mut random = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut random)?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

/// The session's control Secret with `token`.
pub fn control_secret(id: &Identity, token: &[u8]) -> Secret {
    Secret {
        metadata: child_meta(id, &id.names.control_secret, "control-token"),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(CONTROL_TOKEN_FILE.to_owned(), ByteString(token.to_vec()))])),
        ..Secret::default()
    }
}

/// The Secret holding a suspended session's saved state `document`.
pub fn suspended_state_secret(id: &Identity, document: Vec<u8>) -> Secret {
    Secret {
        metadata: child_meta(id, &id.names.suspended_state, "suspended-state"),
        type_: Some(SUSPENDED_STATE_TYPE.into()),
        data: Some(BTreeMap::from([(RESUME_STATE_FILE.to_owned(), ByteString(document))])),
        ..Secret::default()
    }
}
