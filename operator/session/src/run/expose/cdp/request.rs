//! The first request on a CDP connection, checked before a byte reaches
//! Chromium. A web page the user has open can aim requests at the tunnel's
//! local port: by DNS rebinding (a name that resolves to 127.0.0.1, so the
//! Host header carries that name) or by a cross-origin WebSocket (the Origin
//! header names the page). Both are refused here; Chromium applies its own
//! Host rule to every later request on the connection as well.

use std::net::IpAddr;

/// The largest request head read before giving up (Chromium's own is 8 KiB
/// of headers; clients send a few hundred bytes).
pub const MAX_HEAD: usize = 16 << 10;

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not an HTTP/1.x request head within [`MAX_HEAD`] bytes.
    NotHttp,
    /// No Host header, or more than one.
    Host(String),
    /// An Origin header that is not the endpoint's own loopback address.
    Origin(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotHttp => write!(f, "not an HTTP/1.x request head within {MAX_HEAD} bytes"),
            Self::Host(host) => write!(f, "Host {host:?} is not localhost or an IP address (DNS rebinding?)"),
            Self::Origin(origin) => write!(f, "Origin {origin:?} is not a loopback address (a web page?)"),
        }
    }
}

/// The length of the request head in `buffer` (through the blank line), once complete.
pub fn head_len(buffer: &[u8]) -> Option<usize> {
    buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// Checks a complete request head.
pub fn check(head: &[u8]) -> Result<(), Refusal> {
    let text = std::str::from_utf8(head).map_err(|_| Refusal::NotHttp)?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    if !request_line.ends_with(" HTTP/1.1") && !request_line.ends_with(" HTTP/1.0") {
        return Err(Refusal::NotHttp);
    }
    let mut hosts = Vec::new();
    let mut origins = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else { return Err(Refusal::NotHttp) };
        let value = value.trim();
        if name.eq_ignore_ascii_case("host") {
            hosts.push(value);
        } else if name.eq_ignore_ascii_case("origin") {
            origins.push(value);
        }
    }
    match hosts.as_slice() {
        [host] if host_allowed(host) => {}
        [host] => return Err(Refusal::Host((*host).to_owned())),
        _ => return Err(Refusal::Host(hosts.join(", "))),
    }
    for origin in origins {
        if !origin_allowed(origin) {
            return Err(Refusal::Origin(origin.to_owned()));
        }
    }
    Ok(())
}

/// `localhost` or an IP literal, with or without a port: Chromium's own rule
/// for its DevTools server, which also lets a tunnel bound on another local
/// address work. A name other than `localhost` is how DNS rebinding arrives.
pub fn host_allowed(host: &str) -> bool {
    let name = strip_port(host);
    name.eq_ignore_ascii_case("localhost") || parse_ip(name).is_some()
}

/// An Origin whose host is loopback (DevTools' own front-end opened from the
/// tunnel); any web origin is refused. `null` (a sandboxed or file page) too.
fn origin_allowed(origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else { return false };
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port or [v6]
        return rest.split_once(']').map_or(host, |(inside, _)| inside);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn parse_ip(name: &str) -> Option<IpAddr> {
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[&str]) -> Vec<u8> {
        let mut text = lines.join("\r\n");
        text.push_str("\r\n\r\n");
        text.into_bytes()
    }

    #[test]
    fn loopback_names_and_ip_literals_pass() {
        for host in
            ["127.0.0.1:9222", "localhost:41234", "LOCALHOST", "[::1]:9222", "[::1]", "10.1.2.3:80", "127.0.0.1"]
        {
            check(&head(&["GET /json/version HTTP/1.1", &format!("Host: {host}")]))
                .unwrap_or_else(|e| panic!("{host}: {e}"));
        }
    }

    #[test]
    fn rebinding_names_are_refused() {
        for host in ["evil.example:9222", "localhost.evil.example", "127.0.0.1.nip.io:9222", "", "local host"] {
            let refused = check(&head(&["GET /json/version HTTP/1.1", &format!("Host: {host}")]));
            assert!(matches!(refused, Err(Refusal::Host(_))), "{host:?}: {refused:?}");
        }
    }

    #[test]
    fn a_missing_or_doubled_host_is_refused() {
        assert!(matches!(check(&head(&["GET / HTTP/1.1"])), Err(Refusal::Host(_))));
        let doubled = head(&["GET / HTTP/1.1", "Host: 127.0.0.1", "host: evil.example"]);
        assert!(matches!(check(&doubled), Err(Refusal::Host(_))));
    }

    #[test]
    fn a_web_origin_is_refused_even_with_a_loopback_host() {
        let ws = |origin: &str| {
            head(&[
                "GET /devtools/browser/x HTTP/1.1",
                "Host: 127.0.0.1:9222",
                "Upgrade: websocket",
                &format!("Origin: {origin}"),
            ])
        };
        for origin in ["https://evil.example", "null", "http://127.0.0.1.evil.example", "garbage"] {
            assert!(matches!(check(&ws(origin)), Err(Refusal::Origin(_))), "{origin}");
        }
        for origin in ["http://127.0.0.1:41234", "http://localhost:9222", "http://[::1]:1"] {
            check(&ws(origin)).unwrap_or_else(|e| panic!("{origin}: {e}"));
        }
    }

    #[test]
    fn what_is_not_an_http_head_is_refused() {
        assert_eq!(check(b"\x16\x03\x01 tls hello\r\n\r\n"), Err(Refusal::NotHttp));
        assert_eq!(check(&head(&["GET / HTTP/2.0", "Host: 127.0.0.1"])), Err(Refusal::NotHttp));
        assert_eq!(check(&head(&["GET / HTTP/1.1", "Host 127.0.0.1"])), Err(Refusal::NotHttp));
        assert_eq!(check(&[0xff, 0xfe, b'\r', b'\n', b'\r', b'\n']), Err(Refusal::NotHttp));
    }

    #[test]
    fn the_head_ends_at_the_blank_line() {
        assert_eq!(head_len(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), Some(27));
        assert_eq!(head_len(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
    }
}
