//! The base's package mirror: fail-fast settings rendered into the package steps
//! (so a refused or black-holed mirror ends a step in seconds, not after apt's
//! default minutes of retries), and a pure classifier that reads a failed step's
//! output and names the mirror it could not reach.
//!
//! The mirror is the one the base image's own sources name (`/etc/apt/sources.list*`,
//! `/etc/yum.repos.d`, `/etc/zypp/repos.d`); the spec does not override it.

use crate::redact::redact_url;
use crate::untrusted::printable;

/// Seconds a package manager waits for a connection, or for the next byte, before
/// giving up on a mirror: a live mirror answers well inside this, a dead one never does.
pub const FETCH_TIMEOUT_SECS: u32 = 10;

/// Retries after a failed fetch (apt, dnf): one, so a transient drop is survived.
/// Measured here (apt 2.6) against a listener that accepts and never answers: each
/// attempt costs two timeouts (apt reconnects once by itself), so `apt-get update`
/// gives up after 42 s; against a refused port, at once.
pub const FETCH_RETRIES: u32 = 1;

/// apt configuration file the package steps write, and remove when they succeed.
pub const APT_CONF: &str = "/etc/apt/apt.conf.d/80playpen-fail-fast";

/// Shell that writes [`APT_CONF`]: bounded connect/read timeouts and retries for every
/// apt transport. apt ignores the keys it does not know, so old bases are unaffected.
pub fn apt_fail_fast_setup() -> String {
    let t = FETCH_TIMEOUT_SECS;
    let r = FETCH_RETRIES;
    format!(
        "printf '%s\\n' 'Acquire::Retries \"{r}\";' 'Acquire::http::Timeout \"{t}\";' \
         'Acquire::https::Timeout \"{t}\";' 'Acquire::ftp::Timeout \"{t}\";' > {APT_CONF}"
    )
}

/// dnf/microdnf/yum options with the same bounds (`minrate` keeps its default: a
/// transfer slower than it for `timeout` seconds is abandoned).
pub fn dnf_fail_fast_options() -> String {
    format!("--setopt=timeout={FETCH_TIMEOUT_SECS} --setopt=retries={FETCH_RETRIES}")
}

/// zypper reads its settings from `$ZYPP_CONF`: a copy of the base's with bounded
/// connect and no-progress timeouts appended (libzypp's defaults are 60 s and 180 s).
pub const ZYPP_CONF: &str = "/tmp/playpen-zypp.conf";

/// Shell that writes [`ZYPP_CONF`].
pub fn zypper_fail_fast_setup() -> String {
    let t = FETCH_TIMEOUT_SECS;
    format!(
        "{{ cat /etc/zypp/zypp.conf 2>/dev/null || true; printf '\\n[main]\\ndownload.connect_timeout = {t}\\n\
         download.transfer_timeout = {t}\\n'; }} > {ZYPP_CONF}"
    )
}

/// What a package manager prints when it cannot reach a mirror (apt, dnf/yum via
/// librepo/curl, zypper via libzypp/curl). A 404 or a missing package is not here:
/// the mirror answered.
const UNREACHABLE_MARKERS: &[&str] = &[
    // apt
    "Could not connect to",
    "Unable to connect to",
    "Connection timed out",
    "Connection failed",
    "Temporary failure resolving",
    "Could not resolve",
    "No route to host",
    "Network is unreachable",
    "Could not wait for server fd",
    "Certificate verification failed",
    "Could not handshake",
    // dnf, microdnf, yum (librepo, curl)
    "Cannot download repomd.xml",
    "Failed to download metadata for repo",
    "Errors during downloading metadata for repository",
    "Cannot find a valid baseurl for repo",
    "Curl error (6)",
    "Curl error (7)",
    "Curl error (28)",
    "Curl error (35)",
    "Curl error (60)",
    "curl#6 -",
    "curl#7 -",
    "curl#28 -",
    // zypper (libzypp)
    "Download (curl) error for",
    "Timeout exceeded when accessing",
];

/// Output that only says a fetch is in progress or was skipped. Evidence of an
/// unreachable mirror only when the watchdog stopped the step (it never failed itself).
const WAITING_MARKERS: &[&str] = &["Ign:", "[Connecting to", "[Waiting for headers]", "Retrying"];

/// URL path parts that start below a mirror's root: cut there to name the mirror.
const BELOW_ROOT: &[&str] = &["/dists/", "/pool/", "/repodata/", "/Packages", "/InRelease", "/Release"];

/// Longest detail quoted from the build output.
const MAX_DETAIL: usize = 300;
/// Longest mirror URL shown.
const MAX_URL_SHOWN: usize = 200;

/// A package step that could not reach its mirror.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorFailure {
    /// The mirror's URL as the output names it (redacted, control characters escaped,
    /// bounded), or `None` when the output names none.
    pub mirror: Option<String>,
    /// The line that shows it (cleaned and bounded the same way).
    pub detail: String,
}

