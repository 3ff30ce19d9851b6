//! The export part of a session's status (pure): `status.recording.export`
//! and the `RecordingsExported` condition, from what the exporter last
//! reported through its runtime ([`crate::export_watch`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use playpen_api::export_status::ExportStatus;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, RecordingExportStatus};

use super::Cond;

/// Reason while the exporter uploads.
pub const EXPORTING: &str = "Exporting";
/// Reason while uploads fail.
pub const UPLOAD_FAILING: &str = "UploadFailing";
/// Reason before the exporter's first report reached the operator.
pub const NOT_REPORTED: &str = "NotReported";

/// The status fields a report gives.
pub fn export_status(report: &ExportStatus) -> RecordingExportStatus {
    RecordingExportStatus {
        destination: report.destination.clone(),
        objects: report.objects,
        bytes: report.bytes,
        segments: report.segments,
        interruptions: report.interruptions,
        // A time the Pod wrote that does not parse is left out, not trusted.
        last_upload: report.last_upload.as_deref().and_then(|t| t.parse::<Timestamp>().ok()).map(Time),
        last_error: report.last_error.clone(),
    }
}

/// The `RecordingsExported` condition for what was last reported (`None`:
/// nothing yet).
pub(super) fn condition(report: Option<&ExportStatus>) -> Cond {
    match report {
        None => Cond::new(
            condition::RECORDINGS_EXPORTED,
            false,
            NOT_REPORTED,
            "the exporter has not reported yet; recordings stay on the volume until it uploads them",
        ),
        Some(ExportStatus { last_error: Some(error), destination, .. }) => Cond::new(
            condition::RECORDINGS_EXPORTED,
            false,
            UPLOAD_FAILING,
            format!(
                "uploads to {} fail: {error}; recording continues on the volume and the uploads are retried",
                shown(destination)
            ),
        ),
        Some(ExportStatus { destination, .. }) => Cond::new(
            condition::RECORDINGS_EXPORTED,
            true,
            EXPORTING,
            format!("recordings are uploaded to {} as they finish", shown(destination)),
        ),
    }
}

fn shown(destination: &str) -> &str {
    if destination.is_empty() {
        "the store"
    } else {
        destination
    }
}

