//! `kubectl playpen run NAME -- <args>`: `playwright-cli <args>` in the
//! session's browser container, output streamed, the remote exit code kept.

use crate::cli::RunArgs;
use crate::connect::Cluster;
use crate::error::Result;

/// The command run in the container.
pub fn command(args: &[String]) -> Vec<String> {
    std::iter::once("playwright-cli".to_owned()).chain(args.iter().cloned()).collect()
}

/// Runs `run`; the remote exit code.
pub async fn run(cluster: &Cluster, args: RunArgs) -> Result<i32> {
    let (_, target) = super::browser(cluster, &args.name).await?;
    target.stream(&command(&args.args)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_passed_as_is() {
        let args = ["goto".to_owned(), "https://example.com/?a=b c".to_owned(), "--x".to_owned()];
        assert_eq!(command(&args), ["playwright-cli", "goto", "https://example.com/?a=b c", "--x"]);
    }
}
