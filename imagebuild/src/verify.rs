//! Verification of a built image, run through the engine before it is tagged:
//! the executable (or Playwright's revision) is present, an ldd scan finds no
//! missing library, `playwright-cli` runs on the pinned Node, and Chromium
//! launches headless under the chosen sandbox policy and loads a `data:` page.
//! The script is rendered and its output judged by pure functions.

use crate::image_layout as il;
use crate::lock::{Lock, LockedChromium};
use crate::packages::{chromium_libs, install_command};
use crate::spec::{OsFamily, SandboxMode};

/// The marker the test page puts in the DOM.
pub const PAGE_MARKER: &str = "playpen-verify-ok";

/// Verification failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// Libraries are missing (a zero exit is not a verdict).
    #[error("Chromium's libraries are missing in the image:\n{missing}\nremedy: add their packages to `packages`, for example: {remedy}")]
    MissingLibraries {
        /// `ldd` lines saying `not found`.
        missing: String,
        /// The family's install command.
        remedy: String,
    },
    /// The sandbox could not start.
    #[error("Chromium says `No usable sandbox!`: run the image with the emitted seccomp profile (docker run --security-opt seccomp=chromium.json; Kubernetes: seccompProfile type Localhost), or set `sandbox.mode: Disabled` with a reason\n{output}")]
    NoUsableSandbox {
        /// The output.
        output: String,
    },
    /// The video recorder is missing or cannot encode VP8 into WebM.
    #[error("the video recorder does not work: Playwright runs {path}, which must encode VP8 into WebM; remedy: name a \
             package in videoRecorder.package whose ffmpeg has the libvpx encoder (Debian's and Fedora's ffmpeg-free do), \
             or remove videoRecorder\n{output}")]
    VideoRecorder {
        /// Where Playwright runs ffmpeg from.
        path: String,
        /// The output.
        output: String,
    },
    /// Anything else: the executable is missing, the CLI does not run, or the page did not load.
    #[error("verification failed ({step}):\n{output}")]
    Failed {
        /// The step that failed.
        step: String,
        /// The output.
        output: String,
    },
}

impl crate::failure::Classify for VerifyError {
    fn class(&self) -> crate::failure::FailureClass {
        match self {
            VerifyError::MissingLibraries { .. } => crate::failure::FailureClass::MissingHostDependencies,
            _ => crate::failure::FailureClass::VerificationFailed,
        }
    }
}

/// The shell script run in the image as its user (read-only root, no network).
pub fn script(lock: &Lock, family: OsFamily) -> String {
    let exe = match (&lock.chromium, lock.chromium.executable(family)) {
        (_, Some(exe)) => crate::layer::sh_quote(&exe),
        (LockedChromium::Playwright { revision, .. }, None) => format!(
            "\"$(ls -d {dir}/chromium-{revision}/chrome-linux*/chrome 2>/dev/null | head -n1)\"",
            dir = il::BROWSERS_DIR
        ),
        _ => "''".to_owned(),
    };
    let no_sandbox = if lock.spec.sandbox.mode == SandboxMode::Disabled { " --no-sandbox" } else { "" };
    let video = lock.video_recorder.as_ref().map_or_else(String::new, |v| video_step(&v.ffmpeg_revision));
    format!(
        r#"exe={exe}
echo "step: executable $exe"
[ -n "$exe" ] && [ -x "$exe" ] || {{ echo "PLAYPEN-FAIL executable"; exit 21; }}
real="$(readlink -f "$exe")"
if head -c 4 "$real" | grep -q ELF; then dirs="$(dirname "$real")"; else
  dirs=""; for d in /usr/lib/chromium /usr/lib/chromium-browser /usr/lib64/chromium-browser /usr/lib64/chromium; do [ -d "$d" ] && dirs="$dirs $d"; done
fi
[ -n "$dirs" ] || {{ echo "PLAYPEN-FAIL executable (no Chromium directory found for $exe)"; exit 21; }}
echo "step: ldd scan of$dirs"
files="$(find $dirs -maxdepth 2 -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null)"
echo "scanned $(echo "$files" | wc -l) files"
missing="$(echo "$files" | while read -r f; do ldd "$f" 2>/dev/null | grep 'not found'; done | sort -u)"
if [ -n "$missing" ]; then echo "PLAYPEN-MISSING-LIBS"; echo "$missing"; exit 19; fi
{video}echo "step: playwright-cli --version"
{wrapper} --version || {{ echo "PLAYPEN-FAIL cli"; exit 21; }}
echo "step: chromium headless"
"$exe" --headless --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-quic{no_sandbox} --user-data-dir=/tmp/playpen-verify --dump-dom 'data:text/html,<title>v</title><p>{marker}</p>' 2>&1
"#,
        wrapper = il::CLI_WRAPPER,
        marker = PAGE_MARKER,
    )
}

/// Encodes a short clip the way Playwright's recorder does (VP8 into WebM),
/// with the binary Playwright will run.
fn video_step(revision: &str) -> String {
    let ffmpeg = crate::dockerfile::ffmpeg_path(revision);
    format!(
        r#"echo "step: video recorder {ffmpeg}"
[ -x {ffmpeg} ] || {{ echo "PLAYPEN-FAIL video (not executable)"; exit 21; }}
{ffmpeg} -hide_banner -loglevel error -f lavfi -i color=c=red:s=64x64:d=0.4 -c:v vp8 -f webm -y /tmp/playpen-verify.webm 2>&1 \
  && [ -s /tmp/playpen-verify.webm ] || {{ echo "PLAYPEN-FAIL video (no VP8 WebM written)"; exit 21; }}
"#
    )
}

