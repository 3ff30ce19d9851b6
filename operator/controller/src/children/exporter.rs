//! The exporter container of a session whose recordings go to an object
//! store (`spec.recording.export`, docs/recordings-export.md): the browser
//! image's `playpen-session export`, as a native sidecar (an init container
//! with `restartPolicy: Always`), so the kubelet starts it before the
//! browser and stops it after: its final pass then uploads the segment the
//! browser finished on its way out. It alone mounts the credentials Secret.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ResourceRequirements, SecretVolumeSource, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use playpen_api::layout::{EXPORT_CREDENTIALS_DIR, RUNTIME_CONFIG_DIR, SESSION_RUNTIME_BIN, SNAPSHOT_DIR};
use playpen_api::BrowserSession;

/// Name of the exporter container.
pub const EXPORTER_CONTAINER: &str = "exporter";
/// The volume of the credentials Secret.
const CREDENTIALS_VOLUME: &str = "export-credentials";
/// The Pod's grace period without an export (the browser's graceful close).
pub const GRACE_SECONDS: i64 = 30;
/// What an export adds to it: the exporter's wait for the browser's close
/// and its final pass (`export::exporter`'s `CLOSE_WAIT` and
/// `FINAL_PASS_WITHIN`, 55 s together).
pub const EXPORT_GRACE_SECONDS: i64 = 60;

/// Whether `bs` exports recordings (it records something and names a store).
pub fn exports(bs: &BrowserSession) -> bool {
    let recording = &bs.spec.recording;
    recording.export.is_some() && (recording.video || recording.trace)
}

/// The Pod's termination grace period.
pub fn grace_seconds(bs: &BrowserSession) -> i64 {
    if exports(bs) {
        GRACE_SECONDS + EXPORT_GRACE_SECONDS
    } else {
        GRACE_SECONDS
    }
}

/// The credentials volume and the exporter container, when `bs` exports.
pub fn exporter(
    bs: &BrowserSession,
    pull_policy: Option<String>,
    security: k8s_openapi::api::core::v1::SecurityContext,
) -> Option<(Volume, Container)> {
    let export = bs.spec.recording.export.as_ref().filter(|_| exports(bs))?;
    let volume = Volume {
        name: CREDENTIALS_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(export.s3.credentials_secret.name.clone()),
            // Group-readable through fsGroup only, like the other Secrets.
            default_mode: Some(0o440),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    };
    let mount = |name: &str, path: &str, read_only: bool| VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: Some(read_only),
        ..VolumeMount::default()
    };
    let quantity = |q: &str| Quantity(q.into());
    let container = Container {
        name: EXPORTER_CONTAINER.into(),
        image: Some(bs.spec.browser.image.clone()),
        image_pull_policy: pull_policy,
        command: Some(vec![SESSION_RUNTIME_BIN.into()]),
        args: Some(vec!["export".into()]),
        // A native sidecar: started before the browser, stopped after it.
        restart_policy: Some("Always".into()),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".into(), quantity("10m")), ("memory".into(), quantity("48Mi"))])),
            // Two 8 MiB parts in flight and the client's buffers.
            limits: Some(BTreeMap::from([("memory".into(), quantity("256Mi"))])),
            ..ResourceRequirements::default()
        }),
        security_context: Some(security),
        volume_mounts: Some(vec![
            mount("runtime-config", RUNTIME_CONFIG_DIR, true),
            mount("snapshots", SNAPSHOT_DIR, false),
            mount(CREDENTIALS_VOLUME, EXPORT_CREDENTIALS_DIR, true),
        ]),
        ..Container::default()
    };
    Some((volume, container))
}
