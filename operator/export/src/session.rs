//! A session's export as the runtime configuration names it
//! ([`RecordingExportConfig`], which the operator and `kubectl playpen
//! record` both make with `RecordingExportConfig::of`) turned into what the
//! uploader and the reader are built from (pure). The prefix's time
//! placeholders come from the session's creation, so both render the same
//! prefix whenever they run.

use chrono::{DateTime, Utc};
use playpen_api::runtime_config::RecordingExportConfig;

use crate::destination::{CredentialsSource, Destination};
use crate::prefix::SessionId;

/// The destination of `export`, signed with `credentials`.
pub fn destination_of(export: &RecordingExportConfig, credentials: CredentialsSource) -> Destination {
    Destination {
        endpoint: export.endpoint.clone(),
        bucket: export.bucket.clone(),
        prefix: export.prefix.clone(),
        region: export.region.clone(),
        path_style: export.path_style,
        credentials,
    }
}

/// The session the prefix names.
pub fn session_of(export: &RecordingExportConfig) -> SessionId {
    SessionId { namespace: export.namespace.clone(), name: export.name.clone(), uid: export.uid.clone() }
}

/// The session's creation from its RFC 3339 text (`metadata.creationTimestamp`,
/// the runtime configuration's `sessionStartedAt`).
pub fn created_at(text: Option<&str>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_config_gives_the_destination_the_session_and_its_creation() {
        let export = RecordingExportConfig {
            endpoint: "http://127.0.0.1:18333".into(),
            bucket: "rec".into(),
            region: "us-east-1".into(),
            prefix: "{namespace}/{date}/{name}/{uid}".into(),
            path_style: true,
            namespace: "team-a".into(),
            name: "demo".into(),
            uid: "u-1".into(),
        };
        let created = created_at(Some("2026-12-10T07:05:09Z")).unwrap();
        assert_eq!(created, Utc.with_ymd_and_hms(2026, 12, 10, 7, 5, 9).unwrap());
        assert_eq!(created_at(Some("yesterday")), None);
        assert_eq!(created_at(None), None);
        let valid =
            destination_of(&export, CredentialsSource::Files { dir: "/etc/playpen/export".into() }).validate().unwrap();
        let prefix = valid.prefix.render(&session_of(&export), created).unwrap();
        assert_eq!(prefix.as_str(), "team-a/2026-12-10/demo/u-1");
    }
}
