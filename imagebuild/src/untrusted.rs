//! Checks for every name and path the builder did not choose itself: package
//! names and versions from the npm registry or a lock, OS package names,
//! Chromium's revision, tarball entry names and link targets. Each check is a
//! pure function; a refusal is an [`UnsafeInput`] naming where the value came
//! from, the field, the value (escaped and shortened) and what to do.
//!
//! Two dangers: a name that would put a file outside the layer's directories
//! (`..`, an absolute path, a link pointing out, a device file), and a name
//! that would change the meaning of a Dockerfile `RUN` line or of the shell
//! inside it (newlines, shell metacharacters, quotes, a leading `-` read as an
//! option). Sizes are bounded so a hostile tarball cannot exhaust memory.

use std::fmt;

/// Longest npm package name npm itself publishes (validate-npm-package-name).
pub const MAX_NPM_NAME: usize = 214;
/// Longest version string (npm versions in practice stay under 64).
pub const MAX_VERSION: usize = 256;
/// Longest OS package name (Debian and rpm names in practice stay under 64).
pub const MAX_OS_PACKAGE: usize = 128;
/// Longest short token (a Chromium revision, a browser version).
pub const MAX_TOKEN: usize = 64;
/// Longest path component (Linux NAME_MAX).
pub const MAX_COMPONENT: usize = 255;
/// Longest path (Linux PATH_MAX).
pub const MAX_PATH: usize = 4096;
/// Longest URL the builder fetches.
pub const MAX_URL: usize = 8192;
/// Most packages in the CLI's dependency closure (it has 3; a registry cannot make the builder walk thousands).
pub const MAX_CLOSURE: usize = 64;
/// Most characters shown of a refused value: enough to recognise it, never a wall of text.
const SHOWN_CHARS: usize = 120;

/// What is wrong with a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// Nothing where a name is needed.
    #[error("is empty")]
    Empty,
    /// Longer than the limit.
    #[error("is {len} bytes long; the limit is {max}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A character outside the allowed set (shell syntax, quotes, whitespace, control characters).
    #[error("contains {ch:?}, which is not allowed here ({allowed})")]
    Forbidden {
        /// The first offending character.
        ch: char,
        /// The characters that are allowed.
        allowed: &'static str,
    },
    /// Starts with `-`, which a command would read as an option.
    #[error("starts with `-`, which a command would read as an option")]
    LeadingDash,
    /// An absolute path where a relative one is needed.
    #[error("is an absolute path; it would be written outside the layer's directory")]
    Absolute,
    /// A relative path where an absolute one is needed.
    #[error("is not an absolute path")]
    NotAbsolute,
    /// A `..` component.
    #[error("has a `..` component; it would escape its directory")]
    ParentDir,
    /// Not a single file name.
    #[error("is not a single file name")]
    NotFileName,
    /// Not UTF-8.
    #[error("is not UTF-8")]
    NotUtf8,
    /// Not an exact `MAJOR.MINOR.PATCH[-pre][+build]` version.
    #[error("is not an exact version (MAJOR.MINOR.PATCH with an optional -prerelease or +build of letters, digits, `.` and `-`)")]
    NotExactVersion,
    /// Not an npm package name.
    #[error("is not an npm package name (`name` or `@scope/name`: letters, digits and `-._~`, each part not starting with `.`, `_` or `-`)")]
    NotNpmName,
    /// Not an http(s) URL.
    #[error("is not an http(s) URL; a registry may not point the builder at a local file")]
    NotHttpUrl,
    /// A symbolic or hard link whose target leaves the package.
    #[error("is a link to {target}, outside the package")]
    LinkOutside {
        /// The link's target, escaped and shortened ([`shown`]).
        target: String,
    },
    /// A device file, FIFO or other special entry.
    #[error("is a {kind}, which a package never needs")]
    SpecialFile {
        /// What kind of entry it is.
        kind: &'static str,
    },
    /// More tarball entries than the limit.
    #[error("is over the limit of {max} entries")]
    TooManyEntries {
        /// The limit.
        max: usize,
    },
    /// More unpacked bytes than the limit.
    #[error("is over the limit of {max} bytes")]
    TooLarge {
        /// The limit.
        max: u64,
    },
    /// More packages than the limit.
    #[error("is over the limit of {max} packages")]
    TooManyPackages {
        /// The limit.
        max: usize,
    },
    /// The same name twice.
    #[error("appears twice")]
    Duplicate,
    /// A file and a directory at one path.
    #[error("is both a file and a directory")]
    FileDirConflict,
}