/// The output of the last build step (the classic builder starts each with `Step N/M :`).
pub fn last_step(log: &str) -> &str {
    let mut start = 0;
    let mut offset = 0;
    for line in log.split_inclusive('\n') {
        if line.starts_with("Step ") && line.contains(" : ") {
            start = offset;
        }
        offset += line.len();
    }
    &log[start..]
}

/// Whether `output` (one step's) shows a package manager that could not reach its
/// mirror; `stopped` says the watchdog ended the step, when waiting counts too.
pub fn classify(output: &str, stopped: bool) -> Option<MirrorFailure> {
    let hit = |line: &str| {
        UNREACHABLE_MARKERS.iter().any(|m| line.contains(m))
            || (stopped && WAITING_MARKERS.iter().any(|m| line.contains(m)))
    };
    let lines: Vec<&str> = output.lines().collect();
    let at = lines.iter().position(|l| hit(l))?;
    // The URL is on the marker line (apt's `W: Failed to fetch URL  reason`, curl's
    // `... for URL`) or on the `Err:`/`Ign:` line just before it (apt prints the reason
    // indented under it); else the first URL of any failure line.
    let mirror = url_in(lines[at])
        .or_else(|| lines[..at].iter().rev().take(3).find_map(|l| url_in(l)))
        .or_else(|| lines.iter().filter(|l| hit(l) || l.contains("Failed to fetch")).find_map(|l| url_in(l)));
    Some(MirrorFailure {
        mirror: mirror.map(|u| printable(&redact_url(&mirror_root(&u)), MAX_URL_SHOWN)),
        detail: printable(lines[at].trim(), MAX_DETAIL),
    })
}

/// The first http(s)/ftp URL in a line.
fn url_in(line: &str) -> Option<String> {
    let start = ["http://", "https://", "ftp://"].iter().filter_map(|s| line.find(s)).min()?;
    let url: String = line[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '\'' | '"' | '`' | '<' | '>' | ')' | ']'))
        .collect();
    Some(url.trim_end_matches([',', '.', ':', ';']).to_owned())
}

