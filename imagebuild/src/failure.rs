//! Failure classes shared by every module: each has a stable exit code and a
//! remedy a human can act on. Module errors map onto one of these classes.

use std::fmt;

/// What kind of failure ended a command. The exit codes 13–16 match the
/// standalone installer's table (registry auth, unreachable, absent, browser
/// download); the rest extend it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// The spec or the lock is malformed or contradicts itself.
    InvalidSpec,
    /// A local file (spec, lock, archive, CA bundle) could not be read or written.
    Io,
    /// The registry or mirror refused the credentials (HTTP 401/403).
    AuthRejected,
    /// The registry or mirror could not be reached (DNS, TCP, TLS, 5xx).
    RegistryUnreachable,
    /// The package or version does not exist there (HTTP 404, missing version).
    PackageAbsent,
    /// The browser build could not be downloaded (CDN blocked).
    BrowserDownloadBlocked,
    /// A download's digest differs from the lock.
    DigestMismatch,
    /// The base image's OS family is not one the builder knows.
    UnknownOsFamily,
    /// The built image lacks libraries Chromium needs.
    MissingHostDependencies,
    /// Docker Engine is not reachable or a build step failed.
    Engine,
    /// The finished image did not pass verification (launch, revision).
    VerificationFailed,
    /// `--push`: the image registry refused or asked for credentials.
    PushAuthRejected,
    /// `--push`: the image registry could not be reached or refused the push for another reason.
    PushFailed,
    /// A name or path from the registry, a lock or a tarball would escape the layer or
    /// inject into the build (`..`, an absolute path, a link out, shell syntax, over a limit).
    UnsafeInput,
    /// A package step could not reach the base image's OS package mirror (refused,
    /// timed out, no route, DNS, TLS), or the build watchdog stopped it waiting.
    PackageMirrorUnreachable,
}

impl FailureClass {
    /// Every class, for documentation and exhaustive tests.
    pub const ALL: [FailureClass; 15] = [
        FailureClass::InvalidSpec,
        FailureClass::Io,
        FailureClass::AuthRejected,
        FailureClass::RegistryUnreachable,
        FailureClass::PackageAbsent,
        FailureClass::BrowserDownloadBlocked,
        FailureClass::DigestMismatch,
        FailureClass::UnknownOsFamily,
        FailureClass::MissingHostDependencies,
        FailureClass::Engine,
        FailureClass::VerificationFailed,
        FailureClass::PushAuthRejected,
        FailureClass::PushFailed,
        FailureClass::UnsafeInput,
        FailureClass::PackageMirrorUnreachable,
    ];

    /// The process exit code for this class.
    pub const fn exit_code(self) -> u8 {
        match self {
            FailureClass::InvalidSpec => 10,
            FailureClass::Io => 11,
            FailureClass::AuthRejected => 13,
            FailureClass::RegistryUnreachable => 14,
            FailureClass::PackageAbsent => 15,
            FailureClass::BrowserDownloadBlocked => 16,
            FailureClass::DigestMismatch => 17,
            FailureClass::UnknownOsFamily => 18,
            FailureClass::MissingHostDependencies => 19,
            FailureClass::Engine => 20,
            FailureClass::VerificationFailed => 21,
            FailureClass::PushAuthRejected => 22,
            FailureClass::PushFailed => 23,
            FailureClass::UnsafeInput => 24,
            FailureClass::PackageMirrorUnreachable => 25,
        }
    }

