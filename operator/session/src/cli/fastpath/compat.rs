//! What the fast client was built for, and the CLI's own version rule.
//!
//! The fast client reproduces the argument parsing, messages and socket
//! protocol of one pinned `@playwright/cli` (and the playwright-core it
//! depends on). It is used only when the installed packages, the client
//! version the Node client would report, and the daemon of the session are
//! exactly that version; anything else is handed to the Node client.

use std::cmp::Ordering;

/// The `@playwright/cli` version whose client this reproduces.
pub const BUILT_FOR_CLI: &str = "0.1.22";
/// The playwright-core version that `@playwright/cli` pins: the client and
/// daemon version in the session files.
pub const BUILT_FOR_CORE: &str = "1.64.0-alpha-1790635538000";

/// `compareSemver` of playwright-core's `socketConnection.js`: the numeric
/// `major.minor.patch` first, then the `-alpha-`/`-beta-` suffix as a
/// timestamp (a release without such a suffix sorts after every pre-release).
///
/// Not the `semver` crate: SemVer precedence is not this rule, and the
/// verdict must be the Node client's. Measured with semver 1.0.28:
/// `1.64.0-alpha-1790635538000` sorts *before* `1.64.0-alpha-999` (the
/// pre-release is one identifier, compared as text), where playwright-core
/// compares the timestamps as numbers and sorts it after; and `1.64` is a
/// parse error there, a comparable version here (missing parts are NaN, as
/// in JS). The test `semver_precedence_is_not_this_rule` keeps the first case.
pub fn compare_semver(a: &str, b: &str) -> Ordering {
    let base = |v: &str| -> Vec<f64> {
        let end = v.find('-').unwrap_or(v.len());
        v[..end].split('.').map(js_number).collect()
    };
    let (pa, pb) = (base(a), base(b));
    for i in 0..3 {
        let (x, y) = (pa.get(i).copied().unwrap_or(f64::NAN), pb.get(i).copied().unwrap_or(f64::NAN));
        // JS: `x > y` then `x < y`; NaN compares false both ways.
        if x > y {
            return Ordering::Greater;
        }
        if x < y {
            return Ordering::Less;
        }
    }
    let (ta, tb) = (suffix_timestamp(a), suffix_timestamp(b));
    if ta > tb {
        Ordering::Greater
    } else if ta < tb {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

/// `Session.isCompatible`: a client may drive a daemon of its own version or older.
pub fn is_compatible(client: &str, daemon: &str) -> bool {
    compare_semver(client, daemon) != Ordering::Less
}

/// `Number(s)` for the decimal strings of a version (anything else is NaN).
fn js_number(s: &str) -> f64 {
    let t = s.trim();
    if t.is_empty() {
        return 0.0;
    }
    if t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) {
        t.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// The `<suffix>` of `^\d+\.\d+\.\d+-(alpha|beta)-(.+)$`.
fn prerelease_suffix(version: &str) -> Option<&str> {
    let mut rest = version;
    for sep in ['.', '.', '-'] {
        let end = rest.find(|c: char| !c.is_ascii_digit())?;
        if end == 0 || !rest[end..].starts_with(sep) {
            return None;
        }
        rest = &rest[end + 1..];
    }
    let suffix = rest.strip_prefix("alpha-").or_else(|| rest.strip_prefix("beta-"))?;
    (!suffix.is_empty() && !suffix.contains(['\n', '\r', '\u{2028}', '\u{2029}'])).then_some(suffix)
}

/// `parseSuffixTimestamp`: `x.y.z-alpha-<n>` → n, `-YYYY-MM-DD` → that day's
/// epoch ms; anything else (a release) → +∞.
fn suffix_timestamp(version: &str) -> f64 {
    match prerelease_suffix(version) {
        None => f64::INFINITY,
        Some(suffix) => date_suffix_ms(suffix).unwrap_or_else(|| js_number(suffix)),
    }
}

/// `new Date("YYYY-MM-DD").getTime()` (UTC midnight), or None if not that shape.
fn date_suffix_ms(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &s[r];
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok()).flatten()
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Some(f64::NAN);
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days as f64 * 86_400_000.0)
}

/// Why the fast client cannot speak for this install or session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The installed `@playwright/cli` is not the pinned one.
    #[error("the installed @playwright/cli is {found}, the fast client was built for {BUILT_FOR_CLI}")]
    Cli {
        /// The version found (or why none was).
        found: String,
    },
    /// The installed playwright-core (or the client version it reports) is not the pinned one.
    #[error("the client version is {found}, the fast client was built for {BUILT_FOR_CORE}")]
    Client {
        /// The version found (or why none was).
        found: String,
    },
    /// The session's daemon is another version.
    #[error(
        "session '{session}' runs daemon v{daemon}, the fast client speaks v{BUILT_FOR_CORE} (the Node client {verdict} it)"
    )]
    Daemon {
        /// The session name.
        session: String,
        /// The daemon's version from its session file.
        daemon: String,
        /// What the CLI's own `isCompatible` rule makes of it.
        verdict: &'static str,
    },
}

