use proptest::prelude::*;

use super::*;

fn rule(text: &str) -> HostRule {
    text.parse().expect(text)
}

fn rules(mode: EgressMode, allow: &[&str], deny: &[&str]) -> HostRules {
    let owned = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    HostRules::parse(mode, &owned(allow), &owned(deny)).expect("rules")
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect(text)
}

fn cidr(text: &str) -> Cidr {
    text.parse().expect(text)
}

fn cel_regex() -> regex::Regex {
    regex::Regex::new(HOST_RULE_PATTERN).expect("pattern")
}

const GOOD: &[&str] = &[
    "example.com",
    "*.example.com",
    "sso.corp.test:443",
    "*.corp.test:8443",
    "localhost",
    "a",
    "xn--bcher-kva.example",
    "a-b.c-d.e1",
    "0.example.com",
    "1.2.3.com",
    "x:1",
    "x:65535",
];

const BAD: &[&str] = &[
    "",
    "Example.com",
    "example.com.",
    ".example.com",
    "example..com",
    "*example.com",
    "*.*.example.com",
    "a.*.example.com",
    "*",
    "*.",
    "-a.example.com",
    "a-.example.com",
    "a_b.example.com",
    "10.0.0.1",
    "10.0.0.1:443",
    "1234",
    "example.123",
    "[::1]",
    "::1",
    "fe80::1",
    "example.com:0",
    "example.com:65536",
    "example.com:080",
    "example.com:",
    "example.com:+80",
    "example.com:80:80",
    "exämple.com",
    "example.com/path",
    "user@example.com",
    "http://example.com",
    " example.com",
];

#[test]
fn the_grammar_accepts_dns_names_with_an_optional_leading_wildcard_and_port() {
    for text in GOOD {
        let parsed = rule(text);
        assert_eq!(parsed.to_string(), *text, "round trip");
    }
    assert_eq!(rule("*.example.com"), HostRule { pattern: Pattern::Wildcard("example.com".into()), port: None });
    assert_eq!(
        rule("sso.corp.test:443"),
        HostRule { pattern: Pattern::Exact("sso.corp.test".into()), port: Some(443) }
    );
}

#[test]
fn the_grammar_refuses_ip_literals_upper_case_and_misplaced_wildcards() {
    for text in BAD {
        assert!(text.parse::<HostRule>().is_err(), "{text:?} was accepted");
    }
    assert!(matches!("example.com:0".parse::<HostRule>(), Err(HostRuleError::Port(_))));
    assert!(matches!("10.0.0.1".parse::<HostRule>(), Err(HostRuleError::Host(_))));
    assert!(matches!("".parse::<HostRule>(), Err(HostRuleError::Length(_))));
}

#[test]
fn a_label_is_at_most_63_characters_and_a_host_at_most_253() {
    assert!(format!("{}.com", "a".repeat(63)).parse::<HostRule>().is_ok());
    assert!(format!("{}.com", "a".repeat(64)).parse::<HostRule>().is_err());
    let long = format!("{}.com", vec!["a".repeat(62); 4].join("."));
    assert_eq!(long.len(), 255);
    assert!(matches!(long.parse::<HostRule>(), Err(HostRuleError::Length(_))));
    let fits = format!("{}.{}.com", vec!["a".repeat(62); 3].join("."), "a".repeat(60));
    assert_eq!(fits.len(), 253);
    assert!(fits.parse::<HostRule>().is_ok());
}

#[test]
fn the_cel_pattern_and_the_parser_agree_on_every_listed_case() {
    let re = cel_regex();
    for text in GOOD.iter().chain(BAD) {
        let by_length = !text.is_empty() && text.len() <= MAX_HOST_LEN;
        assert_eq!(re.is_match(text) && by_length, text.parse::<HostRule>().is_ok(), "{text:?}");
    }
}

#[test]
fn the_cel_rule_escapes_the_pattern_for_a_cel_string() {
    let cel = host_list_rule();
    assert!(cel.starts_with("self.all(h, h.matches('^(\\\\*\\\\.)?"), "{cel}");
    assert!(!cel.contains('\n') && !cel[23..cel.len() - 3].contains('\''), "{cel}");
}

