use super::*;

fn parse_text(text: &str) -> Result<Request, BadRequest> {
    parse(text.as_bytes())
}

fn forwarded(text: &str) -> String {
    match parse_text(text).expect(text).kind {
        Kind::Forward(head) => String::from_utf8(head).expect("utf-8"),
        Kind::Connect => panic!("not a forward"),
    }
}

#[test]
fn a_connect_names_its_authority() {
    let r = parse_text("CONNECT Example.COM.:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").expect("connect");
    assert_eq!(r, Request { host: "example.com".into(), port: 443, kind: Kind::Connect });
    let v6 = parse_text("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n").expect("v6");
    assert_eq!((v6.host.as_str(), v6.port), ("2001:db8::1", 8443));
}

#[test]
fn a_connect_without_a_port_or_with_a_bad_one_is_refused() {
    for target in
        ["example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:44a", "[::1]", "[::1]x"]
    {
        let text = format!("CONNECT {target} HTTP/1.1\r\n\r\n");
        assert!(matches!(parse_text(&text), Err(BadRequest::Authority(_))), "{target}");
    }
}

#[test]
fn userinfo_and_odd_characters_are_refused_in_an_authority() {
    for target in ["user@example.com:443", "a b:443", "exa%6dple.com:443", "[nothex]:443", "a]:443", "[::1:443"] {
        assert!(authority(target, None).is_err(), "{target}");
    }
    assert_eq!(authority("LocalHost", Some(80)), Ok(("localhost".into(), 80)));
}

#[test]
fn a_forward_is_rewritten_to_origin_form_with_one_request_per_connection() {
    let head = forwarded(
        "GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Connection: keep-alive\r\n\
         Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n",
    );
    assert_eq!(head, "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    let r = parse_text("GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n").expect("no path");
    assert_eq!((r.host.as_str(), r.port), ("example.com", 80));
    assert!(
        forwarded("GET http://example.com?q HTTP/1.0\r\nHost: example.com:80\r\n\r\n").starts_with("GET /?q HTTP/1.0")
    );
}

#[test]
fn the_host_header_must_agree_with_the_uri() {
    for headers in [
        "",
        "Host: other.test\r\n",
        "Host: example.com:81\r\n",
        "Host: example.com\r\nHost: example.com\r\n",
        "Host: user@example.com\r\n",
    ] {
        let text = format!("GET http://example.com/ HTTP/1.1\r\n{headers}\r\n");
        assert_eq!(parse_text(&text), Err(BadRequest::HostMismatch), "{headers:?}");
    }
    let text = "GET http://example.com/ HTTP/1.1\r\nHOST: Example.com.\r\n\r\n";
    assert!(parse_text(text).is_ok());
}

#[test]
fn only_absolute_http_uris_are_forwarded() {
    for target in ["/path", "https://example.com/", "ftp://example.com/", "example.com/", "*"] {
        let text = format!("GET {target} HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!(parse_text(&text), Err(BadRequest::NotAbsolute), "{target}");
    }
    assert!(parse_text("GET HTTP://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n").is_ok());
}

#[test]
fn malformed_request_lines_and_headers_are_refused() {
    for text in [
        "GET  http://a.test/ HTTP/1.1\r\n\r\n",
        "GET http://a.test/ HTTP/2\r\n\r\n",
        "GET http://a.test/\r\n\r\n",
        "G3T http://a.test/ HTTP/1.1\r\n\r\n",
        "\r\n\r\n",
    ] {
        assert_eq!(parse_text(text), Err(BadRequest::RequestLine), "{text:?}");
    }
    for headers in ["NoColon\r\n", " Folded: x\r\n", ": empty\r\n", "Bad Name: x\r\n"] {
        let text = format!("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n{headers}\r\n");
        assert_eq!(parse_text(&text), Err(BadRequest::Header), "{headers:?}");
    }
    assert_eq!(parse(b"GET http://a.test/ HTTP/1.1\r\nX: \xff\r\n\r\n"), Err(BadRequest::Header));
}

#[test]
fn the_head_is_bounded() {
    let long = format!("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES));
    assert_eq!(parse_text(&long), Err(BadRequest::TooLong));
    assert_eq!(head_end(b"CONNECT a:1 HTTP/1.1\r\n\r\nrest"), Some(24));
    assert_eq!(head_end(b"CONNECT a:1 HTTP/1.1\r\n"), None);
}

#[test]
fn an_ipv6_literal_is_forwarded_without_its_brackets_and_its_host_header_agrees() {
    let r = parse_text("GET http://[2001:db8::1]:8080/x HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n").expect("v6");
    assert_eq!((r.host.as_str(), r.port), ("2001:db8::1", 8080));
    let mismatch = "GET http://[2001:db8::1]/ HTTP/1.1\r\nHost: [2001:db8::2]\r\n\r\n";
    assert_eq!(parse_text(mismatch), Err(BadRequest::HostMismatch));
}
