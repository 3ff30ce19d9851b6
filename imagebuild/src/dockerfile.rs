//! The Dockerfile, rendered from the lock and the detected OS family by a pure
//! function. Node and the CLI arrive as one verified, deterministic layer tar
//! (`ADD`, no npm and no registry inside the build); OS packages come from the
//! base's own package manager; Playwright's `--with-deps` only on apt.

use crate::image_layout as il;
use crate::lock::{Lock, LockedChromium};
use crate::mirror;
use crate::packages::{chromium_libs, default_ffmpeg_package, install_command};
use crate::spec::{OsFamily, SandboxMode};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Text that Playwright prints (and exits 0) when the host lacks libraries.
pub const MISSING_DEPS_MARKERS: &[&str] =
    &["Host system is missing dependencies", "missing dependencies to run browsers"];

/// Whether command output says the host lacks libraries (a zero exit is not a verdict).
pub fn says_missing_dependencies(output: &str) -> bool {
    MISSING_DEPS_MARKERS.iter().any(|m| output.contains(m))
}

/// Inputs of the renderer.
#[derive(Debug, Clone)]
pub struct RenderInput<'a> {
    /// The lock.
    pub lock: &'a Lock,
    /// The base's family (detected or overridden).
    pub family: OsFamily,
    /// Labels to bake in.
    pub labels: &'a BTreeMap<String, String>,
}

/// The OS packages to install for a lock on a family, sorted and unique.
pub fn os_packages(lock: &Lock, family: OsFamily) -> Vec<String> {
    let mut pkgs: Vec<String> = match &lock.chromium {
        LockedChromium::Distribution { package, .. } => vec![package.clone()],
        // apt: Playwright's --with-deps installs its own set; rpm/zypper: the family's list.
        LockedChromium::Playwright { .. } if family == OsFamily::Apt => vec![],
        LockedChromium::Playwright { .. } | LockedChromium::Archive { .. } => {
            chromium_libs(family).iter().map(|s| (*s).to_owned()).collect()
        }
    };
    pkgs.extend(lock.spec.fonts.iter().cloned());
    pkgs.extend(lock.spec.packages.iter().cloned());
    if lock.video_recorder.is_some() {
        pkgs.push(ffmpeg_package(lock, family));
    }
    pkgs.sort();
    pkgs.dedup();
    pkgs
}

/// dpkg filters for the packages the builder installs on apt bases: no
/// manuals, info pages or message translations (a headless browser shows
/// none), documentation reduced to the copyright files licences require.
/// Chromium's own UI locales live in /usr/lib/chromium and stay.
const DPKG_SLIM: &str = "'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
     'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' \
     'path-include=/usr/share/locale/locale.alias'";

/// One shell command that installs `pkgs` with the family's package manager and cleans its caches.
pub fn install_packages_command(family: OsFamily, pkgs: &[String]) -> String {
    let list = pkgs.join(" ");
    match family {
        OsFamily::Apt => format!(
            "printf '%s\\n' {DPKG_SLIM} > /etc/dpkg/dpkg.cfg.d/playpen-slim && {fail_fast} && \
             apt-get update && apt-get install -y --no-install-recommends {list} && apt-get clean && rm -rf /var/lib/apt/lists/* {conf}",
            fail_fast = mirror::apt_fail_fast_setup(),
            conf = mirror::APT_CONF
        ),
        OsFamily::Dnf => format!(
            "if command -v dnf >/dev/null; then pm=dnf; elif command -v microdnf >/dev/null; then pm=microdnf; else pm=yum; fi; \
             case $pm in yum) opts=;; *) opts=--setopt=install_weak_deps=0;; esac; \
             $pm install -y $opts {fail_fast} {list} && $pm clean all && rm -rf /var/cache/dnf /var/cache/yum",
            fail_fast = mirror::dnf_fail_fast_options()
        ),
        OsFamily::Zypper => format!(
            "{fail_fast} && ZYPP_CONF={conf} zypper --non-interactive install --no-recommends {list} && \
             ZYPP_CONF={conf} zypper clean --all && rm -f {conf}",
            fail_fast = mirror::zypper_fail_fast_setup(),
            conf = mirror::ZYPP_CONF
        ),
    }
}

