//! Property, with the Node client's own parser as the oracle: for generated
//! argument vectors, the fast path's `minimist` port parses exactly as the
//! installed playwright-core's `minimist.js` does (the same JSON), or it
//! hands the command to Node (`Unparsed`). It never accepts what Node
//! refuses. Cases: `PROPTEST_CASES` (default 2,000, one Node process for
//! all); seed: `PROPTEST_RNG_SEED` (fixed by tests/run.sh). Needs
//! `tests/session/setup.sh` (see `support::SETUP`).

#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use playpen_session::cli::fastpath::args::minimist;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// Reads one `{args, bools}` per line, prints minimist's JSON or its error.
const ORACLE: &str = r#"
const { minimist } = require(process.argv[1]);
const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter(Boolean);
for (const line of lines) {
  const { args, bools } = JSON.parse(line);
  try {
    process.stdout.write(JSON.stringify({ ok: JSON.stringify(minimist(args, { boolean: bools, string: ['_'] })) }) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ err: String(e.message) }) + '\n');
  }
}
"#;

const KEYS: &[&str] = &["json", "raw", "submit", "g", "x", "filename", "modifiers", "1", "01", "a-b", "__proto__"];

fn word() -> impl Strategy<Value = String> {
    let key = prop::sample::select(KEYS).prop_map(str::to_owned);
    prop_oneof![
        key.clone().prop_map(|k| format!("--{k}")),
        key.clone().prop_map(|k| format!("--no-{k}")),
        (key, "[a-z0-9= -]{0,6}").prop_map(|(k, v)| format!("--{k}={v}")),
        "-[a-zA-Z0-9]{1,4}",
        "-[a-z]=[a-z]{0,3}",
        prop::sample::select(vec!["--", "-", "---x", "true", "false", "-5", "1e3", "0x10", "", " "])
            .prop_map(str::to_owned),
        "[a-z0-9.]{1,8}",
        any::<String>(),
    ]
}

fn case() -> impl Strategy<Value = (Vec<String>, Vec<String>)> {
    let bools = prop::sample::subsequence(vec!["json", "raw", "submit", "g", "help"], 0..=5)
        .prop_map(|b| b.into_iter().map(str::to_owned).collect());
    (prop::collection::vec(word(), 0..8), bools)
}

#[test]
fn the_native_parser_agrees_with_the_node_client_or_hands_over() {
    let prefix = support::cli_prefix();
    let module = prefix.join("node_modules/playwright-core/lib/tools/cli-client/minimist.js");
    assert!(module.exists(), "{} is missing: the oracle is the installed client's own parser", module.display());
    let cases: u32 = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000);
    let mut runner = TestRunner::new(Config { cases, ..Config::default() });
    let strategy = case();
    let generated: Vec<(Vec<String>, Vec<String>)> =
        (0..cases).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect();

    let mut node = Command::new("node")
        .args(["-e", ORACLE, module.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node (installed with the machine; tests/session/setup.sh checks it)");
    let mut input = String::new();
    for (args, bools) in &generated {
        input.push_str(&json!({"args": args, "bools": bools}).to_string());
        input.push('\n');
    }
    node.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = node.wait_with_output().unwrap();
    assert!(output.status.success(), "the Node oracle failed");
    let answers: Vec<Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), generated.len(), "one answer per case");

    let (mut same, mut handed_over, mut refused_by_both) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for ((args, bools), answer) in generated.iter().zip(&answers) {
        let bools: Vec<&str> = bools.iter().map(String::as_str).collect();
        match (minimist(args, &bools), answer.get("ok").and_then(Value::as_str)) {
            (Ok(parsed), Some(expected)) if parsed.to_json() == expected => same += 1,
            (Ok(parsed), Some(expected)) => {
                disagreements.push(format!("{args:?} {bools:?}: fast {} vs node {expected}", parsed.to_json()));
            }
            (Ok(parsed), None) => disagreements.push(format!(
                "{args:?} {bools:?}: fast accepted {} but node refused: {}",
                parsed.to_json(),
                answer["err"]
            )),
            (Err(_), Some(_)) => handed_over += 1,
            (Err(_), None) => refused_by_both += 1,
        }
    }
    eprintln!(
        "minimist property: {} cases, {same} parsed the same, {handed_over} handed to Node, {refused_by_both} refused by both, {} disagreements",
        generated.len(),
        disagreements.len()
    );
    assert!(disagreements.is_empty(), "{} disagreement(s):\n{}", disagreements.len(), disagreements.join("\n"));
    assert!(same > generated.len() / 2, "the generator must mostly reach the parser's fast side");
}
