//! When retention runs: once at the start, then every retention interval
//! and soon after each write in the output directory, with the policy
//! re-read from `runtime.json` each time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use playpen_api::runtime_config::RuntimeConfig;

use super::{filesystem_bytes, prune, size_budget, watch_writes, Policy};
use crate::config::{load, Options};
use crate::error::Fatal;

/// How long after a write the size budget is checked (writes come in bursts).
const WRITE_SETTLE: Duration = Duration::from_millis(300);

/// Prunes the snapshot volume (snapshots and recordings) at start, on a
/// schedule and soon after each write in the output directory, re-reading
/// the policy from `runtime.json` each time (the kubelet refreshes the
/// ConfigMap in place). Returns only when the volume is full of what
/// retention may not delete.
pub(crate) async fn retain(config_path: PathBuf, mut config: RuntimeConfig, opts: Options) -> Fatal {
    let interval = opts.retention_interval();
    let grace = Duration::from_secs(opts.retention_grace_seconds);
    let written = Arc::new(tokio::sync::Notify::new());
    if let Err(err) = watch_writes(Path::new(&config.output_dir), written.clone()) {
        tracing::warn!(%err, "cannot watch the snapshot directory: the size budget is checked on the schedule only");
    }
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = written.notified() => tokio::time::sleep(WRITE_SETTLE).await,
            }
            match load(&config_path) {
                Ok(fresh) => config = fresh,
                Err(err) => tracing::warn!(%err, "keeping the previous retention policy"),
            }
        }
        let dir = PathBuf::from(&config.output_dir);
        let size = size_budget(config.snapshot_volume_bytes, filesystem_bytes(&dir), config.snapshot_max_total_bytes);
        let policy = Policy {
            max_age: Duration::from_secs(u64::try_from(config.snapshot_max_age_seconds).unwrap_or(u64::MAX)),
            max_count: usize::try_from(config.snapshot_max_count).unwrap_or(usize::MAX),
            grace,
            size,
            uploaded_first: config.recording_export.is_some(),
        };
        let pass_dir = dir.clone();
        match tokio::task::spawn_blocking(move || prune(&pass_dir, policy)).await {
            Ok(Ok(outcome)) => {
                if outcome.deleted > 0 {
                    tracing::info!(deleted = outcome.deleted, kept_bytes = outcome.kept_bytes, "snapshot retention");
                }
                for path in &outcome.young {
                    tracing::warn!(path = %path.display(), "deleted a file still being written: it would have filled the snapshot volume");
                }
                for path in &outcome.not_uploaded {
                    tracing::warn!(path = %path.display(), "deleted a recording the exporter had not stored (too old, or nothing stored was left to delete in its place)");
                }
                if let (true, Some(size)) = (outcome.full, size) {
                    return Fatal::SnapshotVolumeFull {
                        dir,
                        used: outcome.kept_bytes,
                        full_at: size.full_at,
                        capacity: size.capacity,
                    };
                }
            }
            Ok(Err(err)) => tracing::warn!(%err, "snapshot retention failed"),
            Err(err) => tracing::warn!(%err, "snapshot retention task failed"),
        }
    }
}