/// Where an untrusted value came from: decides the remedy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The npm registry or mirror (redacted URL).
    Registry(String),
    /// A lock file (its path).
    Lock(String),
    /// A tarball (what it is, for example `playwright-core@1.58.0`).
    Tarball(String),
    /// The image archive the engine wrote with `docker save` (its path).
    EngineArchive(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Registry(url) => write!(f, "the registry {url}"),
            Origin::Lock(path) => write!(f, "lock {path}"),
            Origin::Tarball(what) => write!(f, "the tarball of {what}"),
            Origin::EngineArchive(path) => write!(f, "the engine's image archive {path}"),
        }
    }
}

/// An untrusted value the builder refuses to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: `{field}` {value} {violation}; {}", self.remedy())]
pub struct UnsafeInput {
    /// Where the value came from.
    pub origin: Origin,
    /// The field, for example `packages[1].name` or `dependencies of playwright@1.0.0`.
    pub field: String,
    /// The value, escaped and shortened for printing.
    pub value: String,
    /// What is wrong with it.
    pub violation: Violation,
}

impl UnsafeInput {
    /// A refusal of `value` in `field` from `origin`.
    pub fn new(origin: Origin, field: impl Into<String>, value: &str, violation: Violation) -> UnsafeInput {
        UnsafeInput { origin, field: field.into(), value: shown(value), violation }
    }

    /// What a human should do, naming the field.
    pub fn remedy(&self) -> String {
        match &self.origin {
            Origin::Registry(_) => format!(
                "do not build with it: the registry's `{}` is hostile or corrupt; point `registry.npm` at a \
                 trusted mirror and run `playpen-imagebuild lock` again",
                self.field
            ),
            Origin::Lock(_) => format!(
                "`playpen-imagebuild lock` never writes such a `{}`: do not build with this lock; run `lock` again \
                 from the spec and review the diff",
                self.field
            ),
            Origin::Tarball(_) => format!(
                "do not build with it: the lock pins a tarball whose `{}` is hostile; check `registry.npm` and \
                 the package's version, then run `playpen-imagebuild lock` again",
                self.field
            ),
            Origin::EngineArchive(_) => format!(
                "the Docker Engine wrote a `docker save` archive whose `{}` does not name a file inside it: do not use this \
                 engine's output; check which engine DOCKER_HOST points at and build again without --oci-layout \
                 until it is trusted",
                self.field
            ),
        }
    }
}

impl crate::failure::Classify for UnsafeInput {
    fn class(&self) -> crate::failure::FailureClass {
        crate::failure::FailureClass::UnsafeInput
    }
}

/// `value` escaped (control characters and quotes visible) and cut on a character
/// boundary, so a refusal never prints a terminal escape or a megabyte.
pub fn shown(value: &str) -> String {
    let mut out: String = value.chars().take(SHOWN_CHARS).flat_map(char::escape_debug).collect();
    if value.chars().nth(SHOWN_CHARS).is_some() {
        out.push('…');
    }
    format!("\"{out}\"")
}

/// Most characters of a parser's message about untrusted text (serde quotes unknown keys
/// and variants verbatim: a hostile lock could otherwise print terminal escapes or a megabyte).
pub const MAX_MESSAGE: usize = 600;