/// The mirror's root: the URL cut where a distribution path below it begins.
fn mirror_root(url: &str) -> String {
    let cut = BELOW_ROOT.iter().filter_map(|p| url.find(p)).min().unwrap_or(url.len());
    url[..cut].trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apt 2.6 (bookworm) against a port nothing listens on.
    const APT_REFUSED: &str = "Step 3/8 : RUN printf x && apt-get update\n\
        ---> Running in 0a1b2c\n\
        Ign:1 http://172.17.0.1:40123/debian bookworm InRelease\n\
        Ign:1 http://172.17.0.1:40123/debian bookworm InRelease\n\
        Err:1 http://172.17.0.1:40123/debian bookworm InRelease\n\
        \x20 Could not connect to 172.17.0.1:40123 (172.17.0.1). - connect (111: Connection refused)\n\
        Reading package lists...\n\
        W: Failed to fetch http://172.17.0.1:40123/debian/dists/bookworm/InRelease  Could not connect to 172.17.0.1:40123 (172.17.0.1). - connect (111: Connection refused)\n\
        W: Some index files failed to download. They have been ignored, or old ones used instead.\n\
        Reading package lists...\n\
        E: Unable to locate package chromium\n";

    /// apt 2.6 against a listener that accepts and never answers.
    const APT_SILENT: &str = "Ign:1 http://172.17.0.1:40124/debian bookworm InRelease\n\
        Err:1 http://172.17.0.1:40124/debian bookworm InRelease\n\
        \x20 Connection failed [IP: 172.17.0.1 40124]\n\
        Reading package lists...\n\
        W: Failed to fetch http://172.17.0.1:40124/debian/dists/bookworm/InRelease  Connection failed [IP: 172.17.0.1 40124]\n";

    #[test]
    fn apt_refused_names_the_mirror_root() {
        let f = classify(last_step(APT_REFUSED), false).unwrap();
        assert_eq!(f.mirror.as_deref(), Some("http://172.17.0.1:40123/debian"));
        assert!(f.detail.starts_with("Could not connect to 172.17.0.1:40123") && f.detail.contains("refused"), "{f:?}");
    }

    #[test]
    fn apt_timeouts_dns_and_routes_are_recognised() {
        let f = classify(APT_SILENT, false).unwrap();
        assert_eq!(f.mirror.as_deref(), Some("http://172.17.0.1:40124/debian"));
        assert_eq!(f.detail, "Connection failed [IP: 172.17.0.1 40124]");
        for reason in [
            "Temporary failure resolving 'deb.debian.org'",
            "Unable to connect to proxy.corp:3128:",
            "Could not connect to deb.debian.org:80 (151.101.2.132), connection timed out",
            "Failed to connect to 10.0.0.1 port 80: No route to host",
            "connect (101: Network is unreachable)",
            "Could not wait for server fd - select (11: Resource temporarily unavailable)",
            "Certificate verification failed: The certificate is NOT trusted.",
        ] {
            let out = format!("Err:2 https://mirror.corp/ubuntu jammy-updates InRelease\n  {reason}\n");
            let f = classify(&out, false).unwrap_or_else(|| panic!("{reason}"));
            assert_eq!(f.mirror.as_deref(), Some("https://mirror.corp/ubuntu"), "{reason}");
        }
    }

    #[test]
    fn dnf_yum_and_zypper_failures_are_recognised() {
        let cases = [
            (
                "Curl error (7): Couldn't connect to server for http://10.1.2.3/fedora/linux/releases/41/Everything/x86_64/os/repodata/repomd.xml [Failed to connect to 10.1.2.3 port 80: Connection refused]",
                Some("http://10.1.2.3/fedora/linux/releases/41/Everything/x86_64/os"),
            ),
            (
                "Curl error (28): Timeout was reached for https://cdn.redhat.com/content/dist/rhel9/repodata/repomd.xml [Connection timed out after 15000 milliseconds]",
                Some("https://cdn.redhat.com/content/dist/rhel9"),
            ),
            ("Error: Failed to download metadata for repo 'fedora': Cannot download repomd.xml: Cannot download repodata/repomd.xml: All mirrors were tried", None),
            (
                "http://mirror.centos.org/centos/7/os/x86_64/repodata/repomd.xml: [Errno 14] curl#7 - \"Failed to connect to 10.0.0.9: Connection refused\"",
                Some("http://mirror.centos.org/centos/7/os/x86_64"),
            ),
            (
                "Download (curl) error for 'http://download.opensuse.org/tumbleweed/repo/oss/repodata/repomd.xml':",
                Some("http://download.opensuse.org/tumbleweed/repo/oss"),
            ),
            ("Timeout exceeded when accessing 'https://download.opensuse.org/update/leap/15.6/oss/repodata/repomd.xml'.", Some("https://download.opensuse.org/update/leap/15.6/oss")),
        ];
        for (line, mirror) in cases {
            let f = classify(line, false).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(f.mirror.as_deref(), mirror, "{line}");
        }
    }

    #[test]
    fn a_reachable_mirror_that_lacks_something_is_not_unreachable() {
        for out in [
            "E: Unable to locate package nope",
            "Err:1 http://deb.debian.org/debian nope InRelease\n  404  Not Found [IP: 151.101.2.132 80]",
            "Error: Unable to find a match: nope",
            "No provider of 'nope' found.",
            "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]\nFetched 8.9 MB in 2s",
        ] {
            assert_eq!(classify(out, false), None, "{out}");
        }
    }

    #[test]
    fn waiting_counts_only_when_the_watchdog_stopped_the_step() {
        let out = "Ign:1 http://172.17.0.1:40125/debian bookworm InRelease\n0% [Connecting to 172.17.0.1 (172.17.0.1)]";
        assert_eq!(classify(out, false), None);
        let f = classify(out, true).unwrap();
        assert_eq!(f.mirror.as_deref(), Some("http://172.17.0.1:40125/debian"));
    }

    #[test]
    fn only_the_last_step_is_read() {
        let log = "Step 2/5 : RUN apt-get update\nW: Could not connect to old.example:80\nStep 3/5 : RUN false\n";
        assert_eq!(last_step(log), "Step 3/5 : RUN false\n");
        assert_eq!(classify(last_step(log), false), None);
        assert_eq!(last_step("no steps\n"), "no steps\n");
    }

    #[test]
    fn quoted_output_is_redacted_escaped_and_bounded() {
        let out = format!(
            "Err:1 http://user:pw@mirror.corp/debian{} bookworm InRelease\n  Could not connect to x \u{1b}[2J{}\n",
            "a".repeat(500),
            "b".repeat(1000)
        );
        let f = classify(&out, false).unwrap();
        let mirror = f.mirror.unwrap();
        assert!(mirror.starts_with("http://***@mirror.corp/debian") && !mirror.contains("pw"), "{mirror}");
        assert!(mirror.chars().count() <= MAX_URL_SHOWN + 1 && mirror.ends_with('…'));
        assert!(!f.detail.chars().any(char::is_control) && f.detail.contains("\\u{1b}[2J"), "{}", f.detail);
        assert!(f.detail.chars().count() <= MAX_DETAIL + 1);
    }

    #[test]
    fn the_rendered_settings_are_bounded() {
        let apt = apt_fail_fast_setup();
        for key in ["Acquire::Retries \"1\";", "Acquire::http::Timeout \"10\";", "Acquire::https::Timeout \"10\";"] {
            assert!(apt.contains(key), "{apt}");
        }
        assert!(apt.contains("Acquire::ftp::Timeout") && apt.ends_with(APT_CONF));
        assert_eq!(dnf_fail_fast_options(), "--setopt=timeout=10 --setopt=retries=1");
        let z = zypper_fail_fast_setup();
        assert!(z.contains("download.connect_timeout = 10") && z.contains("download.transfer_timeout = 10"), "{z}");
    }
}
