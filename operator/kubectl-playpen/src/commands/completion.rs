//! `kubectl playpen completion bash|zsh|fish`.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell};

/// What kubectl runs to complete `kubectl playpen …`: save it on PATH as
/// `kubectl_complete-playpen` and make it executable.
pub const KUBECTL_COMPLETE_SCRIPT: &str = "#!/bin/sh\n# kubectl runs this to complete `kubectl playpen ...` (save as kubectl_complete-playpen on PATH)\nexec kubectl-playpen __complete \"$@\"\n";

/// The completion script for `shell`, completing the `kubectl-playpen`
/// command (or, for `kubectl`, the script kubectl's completion runs).
pub fn script(shell: CompletionShell) -> Vec<u8> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Kubectl => return KUBECTL_COMPLETE_SCRIPT.as_bytes().to_vec(),
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
            let all = [
                "ls", "new", "run", "view", "cdp", "logs", "snapshot", "record", "egress", "suspend", "resume", "fork",
            ];
            for sub in all.into_iter().chain(["completion"]) {
                assert!(text.contains(sub), "{shell:?} lacks {sub}");
            }
            assert!(text.contains("kubectl-playpen") || text.contains("kubectl_playpen"), "{shell:?}");
        }
        let kubectl = String::from_utf8(script(CompletionShell::Kubectl)).unwrap();
        assert!(kubectl.starts_with("#!/bin/sh\n") && kubectl.contains("exec kubectl-playpen __complete \"$@\""));
    }
}