/// `text` with control characters escaped and at most `max_chars` characters (then `…`),
/// for messages that quote untrusted text but are not themselves a value (`shown` is).
pub fn printable(text: &str, max_chars: usize) -> String {
    let (mut out, mut count) = (String::new(), 0);
    for c in text.chars() {
        let piece: String = if c.is_control() { c.escape_debug().collect() } else { c.to_string() };
        count += piece.chars().count();
        if count > max_chars {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

fn check_len(s: &str, max: usize) -> Result<(), Violation> {
    match s.len() {
        0 => Err(Violation::Empty),
        len if len > max => Err(Violation::TooLong { len, max }),
        _ => Ok(()),
    }
}

fn check_chars(s: &str, allowed: &'static str, ok: impl Fn(char) -> bool) -> Result<(), Violation> {
    match s.chars().find(|&c| !ok(c)) {
        Some(ch) => Err(Violation::Forbidden { ch, allowed }),
        None => Ok(()),
    }
}

/// An OS package name (apt, dnf or zypper): letters, digits and `.+-_:`, not starting
/// with `-`. Nothing a shell or a package manager would read as syntax or an option.
pub fn os_package_name(s: &str) -> Result<(), Violation> {
    check_len(s, MAX_OS_PACKAGE)?;
    if s.starts_with('-') {
        return Err(Violation::LeadingDash);
    }
    check_chars(s, "letters, digits and `.+-_:`", |c| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_' | ':')
    })
}

/// A short token safe unquoted in a shell word and as one path component: a letter or
/// digit, then letters, digits and `._-` (a Chromium revision `1247`, a version `147.0.7700.0`).
pub fn token(s: &str) -> Result<(), Violation> {
    check_len(s, MAX_TOKEN)?;
    if s.starts_with('-') {
        return Err(Violation::LeadingDash);
    }
    check_chars(s, "letters, digits and `._-`, starting with a letter or digit", |c| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
    })?;
    if s.starts_with(['.', '_']) {
        return Err(Violation::Forbidden { ch: s.chars().next().unwrap_or('.'), allowed: "a letter or digit first" });
    }
    Ok(())
}

/// `MAJOR.MINOR.PATCH` with plain numbers.
pub fn parse_exact_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((major, minor, patch))
}

/// An exact npm version: `1.2.3`, `1.2.3-alpha.4`, `1.2.3-alpha-2026-01-01+build.5`.
pub fn exact_version(v: &str) -> Result<(), Violation> {
    check_len(v, MAX_VERSION)?;
    let (rest, build) = match v.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    let digits = core.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if digits && parse_exact_version(core).is_some() && pre.is_none_or(ident) && build.is_none_or(ident) {
        Ok(())
    } else {
        Err(Violation::NotExactVersion)
    }
}

/// An npm package name: `name` or `@scope/name`, each part lowercase letters (npm's
/// legacy upper case is accepted), digits and `-._~`, not starting with `.`, `_` or `-`.
/// So it is always one or two path components below `node_modules`, never `..`.
pub fn npm_package_name(s: &str) -> Result<(), Violation> {
    check_len(s, MAX_NPM_NAME)?;
    let part_ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '_', '-'])
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~'))
    };
    let ok = match s.strip_prefix('@') {
        Some(scoped) => scoped.split_once('/').is_some_and(|(scope, name)| part_ok(scope) && part_ok(name)),
        None => part_ok(s),
    };
    if ok {
        Ok(())
    } else {
        Err(Violation::NotNpmName)
    }
}

fn no_control(s: &str) -> Result<(), Violation> {
    check_chars(s, "printable characters", |c| !c.is_control())
}

/// A relative path that stays below its root: no leading `/`, no `..`, no empty or
/// over-long component, no control character. `.` components are dropped. Returns the
/// normalised path (`a/b/c`).
pub fn relative_path(p: &str) -> Result<String, Violation> {
    check_len(p, MAX_PATH)?;
    no_control(p)?;
    if p.starts_with('/') {
        return Err(Violation::Absolute);
    }
    let mut parts = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(Violation::ParentDir),
            _ if part.len() > MAX_COMPONENT => return Err(Violation::TooLong { len: part.len(), max: MAX_COMPONENT }),
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(Violation::Empty);
    }
    Ok(parts.join("/"))
}

