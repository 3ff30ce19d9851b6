//! Pure cross-field validation of a parsed spec. Every problem names the field
//! and how to fix it; all problems are reported at once.

use crate::spec::{ChromiumSource, ImageSpec, NodeSource, SandboxMode};
use crate::untrusted;
use std::fmt;

/// One problem in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecProblem {
    /// Dotted path of the field, for example `node.version`.
    pub field: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// All problems found in a spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the spec is invalid:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct InvalidSpec(pub Vec<SpecProblem>);

impl crate::failure::Classify for InvalidSpec {
    fn class(&self) -> crate::failure::FailureClass {
        crate::failure::FailureClass::InvalidSpec
    }
}

/// The lowest Node major `@playwright/cli` accepts.
pub const MIN_NODE_MAJOR: u64 = 20;

/// Checks a spec; `Ok(())` when it can be locked.
pub fn validate(spec: &ImageSpec) -> Result<(), InvalidSpec> {
    let mut problems = Vec::new();
    let mut push = |field: &'static str, message: String| problems.push(SpecProblem { field, message });

    if let Err(v) = untrusted::image_reference(&spec.base.image) {
        push(
            "base.image",
            format!(
                "{} {v}: write one image reference, for example `debian:bookworm-slim`",
                untrusted::shown(&spec.base.image)
            ),
        );
    }

    match untrusted::parse_exact_version(&spec.node.version) {
        None => push(
            "node.version",
            format!(
                "`{}` is not an exact version: write it as MAJOR.MINOR.PATCH, for example `22.12.0`",
                spec.node.version
            ),
        ),
        Some((major, _, _)) if major < MIN_NODE_MAJOR => push(
            "node.version",
            format!("Node {} is too old: @playwright/cli needs Node {MIN_NODE_MAJOR} or newer", spec.node.version),
        ),
        Some(_) => {}
    }
    let n = &spec.node;
    match n.source {
        NodeSource::Npm | NodeSource::Dist => {
            if n.file.is_some() || n.sha256.is_some() {
                push("node.file", "`file` and `sha256` apply only to `node.source: file`: remove them".into());
            }
            if n.source == NodeSource::Npm && n.dist_url.is_some() {
                push("node.distUrl", "applies only to `node.source: dist`: remove it or set the source".into());
            }
            if n.source == NodeSource::Npm && n.libc == crate::spec::Libc::Musl {
                push(
                    "node.libc",
                    "the npm registry's node-linux packages are glibc builds: use `node.source: dist` for musl".into(),
                );
            }
        }
        NodeSource::File => {
            if n.file.as_deref().is_none_or(str::is_empty) {
                push("node.file", "`node.source: file` needs the tarball's path in `node.file`".into());
            }
            if !n.sha256.as_deref().is_some_and(is_sha256_hex) {
                push("node.sha256", "`node.source: file` needs the tarball's sha256 as 64 hex digits".into());
            }
        }
    }
    if let Some(url) = &n.dist_url {
        check_url(url, "node.distUrl", &mut push);
    }

    if untrusted::exact_version(&spec.cli.version).is_err() {
        push(
            "cli.version",
            format!(
                "{} is not an exact version: pin one, for example `0.1.22` (ranges and tags are refused)",
                untrusted::shown(&spec.cli.version)
            ),
        );
    }

    let c = &spec.chromium;
    match c.source {
        ChromiumSource::Distribution => {
            if c.url.is_some() || c.sha256.is_some() {
                push("chromium.url", "`url` and `sha256` apply only to `chromium.source: archive`: remove them".into());
            }
        }
        ChromiumSource::Playwright => {
            if c.package.is_some() || c.url.is_some() || c.sha256.is_some() || c.executable_path.is_some() {
                push(
                    "chromium.source",
                    "`source: playwright` takes its revision from playwright-core/browsers.json: remove `package`, \
                     `url`, `sha256` and `executablePath`"
                        .into(),
                );
            }
        }
        ChromiumSource::Archive => {
            match c.url.as_deref() {
                None | Some("") => push("chromium.url", "`source: archive` needs the archive's URL or path".into()),
                Some(u) if u.contains("://") => check_url(u, "chromium.url", &mut push),
                Some(_) => {}
            }
            if !c.sha256.as_deref().is_some_and(is_sha256_hex) {
                push("chromium.sha256", "`source: archive` needs the archive's sha256 as 64 hex digits".into());
            }
            if c.executable_path.is_none() {
                push(
                    "chromium.executablePath",
                    "`source: archive` needs the absolute path of the chromium executable inside the image".into(),
                );
            }
            if c.package.is_some() {
                push("chromium.package", "applies only to `source: distribution`: remove it".into());
            }
        }
    }
    if let Some(package) = &c.package {
        if let Err(v) = untrusted::os_package_name(package) {
            push(
                "chromium.package",
                format!("{} {v}: name one OS package, for example `chromium`", untrusted::shown(package)),
            );
        }
    }
    if let Some(p) = &c.executable_path {
        if let Err(v) = untrusted::absolute_path(p) {
            push(
                "chromium.executablePath",
                format!("{} {v}: it must be an absolute path in the image", untrusted::shown(p)),
            );
        }
    }

    match (spec.sandbox.mode, spec.sandbox.reason.as_deref().map(str::trim)) {
        (SandboxMode::Disabled, None | Some("")) => push(
            "sandbox.reason",
            "turning Chromium's sandbox off is a recorded choice: say why in `sandbox.reason`, or keep \
             `mode: Enforced` and run the Pod with the emitted seccomp profile"
                .into(),
        ),
        (SandboxMode::Enforced, Some(_)) => {
            push("sandbox.reason", "is only recorded for `mode: Disabled`: remove it".into());
        }
        _ => {}
    }

    if spec.user.uid == 0 || spec.user.gid == 0 {
        push(
            "user.uid",
            "the image must run as a non-root user: use a non-zero uid and gid (the Pod runs as 1000)".into(),
        );
    }
    if !is_login_name(&spec.user.name) {
        push(
            "user.name",
            format!("`{}` is not a valid login name: use [a-z_][a-z0-9_-]*, at most 32 characters", spec.user.name),
        );
    }

    for (field, names) in [("packages", &spec.packages), ("fonts", &spec.fonts)] {
        for name in names {
            if let Err(v) = untrusted::os_package_name(name) {
                push(
                    field,
                    format!("{} {v}: it must be one package name, with no shell syntax", untrusted::shown(name)),
                );
            }
        }
    }

    if let Some(package) = spec.video_recorder.as_ref().and_then(|v| v.package.as_ref()) {
        if let Err(v) = untrusted::os_package_name(package) {
            push(
                "videoRecorder.package",
                format!(
                    "{} {v}: name one OS package that installs ffmpeg, for example `ffmpeg`",
                    untrusted::shown(package)
                ),
            );
        }
    }

    check_url(&spec.registry.npm, "registry.npm", &mut push);
    if let Some(var) = &spec.registry.token_env {
        if var.is_empty() || !var.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
            push(
                "registry.tokenEnv",
                "must be the NAME of an environment variable (letters, digits, `_`), not a token".into(),
            );
        }
    }

    if problems.is_empty() {
        Ok(())
    } else {
        Err(InvalidSpec(problems))
    }
}

