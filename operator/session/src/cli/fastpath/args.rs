//! The Node client's argument handling, reproduced: its `minimist`
//! (`playwright-core/lib/tools/cli-client/minimist.js`) and the checks of
//! `program.js` that run before a command reaches the daemon.

use super::help::{Command, Help};

/// A parsed option value, as minimist stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `--key value`, `--key=value`, `-k value`.
    Str(String),
    /// A boolean option, `--no-key`, or a flag without a value.
    Bool(bool),
    /// A non-boolean option given more than once.
    List(Vec<Value>),
}

impl Value {
    /// JS truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Str(s) => !s.is_empty(),
            Value::Bool(b) => *b,
            Value::List(_) => true,
        }
    }

    /// The value as `JSON.stringify` writes it.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Str(s) => out.push_str(&json_string(s)),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
        }
    }
}

/// A JSON string literal; serde_json escapes exactly as `JSON.stringify`
/// does for valid Unicode (control characters as `\n` or `\u00xx`, nothing else).
pub fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The object minimist returns: positionals and options in insertion order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Argv {
    /// `argv._`.
    pub positional: Vec<String>,
    /// The other keys, in insertion order.
    pub options: Vec<(String, Value)>,
}

impl Argv {
    /// `argv[key]`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn truthy(&self, key: &str) -> bool {
        self.get(key).is_some_and(Value::truthy)
    }

    /// `argv[key] = value` (an existing key keeps its place).
    pub fn set(&mut self, key: &str, value: Value) {
        match self.options.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = value,
            None => self.options.push((key.to_owned(), value)),
        }
    }

    /// `delete argv[key]`.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.options.iter().position(|(k, _)| k == key)?;
        Some(self.options.remove(at).1)
    }

    /// `Object.keys(argv)` minus `_`: integer-like keys first in ascending
    /// order, then the others in insertion order (JS property order).
    pub fn keys(&self) -> Vec<&str> {
        let mut indices: Vec<(u32, &str)> =
            self.options.iter().filter_map(|(k, _)| array_index(k).map(|i| (i, k.as_str()))).collect();
        indices.sort_unstable();
        let mut out: Vec<&str> = indices.into_iter().map(|(_, k)| k).collect();
        out.extend(self.options.iter().map(|(k, _)| k.as_str()).filter(|k| array_index(k).is_none()));
        out
    }

    /// `JSON.stringify(argv)`: integer-like keys come before `_` (which minimist
    /// sets first), as in any JS object.
    pub fn to_json(&self) -> String {
        let mut fields: Vec<String> = Vec::with_capacity(self.options.len() + 1);
        let positional: Vec<String> = self.positional.iter().map(|p| json_string(p)).collect();
        let positional = format!("\"_\":[{}]", positional.join(","));
        let mut positional = Some(positional);
        for key in self.keys() {
            if array_index(key).is_none() {
                fields.extend(positional.take());
            }
            if let Some(value) = self.get(key) {
                let mut field = format!("{}:", json_string(key));
                value.write_json(&mut field);
                fields.push(field);
            }
        }
        fields.extend(positional);
        format!("{{{}}}", fields.join(","))
    }
}

/// A canonical array index (`"0"`, `"17"`, not `"01"`), which JS orders first.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u32>().ok().filter(|i| *i != u32::MAX)
}

/// Where the Node client would not behave like this parser: hand it over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unparsed {
    /// `--bool=value`: minimist throws (the Node client reports it with a stack trace).
    #[error("boolean option '--{0}' given a value")]
    BooleanWithValue(String),
    /// Input whose JS regular-expression or UTF-16 handling this port does not model.
    #[error("an argument this parser does not model: {0:?}")]
    Unmodelled(String),
}

/// Keys JS finds on every object (`key in obj`, `obj[key]`): the Node client's
/// checks would treat them specially, so such input goes to it.
const PROTOTYPE_KEYS: &[&str] = &[
    "__proto__",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
];

/// `/^(-|--)[^-]/`: looks like an option.
fn looks_like_flag(s: &str) -> bool {
    let mut chars = s.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some('-'), Some(c), _) if c != '-' => true,
        (Some('-'), Some('-'), Some(c)) => c != '-',
        _ => false,
    }
}

fn is_bool_literal(s: &str) -> bool {
    s == "true" || s == "false"
}

/// `/-?\d+(\.\d*)?(e-?\d+)?$/` (not anchored at the start): ends in a digit,
/// or in a digit and a dot.
fn ends_numeric(s: &str) -> bool {
    let b = s.as_bytes();
    match b.last() {
        Some(c) if c.is_ascii_digit() => true,
        Some(b'.') => b.len() >= 2 && b[b.len() - 2].is_ascii_digit(),
        _ => false,
    }
}