/// Whether the stored `status` already says what `report` would make it
/// say, up to counts that changed less than `counts_every` after the last
/// upload it shows: a status write per uploaded segment per session would
/// be most of the API server's writes, so the counts may lag by that much,
/// while a change of the condition is written at once.
pub fn up_to_date(
    status: Option<&BrowserSessionStatus>,
    report: &ExportStatus,
    now: Timestamp,
    counts_every: std::time::Duration,
) -> bool {
    let Some(status) = status else { return false };
    let want = condition(Some(report));
    let said = status.conditions.iter().find(|c| c.type_ == condition::RECORDINGS_EXPORTED);
    let condition_same = said.is_some_and(|c| (c.status == "True") == want.ok && c.reason == want.reason);
    let shown = status.recording.as_ref().and_then(|r| r.export.as_ref());
    let Some(shown) = shown.filter(|_| condition_same) else { return false };
    let fresh = export_status(report);
    if shown.last_error != fresh.last_error || shown.destination != fresh.destination {
        return false;
    }
    if shown == &fresh {
        return true;
    }
    let lag = shown.last_upload.as_ref().map(|t| now.duration_since(t.0));
    lag.is_some_and(|lag| lag.unsigned_abs() < counts_every)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::children::{EgressDefaults, Identity};
    use crate::fixtures::SessionBuilder;
    use crate::recovery::Recovery;
    use crate::status::{compute, Observed};
    use playpen_api::BrowserSession;
    use serde_json::json;
    use std::time::Duration;

    fn now() -> Timestamp {
        "2026-12-05T12:00:00Z".parse().expect("ts")
    }

    fn exporting() -> BrowserSession {
        let export = json!({"s3": {"endpoint": "http://store.rec:8333", "bucket": "rec", "prefix": "{uid}",
            "credentialsSecret": {"name": "s3"}}});
        SessionBuilder::new(json!({"image": "i", "recording": {"video": true, "export": export}})).build()
    }

    fn with(bs: &BrowserSession, report: Option<&ExportStatus>, at: Timestamp) -> BrowserSessionStatus {
        let id = Identity::of(bs).expect("id");
        let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: report };
        compute(bs, &id, observed, &EgressDefaults::default(), at)
    }

    fn exported(s: &BrowserSessionStatus) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        s.conditions.iter().find(|c| c.type_ == condition::RECORDINGS_EXPORTED).expect("condition")
    }

    fn uploading(objects: u64, at: &str) -> ExportStatus {
        ExportStatus {
            destination: "s3://rec/ns/u1/".into(),
            objects,
            bytes: objects * 1000,
            segments: objects / 2,
            last_upload: Some(at.into()),
            ..ExportStatus::default()
        }
    }

    #[test]
    fn only_an_exporting_session_has_the_condition() {
        let plain = SessionBuilder::new(json!({"image": "i", "recording": {"video": true}})).build();
        let s = with(&plain, Some(&uploading(2, "2026-12-05T11:59:00Z")), now());
        assert!(s.conditions.iter().all(|c| c.type_ != condition::RECORDINGS_EXPORTED));
        assert!(s.recording.expect("recording").export.is_none(), "a report without an export is not shown");
    }

    #[test]
    fn before_a_report_then_uploading_then_failing() {
        let bs = exporting();
        let s = with(&bs, None, now());
        assert_eq!((exported(&s).status.as_str(), exported(&s).reason.as_str()), ("False", NOT_REPORTED));
        assert!(s.recording.as_ref().expect("recording").export.is_none());

        let s = with(&bs, Some(&uploading(4, "2026-12-05T11:59:30Z")), now());
        assert_eq!((exported(&s).status.as_str(), exported(&s).reason.as_str()), ("True", EXPORTING));
        assert!(exported(&s).message.contains("s3://rec/ns/u1/"));
        let shown = s.recording.as_ref().and_then(|r| r.export.clone()).expect("export status");
        assert_eq!((shown.objects, shown.bytes, shown.segments), (4, 4000, 2));
        assert_eq!(shown.last_upload.map(|t| t.0.to_string()), Some("2026-12-05T11:59:30Z".into()));

        let failing = ExportStatus {
            last_error: Some("PUT rec/ns/u1/video/000003.webm: 403 Forbidden: SignatureDoesNotMatch".into()),
            ..uploading(4, "2026-12-05T11:59:30Z")
        };
        let s = with(&bs, Some(&failing), now());
        let c = exported(&s);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", UPLOAD_FAILING));
        assert!(c.message.contains("SignatureDoesNotMatch") && c.message.contains("retried"), "{}", c.message);
        assert!(s.conditions.iter().any(|c| c.type_ == condition::READY), "Ready is still computed");
    }

    #[test]
    fn a_time_the_pod_wrote_that_does_not_parse_is_left_out() {
        let shown = export_status(&ExportStatus { last_upload: Some("yesterday".into()), ..ExportStatus::default() });
        assert!(shown.last_upload.is_none());
    }

    #[test]
    fn condition_changes_wake_at_once_and_counts_at_most_every_interval() {
        let bs = exporting();
        let every = Duration::from_secs(120);
        let first = uploading(4, "2026-12-05T11:59:00Z");
        assert!(!up_to_date(None, &first, now(), every), "no status yet");
        assert!(!up_to_date(bs.status.as_ref(), &first, now(), every));
        let shown = with(&bs, Some(&first), now());
        assert!(up_to_date(Some(&shown), &first, now(), every), "the same report");
        // New counts within the interval after the shown upload wait...
        let later = uploading(6, "2026-12-05T12:00:30Z");
        let at = |t: &str| t.parse::<Timestamp>().expect("ts");
        assert!(up_to_date(Some(&shown), &later, at("2026-12-05T12:00:30Z"), every));
        // ...and are written once it has passed.
        assert!(!up_to_date(Some(&shown), &later, at("2026-12-05T12:01:01Z"), every));
        // A failure is written at once, and so is its end.
        let failing = ExportStatus { last_error: Some("403".into()), ..first.clone() };
        assert!(!up_to_date(Some(&shown), &failing, now(), every));
        let failed = with(&bs, Some(&failing), now());
        assert!(up_to_date(Some(&failed), &failing, now(), every));
        let other_error = ExportStatus { last_error: Some("500".into()), ..first.clone() };
        assert!(!up_to_date(Some(&failed), &other_error, now(), every), "a new answer from the store");
        assert!(!up_to_date(Some(&failed), &first, now(), every), "uploads resumed");
    }
}
