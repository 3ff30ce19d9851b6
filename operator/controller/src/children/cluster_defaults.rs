//! What the chart sets for every session that says nothing of its own: a
//! cluster-wide recordings destination (`recordings.export`, the
//! operator's `--recording-export`) for each session that records and
//! names no `spec.recording.export`. Applied to the session a reconcile
//! works from (never written back): its children, its status and the
//! export watch see the destination as if the session named it.

use std::sync::Arc;

use playpen_api::v1alpha1::RecordingExport;
use playpen_api::{BrowserSession, BrowserSessionSpec};

use super::Settings;

/// The destination `spec`'s recordings go to: its own, else the cluster's
/// (`None`: it records nothing, or there is none).
pub fn effective_export<'a>(spec: &'a BrowserSessionSpec, settings: &'a Settings) -> Option<&'a RecordingExport> {
    let recording = &spec.recording;
    if !(recording.video || recording.trace) {
        return None;
    }
    recording.export.as_ref().or(settings.recording_export.as_ref())
}

/// `bs` with the cluster's defaults filled in (the same object when none applies).
pub fn with_cluster_defaults(bs: Arc<BrowserSession>, settings: &Settings) -> Arc<BrowserSession> {
    let recording = &bs.spec.recording;
    let Some(default) = settings.recording_export.as_ref() else { return bs };
    if recording.export.is_some() || !(recording.video || recording.trace) {
        return bs;
    }
    let mut filled = (*bs).clone();
    filled.spec.recording.export = Some(default.clone());
    Arc::new(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::SessionBuilder;
    use serde_json::json;

    fn destination(bucket: &str) -> RecordingExport {
        serde_json::from_value(json!({"s3": {"endpoint": "http://store:8333", "bucket": bucket,
            "credentialsSecret": {"name": "keys"}}}))
        .expect("export")
    }

    fn with_default() -> Settings {
        Settings { recording_export: Some(destination("cluster")), ..Settings::default() }
    }

    #[test]
    fn a_recording_session_without_a_destination_takes_the_clusters() {
        let bs = Arc::new(SessionBuilder::new(json!({"image": "i", "recording": {"video": true}})).build());
        let filled = with_cluster_defaults(bs.clone(), &with_default());
        assert_eq!(filled.spec.recording.export, Some(destination("cluster")));
        assert_eq!(effective_export(&bs.spec, &with_default()), Some(&destination("cluster")));
        assert_eq!(filled.metadata, bs.metadata, "only the spec is filled in");
    }

    #[test]
    fn its_own_destination_wins_and_a_session_that_records_nothing_exports_nothing() {
        let own = json!({"s3": {"endpoint": "http://mine:8333", "bucket": "mine", "credentialsSecret": {"name": "k"}}});
        let bs =
            Arc::new(SessionBuilder::new(json!({"image": "i", "recording": {"trace": true, "export": own}})).build());
        let kept = with_cluster_defaults(bs.clone(), &with_default());
        assert!(Arc::ptr_eq(&kept, &bs));
        assert_eq!(effective_export(&bs.spec, &with_default()).map(|e| e.s3.bucket.as_str()), Some("mine"));

        let silent = Arc::new(SessionBuilder::new(json!({"image": "i"})).build());
        assert!(Arc::ptr_eq(&with_cluster_defaults(silent.clone(), &with_default()), &silent));
        assert!(effective_export(&silent.spec, &with_default()).is_none());
        let plain = Arc::new(SessionBuilder::new(json!({"image": "i", "recording": {"video": true}})).build());
        assert!(Arc::ptr_eq(&with_cluster_defaults(plain.clone(), &Settings::default()), &plain));
    }
}