/// JS line terminators, which `.` in a JS regular expression does not match.
fn has_line_terminator(s: &str) -> bool {
    s.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
}

/// minimist with `{ boolean: bools, string: ["_"] }`.
pub fn minimist(args: &[String], bools: &[&str]) -> Result<Argv, Unparsed> {
    let is_bool = |k: &str| bools.contains(&k);
    let mut argv = Argv::default();
    let set_arg = |argv: &mut Argv, key: &str, value: Value| -> Result<(), Unparsed> {
        if key == "_" || PROTOTYPE_KEYS.contains(&key) {
            return Err(Unparsed::Unmodelled(format!("--{key}")));
        }
        let next = match argv.get(key) {
            None => value,
            Some(_) if is_bool(key) => value,
            Some(Value::Bool(_)) => value,
            Some(Value::List(items)) => {
                let mut items = items.clone();
                items.push(value);
                Value::List(items)
            }
            Some(old) => Value::List(vec![old.clone(), value]),
        };
        argv.set(key, next);
        Ok(())
    };
    // `--key [value]`, and the last letter of `-abc [value]`: the next word is
    // the value unless it looks like an option or the key is boolean (where
    // only "true"/"false" are taken).
    let set_from_next = |argv: &mut Argv, key: &str, next: Option<&str>, i: &mut usize| -> Result<(), Unparsed> {
        match next {
            Some(n) if !looks_like_flag(n) && !is_bool(key) => {
                set_arg(argv, key, Value::Str(n.to_owned()))?;
                *i += 1;
            }
            Some(n) if is_bool_literal(n) => {
                set_arg(argv, key, Value::Bool(n == "true"))?;
                *i += 1;
            }
            _ => set_arg(argv, key, Value::Bool(true))?,
        }
        Ok(())
    };
    let (args, not_flags) = match args.iter().position(|a| a == "--") {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &args[args.len()..]),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg.starts_with('-') && arg != "-" && has_line_terminator(arg) {
            return Err(Unparsed::Unmodelled(arg.to_owned()));
        }
        if let Some(body) = arg.strip_prefix("--").filter(|b| b.len() > 1 && b[1..].contains('=')) {
            // /^--.+=/ then /^--([^=]+)=([\s\S]*)$/
            let Some((key, value)) = body.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                return Err(Unparsed::Unmodelled(arg.to_owned()));
            };
            if is_bool(key) {
                return Err(Unparsed::BooleanWithValue(key.to_owned()));
            }
            set_arg(&mut argv, key, Value::Str(value.to_owned()))?;
        } else if let Some(key) = arg.strip_prefix("--no-").filter(|k| !k.is_empty()) {
            set_arg(&mut argv, key, Value::Bool(false))?;
        } else if let Some(key) = arg.strip_prefix("--").filter(|k| !k.is_empty()) {
            set_from_next(&mut argv, key, args.get(i + 1).map(String::as_str), &mut i)?;
        } else if arg.len() >= 2 && arg.as_bytes()[0] == b'-' && arg.as_bytes()[1].is_ascii_alphabetic() {
            if !arg.is_ascii() || arg.contains('_') {
                // `split("")` and `slice` count UTF-16 units: not modelled.
                return Err(Unparsed::Unmodelled(arg.to_owned()));
            }
            let letters: Vec<char> = arg[1..arg.len() - 1].chars().collect();
            let mut broken = false;
            for (j, letter) in letters.iter().enumerate() {
                let key = letter.to_string();
                let next = &arg[j + 2..];
                if next == "-" {
                    set_arg(&mut argv, &key, Value::Str(next.to_owned()))?;
                    continue;
                }
                if letter.is_ascii_alphabetic() && next.starts_with('=') {
                    set_arg(&mut argv, &key, Value::Str(next[1..].to_owned()))?;
                    broken = true;
                    break;
                }
                if letter.is_ascii_alphabetic() && ends_numeric(next) {
                    set_arg(&mut argv, &key, Value::Str(next.to_owned()))?;
                    broken = true;
                    break;
                }
                if letters.get(j + 1).is_some_and(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
                    set_arg(&mut argv, &key, Value::Str(arg[j + 2..].to_owned()))?;
                    broken = true;
                    break;
                }
                set_arg(&mut argv, &key, Value::Bool(true))?;
            }
            let key = &arg[arg.len() - 1..];
            if !broken && key != "-" {
                // `args[i + 1]` is tested for truthiness here: "" counts as absent.
                let next = args.get(i + 1).map(String::as_str).filter(|n| !n.is_empty());
                set_from_next(&mut argv, key, next, &mut i)?;
            }
        } else {
            argv.positional.push(arg.to_owned());
        }
        i += 1;
    }
    argv.positional.extend(not_flags.iter().cloned());
    Ok(argv)
}

