//! Shortening and cleaning text that comes from outside the operator (a
//! tenant's spec, what a browser Pod writes to its termination message, a
//! kubelet's reason) before it goes into a status, an Event or a log line.
//! One place, so no caller slices a string on a byte index again.

/// Longest condition message the status schema accepts (the bound
/// `metav1.Condition` itself carries).
pub const CONDITION_MESSAGE_MAX_BYTES: usize = 32_768;
/// Longest condition reason (`metav1.Condition`'s bound).
pub const CONDITION_REASON_MAX_BYTES: usize = 1024;
/// Longest Event note the events.k8s.io/v1 API accepts.
pub const EVENT_NOTE_MAX_BYTES: usize = 1024;

/// What an over-long text ends with after it is cut.
const ELLIPSIS: char = '…';

/// `text` cut to at most `max` bytes in total, on a character boundary; a cut
/// text ends with "…" (counted in `max`).
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = floor_char_boundary(text, max.saturating_sub(ELLIPSIS.len_utf8()));
    let mut out = String::with_capacity(end + ELLIPSIS.len_utf8());
    out.push_str(&text[..end]);
    if out.len() + ELLIPSIS.len_utf8() <= max {
        out.push(ELLIPSIS);
    }
    out
}

/// The largest index `<= at` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    // A UTF-8 character is at most 4 bytes: at most 3 steps back.
    (at.saturating_sub(3)..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

/// Whether `reason` is a valid `metav1.Condition` reason: CamelCase-ish,
/// `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, at most 1024 bytes.
pub fn is_condition_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else { return false };
    bytes.len() <= CONDITION_REASON_MAX_BYTES
        && first.is_ascii_alphabetic()
        && (last.is_ascii_alphanumeric() || *last == b'_')
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':'))
}

/// `reason` if the API server would accept it as a condition reason, else
/// `fallback`: a status patch with a bad reason would be refused, and the
/// session would never get a status again.
pub fn condition_reason(reason: &str, fallback: &str) -> String {
    if is_condition_reason(reason) {
        reason.to_owned()
    } else {
        fallback.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("", 0), "");
        assert_eq!(truncate("exact", 5), "exact");
    }

    #[test]
    fn cuts_inside_a_multi_byte_character_without_panicking() {
        // The reported crash: "/x" + 600 × "é" cut at 1024 bytes lands inside a character.
        let text = format!("/x{}", "é".repeat(600));
        for max in 0..=text.len() + 2 {
            let cut = truncate(&text, max);
            if text.len() <= max {
                assert_eq!(cut, text);
            } else {
                assert!(cut.len() <= max, "max {max}: {} bytes", cut.len());
                assert!(text.starts_with(cut.trim_end_matches('…')), "max {max}: not a prefix");
            }
        }
        let cut = truncate(&text, 1024);
        assert!(cut.ends_with('…') && cut.len() <= 1024, "{} bytes", cut.len());
        assert!(cut.starts_with("/xé"));
    }

    #[test]
    fn four_byte_characters_and_tiny_limits() {
        let text = "🦀".repeat(10);
        assert_eq!(truncate(&text, 3), "…");
        assert_eq!(truncate(&text, 2), "");
        assert_eq!(truncate(&text, 7), "🦀…");
    }

    #[test]
    fn condition_reasons_follow_the_api_pattern() {
        for good in ["NoUsableSandbox", "a", "Pod_Failed", "x:y,z_"] {
            assert!(is_condition_reason(good), "{good}");
        }
        for bad in ["", "1abc", "has space", "trailing,", "é", "a-b", &"A".repeat(1025)] {
            assert!(!is_condition_reason(bad), "{bad}");
        }
        assert_eq!(condition_reason("bad reason", "BrowserContainerFailed"), "BrowserContainerFailed");
        assert_eq!(condition_reason("Evicted", "X"), "Evicted");
    }
}
