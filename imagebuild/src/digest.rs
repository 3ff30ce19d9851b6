//! Digests: Subresource-Integrity strings (`sha512-<base64>`, `sha256-<base64>`)
//! as npm writes them, hex sha256 as SHASUMS256.txt writes it, and checking bytes.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest as _, Sha256, Sha512};
use std::fmt;

/// A content digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Integrity {
    /// sha256 of the content.
    Sha256([u8; 32]),
    /// sha512 of the content.
    Sha512(Box<[u8; 64]>),
}

/// A string that is not an integrity value the builder accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a sha256 or sha512 integrity (expected `sha512-<base64>`, `sha256-<base64>` or 64 hex digits)")]
pub struct BadIntegrity(pub String);

impl Integrity {
    /// Parses SRI (`sha512-…`, `sha256-…`; the strongest of several space-separated values) or bare sha256 hex.
    pub fn parse(s: &str) -> Result<Integrity, BadIntegrity> {
        let bad = || BadIntegrity(s.to_owned());
        let s = s.trim();
        if crate::validate::is_sha256_hex(s) {
            let mut out = [0u8; 32];
            hex::decode_to_slice(s, &mut out).map_err(|_| bad())?;
            return Ok(Integrity::Sha256(out));
        }
        let mut best: Option<Integrity> = None;
        for part in s.split_whitespace() {
            let (alg, b64) = part.split_once('-').ok_or_else(bad)?;
            let b64 = b64.split('?').next().unwrap_or_default();
            let bytes = STANDARD.decode(b64).map_err(|_| bad())?;
            let parsed = match alg {
                "sha512" => Integrity::Sha512(Box::new(bytes.try_into().map_err(|_| bad())?)),
                "sha256" => Integrity::Sha256(bytes.try_into().map_err(|_| bad())?),
                _ => continue,
            };
            if matches!(parsed, Integrity::Sha512(_)) || best.is_none() {
                best = Some(parsed);
            }
        }
        best.ok_or_else(bad)
    }

    /// The same algorithm's digest of `bytes`.
    pub fn compute_like(&self, bytes: &[u8]) -> Integrity {
        match self {
            Integrity::Sha256(_) => Integrity::sha256_of(bytes),
            Integrity::Sha512(_) => Integrity::sha512_of(bytes),
        }
    }

    /// sha256 of `bytes`.
    pub fn sha256_of(bytes: &[u8]) -> Integrity {
        Integrity::Sha256(Sha256::digest(bytes).into())
    }

    /// sha512 of `bytes`.
    pub fn sha512_of(bytes: &[u8]) -> Integrity {
        Integrity::Sha512(Box::new(Sha512::digest(bytes).into()))
    }

    /// The algorithm name.
    pub const fn algorithm(&self) -> &'static str {
        match self {
            Integrity::Sha256(_) => "sha256",
            Integrity::Sha512(_) => "sha512",
        }
    }

    /// Lowercase hex of the digest (cache file names).
    pub fn hex(&self) -> String {
        match self {
            Integrity::Sha256(d) => hex::encode(d),
            Integrity::Sha512(d) => hex::encode(d.as_slice()),
        }
    }

    /// Whether `bytes` have this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        &self.compute_like(bytes) == self
    }
}

impl fmt::Display for Integrity {
    /// SRI form, as npm writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Integrity::Sha256(d) => write!(f, "sha256-{}", STANDARD.encode(d)),
            Integrity::Sha512(d) => write!(f, "sha512-{}", STANDARD.encode(d.as_slice())),
        }
    }
}

impl serde::Serialize for Integrity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Integrity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Integrity::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Finds `file_name`'s sha256 in a SHASUMS256.txt (`<hex>  <name>` lines).
pub fn sha256_from_shasums(shasums: &str, file_name: &str) -> Option<Integrity> {
    shasums.lines().find_map(|line| {
        let (digest, name) = line.split_once(char::is_whitespace)?;
        (name.trim().trim_start_matches('*') == file_name).then(|| Integrity::parse(digest).ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sri_round_trips_and_matches_npm_form() {
        // `printf hello | openssl dgst -sha512 -binary | base64`
        let i = Integrity::sha512_of(b"hello");
        assert_eq!(
            i.to_string(),
            "sha512-m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw=="
        );
        assert_eq!(Integrity::parse(&i.to_string()), Ok(i.clone()));
        assert!(i.matches(b"hello") && !i.matches(b"hello!"));
    }

    #[test]
    fn hex_sha256_is_accepted() {
        let hexd = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        let i = Integrity::parse(hexd).unwrap();
        assert_eq!(i.hex(), hexd);
        assert!(i.matches(b"hello"));
        assert!(i.to_string().starts_with("sha256-"));
    }

    #[test]
    fn the_strongest_of_several_is_kept() {
        let both = format!("{} {}", Integrity::sha256_of(b"x"), Integrity::sha512_of(b"x"));
        assert_eq!(Integrity::parse(&both).unwrap().algorithm(), "sha512");
        assert!(Integrity::parse("sha1-AAAA").is_err());
        assert!(Integrity::parse("nonsense").is_err());
    }

    #[test]
    fn shasums_lookup_is_exact() {
        let a = Integrity::sha256_of(b"a").hex();
        let b = Integrity::sha256_of(b"b").hex();
        let text = format!("{a}  node-v22.12.0-linux-x64.tar.gz\n{b}  node-v22.12.0-linux-x64.tar.xz\n");
        assert_eq!(sha256_from_shasums(&text, "node-v22.12.0-linux-x64.tar.xz").unwrap().hex(), b);
        assert!(sha256_from_shasums(&text, "node-v22.12.0-linux-x6").is_none());
    }
}
