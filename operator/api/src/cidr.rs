//! Canonical CIDRs and the ranges no session reaches by default, shared by
//! the operator (which writes them into NetworkPolicies) and the session
//! runtime's egress proxy (which checks each resolved address against them).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// Ranges no session reaches by default: private (RFC 1918), shared address
/// space (RFC 6598), loopback, link-local (cloud metadata lives at
/// 169.254.169.254), IPv6 unique-local, link-local and loopback.
pub const SPECIAL_RANGES: [&str; 9] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "fc00::/7",
    "fe80::/10",
    "::1/128",
];

/// A canonical CIDR (no address bits set beyond the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

/// Why a CIDR was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// Not `<address>/<prefix>`.
    #[error("{0:?} is not a CIDR: write <address>/<prefix>, for example 10.96.0.0/12")]
    Syntax(String),
    /// The prefix is longer than the address.
    #[error("{0:?}: the prefix must be at most 32 for IPv4 and 128 for IPv6")]
    Prefix(String),
    /// Bits beyond the prefix are set.
    #[error("{given:?} has address bits beyond its prefix: write {canonical}")]
    NotCanonical {
        /// As written.
        given: String,
        /// What was meant.
        canonical: String,
    },
}

impl Cidr {
    fn bits(self) -> u8 {
        if self.addr.is_ipv4() {
            32
        } else {
            128
        }
    }

    fn as_u128(addr: IpAddr) -> u128 {
        match addr {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        }
    }

    fn mask(bits: u8, prefix: u8) -> u128 {
        let host = u32::from(bits - prefix);
        let all = if bits == 32 { u128::from(u32::MAX) } else { u128::MAX };
        all.checked_shl(host).unwrap_or(0) & all
    }

    /// IPv4.
    pub fn is_ipv4(self) -> bool {
        self.addr.is_ipv4()
    }

    /// Every address of `other` is in `self`.
    pub fn contains(self, other: Cidr) -> bool {
        self.is_ipv4() == other.is_ipv4()
            && self.prefix <= other.prefix
            && Self::as_u128(other.addr) & Self::mask(self.bits(), self.prefix) == Self::as_u128(self.addr)
    }

    /// `addr` lies in `self`. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
    /// counts as its IPv4 address, so a mapped spelling cannot slip past an
    /// IPv4 range.
    pub fn contains_addr(self, addr: IpAddr) -> bool {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            IpAddr::V4(_) => addr,
        };
        let host = Self { addr, prefix: if addr.is_ipv4() { 32 } else { 128 } };
        self.contains(host)
    }

    /// The whole address family (0.0.0.0/0 or ::/0).
    pub fn everything(v4: bool) -> Self {
        let addr = if v4 { IpAddr::from([0u8; 4]) } else { IpAddr::from([0u8; 16]) };
        Self { addr, prefix: 0 }
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Self, CidrError> {
        let syntax = || CidrError::Syntax(text.to_owned());
        let (addr, prefix) = text.split_once('/').ok_or_else(syntax)?;
        let addr: IpAddr = addr.parse().map_err(|_| syntax())?;
        let prefix: u8 = prefix.parse().map_err(|_| syntax())?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(CidrError::Prefix(text.to_owned()));
        }
        let masked = Self::as_u128(addr) & Self::mask(bits, prefix);
        let masked = match addr {
            IpAddr::V4(_) => IpAddr::from((masked as u32).to_be_bytes()),
            IpAddr::V6(_) => IpAddr::from(masked.to_be_bytes()),
        };
        let cidr = Self { addr: masked, prefix };
        if cidr.to_string() != text {
            return Err(CidrError::NotCanonical { given: text.to_owned(), canonical: cidr.to_string() });
        }
        Ok(cidr)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Cidr {
        text.parse().expect(text)
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect(text)
    }

    #[test]
    fn an_address_is_inside_its_ranges_only() {
        assert!(cidr("10.0.0.0/8").contains_addr(ip("10.255.0.1")));
        assert!(!cidr("10.0.0.0/8").contains_addr(ip("11.0.0.1")));
        assert!(cidr("169.254.0.0/16").contains_addr(ip("169.254.169.254")));
        assert!(cidr("fe80::/10").contains_addr(ip("fe80::1")));
        assert!(!cidr("fe80::/10").contains_addr(ip("10.0.0.1")), "families never mix");
        assert!(cidr("0.0.0.0/0").contains_addr(ip("203.0.113.9")));
        assert!(cidr("192.0.2.7/32").contains_addr(ip("192.0.2.7")));
        assert!(!cidr("192.0.2.7/32").contains_addr(ip("192.0.2.8")));
    }

    #[test]
    fn an_ipv4_mapped_address_meets_the_ipv4_ranges() {
        assert!(cidr("127.0.0.0/8").contains_addr(ip("::ffff:127.0.0.1")));
        assert!(cidr("169.254.0.0/16").contains_addr(ip("::ffff:169.254.169.254")));
        assert!(!cidr("::1/128").contains_addr(ip("::ffff:127.0.0.1")));
    }

    #[test]
    fn the_special_ranges_are_canonical() {
        for text in SPECIAL_RANGES {
            assert_eq!(cidr(text).to_string(), text);
        }
    }
}