#[test]
fn no_port_means_http_and_https() {
    let r = rule("example.com");
    assert!(r.matches("example.com", 80));
    assert!(r.matches("example.com", 443));
    assert!(!r.matches("example.com", 8080));
    let r = rule("example.com:8080");
    assert!(r.matches("example.com", 8080));
    assert!(!r.matches("example.com", 443));
}

#[test]
fn a_wildcard_matches_one_or_more_labels_below_never_the_apex() {
    let r = rule("*.example.com");
    assert!(r.matches("a.example.com", 443));
    assert!(r.matches("a.b.example.com", 443));
    assert!(!r.matches("example.com", 443));
    assert!(!r.matches("badexample.com", 443));
    assert!(!r.matches("a.example.com.evil.test", 443));
    assert!(!r.matches(".example.com", 443));
}

#[test]
fn hosts_are_compared_case_insensitively_without_the_trailing_dot() {
    let r = rules(EgressMode::AllowListOnly, &["example.com", "*.corp.test"], &[]);
    assert!(verdict("EXAMPLE.com", 443, &r).allowed);
    assert!(verdict("example.com.", 443, &r).allowed);
    assert!(verdict("Sso.Corp.Test.", 80, &r).allowed);
    assert!(!verdict("example.com..", 443, &r).allowed);
}

#[test]
fn deny_wins_over_allow_and_names_its_index() {
    let r = rules(EgressMode::AllowListOnly, &["*.example.com"], &["x.test", "ads.example.com"]);
    assert_eq!(verdict("ads.example.com", 443, &r), Verdict::new(false, "denyHosts[1]"));
    assert_eq!(verdict("www.example.com", 443, &r), Verdict::new(true, "allowHosts[0]"));
    let r = rules(EgressMode::Internet, &[], &["*.example.com:443"]);
    assert_eq!(verdict("a.example.com", 443, &r), Verdict::new(false, "denyHosts[0]"));
    assert_eq!(verdict("a.example.com", 80, &r), Verdict::new(true, "mode Internet"), "the deny names 443 only");
}

#[test]
fn the_mode_decides_what_no_rule_names() {
    let open = rules(EgressMode::Internet, &[], &["ads.test"]);
    assert_eq!(verdict("news.test", 443, &open), Verdict::new(true, "mode Internet"));
    let narrowed = rules(EgressMode::Internet, &["example.com"], &[]);
    assert_eq!(verdict("news.test", 443, &narrowed), Verdict::new(false, "allowHosts (none matched)"));
    let listed = rules(EgressMode::AllowListOnly, &["example.com"], &[]);
    assert_eq!(verdict("news.test", 443, &listed), Verdict::new(false, "mode AllowListOnly"));
    let none = rules(EgressMode::DenyAll, &[], &["ads.test"]);
    assert_eq!(verdict("example.com", 443, &none), Verdict::new(false, "mode DenyAll"));
    assert_eq!(verdict("10.0.0.1", 443, &open), Verdict::new(true, "mode Internet"), "IP literals meet no host rule");
}

#[test]
fn a_bad_list_entry_is_reported_with_its_field_and_index() {
    let err = HostRules::parse(EgressMode::Internet, &["ok.test".into()], &["a.test".into(), "10.0.0.1".into()])
        .expect_err("IP literal");
    assert_eq!((err.field, err.index), ("denyHosts", 1));
    assert!(err.to_string().starts_with("denyHosts[1]: \"10.0.0.1\""), "{err}");
    assert!(!rules(EgressMode::Internet, &[], &[]).any());
    assert!(rules(EgressMode::Internet, &[], &["a.test"]).any());
}

