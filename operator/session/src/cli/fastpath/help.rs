//! `playwright-core/lib/tools/cli-client/help.json`: the command table the
//! Node client parses and validates with. The fast client reads the same
//! file from the installed package, so flags, argument counts and help texts
//! are the Node client's own.

use std::collections::BTreeMap;

use serde::Deserialize;

/// help.json.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Help {
    /// Options minimist treats as booleans.
    pub boolean_options: Vec<String>,
    /// Every command by name.
    pub commands: BTreeMap<String, Command>,
}

/// One command of help.json.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// Printed after a usage error.
    pub help: String,
    /// Option name → `"string"` or `"boolean"`.
    pub flags: BTreeMap<String, String>,
    /// Positional argument names.
    pub args: Vec<String>,
    /// The last argument takes the rest.
    #[serde(default)]
    pub variadic_arg: bool,
    /// Output only the result value.
    #[serde(default)]
    pub raw: bool,
}

impl Help {
    /// Parses help.json.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}
