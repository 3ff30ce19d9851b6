//! OCI labels naming every pin, computed from the lock (pure).

use crate::lock::{Lock, LockedChromium};
use std::collections::BTreeMap;

/// Label prefix for Playpen's own pins.
pub const PREFIX: &str = "dev.playpen.image";

/// `org.opencontainers.image.*` plus one label per pin, sorted by key.
pub fn labels(lock: &Lock, family: crate::spec::OsFamily, lock_digest: &str) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(k.to_owned(), v);
    };
    put("org.opencontainers.image.title", "playpen browser image".into());
    put("org.opencontainers.image.base.name", lock.spec.base.image.clone());
    put("org.opencontainers.image.vendor", "playpen".into());
    put(&format!("{PREFIX}.lock.digest"), lock_digest.to_owned());
    put(&format!("{PREFIX}.node.version"), lock.node.version.clone());
    put(&format!("{PREFIX}.node.integrity"), lock.node.integrity.to_string());
    for p in &lock.packages {
        put(&format!("{PREFIX}.npm.{}.version", p.name), p.version.clone());
        put(&format!("{PREFIX}.npm.{}.integrity", p.name), p.integrity.to_string());
    }
    put(&format!("{PREFIX}.chromium.source"), lock.chromium.source_name().into());
    match &lock.chromium {
        LockedChromium::Distribution { package, .. } => {
            put(&format!("{PREFIX}.chromium.package"), package.clone());
        }
        LockedChromium::Playwright { revision, browser_version } => {
            put(&format!("{PREFIX}.chromium.revision"), revision.clone());
            if let Some(v) = browser_version {
                put(&format!("{PREFIX}.chromium.version"), v.clone());
            }
        }
        LockedChromium::Archive { integrity, .. } => {
            put(&format!("{PREFIX}.chromium.integrity"), integrity.to_string());
        }
    }
    if let Some(exe) = lock.chromium.executable(family) {
        put(&format!("{PREFIX}.chromium.executable"), exe);
    }
    put(&format!("{PREFIX}.os-family"), family.as_str().into());
    put(&format!("{PREFIX}.sandbox"), lock.spec.sandbox.mode.as_str().into());
    if let Some(reason) = &lock.spec.sandbox.reason {
        put(&format!("{PREFIX}.sandbox.reason"), reason.clone());
    }
    put(&format!("{PREFIX}.user"), format!("{}:{}", lock.spec.user.uid, lock.spec.user.gid));
    if let Some(video) = &lock.video_recorder {
        put(&format!("{PREFIX}.video.ffmpeg-revision"), video.ffmpeg_revision.clone());
        put(&format!("{PREFIX}.video.package"), crate::dockerfile::ffmpeg_package(lock, family));
    }
    if let Some(s) = &lock.session_runtime {
        put(&format!("{PREFIX}.session-runtime.integrity"), s.integrity.to_string());
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pin_is_labelled() {
        let lock = crate::lock::fixtures::lock_with(b"n", b"c", b"p", b"k");
        let l = labels(&lock, crate::spec::OsFamily::Apt, "sha256:abc");
        assert_eq!(l["dev.playpen.image.node.version"], "22.12.0");
        assert_eq!(l["dev.playpen.image.npm.@playwright/cli.version"], "0.1.22");
        assert_eq!(l["dev.playpen.image.npm.playwright-core.integrity"], lock.packages[0].integrity.to_string());
        assert_eq!(l["dev.playpen.image.chromium.package"], "chromium");
        assert_eq!(l["dev.playpen.image.sandbox"], "Enforced");
        assert_eq!(l["dev.playpen.image.chromium.executable"], "/usr/bin/chromium");
        assert!(!l.keys().any(|k| k.contains(".video.")), "no recorder, no label");
        let mut lock = lock;
        lock.video_recorder = Some(crate::lock::LockedVideoRecorder { ffmpeg_revision: "1011".into() });
        let l = labels(&lock, crate::spec::OsFamily::Dnf, "sha256:abc");
        assert_eq!(l["dev.playpen.image.video.ffmpeg-revision"], "1011");
        assert_eq!(l["dev.playpen.image.video.package"], "ffmpeg-free");
        assert_eq!(l["dev.playpen.image.lock.digest"], "sha256:abc");
        assert_eq!(l["org.opencontainers.image.base.name"], "playpen/base:bookworm");
    }
}