/// The `playwright-cli install-browser chromium` step: `--with-deps` on apt only
/// (retried without it so the browser still lands), never on rpm; its output is
/// judged, not only its exit code.
pub fn install_browser_command(family: OsFamily, revision: &str) -> String {
    let remedy = install_command(family, chromium_libs(family));
    // --with-deps runs apt itself: the same bounded timeouts as the package step.
    let first = if family == OsFamily::Apt {
        format!(
            "{} && {{ playwright-cli install-browser chromium --with-deps >/tmp/pw-install.log 2>&1 \
             || {{ cat /tmp/pw-install.log; echo 'playpen: --with-deps failed; retrying without it'; \
             playwright-cli install-browser chromium >/tmp/pw-install.log 2>&1; }}; }}",
            mirror::apt_fail_fast_setup()
        )
    } else {
        "playwright-cli install-browser chromium >/tmp/pw-install.log 2>&1".to_owned()
    };
    format!(
        "{first} || {{ cat /tmp/pw-install.log; echo 'playpen: the browser download failed (exit 16): use chromium.source \
         distribution or archive if the download host is blocked'; exit 16; }}; cat /tmp/pw-install.log; \
         if grep -qE 'Host system is missing dependencies|missing dependencies to run browsers' /tmp/pw-install.log; then \
         echo 'playpen: missing host dependencies (exit 19); remedy: {remedy}'; exit 19; fi; \
         rm -f /tmp/pw-install.log; test -d {dir}/chromium-{revision} || {{ echo 'playpen: chromium-{revision} is not in {dir}'; exit 21; }}; \
         rm -rf /var/lib/apt/lists/*{conf}",
        dir = il::BROWSERS_DIR,
        conf = if family == OsFamily::Apt { format!(" {}", mirror::APT_CONF) } else { String::new() }
    )
}

/// The package that installs ffmpeg: the spec's, else the family's default.
pub fn ffmpeg_package(lock: &Lock, family: OsFamily) -> String {
    let named = lock.spec.video_recorder.as_ref().and_then(|v| v.package.clone());
    named.unwrap_or_else(|| default_ffmpeg_package(family).to_owned())
}

/// Where Playwright's video recorder runs ffmpeg from in the image.
pub fn ffmpeg_path(revision: &str) -> String {
    format!("{}/ffmpeg-{revision}/ffmpeg-linux", il::BROWSERS_DIR)
}

/// The step that links the installed ffmpeg where Playwright runs it from.
/// Playwright never searches PATH for it, and swallows its absence (a video
/// that is "started" and never written), so a missing binary fails the build.
pub fn link_ffmpeg_command(package: &str, revision: &str) -> String {
    let path = ffmpeg_path(revision);
    format!(
        "ffmpeg=\"$(command -v ffmpeg)\" || {{ echo 'playpen: the package {package} put no ffmpeg on PATH (exit 21): \
         name one that does in videoRecorder.package'; exit 21; }}; \
         mkdir -p {dir}/ffmpeg-{revision} && ln -sfn \"$ffmpeg\" {path} && test -x {path}",
        dir = il::BROWSERS_DIR
    )
}

/// The command that adds the image's user without useradd (absent from minimal bases),
/// keeping an existing entry with the same id.
pub fn add_user_command(name: &str, uid: u32, gid: u32) -> String {
    format!(
        "grep -q '^[^:]*:[^:]*:{gid}:' /etc/group || echo '{name}:x:{gid}:' >> /etc/group; \
         grep -q '^[^:]*:[^:]*:{uid}:' /etc/passwd || echo '{name}:x:{uid}:{gid}:{name}:{home}:/usr/sbin/nologin' >> /etc/passwd",
        home = il::HOME_DIR
    )
}