fn check_url(url: &str, field: &'static str, push: &mut impl FnMut(&'static str, String)) {
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        push(field, format!("`{}` must be an http(s) URL", crate::redact::redact_url(url)));
        return;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') || url.contains("_authToken=") || url.contains("token=") {
        push(
            field,
            format!(
                "`{}` carries a credential: remove it and put the token in an environment variable named by \
                 `registry.tokenEnv`",
                crate::redact::redact_url(url)
            ),
        );
    }
}

/// 64 lowercase or uppercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

fn is_login_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && s.len() <= 32
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    const OK: &str = "base: {image: playpen/base:bookworm}\nnode: {version: 22.12.0}\ncli: {version: 0.1.22}\nchromium: {source: distribution}\n";

    fn problems(yaml: &str) -> Vec<SpecProblem> {
        validate(&parse_spec(yaml, "t").unwrap()).err().map(|e| e.0).unwrap_or_default()
    }

    fn fields(yaml: &str) -> Vec<&'static str> {
        problems(yaml).into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn minimal_spec_is_valid() {
        assert_eq!(problems(OK), vec![]);
    }

    #[test]
    fn old_or_loose_node_versions_are_refused() {
        let p = problems(&OK.replace("22.12.0", "18.19.0"));
        assert_eq!(p[0].field, "node.version");
        assert!(p[0].message.contains("20 or newer"));
        assert_eq!(fields(&OK.replace("22.12.0", "'22'")), vec!["node.version"]);
        assert_eq!(fields(&OK.replace("22.12.0", "^22.1.0")), vec!["node.version"]);
    }

    #[test]
    fn cli_version_must_be_exact() {
        assert_eq!(fields(&OK.replace("0.1.22", "latest")), vec!["cli.version"]);
        assert_eq!(fields(&OK.replace("0.1.22", "1.58.0-alpha-2026-01-01")), Vec::<&str>::new());
    }

    #[test]
    fn file_source_needs_path_and_digest() {
        let yaml = OK.replace("{version: 22.12.0}", "{version: 22.12.0, source: file}");
        assert_eq!(fields(&yaml), vec!["node.file", "node.sha256"]);
        let ok = OK.replace(
            "{version: 22.12.0}",
            &format!("{{version: 22.12.0, source: file, file: /tmp/n.tgz, sha256: {}}}", "a".repeat(64)),
        );
        assert_eq!(fields(&ok), Vec::<&str>::new());
    }

    #[test]
    fn archive_chromium_needs_url_digest_and_executable() {
        let yaml = OK.replace("{source: distribution}", "{source: archive}");
        assert_eq!(fields(&yaml), vec!["chromium.url", "chromium.sha256", "chromium.executablePath"]);
    }

    #[test]
    fn disabling_the_sandbox_needs_a_reason() {
        let p = problems(&format!("{OK}sandbox: {{mode: Disabled}}\n"));
        assert_eq!(p[0].field, "sandbox.reason");
        assert!(p[0].message.contains("seccomp"));
        assert_eq!(fields(&format!("{OK}sandbox: {{mode: Disabled, reason: gVisor node}}\n")), Vec::<&str>::new());
    }

    #[test]
    fn root_user_is_refused() {
        assert_eq!(fields(&format!("{OK}user: {{uid: 0}}\n")), vec!["user.uid"]);
    }

    #[test]
    fn package_names_cannot_smuggle_shell() {
        assert_eq!(fields(&format!("{OK}packages: ['curl; rm -rf /']\n")), vec!["packages"]);
        assert_eq!(fields(&format!("{OK}videoRecorder: {{package: 'ffmpeg && id'}}\n")), vec!["videoRecorder.package"]);
        assert!(fields(&format!("{OK}videoRecorder: {{package: ffmpeg-free}}\n")).is_empty());
        assert!(fields(&format!("{OK}videoRecorder: {{}}\n")).is_empty());
        assert_eq!(fields(&format!("{OK}fonts: [fonts-noto-cjk, libstdc++6]\n")), Vec::<&str>::new());
    }

    #[test]
    fn chromium_package_and_paths_cannot_smuggle_shell() {
        let with = |c: &str| fields(&OK.replace("{source: distribution}", c));
        assert_eq!(with("{source: distribution, package: 'chromium; curl x|sh'}"), vec!["chromium.package"]);
        assert_eq!(with("{source: distribution, package: '--allow-downgrades'}"), vec!["chromium.package"]);
        assert_eq!(with("{source: distribution, package: chromium-headless}"), Vec::<&str>::new());
        assert_eq!(with("{source: distribution, executablePath: /usr/../bin/sh}"), vec!["chromium.executablePath"]);
        assert_eq!(fields(&OK.replace("playpen/base:bookworm", "'x\nRUN id'")), vec!["base.image"]);
        assert_eq!(fields(&OK.replace("playpen/base:bookworm", "'--platform=evil'")), vec!["base.image"]);
        assert_eq!(fields(&format!("{OK}fonts: ['-f']\n")), vec!["fonts"]);
        assert_eq!(fields(&format!("{OK}packages: ['{}']\n", "a".repeat(129))), vec!["packages"]);
    }

    #[test]
    fn credentials_in_registry_urls_are_refused_and_redacted() {
        let p = problems(&format!("{OK}registry: {{npm: 'https://bob:s3cret@npm.corp/'}}\n"));
        assert_eq!(p[0].field, "registry.npm");
        assert!(!p[0].to_string().contains("s3cret"), "{}", p[0]);
        assert!(p[0].message.contains("tokenEnv"));
    }

    #[test]
    fn all_problems_are_reported_together() {
        let yaml = OK.replace("22.12.0", "16.0.0").replace("0.1.22", "next");
        let err = validate(&parse_spec(&yaml, "t").unwrap()).unwrap_err();
        assert_eq!(err.0.len(), 2);
        assert!(err.to_string().contains("node.version") && err.to_string().contains("cli.version"));
    }
}