/// One file name (a `.bin` command): a relative path of exactly one component.
pub fn file_name(s: &str) -> Result<(), Violation> {
    let normal = relative_path(s)?;
    if normal != s || normal.contains('/') {
        return Err(Violation::NotFileName);
    }
    if s.starts_with('-') {
        return Err(Violation::LeadingDash);
    }
    Ok(())
}

/// An absolute path in the image (an executable): starts with `/`, no `..`, no control
/// character, within [`MAX_PATH`].
pub fn absolute_path(p: &str) -> Result<(), Violation> {
    let Some(rest) = p.strip_prefix('/') else {
        return Err(if p.is_empty() { Violation::Empty } else { Violation::NotAbsolute });
    };
    relative_path(rest).map(|_| ())
}

/// The target of a symbolic link at `link` (both relative to the same root): where it
/// points, normalised, or a refusal when it leaves the root or is absolute.
pub fn link_target_within(link: &str, target: &str) -> Result<String, Violation> {
    let outside = || Violation::LinkOutside { target: shown(target) };
    check_len(target, MAX_PATH)?;
    no_control(target)?;
    if target.starts_with('/') {
        return Err(outside());
    }
    let mut parts: Vec<&str> = link.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    parts.pop(); // the link's own name: targets are relative to its directory
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or_else(outside)?;
            }
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(outside());
    }
    Ok(parts.join("/"))
}

/// An http(s) URL without whitespace or control characters (what a registry may name as a tarball).
pub fn http_url(u: &str) -> Result<(), Violation> {
    check_len(u, MAX_URL)?;
    check_chars(u, "no whitespace or control characters", |c| !c.is_whitespace() && !c.is_control())?;
    let rest = u.strip_prefix("https://").or_else(|| u.strip_prefix("http://")).ok_or(Violation::NotHttpUrl)?;
    if rest.split('/').next().is_none_or(str::is_empty) {
        return Err(Violation::NotHttpUrl);
    }
    Ok(())
}

