//! Where each object of a session goes under its prefix (pure):
//!
//! ```text
//! <prefix>/manifest.json                      the segments in order (manifest.rs)
//! <prefix>/video/000001.webm                  video segments, numbered from 1
//! <prefix>/trace/<path under traces/>         trace files, named as the CLI names them,
//!                                             so the directory opens in the trace viewer
//! <prefix>/interrupted/20261210T070509.123Z.json   one per start that found a recording cut short
//! ```

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::prefix::{is_safe, Prefix, MAX_PREFIX_LEN};

/// The most a key adds to its prefix (bytes), `/` included: the trace path
/// limit plus `/trace/`.
const MAX_SUFFIX_LEN: usize = "/trace/".len() + MAX_TRACE_PATH_LEN;
// The longest prefix and the longest suffix fit S3's 1,024-byte key limit.
const _: () = assert!(MAX_PREFIX_LEN + MAX_SUFFIX_LEN <= 1024);
/// The longest trace path accepted (bytes).
pub const MAX_TRACE_PATH_LEN: usize = 400;
/// Video segment numbers have this many digits (zero-padded), so keys sort in order.
const SEQ_DIGITS: usize = 6;

/// What a segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SegmentKind {
    /// A WebM video segment.
    Video,
    /// A trace file (a chunk, its network log, a resource, a screencast frame).
    Trace,
}

/// An object key: the prefix and a suffix this module made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ObjectKey(String);

impl ObjectKey {
    /// The key as the store sees it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a trace file cannot be given a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Video segments count from 1.
    #[error("video segment numbers start at 1 (got 0)")]
    SequenceZero,
    /// More segments than the key layout numbers.
    #[error("video segment {seq} is past the last number the key layout has ({max})")]
    SequenceTooLarge {
        /// The number asked for.
        seq: u32,
        /// The largest allowed.
        max: u32,
    },
    /// The trace path is not a plain relative path of safe characters.
    #[error("trace file {path:?} cannot be exported: {why}")]
    TracePath {
        /// The path relative to the traces directory.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The keys of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    prefix: Prefix,
}

impl Layout {
    /// The keys under `prefix`.
    pub fn new(prefix: Prefix) -> Self {
        Self { prefix }
    }

    /// The session's prefix.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn key(&self, suffix: &str) -> ObjectKey {
        ObjectKey(format!("{}/{suffix}", self.prefix))
    }

    /// `<prefix>/manifest.json`.
    pub fn manifest(&self) -> ObjectKey {
        self.key("manifest.json")
    }

    /// `<prefix>/video/<seq, 6 digits>.webm`, `seq` from 1.
    pub fn video(&self, seq: u32) -> Result<ObjectKey, KeyError> {
        const MAX: u32 = 999_999;
        match seq {
            0 => Err(KeyError::SequenceZero),
            seq if seq > MAX => Err(KeyError::SequenceTooLarge { seq, max: MAX }),
            seq => Ok(self.key(&format!("video/{seq:0SEQ_DIGITS$}.webm"))),
        }
    }

    /// `<prefix>/trace/<path>`, `path` relative to the traces directory
    /// (`trace-<ms>.trace`, `resources/<sha1>`, `screencast/<frame>.jpeg`).
    pub fn trace(&self, path: &str) -> Result<ObjectKey, KeyError> {
        let fail = |why| Err(KeyError::TracePath { path: path.to_owned(), why });
        if path.is_empty() {
            return fail("it is empty");
        }
        if path.len() > MAX_TRACE_PATH_LEN {
            return fail("it is longer than 400 bytes");
        }
        if path.starts_with('/') {
            return fail("it is absolute");
        }
        if path.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
            return fail("it has an empty, '.' or '..' segment");
        }
        if path.chars().any(|c| c != '/' && !is_safe(c)) {
            return fail("it has a character outside letters, digits and - _ . ! * ' ( ) = @");
        }
        Ok(self.key(&format!("trace/{path}")))
    }

    /// `<prefix>/interrupted/<at, UTC, to the millisecond>.json`.
    pub fn interrupted(&self, at: DateTime<Utc>) -> ObjectKey {
        self.key(&format!("interrupted/{}.json", at.format("%Y%m%dT%H%M%S%.3fZ")))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::prefix::{PrefixTemplate, SessionId};

    fn layout() -> Layout {
        let session = SessionId { namespace: "ns".into(), name: "demo".into(), uid: "u-1".into() };
        let at = Utc.with_ymd_and_hms(2026, 12, 10, 7, 5, 9).unwrap();
        Layout::new(PrefixTemplate::parse("rec/{namespace}/{name}/{uid}").unwrap().render(&session, at).unwrap())
    }

    #[test]
    fn keys_sit_under_the_prefix() {
        let layout = layout();
        assert_eq!(layout.manifest().as_str(), "rec/ns/demo/u-1/manifest.json");
        assert_eq!(layout.video(1).unwrap().as_str(), "rec/ns/demo/u-1/video/000001.webm");
        assert_eq!(layout.video(999_999).unwrap().as_str(), "rec/ns/demo/u-1/video/999999.webm");
        assert_eq!(
            layout.trace("trace-1765350309123.trace").unwrap().as_str(),
            "rec/ns/demo/u-1/trace/trace-1765350309123.trace"
        );
        assert_eq!(layout.trace("resources/ab12.json").unwrap().as_str(), "rec/ns/demo/u-1/trace/resources/ab12.json");
        let at = Utc.with_ymd_and_hms(2026, 12, 10, 7, 5, 9).unwrap() + chrono::Duration::milliseconds(123);
        assert_eq!(layout.interrupted(at).as_str(), "rec/ns/demo/u-1/interrupted/20261210T070509.123Z.json");
    }

    #[test]
    fn video_keys_sort_in_segment_order() {
        let layout = layout();
        let keys: Vec<ObjectKey> = [1, 2, 9, 10, 99, 100, 12_345].iter().map(|&n| layout.video(n).unwrap()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(layout.video(0).unwrap_err(), KeyError::SequenceZero);
        assert_eq!(layout.video(1_000_000).unwrap_err(), KeyError::SequenceTooLarge { seq: 1_000_000, max: 999_999 });
    }

    #[test]
    fn trace_paths_stay_below_the_traces_key() {
        let layout = layout();
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/", "a b", "a\nb", "é"] {
            assert!(
                matches!(layout.trace(bad), Err(KeyError::TracePath { .. })),
                "{bad:?} got {:?}",
                layout.trace(bad)
            );
        }
        assert!(layout.trace(&"a".repeat(MAX_TRACE_PATH_LEN)).is_ok());
        assert!(layout.trace(&"a".repeat(MAX_TRACE_PATH_LEN + 1)).is_err());
        // A screencast frame as Playwright names it (seen on the node).
        let frame = "screencast/page@94a9eff6a6905111e9423fb3c741ca75-1796426199543.jpeg";
        assert!(layout.trace(frame).expect("a frame").as_str().ends_with(&format!("/trace/{frame}")));
    }
}
