//! The request head a browser sends its HTTP proxy (pure): `CONNECT
//! host:port` for a tunnel (HTTPS, WebSockets), or a request with an
//! absolute `http://` URI to forward. A page controls much of it, so every
//! part is bounded and anything unusual is refused rather than guessed at.

use playpen_api::egress_hosts::normalize_host;

/// Longest request head (request line and headers) the proxy reads.
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;

/// What the browser asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The host, normalized (lowercase, no trailing dot, no IPv6 brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// Tunnel or forward.
    pub kind: Kind,
}

/// How the connection continues once allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Answer 200 and relay bytes both ways.
    Connect,
    /// Send this head (origin-form, `Connection: close`) upstream, then relay.
    Forward(Vec<u8>),
}

/// Why a head was refused (answered 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadRequest {
    /// Longer than [`MAX_HEAD_BYTES`].
    #[error("the request head is longer than {MAX_HEAD_BYTES} bytes")]
    TooLong,
    /// Not `METHOD target HTTP/1.x`.
    #[error("the request line is not `METHOD target HTTP/1.x`")]
    RequestLine,
    /// A forward whose target is not an absolute `http://` URI.
    #[error("a proxied request needs an absolute http:// URI")]
    NotAbsolute,
    /// A host and port that cannot be read.
    #[error("{0:?} is not host:port")]
    Authority(String),
    /// A header line that is not `name: value`.
    #[error("a header line is not `name: value`")]
    Header,
    /// The `Host` header is missing, repeated, or names another host.
    #[error("the Host header must name the URI's host and port")]
    HostMismatch,
}

/// Where the head ends: the index just past its blank line.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Reads `host:port` (`[v6]:port` for IPv6); the port is `default` when
/// absent and `default` is given. Userinfo (`user@host`) is refused: it
/// would let one host's name stand in front of another's.
pub(crate) fn authority(text: &str, default: Option<u16>) -> Result<(String, u16), BadRequest> {
    let bad = || BadRequest::Authority(text.chars().take(80).collect());
    if text.contains('@') || text.is_empty() {
        return Err(bad());
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or_else(bad)?;
        v6.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':').ok_or_else(bad)?),
        };
        (v6, port)
    } else if text.contains(']') {
        return Err(bad());
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?
        }
        Some(_) => return Err(bad()),
        None => default.ok_or_else(bad)?,
    };
    let host_ok = !host.is_empty()
        && host.len() <= 255
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'));
    if !host_ok {
        return Err(bad());
    }
    Ok((normalize_host(host), port))
}

/// Headers a proxy consumes: they are not the origin's business.
const HOP_BY_HOP: [&str; 4] = ["proxy-connection", "proxy-authorization", "connection", "keep-alive"];

/// Parses a complete head (through its blank line).
pub(crate) fn parse(head: &[u8]) -> Result<Request, BadRequest> {
    if head.len() > MAX_HEAD_BYTES {
        return Err(BadRequest::TooLong);
    }
    let text = std::str::from_utf8(head).map_err(|_| BadRequest::Header)?;
    let body = text.strip_suffix("\r\n\r\n").ok_or(BadRequest::RequestLine)?;
    let mut lines = body.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else { return Err(BadRequest::RequestLine) };
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
    if !token(method) || !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(BadRequest::RequestLine);
    }
    let mut headers = Vec::new();
    for header in lines {
        let (name, value) = header.split_once(':').ok_or(BadRequest::Header)?;
        let name_ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !name_ok || value.contains('\r') || value.contains('\n') {
            return Err(BadRequest::Header);
        }
        headers.push((name, value.trim()));
    }
    if method == "CONNECT" {
        let (host, port) = authority(target, None)?;
        return Ok(Request { host, port, kind: Kind::Connect });
    }
    let rest = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
        .ok_or(BadRequest::NotAbsolute)?;
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (host, port) = authority(&rest[..split], Some(80))?;
    let path = match &rest[split..] {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.to_owned(),
        p => format!("/{p}"),
    };
    let hosts: Vec<&str> =
        headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("host")).map(|(_, value)| *value).collect();
    match hosts[..] {
        [one] if authority(one, Some(80)).ok() == Some((host.clone(), port)) => {}
        _ => return Err(BadRequest::HostMismatch),
    }
    let mut out = format!("{method} {path} {version}\r\n");
    for (name, value) in &headers {
        if !HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    // One request per upstream connection: a next request on the browser's
    // connection may name another host and must be checked on its own.
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request { host, port, kind: Kind::Forward(out.into_bytes()) })
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
