//! `kubectl playpen completion bash|zsh|fish`.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell};

/// The completion script for `shell`, completing the `kubectl-playpen` command.
pub fn script(shell: CompletionShell) -> Vec<u8> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubectl-playpen", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_completes_every_subcommand() {
        for shell in [CompletionShell::Bash, CompletionShell::Zsh, CompletionShell::Fish] {
            let text = String::from_utf8(script(shell)).unwrap();
            for sub in ["ls", "new", "run", "view", "cdp", "logs", "snapshot", "record", "completion"] {
                assert!(text.contains(sub), "{shell:?} lacks {sub}");
            }
            assert!(text.contains("kubectl-playpen") || text.contains("kubectl_playpen"), "{shell:?}");
        }
    }
}