/// Renders the Dockerfile.
pub fn render(input: &RenderInput<'_>) -> String {
    let lock = input.lock;
    let spec = &lock.spec;
    let mut d = String::new();
    let _ = writeln!(d, "# Rendered by playpen-imagebuild from the lock; do not edit.");
    let _ = writeln!(d, "FROM {}", spec.base.image);
    let _ = writeln!(d, "SHELL [{}, \"-eu\", \"-c\"]", quote(il::SHELL));
    if input.family == OsFamily::Apt {
        let _ = writeln!(d, "ARG DEBIAN_FRONTEND=noninteractive");
    }
    let pkgs = os_packages(lock, input.family);
    if !pkgs.is_empty() {
        let _ = writeln!(d, "RUN {}", install_packages_command(input.family, &pkgs));
    }
    let _ = writeln!(d, "ADD {} /", il::LAYER_TAR);
    if let LockedChromium::Archive { .. } = &lock.chromium {
        let _ = writeln!(d, "ADD {} {}/", il::CHROMIUM_ARCHIVE, il::CHROMIUM_ARCHIVE_DIR);
    }
    let _ = writeln!(d, "ENV {}={} {}={}", il::env::BROWSERS_PATH, il::BROWSERS_DIR, il::env::HOME, il::HOME_DIR);
    if lock.session_runtime.is_some() {
        // The runtime spawns the daemon with this interpreter from this package.
        let (node, package) = (il::env::NODE, il::env::CLI_PACKAGE);
        let _ = writeln!(d, "ENV {node}={} {package}={}", il::NODE_BIN, il::CLI_PACKAGE_DIR);
    }
    if let LockedChromium::Playwright { revision, .. } = &lock.chromium {
        let _ = writeln!(d, "RUN {}", install_browser_command(input.family, revision));
    }
    if let Some(video) = &lock.video_recorder {
        // After Playwright's own browser step, which may bring its own ffmpeg: the spec's package wins.
        let package = ffmpeg_package(lock, input.family);
        let _ = writeln!(d, "RUN {}", link_ffmpeg_command(&package, &video.ffmpeg_revision));
    }
    let _ = writeln!(d, "RUN {}", add_user_command(&spec.user.name, spec.user.uid, spec.user.gid));
    if !input.labels.is_empty() {
        let pairs: Vec<String> = input.labels.iter().map(|(k, v)| format!("{}={}", quote(k), quote(v))).collect();
        let _ = writeln!(d, "LABEL {}", pairs.join(" \\\n      "));
    }
    let _ = writeln!(d, "USER {}:{}", spec.user.uid, spec.user.gid);
    if lock.session_runtime.is_some() {
        let _ = writeln!(d, "ENTRYPOINT [\"{}\", \"run\"]", il::SESSION_RUNTIME_BIN);
    } else {
        let _ = writeln!(d, "ENTRYPOINT [\"{}\"]", il::CLI_WRAPPER);
    }
    d
}

/// A Dockerfile double-quoted string (JSON escaping is a subset Docker accepts).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The Chromium arguments of the image's launch defaults, one list shared with
/// the idle-memory benchmark (`tests/bench/idle-memory.sh` reads the same file)
/// so that it measures what images ship:
/// - no background networking, component updates or QUIC: a closed network
///   otherwise keeps Chromium busy with refused connections;
/// - `--disable-features`: the WebUI omnibox popups (full Chromium renders its
///   address bar's dropdown in a renderer of its own even headless: 75 MiB PSS
///   idle, never shown) and the spare renderer kept warm for the next
///   navigation. Neither touches site isolation or the sandbox. Chromium keeps
///   only the last `--disable-features` / `--enable-features` of its command
///   line and the CLI puts ours after its own, so these repeat playwright-core's
///   own lists (its `chromiumSwitches`; `CDPScreenshotNewSurface` is its
///   screenshot path) or they would silently undo them.
pub const CHROMIUM_ARGS_JSON: &str = include_str!("chromium-args.json");