/// An image reference for `FROM` (`registry:5000/name:tag`, `name@sha256:…`): the
/// reference grammar's characters only (so no whitespace, and no `$` that the Dockerfile
/// would expand), not an option, within [`MAX_PATH`].
pub fn image_reference(s: &str) -> Result<(), Violation> {
    check_len(s, MAX_PATH)?;
    if s.starts_with('-') {
        return Err(Violation::LeadingDash);
    }
    check_chars(s, "letters, digits and `._:/@-`", |c| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '@' | '-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(r: Result<(), Violation>) -> bool {
        matches!(r, Err(Violation::Forbidden { .. }))
    }

    #[test]
    fn os_package_names_refuse_shell_and_options() {
        for ok in ["chromium", "fonts-noto-cjk", "libstdc++6", "libc6:amd64", "nss_util", "g++-12.1"] {
            assert_eq!(os_package_name(ok), Ok(()), "{ok}");
        }
        for bad in ["x; rm -rf /", "x\ny", "x y", "$(id)", "`id`", "a'b", "a\"b", "a|b", "a&b", "a>b", "a\\b", "a*"] {
            assert!(forbidden(os_package_name(bad)), "{bad:?}");
        }
        assert_eq!(os_package_name("--allow-unauthenticated"), Err(Violation::LeadingDash));
        assert_eq!(os_package_name(""), Err(Violation::Empty));
        assert_eq!(os_package_name(&"a".repeat(129)), Err(Violation::TooLong { len: 129, max: 128 }));
        assert_eq!(os_package_name(&"a".repeat(128)), Ok(()));
    }

    #[test]
    fn tokens_are_plain_words() {
        for ok in ["1247", "147.0.7700.0", "r1_2-3"] {
            assert_eq!(token(ok), Ok(()), "{ok}");
        }
        for bad in ["1247; curl x|sh", "1247\nRUN id", "$(id)", "a/b", "..", "'", "a b"] {
            assert!(token(bad).is_err(), "{bad:?}");
        }
        assert_eq!(token("-1"), Err(Violation::LeadingDash));
        assert!(token(".hidden").is_err() && token("_x").is_err());
        assert!(matches!(token(&"1".repeat(65)), Err(Violation::TooLong { .. })));
    }

    #[test]
    fn exact_versions_only() {
        for ok in ["0.1.22", "1.58.0-alpha-2026-01-01", "1.2.3-alpha.4", "1.2.3+build.5", "1.2.3-rc.1+b"] {
            assert_eq!(exact_version(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "1.2",
            "1.2.3.4",
            "^1.2.3",
            "~1.2.3",
            ">=1",
            "*",
            "latest",
            "1.2.3 || 2",
            "1.2.3-",
            "1.2.3+",
            "1.2.x",
            "1.2.3-$(id)",
            "1.2.3-a b",
            "1.2.3-a\n",
            "+1.2.3",
            "1.2.+3",
            "01.2.3x",
            "1.2.3-a/../b",
            "٣.1.2",
        ] {
            assert!(exact_version(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(exact_version(&format!("1.2.3-{}", "a".repeat(300))), Err(Violation::TooLong { .. })));
    }

    #[test]
    fn npm_names_are_one_or_two_safe_components() {
        for ok in ["playwright", "playwright-core", "@playwright/cli", "lodash.get", "a~b", "JSONStream"] {
            assert_eq!(npm_package_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "..", ".", "../x", "@x/..", "@../x", "a/b", "@a/b/c", "@a", "@/b", ".bin", "_x", "-x", "/etc", "a b",
            "a\nb", "a;b", "é", "@a/", "@a/.b",
        ] {
            assert!(npm_package_name(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(npm_package_name(&"a".repeat(215)), Err(Violation::TooLong { .. })));
    }

    #[test]
    fn relative_paths_stay_below_the_root() {
        assert_eq!(relative_path("a/./b//c"), Ok("a/b/c".into()));
        assert_eq!(relative_path("a/../b"), Err(Violation::ParentDir));
        assert_eq!(relative_path("../../etc/passwd"), Err(Violation::ParentDir));
        assert_eq!(relative_path("/etc/passwd"), Err(Violation::Absolute));
        assert_eq!(relative_path("./"), Err(Violation::Empty));
        assert!(forbidden(relative_path("a\nb").map(|_| ())));
        assert!(forbidden(relative_path("a\u{1b}[31m").map(|_| ())));
        assert!(matches!(relative_path(&"a".repeat(256)), Err(Violation::TooLong { len: 256, max: 255 })));
        assert!(matches!(relative_path(&"a/".repeat(2100)), Err(Violation::TooLong { .. })));
        assert_eq!(relative_path("é/ü.js"), Ok("é/ü.js".into()), "Unicode file names are fine");
    }

    #[test]
    fn file_names_are_one_component() {
        assert_eq!(file_name("playwright-cli"), Ok(()));
        assert_eq!(file_name("a/b"), Err(Violation::NotFileName));
        assert_eq!(file_name("./a"), Err(Violation::NotFileName));
        assert_eq!(file_name(".."), Err(Violation::ParentDir));
        assert_eq!(file_name("-rf"), Err(Violation::LeadingDash));
    }

    #[test]
    fn absolute_paths_have_no_parent_components() {
        assert_eq!(absolute_path("/usr/bin/chromium"), Ok(()));
        assert_eq!(absolute_path("usr/bin/chromium"), Err(Violation::NotAbsolute));
        assert_eq!(absolute_path("/usr/../etc/shadow"), Err(Violation::ParentDir));
        assert_eq!(absolute_path(""), Err(Violation::Empty));
        assert!(absolute_path("/a\nb").is_err());
    }

    #[test]
    fn link_targets_must_stay_inside() {
        assert_eq!(link_target_within("pkg/bin/x", "../lib/x.js"), Ok("pkg/lib/x.js".into()));
        assert_eq!(link_target_within("pkg/x", "y"), Ok("pkg/y".into()));
        let outside = |t: &str| Err(Violation::LinkOutside { target: shown(t) });
        assert_eq!(link_target_within("pkg/x", "../../etc/passwd"), outside("../../etc/passwd"));
        assert_eq!(link_target_within("pkg/x", ".."), outside(".."));
        assert_eq!(link_target_within("pkg/x", "/etc/passwd"), outside("/etc/passwd"));
        assert_eq!(link_target_within("x", "../x"), outside("../x"));
    }

    #[test]
    fn only_http_urls_from_a_registry() {
        assert_eq!(http_url("https://registry.npmjs.org/x/-/x-1.0.0.tgz"), Ok(()));
        assert_eq!(http_url("http://127.0.0.1:8080/npm/x.tgz"), Ok(()));
        for bad in ["/etc/shadow", "file:///etc/shadow", "ftp://h/x", "https://", "https:///x", "relative/x.tgz"] {
            assert_eq!(http_url(bad), Err(Violation::NotHttpUrl), "{bad}");
        }
        assert!(forbidden(http_url("https://h/x y")));
        assert!(forbidden(http_url("https://h/x\n")));
    }

    #[test]
    fn image_references_are_one_word() {
        for ok in ["playpen/base:bookworm", "127.0.0.1:5000/a/b:1.0", "debian@sha256:0123abcd", "UPPER_tag-1.2"] {
            assert_eq!(image_reference(ok), Ok(()), "{ok}");
        }
        assert_eq!(image_reference("--platform=linux/arm64"), Err(Violation::LeadingDash));
        assert!(forbidden(image_reference("debian\nRUN id")));
        assert!(forbidden(image_reference("debian:$TAG")), "the Dockerfile would expand it");
        assert!(forbidden(image_reference(" ")));
        assert_eq!(image_reference(""), Err(Violation::Empty));
        assert!(matches!(image_reference(&"a".repeat(4097)), Err(Violation::TooLong { .. })));
    }

    #[test]
    fn refusals_are_escaped_shortened_and_name_the_field() {
        let e = UnsafeInput::new(
            Origin::Registry("http://127.0.0.1:1/npm".into()),
            "dependencies of playwright@1.0.0",
            &format!("evil\n\u{1b}[2J{}", "é".repeat(500)),
            Violation::NotNpmName,
        );
        let text = e.to_string();
        assert!(text.contains("\\n") && text.contains("\\u{1b}") && !text.contains('\n'), "{text}");
        assert!(text.contains('…') && text.chars().count() < 600, "{text}");
        assert!(text.contains("`dependencies of playwright@1.0.0`") && text.contains("registry.npm"), "{text}");
        assert_eq!(crate::failure::Classify::class(&e).exit_code(), 24);
        let lock = UnsafeInput::new(Origin::Lock("x.lock.json".into()), "chromium.package", "a;b", Violation::Empty);
        assert!(lock.to_string().contains("run `lock` again") && lock.to_string().contains("chromium.package"));
        let tar = UnsafeInput::new(Origin::Tarball("p@1".into()), "entry", "../x", Violation::ParentDir);
        assert!(tar.to_string().starts_with("the tarball of p@1: `entry` \"../x\" has a `..` component"), "{tar}");
    }

    #[test]
    fn printable_escapes_controls_and_bounds_length() {
        assert_eq!(printable("unknown variant `\n\u{1b}[2J`", 100), "unknown variant `\\n\\u{1b}[2J`");
        assert_eq!(printable("quotes \"stay\" `as` 'is'", 100), "quotes \"stay\" `as` 'is'");
        let long = printable(&"é".repeat(1000), 10);
        assert_eq!((long.chars().count(), long.ends_with('…')), (11, true));
        assert_eq!(printable("\n\n", 3), "\\n…", "an escape is never cut in half");
    }

    #[test]
    fn shown_cuts_on_character_boundaries() {
        let long = "é".repeat(SHOWN_CHARS + 1);
        assert_eq!(shown(&long).chars().filter(|c| *c == 'é').count(), SHOWN_CHARS);
        assert_eq!(shown("ok"), "\"ok\"");
    }
}