/// `globalOptions` of program.js: accepted by every command, never sent.
const GLOBAL_OPTIONS: &[&str] = &["json", "raw", "session"];
/// `booleanOptions` of program.js, added to help.json's.
const PROGRAM_BOOLEANS: &[&str] = &["all", "g", "help", "json", "raw", "version"];
/// Commands program.js handles itself instead of sending `run` to the daemon.
pub const CLIENT_COMMANDS: &[&str] = &[
    "list",
    "close-all",
    "delete-data",
    "kill-all",
    "open",
    "attach",
    "close",
    "detach",
    "install",
    "install-browser",
    "show",
];

/// What program.js would do with an argument vector, up to the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The Node client owns this (help, version, a client-side command, an
    /// unknown command, input this port does not model).
    Delegate(String),
    /// A usage error printed before anything is contacted.
    Usage(UsageError),
    /// A `run` for the session's daemon.
    Run(RunPlan),
}

/// A usage error and how to print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// `--json` output.
    pub json: bool,
    /// Which error.
    pub kind: UsageKind,
    /// The command's help text.
    pub help: String,
}

/// The usage errors of `TextOutput`/`JsonOutput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageKind {
    /// `errorUnknownOption`.
    UnknownOptions(Vec<String>),
    /// `errorTooManyArguments`.
    TooManyArguments {
        /// Arguments the command takes.
        expected: usize,
        /// Arguments given.
        received: usize,
    },
}

/// A command for the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    /// The command name (`args._[0]`).
    pub command: String,
    /// The session, resolved as `resolveSessionName`.
    pub session: String,
    /// `--json` output.
    pub json: bool,
    /// `--raw` (or a raw command).
    pub raw: bool,
    /// The args object sent, globals removed.
    pub args: Argv,
}

/// program.js from `minimist` up to `Registry.load()`, for `args` and
/// `PLAYWRIGHT_CLI_SESSION`.
pub fn plan(args: &[String], help: &Help, env_session: Option<&str>) -> Plan {
    let mut bools: Vec<&str> = help.boolean_options.iter().map(String::as_str).collect();
    bools.extend_from_slice(PROGRAM_BOOLEANS);
    let mut argv = match minimist(args, &bools) {
        Ok(argv) => argv,
        Err(why) => return Plan::Delegate(why.to_string()),
    };
    if argv.truthy("s") {
        if let Some(s) = argv.get("s").cloned() {
            argv.set("session", s);
        }
        argv.remove("s");
    }
    if argv.truthy("g") {
        argv.set("global", Value::Bool(true));
        argv.remove("g");
    }
    let json = argv.truthy("json");
    let Some(name) = argv.positional.first().filter(|n| !n.is_empty()).cloned() else {
        return Plan::Delegate("no command: help".into());
    };
    if argv.truthy("version") || argv.truthy("v") {
        return Plan::Delegate("--version".into());
    }
    if argv.truthy("help") || argv.truthy("h") {
        return Plan::Delegate("--help".into());
    }
    let Some(command) = help.commands.get(&name) else {
        return Plan::Delegate(format!("unknown command {name:?}"));
    };
    if let Some(usage) = validate(&argv, command, json) {
        return Plan::Usage(usage);
    }
    if CLIENT_COMMANDS.contains(&name.as_str()) {
        return Plan::Delegate(format!("{name} is handled by the Node client"));
    }
    let session = match argv.get("session") {
        Some(Value::Str(s)) if !s.is_empty() => s.clone(),
        Some(v) if v.truthy() => return Plan::Delegate("a --session that is not one name".into()),
        _ => env_session.filter(|s| !s.is_empty()).unwrap_or("default").to_owned(),
    };
    let raw = command.raw || argv.truthy("raw");
    for key in GLOBAL_OPTIONS {
        argv.remove(key);
    }
    Plan::Run(RunPlan { command: name, session, json, raw, args: argv })
}