    /// A stable, machine-readable name.
    pub const fn name(self) -> &'static str {
        match self {
            FailureClass::InvalidSpec => "InvalidSpec",
            FailureClass::Io => "Io",
            FailureClass::AuthRejected => "AuthRejected",
            FailureClass::RegistryUnreachable => "RegistryUnreachable",
            FailureClass::PackageAbsent => "PackageAbsent",
            FailureClass::BrowserDownloadBlocked => "BrowserDownloadBlocked",
            FailureClass::DigestMismatch => "DigestMismatch",
            FailureClass::UnknownOsFamily => "UnknownOsFamily",
            FailureClass::MissingHostDependencies => "MissingHostDependencies",
            FailureClass::Engine => "Engine",
            FailureClass::VerificationFailed => "VerificationFailed",
            FailureClass::PushAuthRejected => "PushAuthRejected",
            FailureClass::PushFailed => "PushFailed",
            FailureClass::UnsafeInput => "UnsafeInput",
            FailureClass::PackageMirrorUnreachable => "PackageMirrorUnreachable",
        }
    }

    /// What a human should do about it.
    pub const fn remedy(self) -> &'static str {
        match self {
            FailureClass::InvalidSpec => {
                "fix the field named above in the spec (or re-run `lock` if the lock is stale)"
            }
            FailureClass::Io => "check the path and its permissions",
            FailureClass::AuthRejected => {
                "the registry refused the credentials: refresh the token in the environment variable named by \
                 `registry.tokenEnv` (never pass it as a flag), or point `registry.npm` at a registry that needs none"
            }
            FailureClass::RegistryUnreachable => {
                "the registry could not be reached: check the proxy, set `registry.npm` to a reachable mirror, and \
                 for a TLS-intercepting proxy set `registry.caBundle` to its CA bundle"
            }
            FailureClass::PackageAbsent => {
                "the package or version is not published there: check the version in the spec, or use a mirror \
                 that carries it"
            }
            FailureClass::BrowserDownloadBlocked => {
                "the browser download host is blocked: use `chromium.source: distribution` (the OS package) or \
                 `chromium.source: archive` with a reachable URL and its sha256"
            }
            FailureClass::DigestMismatch => {
                "the download differs from the lock: do not build with it; if the upstream change is expected, \
                 re-run `playpen-imagebuild lock` and review the diff of the lock"
            }
            FailureClass::UnknownOsFamily => {
                "set `base.osFamily` to apt, dnf or zypper in the spec to say how the base installs packages"
            }
            FailureClass::MissingHostDependencies => {
                "add the missing libraries' packages to `packages` in the spec (the message names them for the \
                 base's family) and rebuild"
            }
            FailureClass::Engine => {
                "start Docker Engine (tests/imagebuild/setup.sh does) and check DOCKER_HOST; see the build log above"
            }
            FailureClass::VerificationFailed => {
                "the image was built but Chromium did not launch as required; see the verification output above"
            }
            FailureClass::PushAuthRejected => {
                "the image registry refused the push's credentials or needs some: export PLAYPEN_REGISTRY_USERNAME \
                 and PLAYPEN_REGISTRY_PASSWORD (or PLAYPEN_REGISTRY_TOKEN) for the tag's registry host (never a \
                 flag); the image is built and tagged locally, so re-running is quick"
            }
            FailureClass::PushFailed => {
                "the image registry could not be reached or refused the push: check the registry host in the tag, \
                 that Docker Engine can reach it (its proxy, DNS, TLS: /etc/docker/certs.d/<host>/ca.crt) and the \
                 engine's message above; the image is built and tagged locally"
            }
            FailureClass::UnsafeInput => {
                "a name or path the builder did not choose would escape the layer or inject into the build: do not \
                 build with it; the message names its source and field (a registry: use a trusted `registry.npm` \
                 and run `lock` again; a lock: run `lock` again from the spec and review the diff)"
            }
            FailureClass::PackageMirrorUnreachable => {
                "the base image's package manager could not reach the mirror named above (its sources: \
                 /etc/apt/sources.list[.d], /etc/yum.repos.d, /etc/zypp/repos.d). Check that containers Docker \
                 Engine starts reach it (DNS, firewall, net.ipv4.ip_forward=1 on the host); to use another mirror \
                 or a proxy, build on a base whose sources name a reachable mirror or whose package manager names \
                 the proxy (apt: Acquire::http::Proxy; dnf: proxy=), set with `base.image`; an https mirror \
                 behind a TLS-intercepting proxy needs that proxy's CA in the base's trust store \
                 (`registry.caBundle` covers only the builder's own downloads). A slow mirror: raise \
                 --build-timeout (PLAYPEN_BUILD_TIMEOUT)"
            }
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Implemented by every module error so the binary can exit with the class's code.
pub trait Classify {
    /// The failure class of this error.
    fn class(&self) -> FailureClass;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn exit_codes_and_names_are_unique_and_nonzero() {
        let codes: HashSet<u8> = FailureClass::ALL.iter().map(|c| c.exit_code()).collect();
        let names: HashSet<&str> = FailureClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(codes.len(), FailureClass::ALL.len());
        assert_eq!(names.len(), FailureClass::ALL.len());
        assert!(!codes.contains(&0) && !codes.contains(&1) && !codes.contains(&2));
    }

    #[test]
    fn installer_codes_are_kept() {
        assert_eq!(FailureClass::AuthRejected.exit_code(), 13);
        assert_eq!(FailureClass::RegistryUnreachable.exit_code(), 14);
        assert_eq!(FailureClass::PackageAbsent.exit_code(), 15);
        assert_eq!(FailureClass::BrowserDownloadBlocked.exit_code(), 16);
        assert_eq!(FailureClass::PackageMirrorUnreachable.exit_code(), 25);
    }

    #[test]
    fn every_remedy_is_actionable() {
        for class in FailureClass::ALL {
            assert!(class.remedy().len() > 20, "{class} needs a remedy");
        }
    }
}