/// The daemon check: the fast path needs exactly the pinned version.
pub fn check_daemon(session: &str, daemon: &str) -> Result<(), Mismatch> {
    if daemon == BUILT_FOR_CORE {
        return Ok(());
    }
    let verdict = if is_compatible(BUILT_FOR_CORE, daemon) { "will drive" } else { "will refuse" };
    Err(Mismatch::Daemon { session: session.to_owned(), daemon: daemon.to_owned(), verdict })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_parts_come_first() {
        assert_eq!(compare_semver("1.64.0", "1.63.9"), Ordering::Greater);
        assert_eq!(compare_semver("1.9.0", "1.10.0"), Ordering::Less);
        assert_eq!(compare_semver("2.0.0-alpha-1", "1.99.99"), Ordering::Greater);
    }

    #[test]
    fn suffixes_are_timestamps_and_a_release_sorts_last() {
        assert_eq!(compare_semver(BUILT_FOR_CORE, BUILT_FOR_CORE), Ordering::Equal);
        assert_eq!(compare_semver(BUILT_FOR_CORE, "1.64.0-alpha-1790635537999"), Ordering::Greater);
        assert_eq!(compare_semver(BUILT_FOR_CORE, "1.64.0"), Ordering::Less);
        assert_eq!(compare_semver("1.64.0-beta-2026-01-02", "1.64.0-alpha-2026-01-01"), Ordering::Greater);
        assert_eq!(date_suffix_ms("1970-01-02"), Some(86_400_000.0));
        assert_eq!(date_suffix_ms("2026-11-29"), Some(1_795_910_400_000.0));
    }

    #[test]
    fn semver_precedence_is_not_this_rule() {
        // SemVer compares the pre-release `alpha-1790635538000` with
        // `alpha-999` as text (Less); playwright-core compares timestamps.
        assert_eq!(compare_semver(BUILT_FOR_CORE, "1.64.0-alpha-999"), Ordering::Greater);
    }

    #[test]
    fn is_compatible_is_client_newer_or_equal() {
        assert!(is_compatible(BUILT_FOR_CORE, BUILT_FOR_CORE));
        assert!(is_compatible(BUILT_FOR_CORE, "1.63.0"));
        assert!(!is_compatible(BUILT_FOR_CORE, "1.65.0"));
        assert!(!is_compatible(BUILT_FOR_CORE, "1.64.0"));
    }

    #[test]
    fn the_fast_path_needs_the_exact_daemon_version() {
        assert_eq!(check_daemon("s", BUILT_FOR_CORE), Ok(()));
        let older = check_daemon("s", "1.63.0").unwrap_err().to_string();
        assert!(older.contains("daemon v1.63.0") && older.contains("will drive"), "{older}");
        let newer = check_daemon("s", "1.65.0").unwrap_err().to_string();
        assert!(newer.contains("will refuse"), "{newer}");
        assert!(!newer.contains('\n'));
    }
}