/// `validateFlags` then `validateArgs`.
fn validate(argv: &Argv, command: &Command, json: bool) -> Option<UsageError> {
    let unknown: Vec<String> = argv
        .keys()
        .into_iter()
        .filter(|key| !GLOBAL_OPTIONS.contains(key))
        .filter(|key| !command.flags.contains_key(*key))
        .filter(|key| !(argv.get(key) == Some(&Value::Bool(false)) && command.flags.contains_key(&format!("no-{key}"))))
        .map(str::to_owned)
        .collect();
    let usage = |kind| Some(UsageError { json, kind, help: command.help.clone() });
    if !unknown.is_empty() {
        return usage(UsageKind::UnknownOptions(unknown));
    }
    let received = argv.positional.len().saturating_sub(1);
    if received > command.args.len() && !command.variadic_arg {
        return usage(UsageKind::TooManyArguments { expected: command.args.len(), received });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    const BOOLS: &[&str] = &["submit", "json", "raw", "help", "version", "all", "g"];

    fn parse(args: &[&str]) -> Argv {
        minimist(&v(args), BOOLS).unwrap()
    }

    #[test]
    fn long_options() {
        let a = parse(&["click", "e1", "--modifiers", "Shift", "--modifiers=Alt", "--json", "--no-raw"]);
        assert_eq!(a.positional, v(&["click", "e1"]));
        assert_eq!(a.get("modifiers"), Some(&Value::List(vec![s("Shift"), s("Alt")])));
        assert_eq!(a.get("json"), Some(&Value::Bool(true)));
        assert_eq!(a.get("raw"), Some(&Value::Bool(false)));
        // A boolean never takes the next word, unless it is true/false.
        let a = parse(&["--submit", "text", "--json", "false"]);
        assert_eq!(a.positional, v(&["text"]));
        assert_eq!(a.get("submit"), Some(&Value::Bool(true)));
        assert_eq!(a.get("json"), Some(&Value::Bool(false)));
        // A value-taking option does not take something that looks like a flag.
        let a = parse(&["--filename", "--json"]);
        assert_eq!(a.get("filename"), Some(&Value::Bool(true)));
        assert_eq!(parse(&["--filename", "-"]).get("filename"), Some(&s("-")));
        assert_eq!(parse(&["--filename", "---x"]).get("filename"), Some(&s("---x")));
        assert_eq!(parse(&["--depth", "true"]).get("depth"), Some(&s("true")));
        assert_eq!(parse(&["--x="]).get("x"), Some(&s("")));
        assert_eq!(parse(&["--a=b=c"]).get("a"), Some(&s("b=c")));
        assert_eq!(minimist(&v(&["--json=1"]), BOOLS), Err(Unparsed::BooleanWithValue("json".into())));
    }

    #[test]
    fn short_options() {
        assert_eq!(parse(&["-s=demo", "tab-list"]).get("s"), Some(&s("demo")));
        let a = parse(&["-s", "demo", "tab-list"]);
        assert_eq!((a.get("s"), a.positional.clone()), (Some(&s("demo")), v(&["tab-list"])));
        assert_eq!(parse(&["-s5"]).get("s"), Some(&s("5")));
        assert_eq!(parse(&["-ab"]).get("a"), Some(&Value::Bool(true)));
        assert_eq!(parse(&["-ab", "x"]).get("b"), Some(&s("x")));
        assert_eq!(parse(&["-a.b"]).get("a"), Some(&s(".b")));
        // An empty next word is falsy for short options.
        assert_eq!(parse(&["-s", ""]).get("s"), Some(&Value::Bool(true)));
        assert_eq!(parse(&["-g", "x"]).get("g"), Some(&Value::Bool(true)));
        assert_eq!(parse(&["-g", "x"]).positional, v(&["x"]));
        // Not options: a lone dash, negative numbers.
        assert_eq!(parse(&["-", "-5"]).positional, v(&["-", "-5"]));
    }

    #[test]
    fn double_dash_ends_options() {
        let a = parse(&["eval", "--", "--json", "-x"]);
        assert_eq!(a.positional, v(&["eval", "--json", "-x"]));
        assert!(a.options.is_empty());
    }

    #[test]
    fn keys_follow_js_property_order_and_json_matches_stringify() {
        let a = parse(&["x", "--b", "1", "--10", "y", "--a", "2", "--2", "z"]);
        assert_eq!(a.keys(), vec!["2", "10", "b", "a"]);
        // As node prints it: integer-like keys before `_`.
        assert_eq!(a.to_json(), r#"{"2":"z","10":"y","_":["x"],"b":"1","a":"2"}"#);
        let a = parse(&["say", "line\nnext \"q\" \u{1}", "--flag"]);
        assert_eq!(a.to_json(), "{\"_\":[\"say\",\"line\\nnext \\\"q\\\" \\u0001\"],\"flag\":true}");
    }

    #[test]
    fn unmodelled_input_is_refused() {
        assert!(minimist(&v(&["--a\nb=c"]), BOOLS).is_err());
        assert!(minimist(&v(&["-aé"]), &[]).is_err());
        assert_eq!(minimist(&v(&["-é"]), &[]).unwrap().positional, v(&["-é"]));
        assert!(minimist(&v(&["--constructor", "x"]), &[]).is_err());
        assert!(minimist(&v(&["--=x="]), &[]).is_err());
    }

    fn help() -> Help {
        let text = r#"{"global":"G","booleanOptions":["submit","boxes"],"commands":{
            "click":{"help":"H-click","flags":{"modifiers":"string"},"args":["target","button"]},
            "upload":{"help":"H-up","flags":{},"args":["files"],"variadicArg":true},
            "cookie-list":{"help":"H-cl","flags":{"domain":"string"},"args":[],"raw":true},
            "snapshot":{"help":"H-s","flags":{"filename":"string","boxes":"boolean"},"args":["target"]},
            "open":{"help":"H-o","flags":{},"args":["url"]},
            "install-browser":{"help":"H-ib","flags":{"no-shell":"boolean"},"args":["browser"]}}}"#;
        Help::parse(text).unwrap()
    }

    fn run(args: &[&str], env_session: Option<&str>) -> RunPlan {
        match plan(&v(args), &help(), env_session) {
            Plan::Run(run) => run,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn run_plans() {
        let r = run(&["-s=demo", "click", "e1", "--modifiers=Shift"], None);
        assert_eq!((r.command.as_str(), r.session.as_str(), r.json, r.raw), ("click", "demo", false, false));
        assert_eq!(r.args.to_json(), r#"{"_":["click","e1"],"modifiers":"Shift"}"#);
        let r = run(&["--json", "--raw", "click", "e1"], Some("agent"));
        assert_eq!((r.session.as_str(), r.json, r.raw), ("agent", true, true));
        assert_eq!(r.args.to_json(), r#"{"_":["click","e1"]}"#);
        assert_eq!(run(&["cookie-list"], Some("")).session, "default");
        assert!(run(&["cookie-list"], None).raw, "a raw command");
        assert_eq!(run(&["--session", "x", "upload", "a", "b", "c"], None).session, "x");
        assert_eq!(run(&["snapshot", "--boxes"], None).args.to_json(), r#"{"_":["snapshot"],"boxes":true}"#);
    }

    #[test]
    fn usage_errors() {
        let p = plan(&v(&["click", "e1", "--foo", "--bar=1", "-x"]), &help(), None);
        let Plan::Usage(u) = p else { panic!("{p:?}") };
        assert_eq!(u.kind, UsageKind::UnknownOptions(v(&["foo", "bar", "x"])));
        assert_eq!(u.help, "H-click");
        let p = plan(&v(&["--json", "click", "a", "b", "c"]), &help(), None);
        let Plan::Usage(u) = p else { panic!("{p:?}") };
        assert!(u.json);
        assert_eq!(u.kind, UsageKind::TooManyArguments { expected: 2, received: 3 });
        // Flags are checked before arguments, and before client commands are handed over.
        let p = plan(&v(&["open", "a", "b", "--zap"]), &help(), None);
        assert!(matches!(p, Plan::Usage(UsageError { kind: UsageKind::UnknownOptions(_), .. })), "{p:?}");
        // `--no-x` is fine when the command declares `no-x`; `-g` becomes `--global`.
        assert!(matches!(plan(&v(&["install-browser", "--no-shell"]), &help(), None), Plan::Delegate(_)));
        let p = plan(&v(&["click", "e1", "-g"]), &help(), None);
        assert!(
            matches!(p, Plan::Usage(UsageError { kind: UsageKind::UnknownOptions(ref o), .. }) if o == &v(&["global"]))
        );
    }

    #[test]
    fn delegated() {
        for args in [
            &["--help"][..],
            &["click", "--help"],
            &["--version"],
            &["-v"],
            &[],
            &[""],
            &["open", "http://x"],
            &["nosuch"],
            &["constructor"],
            &["click", "--json=yes", "e1"],
            &["-s", "a", "-s", "b", "click", "e1"],
        ] {
            assert!(matches!(plan(&v(args), &help(), None), Plan::Delegate(_)), "{args:?}");
        }
    }
}