/// Judges the script's exit code and combined output.
pub fn judge(family: OsFamily, exit_code: i64, output: &str) -> Result<(), VerifyError> {
    if output.contains("PLAYPEN-MISSING-LIBS") || crate::dockerfile::says_missing_dependencies(output) {
        let missing = output
            .lines()
            .filter(|l| l.contains("not found") || l.contains("missing dependencies"))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(VerifyError::MissingLibraries { missing, remedy: install_command(family, chromium_libs(family)) });
    }
    if output.contains("No usable sandbox") {
        return Err(VerifyError::NoUsableSandbox { output: tail(output) });
    }
    if output.contains("PLAYPEN-FAIL executable") {
        return Err(VerifyError::Failed { step: "the chromium executable is missing".into(), output: tail(output) });
    }
    if output.contains("PLAYPEN-FAIL video") {
        let path = output.lines().find_map(|l| l.strip_prefix("step: video recorder ")).unwrap_or("ffmpeg").to_owned();
        return Err(VerifyError::VideoRecorder { path, output: tail(output) });
    }
    if output.contains("PLAYPEN-FAIL cli") {
        return Err(VerifyError::Failed { step: "playwright-cli did not run".into(), output: tail(output) });
    }
    // The marker must come from the rendered DOM, not from the script's own echo of the URL.
    let loaded = output.lines().any(|l| l.contains(&format!("<p>{PAGE_MARKER}</p>")) && !l.contains("data:"));
    if exit_code != 0 || !loaded {
        return Err(VerifyError::Failed {
            step: format!("chromium did not load the test page (exit {exit_code})"),
            output: tail(output),
        });
    }
    Ok(())
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::{Classify, FailureClass};

    #[test]
    fn script_follows_the_sandbox_policy() {
        let mut lock = crate::lock::fixtures::lock_with(b"n", b"c", b"p", b"k");
        let s = script(&lock, OsFamily::Apt);
        assert!(s.contains("exe='/usr/bin/chromium'") && !s.contains("--no-sandbox"));
        assert!(s.contains("/usr/lib/chromium") && s.contains("ldd"), "a wrapper script is followed to its libraries");
        lock.spec.sandbox.mode = SandboxMode::Disabled;
        assert!(script(&lock, OsFamily::Apt).contains("--no-sandbox"));
        lock.chromium = LockedChromium::Playwright { revision: "1247".into(), browser_version: None };
        let exe_dir = format!("{}/chromium-1247/chrome-linux", crate::image_layout::BROWSERS_DIR);
        assert!(script(&lock, OsFamily::Dnf).contains(&exe_dir));
    }

    #[test]
    fn a_video_recorder_is_verified_by_encoding_vp8_with_the_binary_playwright_runs() {
        let mut lock = crate::lock::fixtures::lock_with(b"n", b"c", b"p", b"k");
        assert!(!script(&lock, OsFamily::Apt).contains("ffmpeg"));
        lock.video_recorder = Some(crate::lock::LockedVideoRecorder { ffmpeg_revision: "1011".into() });
        let s = script(&lock, OsFamily::Apt);
        let ffmpeg = format!("{}/ffmpeg-1011/ffmpeg-linux", crate::image_layout::BROWSERS_DIR);
        assert!(s.contains(&format!("{ffmpeg} -hide_banner")) && s.contains("-c:v vp8 -f webm"), "{s}");
        assert!(s.find("video recorder").unwrap() < s.find("chromium headless").unwrap(), "{s}");
        let out =
            format!("step: video recorder {ffmpeg}\nUnknown encoder 'vp8'\nPLAYPEN-FAIL video (no VP8 WebM written)\n");
        let err = judge(OsFamily::Apt, 21, &out).unwrap_err();
        assert_eq!(err.class(), FailureClass::VerificationFailed);
        let text = err.to_string();
        assert!(
            text.contains(&ffmpeg) && text.contains("videoRecorder.package") && text.contains("Unknown encoder"),
            "{text}"
        );
    }

    #[test]
    fn a_loaded_page_passes() {
        let out = "step: chromium headless\n<html><head><title>v</title></head><body><p>playpen-verify-ok</p></body></html>\n";
        assert_eq!(judge(OsFamily::Apt, 0, out), Ok(()));
    }

    #[test]
    fn exit_zero_is_not_a_verdict() {
        let out = "Host system is missing dependencies to run browsers.\n<p>playpen-verify-ok</p>";
        let err = judge(OsFamily::Dnf, 0, out).unwrap_err();
        assert_eq!(err.class(), FailureClass::MissingHostDependencies);
        assert!(err.to_string().contains("dnf install -y alsa-lib"));
        assert_eq!(judge(OsFamily::Apt, 0, "no page here").unwrap_err().class(), FailureClass::VerificationFailed);
    }

    #[test]
    fn missing_libraries_name_the_apt_remedy() {
        let out = "PLAYPEN-MISSING-LIBS\n\tlibnss3.so => not found\n";
        let err = judge(OsFamily::Apt, 19, out).unwrap_err();
        assert!(err.to_string().contains("libnss3.so => not found") && err.to_string().contains("apt-get install"));
    }

    #[test]
    fn no_usable_sandbox_names_the_seccomp_profile() {
        let err =
            judge(OsFamily::Apt, 1, "[0101/000000.0:FATAL:zygote_host_impl_linux.cc] No usable sandbox!").unwrap_err();
        assert!(err.to_string().contains("seccomp"));
    }
}
