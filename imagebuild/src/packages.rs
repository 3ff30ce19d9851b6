//! OS package sets for Chromium, per family. Pure data.

use crate::spec::OsFamily;

/// Libraries Chromium links against, Debian/Ubuntu names (Playwright's
/// debian12 chromium set). Used for `archive` sources on apt, where no
/// distribution package pulls them in.
pub const APT_CHROMIUM_LIBS: &[&str] = &[
    "libasound2",
    "libatk-bridge2.0-0",
    "libatk1.0-0",
    "libatspi2.0-0",
    "libcairo2",
    "libcups2",
    "libdbus-1-3",
    "libdrm2",
    "libgbm1",
    "libglib2.0-0",
    "libnspr4",
    "libnss3",
    "libpango-1.0-0",
    "libx11-6",
    "libxcb1",
    "libxcomposite1",
    "libxdamage1",
    "libxext6",
    "libxfixes3",
    "libxkbcommon0",
    "libxrandr2",
];

/// Chromium's libraries for the RHEL family: the packages providing the shared
/// libraries Chromium links against on Rocky Linux 9, as derived by machine for a
/// Rocky 9 dependency table proposed to Playwright (microsoft/playwright pull
/// request 40312, not merged; Playwright's own table covers Debian and Ubuntu only).
pub const RPM_CHROMIUM_LIBS: &[&str] = &[
    "alsa-lib",
    "at-spi2-atk",
    "at-spi2-core",
    "atk",
    "cairo",
    "cups-libs",
    "dbus-libs",
    "libX11",
    "libXcomposite",
    "libXdamage",
    "libXext",
    "libXfixes",
    "libXrandr",
    "libxcb",
    "libxkbcommon",
    "mesa-libgbm",
    "nspr",
    "nss",
    "nss-util",
    "pango",
];

/// The same libraries under openSUSE's names (derived by name mapping, not
/// measured on a SUSE base here).
pub const ZYPPER_CHROMIUM_LIBS: &[&str] = &[
    "libX11-6",
    "libXcomposite1",
    "libXdamage1",
    "libXext6",
    "libXfixes3",
    "libXrandr2",
    "libasound2",
    "libatk-1_0-0",
    "libatk-bridge-2_0-0",
    "libatspi0",
    "libcairo2",
    "libcups2",
    "libdbus-1-3",
    "libdrm2",
    "libgbm1",
    "libglib-2_0-0",
    "libpango-1_0-0",
    "libxcb1",
    "libxkbcommon0",
    "mozilla-nspr",
    "mozilla-nss",
];

/// Chromium's shared-library packages for a family.
pub const fn chromium_libs(family: OsFamily) -> &'static [&'static str] {
    match family {
        OsFamily::Apt => APT_CHROMIUM_LIBS,
        OsFamily::Dnf => RPM_CHROMIUM_LIBS,
        OsFamily::Zypper => ZYPPER_CHROMIUM_LIBS,
    }
}

/// The distribution's Chromium package name when the spec names none.
pub const fn default_chromium_package(_family: OsFamily) -> &'static str {
    "chromium"
}

/// The package that installs ffmpeg when the spec names none: Debian's and
/// openSUSE's are called `ffmpeg`; Fedora ships the VP8-capable build as
/// `ffmpeg-free` (RPM Fusion's `ffmpeg` conflicts with it).
pub const fn default_ffmpeg_package(family: OsFamily) -> &'static str {
    match family {
        OsFamily::Apt | OsFamily::Zypper => "ffmpeg",
        OsFamily::Dnf => "ffmpeg-free",
    }
}

/// Debian's build of Chromium's headless shell: no browser UI, about 90 MiB
/// less idle memory than `chromium` (docs/session-runtime.md).
pub const HEADLESS_SHELL_PACKAGE: &str = "chromium-headless-shell";

/// Where the distribution package puts the executable. For Debian's headless
/// shell, the binary itself: its `/usr/bin` script runs it as a child
/// instead of `exec`ing it, one more process for nothing.
pub fn default_chromium_executable(family: OsFamily, package: &str) -> &'static str {
    match family {
        OsFamily::Apt if package == HEADLESS_SHELL_PACKAGE => "/usr/lib/chromium/chromium-headless-shell",
        OsFamily::Apt => "/usr/bin/chromium",
        OsFamily::Dnf => "/usr/bin/chromium-browser",
        OsFamily::Zypper => "/usr/bin/chromium",
    }
}

/// The command a human runs to install `packages` on a family (for remedies).
pub fn install_command(family: OsFamily, packages: &[&str]) -> String {
    let list = packages.join(" ");
    match family {
        OsFamily::Apt => format!("apt-get install -y --no-install-recommends {list}"),
        OsFamily::Dnf => format!("dnf install -y {list}"),
        OsFamily::Zypper => format!("zypper --non-interactive install {list}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_list_is_the_pr_40312_anchor() {
        let want = "alsa-lib at-spi2-atk at-spi2-core atk cairo cups-libs dbus-libs libX11 libXcomposite libXdamage \
                    libXext libXfixes libXrandr libxcb libxkbcommon mesa-libgbm nspr nss nss-util pango";
        assert_eq!(RPM_CHROMIUM_LIBS.join(" "), want.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    #[test]
    fn lists_are_sorted_and_unique() {
        for list in [APT_CHROMIUM_LIBS, RPM_CHROMIUM_LIBS, ZYPPER_CHROMIUM_LIBS] {
            let mut sorted = list.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted, list);
        }
    }

    #[test]
    fn remedies_name_the_family_tool() {
        assert!(install_command(OsFamily::Dnf, RPM_CHROMIUM_LIBS).starts_with("dnf install -y alsa-lib"));
        assert!(install_command(OsFamily::Apt, &["libnss3"]).contains("apt-get install"));
    }
}
