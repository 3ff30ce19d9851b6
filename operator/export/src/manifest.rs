//! The per-session manifest and the `interrupted` marker (pure): what a
//! player or a script reads to stitch a session's segments together, and
//! what says that a crash cut a recording short.
//!
//! The manifest is rewritten whole after each video segment and once per
//! exporter pass for the trace files (`<prefix>/manifest.json`);
//! a marker is written once per start that found a recording cut short
//! (`<prefix>/interrupted/<time>.json`), never rewritten.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::keys::{ObjectKey, SegmentKind};
use crate::prefix::SessionId;

/// The manifest format this runtime writes; a reader refuses a newer one.
pub const MANIFEST_FORMAT: u32 = 1;

/// The session, as the manifest names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

impl From<&SessionId> for SessionInfo {
    fn from(id: &SessionId) -> Self {
        Self { namespace: id.namespace.clone(), name: id.name.clone(), uid: id.uid.clone() }
    }
}

/// One uploaded object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// Its key in the bucket.
    pub key: ObjectKey,
    /// Video or trace.
    pub kind: SegmentKind,
    /// When recording into it began.
    pub start: DateTime<Utc>,
    /// When it was finished (for the live trace: when this copy was taken).
    pub end: DateTime<Utc>,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its content, lowercase hex.
    pub sha256: String,
}

/// The segments of one session, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// Whose recordings.
    pub session: SessionInfo,
    /// When this copy of the manifest was written.
    pub updated: DateTime<Utc>,
    /// Every uploaded object, ordered by kind, then start, then key.
    pub segments: Vec<Segment>,
    /// The keys of the `interrupted` markers, oldest first.
    #[serde(default)]
    pub interruptions: Vec<ObjectKey>,
}

/// Why a manifest cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not JSON of this shape.
    #[error("the manifest is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    /// Written by a newer runtime.
    #[error("the manifest has format {found}; this runtime reads format {MANIFEST_FORMAT} (upgrade the reader)")]
    NewerFormat {
        /// What it says.
        found: u32,
    },
}

impl Manifest {
    /// An empty manifest for `session`.
    pub fn new(session: SessionInfo, now: DateTime<Utc>) -> Self {
        Self { format: MANIFEST_FORMAT, session, updated: now, segments: Vec::new(), interruptions: Vec::new() }
    }

    /// Adds `segment`, or replaces the one with its key (the live trace is
    /// uploaded again at each rotation), keeping the order.
    pub fn record(&mut self, segment: Segment, now: DateTime<Utc>) {
        self.segments.retain(|s| s.key != segment.key);
        let at = self.segments.partition_point(|s| order(s) <= order(&segment));
        self.segments.insert(at, segment);
        self.updated = now;
    }

    /// Notes an `interrupted` marker.
    pub fn interrupted(&mut self, marker: ObjectKey, now: DateTime<Utc>) {
        if !self.interruptions.contains(&marker) {
            self.interruptions.push(marker);
        }
        self.updated = now;
    }

    /// The manifest as the object's body.
    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings, numbers and lists always serialises.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// A manifest read back.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ManifestError> {
        #[derive(Deserialize)]
        struct Format {
            format: u32,
        }
        let Format { format } = serde_json::from_slice(bytes)?;
        if format > MANIFEST_FORMAT {
            return Err(ManifestError::NewerFormat { found: format });
        }
        Ok(serde_json::from_slice(bytes)?)
    }
}

fn order(segment: &Segment) -> (SegmentKind, DateTime<Utc>, &ObjectKey) {
    (segment.kind, segment.start, &segment.key)
}

/// The object a start writes when it finds a recording a crash cut short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptedMarker {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// Whose recording.
    pub session: SessionInfo,
    /// When the cut-short recording had started, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording_started: Option<DateTime<Utc>>,
    /// When the runtime found it (its next start).
    pub detected: DateTime<Utc>,
    /// The last segment uploaded before the cut: what follows it is lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_segment: Option<ObjectKey>,
    /// What happened, for a human.
    pub reason: String,
}

