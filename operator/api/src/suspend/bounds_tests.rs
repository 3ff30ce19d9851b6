use proptest::prelude::*;
use serde_json::json;

use super::*;

fn tab(url: &str) -> Tab {
    Tab { url: url.into(), scroll_x: 0.0, scroll_y: 0.0, fields: vec![] }
}

fn input(id: &str, value: &str) -> Field {
    Field { key: FieldKey::Id { id: id.into() }, value: FieldValue::Input { value: value.into() } }
}

fn doc(tabs: Vec<Tab>, active: usize) -> SuspendedState {
    SuspendedState { tabs, active, ..SuspendedState::new(1) }
}

#[test]
fn a_captured_document_round_trips_and_is_within_bounds() {
    let mut d = doc(vec![tab("http://127.0.0.1:1/a"), tab("about:blank")], 1);
    d.tabs[0].scroll_y = 300.5;
    d.tabs[0].fields = vec![
        input("email", "a@b.c"),
        Field { key: FieldKey::Name { name: "agree".into(), index: 1 }, value: FieldValue::Checked { checked: true } },
        Field { key: FieldKey::Id { id: "notes".into() }, value: FieldValue::Textarea { value: "x\ny".into() } },
        Field { key: FieldKey::Id { id: "c".into() }, value: FieldValue::Select { selected: vec!["b".into()] } },
    ];
    d.storage.cookies = vec![json!({"name": "sid", "value": "v", "domain": "127.0.0.1", "path": "/"})];
    d.storage.origins = vec![OriginStorage {
        origin: "http://127.0.0.1:1".into(),
        local_storage: vec![json!({"name": "k", "value": "v"})],
    }];
    assert_eq!(check(&d), Ok(()));
    let (parsed, dropped) = parse(&d.to_bytes()).unwrap();
    assert_eq!((parsed, dropped), (d.clone(), vec![]));
    let text = String::from_utf8(d.to_bytes()).unwrap();
    assert!(
        text.contains(r#""key":{"by":"name","name":"agree","index":1},"value":{"kind":"checked","checked":true}"#),
        "{text}"
    );
    assert!(text.contains(r#""capturedAtMs":1"#) && text.contains(r#""localStorage":[{"#), "{text}");
}

#[test]
fn unsafe_urls_are_left_out_with_their_reason_and_the_active_tab_follows() {
    let d = doc(vec![tab("javascript:alert(1)"), tab("http://a/"), tab("file:///etc/passwd"), tab("https://b/")], 3);
    assert!(check(&d).unwrap_err().0.contains("tab 0: javascript: URLs are not reopened"));
    let (clean, dropped) = sanitise(d);
    assert_eq!(clean.tabs.iter().map(|t| t.url.as_str()).collect::<Vec<_>>(), ["http://a/", "https://b/"]);
    assert_eq!(clean.active, 1);
    assert_eq!(dropped.len(), 2);
    assert_eq!(
        dropped[0].to_string(),
        "tab 0 left out: javascript: URLs are not reopened (only http, https, data and about:blank are)"
    );
    assert!(dropped[1].to_string().starts_with("tab 2 left out: file: URLs"));
    let (clean, dropped) = sanitise(doc(vec![tab("chrome://x"), tab("http://a/")], 0));
    assert_eq!(clean.active, 0);
    assert!(dropped.iter().any(|d| d.what == "the active tab (0)"));
}

#[test]
fn counts_are_cut_to_their_limits_keeping_the_first() {
    let many: Vec<Tab> = (0..MAX_TABS + 3).map(|i| tab(&format!("http://h/{i}"))).collect();
    let (clean, dropped) = sanitise(doc(many, MAX_TABS + 1));
    assert_eq!(clean.tabs.len(), MAX_TABS);
    assert_eq!(clean.tabs[MAX_TABS - 1].url, format!("http://h/{}", MAX_TABS - 1));
    assert_eq!(clean.active, 0, "the active tab was cut");
    assert_eq!(dropped.len(), 4);
    let mut t = tab("http://h/");
    t.fields = (0..MAX_FIELDS_PER_TAB + 1).map(|i| input(&format!("f{i}"), "v")).collect();
    let (clean, dropped) = sanitise(doc(vec![t], 0));
    assert_eq!(clean.tabs[0].fields.len(), MAX_FIELDS_PER_TAB);
    assert_eq!(dropped[0].what, format!("tab 0 field #f{MAX_FIELDS_PER_TAB}"));
}

#[test]
fn oversized_values_are_dropped_not_cut_and_never_quoted() {
    let secret = "s3cret".repeat(MAX_VALUE_BYTES);
    let mut t = tab("http://h/");
    t.fields = vec![
        input("big", &secret),
        input("", "x"),
        input(&"k".repeat(MAX_KEY_BYTES + 1), "x"),
        input("ok", "fine"),
        Field {
            key: FieldKey::Id { id: "s".into() },
            value: FieldValue::Select { selected: vec!["o".into(); MAX_SELECTED + 1] },
        },
    ];
    t.scroll_y = f64::NAN;
    t.scroll_x = -1e12;
    let (clean, dropped) = sanitise(doc(vec![t], 0));
    assert_eq!(clean.tabs[0].fields, vec![input("ok", "fine")]);
    assert_eq!((clean.tabs[0].scroll_x, clean.tabs[0].scroll_y), (-MAX_SCROLL, 0.0));
    assert_eq!(dropped.len(), 4);
    assert!(dropped.iter().all(|d| !d.to_string().contains("s3cret")));
    assert!(dropped[0].to_string().contains(&format!("its value is {} bytes", secret.len())));
}

#[test]
fn storage_items_over_their_own_bounds_are_dropped() {
    let mut d = doc(vec![], 0);
    d.storage.cookies = vec![
        json!("not an object"),
        json!({"name": "a", "value": "v".repeat(MAX_COOKIE_BYTES)}),
        json!({"name": "ok"}),
    ];
    d.storage.origins = vec![
        OriginStorage { origin: "file://".into(), local_storage: vec![] },
        OriginStorage {
            origin: "https://a".into(),
            local_storage: vec![
                json!({"name": "k", "value": "v".repeat(MAX_ENTRY_BYTES)}),
                json!({"name": "k2", "value": "v"}),
                json!(3),
            ],
        },
    ];
    let (clean, dropped) = sanitise(d);
    assert_eq!(clean.storage.cookies, vec![json!({"name": "ok"})]);
    assert_eq!(clean.storage.origins.len(), 1);
    assert_eq!(clean.storage.origins[0].local_storage, vec![json!({"name": "k2", "value": "v"})]);
    assert_eq!(dropped.len(), 5, "{dropped:?}");
    assert_eq!(check(&clean), Ok(()));
}

#[test]
fn over_the_total_the_largest_fields_go_first_then_storage_and_cookies_last() {
    let mut tabs = vec![];
    for t in 0..4 {
        let mut tb = tab(&format!("http://h/{t}"));
        tb.fields = (0..40).map(|i| input(&format!("f{i}"), &"x".repeat(MAX_VALUE_BYTES - 100 + i))).collect();
        tabs.push(tb);
    }
    let mut d = doc(tabs, 2);
    d.storage.cookies = (0..10).map(|i| json!({"name": format!("c{i}"), "value": "v"})).collect();
    let (clean, dropped) = sanitise(d);
    assert_eq!(check(&clean), Ok(()));
    assert!(clean.to_bytes().len() > MAX_DOCUMENT_BYTES - MAX_VALUE_BYTES, "only as much as needed went");
    assert_eq!(clean.storage.cookies.len(), 10, "cookies outlive form values");
    assert_eq!(clean.tabs.len(), 4);
    assert_eq!(clean.active, 2);
    let kept: Vec<usize> = clean
        .tabs
        .iter()
        .flat_map(|t| {
            t.fields.iter().map(|f| match &f.value {
                FieldValue::Input { value } => value.len(),
                _ => 0,
            })
        })
        .collect();
    assert!(kept.iter().all(|len| *len < MAX_VALUE_BYTES - 100 + 39), "the largest went first: {kept:?}");
    assert_eq!(dropped.len(), 1);
    assert!(dropped[0].what.ends_with("form fields") && dropped[0].why.contains("largest items go first"));
}

#[test]
fn stored_bytes_are_refused_by_size_shape_and_format_before_anything_else() {
    assert!(matches!(parse(&vec![b' '; MAX_DOCUMENT_BYTES + 1]), Err(ParseError::TooLarge(_))));
    assert!(matches!(parse(b"{\"format\":1}"), Err(ParseError::Shape(_))));
    let mut d = doc(vec![], 0);
    d.format = 2;
    let err = parse(&serde_json::to_vec(&d).unwrap()).unwrap_err();
    assert!(err.to_string().contains("has format 2; this runtime reads format 1 only"), "{err}");
    let mut d = doc(vec![tab("http://a/")], 5);
    assert!(check(&d).is_err());
    d.active = 0;
    let mut bytes = d.to_bytes();
    bytes.splice(1..1, br#""tabs2":[],"#.iter().copied());
    assert_eq!(parse(&bytes).unwrap().0, d, "unknown fields are ignored");
}

#[test]
fn a_refusal_names_what_is_wrong_without_quoting_the_document() {
    let secret = "s3ssion-cookie-value";
    let reason = |bytes: &[u8]| parse(bytes).unwrap_err().without_values();
    let wrong_type = reason(format!(r#"{{"format":"{secret}","capturedAtMs":1}}"#).as_bytes());
    assert!(wrong_type.contains("expected u32") && wrong_type.contains("line 1"), "{wrong_type}");
    let sneaky = reason(format!(r#"{{"format":"{secret}, expected {secret}"}}"#).as_bytes());
    assert!(sneaky.contains("expected u32"), "the schema's words come last: {sneaky}");
    let variant = format!(
        r#"{{"format":1,"capturedAtMs":1,"storage":{{"cookies":[],"origins":[]}},"active":0,
            "tabs":[{{"url":"http://a/","scrollX":0,"scrollY":0,"fields":[{{"key":{{"by":"{secret}"}},"value":{{}}}}]}}]}}"#
    );
    let missing = reason(br#"{"format":1}"#);
    assert!(missing.contains("missing field `capturedAtMs`"), "{missing}");
    let syntax = reason(format!(r#"{{"format": 1, "{secret}"#).as_bytes());
    assert!(syntax.contains("error at line 1"), "{syntax}");
    let mut d = doc(vec![], 0);
    d.format = 7;
    let format = parse(&d.to_bytes()).unwrap_err().without_values();
    assert!(!format.contains('7'), "{format}");
    for said in [wrong_type, sneaky, reason(variant.as_bytes()), missing, syntax, format] {
        assert!(!said.contains(secret) && !said.contains('"'), "{said}");
    }
    assert_eq!(schema_words("invalid type: string \"x\", expected a \"quoted\" thing"), None);
}

fn any_url() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}".prop_map(|p| format!("http://127.0.0.1/{p}")),
        Just("about:blank".to_owned()),
        Just("javascript:alert(1)".to_owned()),
        Just("file:///etc/passwd".to_owned()),
        Just(" http://x/".to_owned()),
        (0usize..12_000).prop_map(|n| format!("data:,{}", "a".repeat(n))),
    ]
}

fn any_value() -> impl Strategy<Value = String> {
    prop_oneof![4 => ".{0,20}", 1 => (0usize..40_000).prop_map(|n| "v".repeat(n))]
}

fn any_field() -> impl Strategy<Value = Field> {
    let key = prop_oneof![
        "[a-z]{0,4}".prop_map(|id| FieldKey::Id { id }),
        ("[a-z]{1,4}", 0u32..3).prop_map(|(name, index)| FieldKey::Name { name, index }),
        Just(FieldKey::Id { id: "k".repeat(300) }),
    ];
    let value = prop_oneof![
        any_value().prop_map(|value| FieldValue::Input { value }),
        any_value().prop_map(|value| FieldValue::Textarea { value }),
        any::<bool>().prop_map(|checked| FieldValue::Checked { checked }),
        prop::collection::vec(any_value(), 0..70).prop_map(|selected| FieldValue::Select { selected }),
    ];
    (key, value).prop_map(|(key, value)| Field { key, value })
}

fn any_tab() -> impl Strategy<Value = Tab> {
    let scroll = prop_oneof![any::<f64>(), -1e8f64..1e8];
    (any_url(), scroll.clone(), scroll, prop::collection::vec(any_field(), 0..40))
        .prop_map(|(url, scroll_x, scroll_y, fields)| Tab { url, scroll_x, scroll_y, fields })
}

fn any_doc() -> impl Strategy<Value = SuspendedState> {
    let cookie = prop_oneof![any_value().prop_map(|v| json!({"name": "c", "value": v})), Just(json!(null)),];
    let origin = (
        "https?://[a-z]{1,5}",
        prop::collection::vec(any_value().prop_map(|v| json!({"name": "k", "value": v})), 0..20),
    )
        .prop_map(|(origin, local_storage)| OriginStorage { origin, local_storage });
    (
        prop::collection::vec(any_tab(), 0..40),
        0usize..45,
        prop::collection::vec(cookie, 0..60),
        prop::collection::vec(origin, 0..5),
    )
        .prop_map(|(tabs, active, cookies, origins)| SuspendedState {
            storage: StorageState { cookies, origins },
            ..doc(tabs, active)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever a page produced, the sanitised document is within every
    /// bound, survives storage, and sanitising it again changes nothing.
    #[test]
    fn any_document_sanitises_within_bounds_and_stays_put(d in any_doc()) {
        let tabs_before = d.tabs.len();
        let (clean, _) = sanitise(d);
        prop_assert_eq!(check(&clean), Ok(()));
        prop_assert!(clean.to_bytes().len() <= MAX_DOCUMENT_BYTES);
        prop_assert!(clean.tabs.len() <= tabs_before);
        let (again, dropped) = parse(&clean.to_bytes()).unwrap();
        prop_assert_eq!(&again, &clean);
        prop_assert!(dropped.is_empty(), "{:?}", dropped);
    }
}