#[test]
fn the_standard_floor_refuses_every_special_range() {
    let floor = Floor::standard(&[cidr("10.96.0.0/12")], vec![]);
    let allowed = Verdict::new(true, "allowHosts[0]");
    for address in [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "127.0.0.1",
        "169.254.169.254",
        "fc00::1",
        "fd12::1",
        "fe80::1",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "0.0.0.0",
        "::",
    ] {
        let v = floor.verdict(&allowed, ip(address));
        assert!(!v.allowed && v.rule.starts_with("denied range "), "{address}: {v:?}");
    }
    assert_eq!(floor.verdict(&allowed, ip("203.0.113.7")), allowed);
    assert_eq!(floor.verdict(&allowed, ip("2001:db8::1")), allowed);
    assert_eq!(floor.verdict(&allowed, ip("169.254.169.254")).rule, "denied range 169.254.0.0/16");
}

#[test]
fn an_allow_listed_cidr_overrides_the_floor_but_not_a_deny_rule_nor_the_unspecified_address() {
    let floor = Floor::standard(&[], vec![cidr("192.0.2.0/24"), cidr("127.0.0.0/8")]);
    let by_host = Verdict::new(true, "allowHosts[0]");
    assert_eq!(floor.verdict(&by_host, ip("127.0.0.1")), Verdict::new(true, "allowCIDRs[1]"));
    let unlisted = Verdict::new(false, "mode AllowListOnly");
    assert_eq!(floor.verdict(&unlisted, ip("192.0.2.9")), Verdict::new(true, "allowCIDRs[0]"));
    assert_eq!(floor.verdict(&unlisted, ip("203.0.113.7")), unlisted);
    let denied = Verdict::new(false, "denyHosts[0]");
    assert_eq!(floor.verdict(&denied, ip("192.0.2.9")), denied);
    assert_eq!(floor.verdict(&by_host, ip("0.0.0.0")), Verdict::new(false, "denied range 0.0.0.0/8"));
}

#[test]
fn the_floor_is_an_input_so_a_test_may_leave_loopback_open() {
    let floor = Floor { denied: vec![cidr("10.0.0.0/8")], allowed: vec![] };
    let v = Verdict::new(true, "allowHosts[0]");
    assert_eq!(floor.verdict(&v, ip("127.0.0.1")), v);
    assert!(!floor.verdict(&v, ip("10.0.0.1")).allowed);
}

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?"
}

fn host() -> impl Strategy<Value = String> {
    (prop::collection::vec(label(), 0..4), "[a-z][a-z0-9]{0,5}").prop_map(|(mut labels, last)| {
        labels.push(last);
        labels.join(".")
    })
}

proptest! {
    #[test]
    fn parser_and_cel_pattern_agree_on_arbitrary_text(text in "[-a-z0-9.*:A-Z\\[\\]_]{0,24}") {
        let by_regex = cel_regex().is_match(&text) && !text.is_empty();
        prop_assert_eq!(by_regex, text.parse::<HostRule>().is_ok(), "{:?}", text);
    }

    #[test]
    fn every_generated_rule_round_trips(h in host(), wildcard in any::<bool>(), port in prop::option::of(1u16..)) {
        let text = format!("{}{h}{}", if wildcard { "*." } else { "" }, port.map(|p| format!(":{p}")).unwrap_or_default());
        let parsed: HostRule = text.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(parsed.to_string(), text);
        prop_assert!(cel_regex().is_match(&parsed.to_string()));
    }

    #[test]
    fn a_wildcard_matches_exactly_the_hosts_below_it(suffix in host(), below in host(), other in host()) {
        let r: HostRule = format!("*.{suffix}").parse().expect("rule");
        let inside = format!("{below}.{suffix}");
        prop_assert!(r.matches(&inside, 443));
        prop_assert!(!r.matches(&suffix, 443));
        let dotted = format!(".{suffix}");
        prop_assert_eq!(r.matches(&other, 443), other.ends_with(&dotted));
    }

    #[test]
    fn a_host_both_lists_name_is_refused(h in host(), port in prop::sample::select(vec![80u16, 443])) {
        let listed = vec![h.clone()];
        for mode in [EgressMode::Internet, EgressMode::AllowListOnly, EgressMode::DenyAll] {
            let r = HostRules::parse(mode, &listed, &listed).expect("rules");
            prop_assert_eq!(verdict(&h.to_uppercase(), port, &r), Verdict::new(false, "denyHosts[0]"));
        }
    }
}
