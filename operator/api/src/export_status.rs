//! What the exporter container reports of its uploads (issue 33): written
//! by `playpen-session export` to [`EXPORT_STATUS_FILE`] in the recordings'
//! state directory, read back by the runtime and (later) the operator for
//! the session's status. One type on both sides; the reader bounds it.

use serde::{Deserialize, Serialize};

/// The exporter's state directory inside `recordings/`: its ledger, its
/// copy of the manifest and this status. Retention leaves subdirectories
/// alone.
pub const EXPORT_STATE_DIR: &str = ".export";
/// The status file in [`EXPORT_STATE_DIR`].
pub const EXPORT_STATUS_FILE: &str = "status.json";
/// The ledger in [`EXPORT_STATE_DIR`]: one JSON line per upload (the file,
/// its size and modification time when read). Retention in the browser
/// container reads it to delete uploaded recordings first.
pub const EXPORT_LEDGER_FILE: &str = "ledger.jsonl";
/// The file in [`EXPORT_STATE_DIR`] naming the file being uploaded now
/// ([`Uploading`]), absent between uploads: retention never deletes it.
pub const EXPORT_UPLOADING_FILE: &str = "uploading.json";
/// The longest error text kept.
pub const MAX_ERROR_CHARS: usize = 1024;
/// The most bytes of a status file (or its answer) a reader takes.
pub const MAX_STATUS_BYTES: usize = 16 * 1024;

/// The exporter's progress since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportStatus {
    /// `s3://<bucket>/<prefix>/`.
    pub destination: String,
    /// Objects stored (segments, manifests, markers).
    pub objects: u64,
    /// Bytes stored.
    pub bytes: u64,
    /// Segments in the manifest.
    pub segments: u64,
    /// `interrupted` markers written.
    pub interruptions: u64,
    /// When the last object was stored (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_upload: Option<String>,
    /// The last failure, the store's answer with secrets masked; cleared by
    /// the next success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The file the exporter is uploading now ([`EXPORT_UPLOADING_FILE`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Uploading {
    /// Its path, as the exporter's ledger names it.
    pub path: String,
}

impl ExportStatus {
    /// The status cut to its bounds (the reader's side: a Pod wrote it).
    pub fn bounded(mut self) -> Self {
        let cut = |text: &str, max: usize| text.chars().filter(|c| !c.is_control()).take(max).collect::<String>();
        self.destination = cut(&self.destination, 1100);
        self.last_upload = self.last_upload.map(|t| cut(&t, 40));
        self.last_error = self.last_error.map(|e| cut(&e, MAX_ERROR_CHARS));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_status_is_cut_to_its_bounds() {
        let status = ExportStatus {
            destination: "s3://b/".repeat(1000),
            last_error: Some(format!("\u{1b}[2J{}", "e".repeat(5000))),
            ..ExportStatus::default()
        }
        .bounded();
        assert_eq!(status.destination.chars().count(), 1100);
        let error = status.last_error.expect("kept");
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS);
        assert!(!error.contains('\u{1b}'));
    }

    #[test]
    fn the_wire_form_is_camel_case() {
        let text = serde_json::to_string(&ExportStatus {
            destination: "s3://rec/a/".into(),
            last_upload: Some("2026-12-04T00:00:00Z".into()),
            ..ExportStatus::default()
        })
        .expect("json");
        assert!(text.contains("\"lastUpload\":\"2026-12-04T00:00:00Z\""), "{text}");
        assert!(!text.contains("lastError"), "{text}");
    }
}