impl InterruptedMarker {
    /// The marker as the object's body.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::keys::Layout;
    use crate::prefix::{PrefixTemplate, DEFAULT_PREFIX};

    fn t(s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 10, 7, 0, s).unwrap()
    }

    fn session() -> SessionId {
        SessionId { namespace: "ns".into(), name: "demo".into(), uid: "u-1".into() }
    }

    fn layout() -> Layout {
        Layout::new(PrefixTemplate::parse(DEFAULT_PREFIX).unwrap().render(&session(), t(0)).unwrap())
    }

    fn segment(key: ObjectKey, kind: SegmentKind, start: u32, bytes: u64) -> Segment {
        Segment { key, kind, start: t(start), end: t(start + 1), bytes, sha256: "00".repeat(32) }
    }

    #[test]
    fn segments_stay_in_order_whatever_order_they_are_uploaded_in() {
        let l = layout();
        let mut manifest = Manifest::new(SessionInfo::from(&session()), t(0));
        manifest.record(segment(l.video(2).unwrap(), SegmentKind::Video, 20, 2), t(30));
        manifest.record(segment(l.trace("trace-1.trace").unwrap(), SegmentKind::Trace, 1, 9), t(31));
        manifest.record(segment(l.video(1).unwrap(), SegmentKind::Video, 10, 1), t(32));
        let keys: Vec<&str> = manifest.segments.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            ["ns/demo/u-1/video/000001.webm", "ns/demo/u-1/video/000002.webm", "ns/demo/u-1/trace/trace-1.trace"]
        );
        assert_eq!(manifest.updated, t(32));
    }

    #[test]
    fn a_key_uploaded_again_replaces_its_entry() {
        let l = layout();
        let mut manifest = Manifest::new(SessionInfo::from(&session()), t(0));
        manifest.record(segment(l.trace("trace-1.trace").unwrap(), SegmentKind::Trace, 1, 9), t(2));
        manifest.record(segment(l.trace("trace-1.trace").unwrap(), SegmentKind::Trace, 1, 90), t(3));
        assert_eq!(manifest.segments.len(), 1);
        assert_eq!(manifest.segments[0].bytes, 90);
    }

    #[test]
    fn the_manifest_round_trips_with_camel_case_fields() {
        let l = layout();
        let mut manifest = Manifest::new(SessionInfo::from(&session()), t(0));
        manifest.record(segment(l.video(1).unwrap(), SegmentKind::Video, 10, 1), t(11));
        manifest.interrupted(l.interrupted(t(12)), t(12));
        manifest.interrupted(l.interrupted(t(12)), t(13));
        let json = manifest.to_json();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["format"], 1);
        assert_eq!(value["segments"][0]["kind"], "video");
        assert_eq!(value["segments"][0]["start"], "2026-12-10T07:00:10Z");
        assert_eq!(value["interruptions"].as_array().unwrap().len(), 1);
        assert_eq!(Manifest::from_json(&json).unwrap(), manifest);
    }

    #[test]
    fn a_newer_format_is_refused_by_name() {
        let err = Manifest::from_json(br#"{"format": 2, "future": true}"#).unwrap_err();
        assert!(matches!(err, ManifestError::NewerFormat { found: 2 }), "{err}");
        assert!(matches!(Manifest::from_json(b"{}").unwrap_err(), ManifestError::Invalid(_)));
    }

    #[test]
    fn the_marker_names_the_last_segment_and_the_times() {
        let marker = InterruptedMarker {
            format: MANIFEST_FORMAT,
            session: SessionInfo::from(&session()),
            recording_started: Some(t(1)),
            detected: t(50),
            last_segment: Some(layout().video(3).unwrap()),
            reason: "the recording in progress at the last start was not finished".into(),
        };
        let value: serde_json::Value = serde_json::from_slice(&marker.to_json()).unwrap();
        assert_eq!(value["recordingStarted"], "2026-12-10T07:00:01Z");
        assert_eq!(value["lastSegment"], "ns/demo/u-1/video/000003.webm");
        assert_eq!(value["session"]["uid"], "u-1");
    }
}