/// [`CHROMIUM_ARGS_JSON`], parsed.
pub fn default_chromium_args() -> Vec<String> {
    serde_json::from_str(CHROMIUM_ARGS_JSON).unwrap_or_default()
}

/// The launch-config defaults baked into the image: the nested form the CLI reads,
/// `chromiumSandbox` per the sandbox mode, [`default_chromium_args`], and the
/// executable for non-Playwright sources.
pub fn launch_defaults(lock: &Lock, family: OsFamily) -> serde_json::Value {
    let mut launch = serde_json::json!({
        "chromiumSandbox": lock.spec.sandbox.mode == SandboxMode::Enforced,
        "args": default_chromium_args(),
    });
    let exe = lock.chromium.executable(family);
    if let (Some(exe), Some(obj)) = (exe, launch.as_object_mut()) {
        obj.insert("executablePath".into(), exe.into());
    }
    serde_json::json!({"browser": {"browserName": "chromium", "launchOptions": launch}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::fixtures::lock_with;
    use crate::os_release::{detect_family, parse_os_release, samples};

    fn lock_for(chromium: LockedChromium) -> Lock {
        let mut lock = lock_with(b"n", b"c", b"p", b"k");
        lock.chromium = chromium;
        lock.spec.fonts = vec!["fonts-liberation".into()];
        lock
    }

    fn distribution() -> LockedChromium {
        LockedChromium::Distribution { package: "chromium".into(), executable_path: None }
    }

    fn playwright() -> LockedChromium {
        LockedChromium::Playwright { revision: "1247".into(), browser_version: None }
    }

    fn render_for(os_release: &str, chromium: LockedChromium) -> String {
        let family = detect_family(&parse_os_release(os_release), None).unwrap();
        let lock = lock_for(chromium);
        let labels = crate::labels::labels(&lock, family, "sha256:0");
        render(&RenderInput { lock: &lock, family, labels: &labels })
    }

    fn run_lines(d: &str) -> Vec<&str> {
        d.lines().filter(|l| l.starts_with("RUN ")).collect()
    }

    #[test]
    fn debian_and_ubuntu_distribution_chromium_use_apt() {
        for os in [samples::DEBIAN, samples::UBUNTU] {
            let d = render_for(os, distribution());
            let runs = run_lines(&d);
            assert!(runs[0].contains("apt-get install -y --no-install-recommends chromium fonts-liberation"), "{d}");
            // Slimmed before the install, licences kept.
            assert!(runs[0].starts_with("RUN printf '%s\\n' 'path-exclude=/usr/share/doc/*'"), "{d}");
            assert!(runs[0].contains("'path-include=/usr/share/doc/*/copyright'"), "{d}");
            assert!(runs[0].find("playpen-slim").unwrap() < runs[0].find("apt-get install").unwrap());
            assert!(!d.contains("dnf") && !d.contains("zypper") && !d.contains("install-browser"), "{d}");
            assert!(d.contains("ARG DEBIAN_FRONTEND=noninteractive"));
        }
    }

    #[test]
    fn apt_playwright_source_uses_with_deps_and_retries_without() {
        let d = render_for(samples::DEBIAN, playwright());
        let step = run_lines(&d).into_iter().find(|l| l.contains("install-browser")).unwrap();
        assert!(step.contains("install-browser chromium --with-deps"));
        assert!(step.contains("retrying without it"));
        assert!(step.contains("Host system is missing dependencies") && step.contains("exit 19"));
        assert!(step.contains(&format!("{}/chromium-1247", il::BROWSERS_DIR)));
        // The CLI layer must be in place before the browser step.
        assert!(d.find("ADD playpen-layer.tar /").unwrap() < d.find("install-browser").unwrap());
    }

    #[test]
    fn rpm_bases_never_get_with_deps_and_get_the_pr_40312_list() {
        for os in [samples::FEDORA, samples::ROCKY, samples::ALMA, samples::AMZN, samples::RHEL_UBI] {
            let d = render_for(os, playwright());
            assert!(!d.contains("--with-deps"), "{d}");
            assert!(!d.contains("apt-get"), "{d}");
            let runs = run_lines(&d);
            assert!(runs[0].contains("command -v dnf") && runs[0].contains("microdnf") && runs[0].contains("pm=yum"));
            assert!(runs[0].contains(
                "alsa-lib at-spi2-atk at-spi2-core atk cairo cups-libs dbus-libs fonts-liberation libX11 libXcomposite"
            ));
            assert!(runs[0].contains("mesa-libgbm nspr nss nss-util pango"));
            assert!(d.contains("install-browser chromium >/tmp/pw-install.log"));
            assert!(d.contains("remedy: dnf install -y alsa-lib"), "{d}");
        }
    }

    #[test]
    fn rpm_distribution_chromium_installs_the_package_only() {
        let d = render_for(samples::FEDORA, distribution());
        let runs = run_lines(&d);
        assert!(
            runs[0].contains("install -y $opts --setopt=timeout=10 --setopt=retries=1 chromium fonts-liberation &&"),
            "{}",
            runs[0]
        );
        assert!(!d.contains("install-browser"));
        assert!(d.contains("\"dev.playpen.image.chromium.executable\"=\"/usr/bin/chromium-browser\""), "{d}");
    }

    #[test]
    fn opensuse_uses_zypper() {
        let d = render_for(samples::OPENSUSE, playwright());
        let runs = run_lines(&d);
        assert!(runs[0].contains("ZYPP_CONF=/tmp/playpen-zypp.conf zypper --non-interactive install --no-recommends "));
        assert!(runs[0].find("download.connect_timeout = 10").unwrap() < runs[0].find("zypper --non").unwrap());
        assert!(runs[0].ends_with("rm -f /tmp/playpen-zypp.conf"), "{}", runs[0]);
        assert!(runs[0].contains("mozilla-nss"));
        assert!(!d.contains("--with-deps") && !d.contains("apt-get") && !d.contains("dnf"));
    }

    #[test]
    fn every_apt_step_bounds_its_fetches_and_removes_the_setting() {
        let conf = "/etc/apt/apt.conf.d/80playpen-fail-fast";
        let d = render_for(samples::DEBIAN, distribution());
        let step = run_lines(&d)[0];
        assert!(step.find("Acquire::http::Timeout \"10\";").unwrap() < step.find("apt-get update").unwrap(), "{step}");
        assert!(step.contains("Acquire::Retries \"1\";") && step.ends_with(&format!("/var/lib/apt/lists/* {conf}")));
        // --with-deps runs apt inside the browser step: the same bounds there.
        let d = render_for(samples::UBUNTU, playwright());
        let step = run_lines(&d).into_iter().find(|l| l.contains("install-browser")).unwrap();
        assert!(step.find(&format!("> {conf}")).unwrap() < step.find("--with-deps").unwrap(), "{step}");
        assert!(step.ends_with(&format!("/var/lib/apt/lists/* {conf}")), "{step}");
        // rpm bases never get apt's file.
        let d = render_for(samples::FEDORA, playwright());
        assert!(!d.contains(conf) && d.contains("--setopt=timeout=10 --setopt=retries=1"), "{d}");
    }

    #[test]
    fn alpine_is_refused_before_rendering() {
        assert!(detect_family(&parse_os_release(samples::ALPINE), None).is_err());
    }

    #[test]
    fn user_labels_and_entrypoint_follow_the_contract() {
        let mut lock = lock_for(distribution());
        lock.session_runtime = Some(crate::lock::LockedFile {
            path: "/x/playpen-session".into(),
            integrity: crate::digest::Integrity::sha256_of(b"s"),
        });
        let family = OsFamily::Apt;
        let labels = crate::labels::labels(&lock, family, "sha256:0");
        let d = render(&RenderInput { lock: &lock, family, labels: &labels });
        assert!(d.contains("USER 1000:1000"));
        assert!(d.contains(&format!("ENTRYPOINT [\"{}\", \"run\"]", il::SESSION_RUNTIME_BIN)));
        let (node, package) = (il::env::NODE, il::env::CLI_PACKAGE);
        assert!(d.contains(&format!("ENV {node}={} {package}={}", il::NODE_BIN, il::CLI_PACKAGE_DIR)));
        assert!(d.contains("\"dev.playpen.image.node.version\"=\"22.12.0\" \\\n"), "{d}");
        assert_eq!(d.matches("LABEL ").count(), 1, "one LABEL instruction, one step");
        let passwd = format!("echo 'playpen:x:1000:1000:playpen:{}:/usr/sbin/nologin' >> /etc/passwd", il::HOME_DIR);
        assert!(d.contains(&passwd), "{d}");
        // The user step runs as root, before USER.
        assert!(d.find("/etc/passwd").unwrap() < d.find("USER 1000:1000").unwrap());
    }

    #[test]
    fn archive_chromium_gets_the_family_libraries_and_the_archive() {
        let lock = lock_for(LockedChromium::Archive {
            url: "https://example.invalid/c.tgz".into(),
            integrity: crate::digest::Integrity::sha256_of(b"a"),
            executable_path: format!("{}/chrome-linux/chrome", il::CHROMIUM_ARCHIVE_DIR),
        });
        let family = OsFamily::Apt;
        let labels = crate::labels::labels(&lock, family, "sha256:0");
        let d = render(&RenderInput { lock: &lock, family, labels: &labels });
        assert!(
            d.contains("libnss3") && d.contains(&format!("ADD {} {}/", il::CHROMIUM_ARCHIVE, il::CHROMIUM_ARCHIVE_DIR))
        );
    }

    #[test]
    fn a_video_recorder_installs_the_family_package_and_links_it_where_playwright_looks() {
        let mut lock = lock_for(playwright());
        lock.spec.video_recorder = Some(crate::spec::VideoRecorderSpec::default());
        lock.video_recorder = Some(crate::lock::LockedVideoRecorder { ffmpeg_revision: "1011".into() });
        let link = format!("ln -sfn \"$ffmpeg\" {}/ffmpeg-1011/ffmpeg-linux", il::BROWSERS_DIR);
        for (family, package) in
            [(OsFamily::Apt, "ffmpeg"), (OsFamily::Dnf, "ffmpeg-free"), (OsFamily::Zypper, "ffmpeg")]
        {
            assert!(os_packages(&lock, family).contains(&package.to_owned()), "{family:?}");
            let labels = BTreeMap::new();
            let d = render(&RenderInput { lock: &lock, family, labels: &labels });
            let step = run_lines(&d).into_iter().find(|l| l.contains("ffmpeg-linux")).unwrap();
            assert!(step.contains(&link) && step.contains(&format!("the package {package} put no ffmpeg")), "{step}");
            // Playwright's own browser step runs first; the package's ffmpeg is the one linked.
            assert!(d.find("install-browser").unwrap() < d.find(&link).unwrap(), "{d}");
            assert!(d.find(&link).unwrap() < d.find("USER ").unwrap(), "linked as root");
        }
        lock.spec.video_recorder = Some(crate::spec::VideoRecorderSpec { package: Some("ffmpeg-7".into()) });
        assert!(os_packages(&lock, OsFamily::Zypper).contains(&"ffmpeg-7".to_owned()));
        assert!(!os_packages(&lock, OsFamily::Zypper).contains(&"ffmpeg".to_owned()));
        lock.video_recorder = None;
        lock.spec.video_recorder = None;
        let labels = BTreeMap::new();
        let d = render(&RenderInput { lock: &lock, family: OsFamily::Apt, labels: &labels });
        assert!(!d.contains("ffmpeg"), "no recorder asked for, none installed: {d}");
    }

    #[test]
    fn launch_defaults_keep_the_sandbox_unless_disabled() {
        let mut lock = lock_for(distribution());
        let v = launch_defaults(&lock, OsFamily::Apt);
        assert_eq!(v["browser"]["browserName"], "chromium");
        assert_eq!(v["browser"]["launchOptions"]["chromiumSandbox"], true);
        assert_eq!(v["browser"]["launchOptions"]["executablePath"], "/usr/bin/chromium");
        lock.spec.sandbox.mode = SandboxMode::Disabled;
        assert_eq!(launch_defaults(&lock, OsFamily::Apt)["browser"]["launchOptions"]["chromiumSandbox"], false);
    }

    #[test]
    fn debians_headless_shell_is_launched_as_its_binary() {
        let shell = LockedChromium::Distribution { package: "chromium-headless-shell".into(), executable_path: None };
        let v = launch_defaults(&lock_for(shell), OsFamily::Apt);
        assert_eq!(v["browser"]["launchOptions"]["executablePath"], "/usr/lib/chromium/chromium-headless-shell");
        let d = render_for(
            samples::DEBIAN,
            LockedChromium::Distribution { package: "chromium-headless-shell".into(), executable_path: None },
        );
        assert!(run_lines(&d)[0].contains("apt-get install -y --no-install-recommends chromium-headless-shell"), "{d}");
        // Elsewhere the package name does not move the default.
        let rpm = LockedChromium::Distribution { package: "chromium-headless-shell".into(), executable_path: None };
        assert_eq!(rpm.executable(OsFamily::Dnf).as_deref(), Some("/usr/bin/chromium-browser"));
    }

    #[test]
    fn launch_defaults_carry_the_memory_flags_without_undoing_playwrights() {
        let args = default_chromium_args();
        let v = launch_defaults(&lock_for(distribution()), OsFamily::Apt);
        assert_eq!(v["browser"]["launchOptions"]["args"], serde_json::json!(args));
        for wanted in ["--disable-background-networking", "--disable-component-update", "--disable-quic"] {
            assert!(args.iter().any(|a| a == wanted), "{wanted} in {args:?}");
        }
        // One of each: Chromium keeps only the last.
        let features = |switch: &str| -> Vec<&str> {
            let values: Vec<&String> = args.iter().filter(|a| a.starts_with(switch)).collect();
            assert_eq!(values.len(), 1, "exactly one {switch} in {args:?}");
            values[0].trim_start_matches(switch).split(',').collect()
        };
        let disabled = features("--disable-features=");
        for ours in
            ["WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup", "SpareRendererForSitePerProcess"]
        {
            assert!(disabled.contains(&ours), "{ours}");
        }
        // Playwright's own, which ours replaces (a sample; the full list is
        // checked against the real bundle below when it is at hand).
        for theirs in ["MediaRouter", "PaintHolding", "Translate", "HttpsUpgrades", "ThirdPartyStoragePartitioning"] {
            assert!(disabled.contains(&theirs), "{theirs}");
        }
        assert_eq!(features("--enable-features="), ["CDPScreenshotNewSurface"]);
        // Never a security trade: site isolation and the sandbox stay.
        for arg in &args {
            for banned in ["--no-sandbox", "--disable-site-isolation", "--single-process", "--in-process-gpu"] {
                assert!(!arg.starts_with(banned), "{arg}");
            }
        }
        for feature in ["IsolateOrigins", "site-per-process", "NetworkServiceInProcess", "NetworkServiceInProcess2"] {
            assert!(!disabled.contains(&feature) && !features("--enable-features=").contains(&feature), "{feature}");
        }
    }

    #[test]
    fn missing_dependency_output_is_recognised() {
        let out = "Playwright Host validation warning:\n║ Host system is missing dependencies to run browsers. ║";
        assert!(says_missing_dependencies(out));
        assert!(!says_missing_dependencies("Chromium 1247 downloaded"));
    }
}
