//! OS family from /etc/os-release text: `ID` first, then each `ID_LIKE` entry,
//! so derivatives resolve through their base.

use crate::spec::OsFamily;

/// The fields of /etc/os-release the builder uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OsRelease {
    /// `ID`, lowercased.
    pub id: String,
    /// `ID_LIKE`, split on whitespace, lowercased.
    pub id_like: Vec<String>,
    /// `VERSION_ID`, when present.
    pub version_id: Option<String>,
    /// `PRETTY_NAME`, when present.
    pub pretty_name: Option<String>,
}

/// The base's OS family is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown OS family for the base image (ID={id:?}, ID_LIKE={id_like:?}): the builder knows apt \
     (debian, ubuntu), dnf (rhel, fedora, centos, amzn, rocky, alma, ol) and zypper (suse); \
     set `base.osFamily` to apt, dnf or zypper if the base installs packages that way"
)]
pub struct UnknownOsFamily {
    /// The ID that was read.
    pub id: String,
    /// The ID_LIKE that was read.
    pub id_like: String,
}

impl crate::failure::Classify for UnknownOsFamily {
    fn class(&self) -> crate::failure::FailureClass {
        crate::failure::FailureClass::UnknownOsFamily
    }
}

/// Parses os-release text (KEY=value lines, values optionally quoted).
pub fn parse_os_release(text: &str) -> OsRelease {
    let mut out = OsRelease::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = unquote(value.trim());
        match key.trim() {
            "ID" => out.id = value.to_ascii_lowercase(),
            "ID_LIKE" => out.id_like = value.split_whitespace().map(str::to_ascii_lowercase).collect(),
            "VERSION_ID" => out.version_id = Some(value),
            "PRETTY_NAME" => out.pretty_name = Some(value),
            _ => {}
        }
    }
    out
}

fn unquote(v: &str) -> String {
    let stripped = v
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
        .unwrap_or(v);
    stripped.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// The family of one os-release ID, if known.
pub fn family_of_id(id: &str) -> Option<OsFamily> {
    match id {
        "debian" | "ubuntu" => Some(OsFamily::Apt),
        "rhel" | "fedora" | "centos" | "amzn" | "rocky" | "almalinux" | "alma" | "ol" => Some(OsFamily::Dnf),
        "suse" | "opensuse" | "sles" | "opensuse-leap" | "opensuse-tumbleweed" => Some(OsFamily::Zypper),
        _ => None,
    }
}

/// The family: the override when given, else `ID`, else the first known `ID_LIKE`.
pub fn detect_family(os: &OsRelease, override_family: Option<OsFamily>) -> Result<OsFamily, UnknownOsFamily> {
    if let Some(f) = override_family {
        return Ok(f);
    }
    std::iter::once(&os.id)
        .chain(&os.id_like)
        .find_map(|id| family_of_id(id))
        .ok_or_else(|| UnknownOsFamily { id: os.id.clone(), id_like: os.id_like.join(" ") })
}

#[cfg(test)]
pub(crate) mod samples {
    pub const DEBIAN: &str = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\nHOME_URL=\"https://www.debian.org/\"\n";
    pub const UBUNTU: &str = "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=noble\n";
    pub const FEDORA: &str = "NAME=\"Fedora Linux\"\nVERSION=\"41 (Container Image)\"\nID=fedora\nVERSION_ID=41\nPLATFORM_ID=\"platform:f41\"\nPRETTY_NAME=\"Fedora Linux 41 (Container Image)\"\n";
    pub const ROCKY: &str = "NAME=\"Rocky Linux\"\nVERSION=\"9.5 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.5\"\nPRETTY_NAME=\"Rocky Linux 9.5 (Blue Onyx)\"\n";
    pub const ALMA: &str = "NAME=\"AlmaLinux\"\nVERSION=\"9.5 (Teal Serval)\"\nID=\"almalinux\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.5\"\n";
    pub const AMZN: &str = "NAME=\"Amazon Linux\"\nVERSION=\"2023\"\nID=\"amzn\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"2023\"\nPRETTY_NAME=\"Amazon Linux 2023.6.20241212\"\n";
    pub const RHEL_UBI: &str = "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"9.5 (Plow)\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.5\"\n";
    pub const OPENSUSE: &str = "NAME=\"openSUSE Leap\"\nVERSION=\"15.6\"\nID=\"opensuse-leap\"\nID_LIKE=\"suse opensuse\"\nVERSION_ID=\"15.6\"\n";
    pub const ALPINE: &str =
        "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.21.0\nPRETTY_NAME=\"Alpine Linux v3.21\"\n";
    pub const MINT: &str = "NAME=\"Linux Mint\"\nID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"22\"\n";
}

#[cfg(test)]
mod tests {
    use super::samples::*;
    use super::*;

    fn family(text: &str) -> Result<OsFamily, UnknownOsFamily> {
        detect_family(&parse_os_release(text), None)
    }

    #[test]
    fn every_sample_resolves_to_its_family() {
        for (name, text, want) in [
            ("debian", DEBIAN, OsFamily::Apt),
            ("ubuntu", UBUNTU, OsFamily::Apt),
            ("mint", MINT, OsFamily::Apt),
            ("fedora", FEDORA, OsFamily::Dnf),
            ("rocky", ROCKY, OsFamily::Dnf),
            ("alma", ALMA, OsFamily::Dnf),
            ("amzn", AMZN, OsFamily::Dnf),
            ("rhel", RHEL_UBI, OsFamily::Dnf),
            ("opensuse", OPENSUSE, OsFamily::Zypper),
        ] {
            assert_eq!(family(text), Ok(want), "{name}");
        }
    }

    #[test]
    fn quoted_values_and_id_like_are_parsed() {
        let os = parse_os_release(ROCKY);
        assert_eq!(os.id, "rocky");
        assert_eq!(os.id_like, ["rhel", "centos", "fedora"]);
        assert_eq!(os.version_id.as_deref(), Some("9.5"));
    }

    #[test]
    fn alpine_is_an_error_naming_the_override() {
        let err = family(ALPINE).unwrap_err();
        assert_eq!(err.id, "alpine");
        assert!(err.to_string().contains("base.osFamily"), "{err}");
    }

    #[test]
    fn the_override_wins() {
        assert_eq!(detect_family(&parse_os_release(ALPINE), Some(OsFamily::Apt)), Ok(OsFamily::Apt));
        assert_eq!(detect_family(&parse_os_release(DEBIAN), Some(OsFamily::Zypper)), Ok(OsFamily::Zypper));
    }

    #[test]
    fn empty_text_is_unknown() {
        assert!(family("").is_err());
    }
}
