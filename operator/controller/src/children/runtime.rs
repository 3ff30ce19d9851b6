//! The runtime ConfigMap: `runtime.json` for `playpen-session`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use playpen_api::layout::{
    daemon_session_dir, sockets_dir, AUTH_STATE_DIR, AUTH_STATE_FILE, DATA_HOME, LAUNCH_CONFIG_DIR, LAUNCH_CONFIG_KEY,
    RUNTIME_CONFIG_KEY, SNAPSHOT_DIR,
};
use playpen_api::quantity;
use playpen_api::runtime_config::{RecordingExportConfig, RuntimeConfig};
use playpen_api::v1alpha1::DEFAULT_EXPORT_SEGMENT_SECONDS;
use playpen_api::v1alpha1::DEFAULT_SNAPSHOT_SIZE_LIMIT;
use playpen_api::BrowserSession;

use super::egress_defaults::EgressDefaults;
use super::egress_hosts::egress_hosts_config;
use super::{labels::child_meta, Identity};
use crate::error::{Error, Result};

/// Path of the launch config inside the container, for generated and user Secrets alike.
pub fn launch_config_path(bs: &BrowserSession) -> String {
    let key = bs
        .spec
        .browser
        .launch_config
        .secret_ref
        .as_ref()
        .and_then(|r| r.key.clone())
        .unwrap_or_else(|| LAUNCH_CONFIG_KEY.to_owned());
    format!("{LAUNCH_CONFIG_DIR}/{key}")
}

/// The runtime configuration of `bs` under the chart's egress settings.
pub fn runtime_config(bs: &BrowserSession, id: &Identity, egress: &EgressDefaults) -> RuntimeConfig {
    let spec = &bs.spec;
    RuntimeConfig {
        session_name: id.session_name.clone(),
        sockets_dir: sockets_dir(DATA_HOME, &id.socket_namespace),
        daemon_session_dir: daemon_session_dir(DATA_HOME, &id.socket_namespace),
        launch_config: launch_config_path(bs),
        output_dir: SNAPSHOT_DIR.to_owned(),
        sandbox: spec.browser.sandbox,
        viewer_port: spec.browser.viewer.enabled.then(|| u16::try_from(spec.browser.viewer.port).ok()).flatten(),
        cdp_port: spec.browser.cdp.enabled.then(|| u16::try_from(spec.browser.cdp.port).ok()).flatten(),
        snapshot_max_age_seconds: spec.browser.snapshots.retention.max_age_seconds,
        snapshot_max_count: spec.browser.snapshots.retention.max_count,
        snapshot_volume_bytes: snapshot_volume_bytes(bs),
        snapshot_max_total_bytes: spec
            .browser
            .snapshots
            .retention
            .max_total_size
            .as_ref()
            .and_then(|q| quantity::bytes(&q.0)),
        idle_timeout_seconds: spec.idle_timeout_seconds,
        max_lifetime_seconds: spec.max_lifetime_seconds,
        session_started_at: session_started_at(bs).map(|t| t.to_string()),
        auth_state_file: spec.auth_state.as_ref().map(|_| format!("{AUTH_STATE_DIR}/{AUTH_STATE_FILE}")),
        resume_state_file: super::suspend::resume_state_file(bs),
        record_video: spec.recording.video,
        record_trace: spec.recording.trace,
        video_segment_seconds: video_segment_seconds(bs),
        warm: false,
        egress_hosts: egress_hosts_config(&spec.network.egress, egress),
        recording_export: RecordingExportConfig::of(bs),
    }
}

/// When the session's lifetime started, as `maxLifetimeSeconds` counts
/// it: its creation, moved later by the time it spent suspended.
fn session_started_at(bs: &BrowserSession) -> Option<Timestamp> {
    let created = bs.metadata.creation_timestamp.as_ref()?.0;
    let parked = bs.status.as_ref().and_then(|s| s.suspend.as_ref()).and_then(|s| s.suspended_seconds);
    let shifted = created.checked_add(SignedDuration::from_secs(parked.unwrap_or_default().max(0)));
    Some(shifted.unwrap_or(created))
}

/// Seconds per video segment: the spec's, else 60 with an export, else
/// none (one video per browser start).
fn video_segment_seconds(bs: &BrowserSession) -> Option<u32> {
    let recording = &bs.spec.recording;
    if !recording.video {
        return None;
    }
    let seconds = recording.segment_seconds.or(recording.export.as_ref().map(|_| DEFAULT_EXPORT_SEGMENT_SECONDS))?;
    u32::try_from(seconds).ok()
}

/// The snapshot volume's size when the spec states it: an emptyDir's limit
/// (the default limit when none is set) or the size of a claim the operator
/// creates. An existing claim's size is the runtime's to measure.
fn snapshot_volume_bytes(bs: &BrowserSession) -> Option<u64> {
    let volume = &bs.spec.browser.snapshots.volume;
    let size = match &volume.persistent_volume_claim {
        Some(claim) => claim.size.as_ref()?.0.clone(),
        None => volume
            .empty_dir
            .as_ref()
            .and_then(|e| e.size_limit.as_ref())
            .map_or_else(|| DEFAULT_SNAPSHOT_SIZE_LIMIT.to_owned(), |q| q.0.clone()),
    };
    quantity::bytes(&size)
}

/// The runtime ConfigMap of `bs`.
pub fn runtime_config_map(bs: &BrowserSession, id: &Identity, egress: &EgressDefaults) -> Result<ConfigMap> {
    config_map_of(&runtime_config(bs, id, egress), id)
}

/// The runtime ConfigMap of a warm Pod's browser (`warm`: no session's yet).
pub fn warm_runtime_config_map(bs: &BrowserSession, id: &Identity, egress: &EgressDefaults) -> Result<ConfigMap> {
    config_map_of(&RuntimeConfig { warm: true, ..runtime_config(bs, id, egress) }, id)
}

fn config_map_of(config: &RuntimeConfig, id: &Identity) -> Result<ConfigMap> {
    let json =
        serde_json::to_string_pretty(config).map_err(|source| Error::Serialize { what: "runtime config", source })?;
    Ok(ConfigMap {
        metadata: child_meta(id, &id.names.runtime_config, "runtime-config"),
        data: Some(BTreeMap::from([(RUNTIME_CONFIG_KEY.to_owned(), json)])),
        ..ConfigMap::default()
    })
}
