//! `kubectl-playpen __complete <words>`: what kubectl's plugin completion
//! asks (through `kubectl_complete-playpen`). Prints one candidate per line,
//! then cobra's directive line `:4` (no file completion). A session name is
//! completed from the BrowserSessions the caller may list.

use kube::api::ListParams;

use crate::cli::Global;
use crate::connect::{self, Timeouts};
use crate::error::Result;
use crate::sessions;

/// Cobra's `ShellCompDirectiveNoFileComp`.
const NO_FILE_COMPLETION: &str = ":4";

/// Commands whose first argument is a session's name.
const TAKE_A_SESSION: [&str; 10] =
    ["run", "view", "cdp", "logs", "snapshot", "record", "egress", "suspend", "resume", "fork"];

/// What the word being completed is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// A command name starting with the prefix.
    Command(String),
    /// A session name starting with the prefix, in the namespace (`-n`) if given.
    Session { prefix: String, namespace: Option<String> },
    /// A shell of `completion`.
    Shell(String),
    /// Nothing this plugin can offer.
    Nothing,
}

/// Reads the typed words (the last one is being completed).
pub fn wanted(words: &[String]) -> Wanted {
    let mut positional = Vec::new();
    let mut namespace = None;
    let mut iter = words.iter().enumerate().peekable();
    let last = words.len().saturating_sub(1);
    while let Some((i, word)) = iter.next() {
        if i == last {
            positional.push(word.as_str());
            break;
        }
        if word == "-n" || word == "--namespace" {
            namespace = iter.next().map(|(_, v)| v.clone());
        } else if let Some(value) = word.strip_prefix("--namespace=") {
            namespace = Some(value.to_owned());
        } else if word.starts_with('-') {
            // Other flags take no completion here; their values are rare enough to ignore.
        } else {
            positional.push(word.as_str());
        }
    }
    let Some(&current) = positional.last() else { return Wanted::Command(String::new()) };
    if current.starts_with('-') {
        return Wanted::Nothing;
    }
    match positional.as_slice() {
        [_] => Wanted::Command(current.to_owned()),
        [command, _] if TAKE_A_SESSION.contains(command) => Wanted::Session { prefix: current.to_owned(), namespace },
        ["completion", _] => Wanted::Shell(current.to_owned()),
        _ => Wanted::Nothing,
    }
}

/// The visible command names, from the command line's own definition.
pub fn command_names() -> Vec<String> {
    use clap::CommandFactory;
    crate::cli::Cli::command().get_subcommands().filter(|c| !c.is_hide_set()).map(|c| c.get_name().to_owned()).collect()
}

/// Prints the candidates; never fails the shell (errors go to stderr).
pub async fn run(global: &Global, words: &[String]) -> Result<i32> {
    let candidates: Vec<String> = match wanted(words) {
        Wanted::Command(prefix) => command_names().into_iter().filter(|c| c.starts_with(&prefix)).collect(),
        Wanted::Shell(prefix) => ["bash", "zsh", "fish", "kubectl"]
            .into_iter()
            .filter(|s| s.starts_with(&prefix))
            .map(str::to_owned)
            .collect(),
        Wanted::Session { prefix, namespace } => {
            let global = Global { namespace: namespace.or_else(|| global.namespace.clone()), ..global.clone() };
            match session_names(&global).await {
                Ok(names) => names.into_iter().filter(|n| n.starts_with(&prefix)).collect(),
                Err(err) => {
                    eprintln!("{err}");
                    Vec::new()
                }
            }
        }
        Wanted::Nothing => Vec::new(),
    };
    for candidate in candidates {
        println!("{candidate}");
    }
    println!("{NO_FILE_COMPLETION}");
    Ok(0)
}

async fn session_names(global: &Global) -> Result<Vec<String>> {
    let cluster = connect::connect(global, Timeouts::Requests).await?;
    let list = sessions::api(&cluster, &cluster.namespace)
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| crate::error::Error::Unavailable(format!("listing BrowserSessions to complete a name: {e}")))?;
    Ok(list.items.into_iter().filter_map(|s| s.metadata.name).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_word_is_a_command_and_the_second_a_session_where_one_is_taken() {
        assert_eq!(wanted(&words(&[""])), Wanted::Command(String::new()));
        assert_eq!(wanted(&words(&["vi"])), Wanted::Command("vi".into()));
        assert_eq!(wanted(&words(&[])), Wanted::Command(String::new()));
        assert_eq!(wanted(&words(&["view", "de"])), Wanted::Session { prefix: "de".into(), namespace: None });
        assert_eq!(wanted(&words(&["egress", "de"])), Wanted::Session { prefix: "de".into(), namespace: None });
        assert_eq!(wanted(&words(&["suspend", "de"])), Wanted::Session { prefix: "de".into(), namespace: None });
        assert_eq!(wanted(&words(&["fork", "de"])), Wanted::Session { prefix: "de".into(), namespace: None });
        assert_eq!(
            wanted(&words(&["resume", "-n", "team-a", "d"])),
            Wanted::Session { prefix: "d".into(), namespace: Some("team-a".into()) }
        );
        assert_eq!(
            wanted(&words(&["suspend", "--wait", ""])),
            Wanted::Session { prefix: String::new(), namespace: None }
        );
        assert_eq!(
            wanted(&words(&["-n", "team-a", "run", ""])),
            Wanted::Session { prefix: String::new(), namespace: Some("team-a".into()) }
        );
        assert_eq!(
            wanted(&words(&["cdp", "--namespace=team-b", "x"])),
            Wanted::Session { prefix: "x".into(), namespace: Some("team-b".into()) }
        );
        assert_eq!(wanted(&words(&["completion", "z"])), Wanted::Shell("z".into()));
        assert_eq!(wanted(&words(&["new", ""])), Wanted::Nothing, "a new name is the user's to invent");
        assert_eq!(wanted(&words(&["run", "demo", ""])), Wanted::Nothing);
        assert_eq!(wanted(&words(&["view", "--po"])), Wanted::Nothing);
    }

    #[test]
    fn command_names_are_the_visible_ones() {
        let names = command_names();
        let all =
            ["ls", "new", "run", "view", "cdp", "logs", "snapshot", "record", "egress", "suspend", "resume", "fork"];
        for name in all.into_iter().chain(["completion"]) {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        assert!(!names.iter().any(|n| n == "__complete"), "the hidden command is not offered");
    }
}
