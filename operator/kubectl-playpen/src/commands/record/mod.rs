//! `kubectl playpen record NAME [-o DIR]`: copy every file under the
//! session's recordings directory out, keeping the tree.

use std::path::PathBuf;

use playpen_api::layout::RECORDINGS_DIR;

use super::copy::{self, parse_tree, LIST_TREE};
use crate::cli::RecordArgs;
use crate::connect::Cluster;
use crate::error::Result;
use crate::output::untrusted;

/// The default destination: `./<name>-recordings`.
pub fn default_dir(name: &str) -> PathBuf {
    PathBuf::from(format!("{name}-recordings"))
}

/// Runs `record`.
pub async fn run(cluster: &Cluster, args: RecordArgs) -> Result<()> {
    let (_, target) = super::browser(cluster, &args.name).await?;
    let raw = copy::list(&target, LIST_TREE, RECORDINGS_DIR).await?;
    let files = parse_tree(&raw, RECORDINGS_DIR).unwrap_or_default();
    if files.is_empty() {
        println!(
            "no recordings: {RECORDINGS_DIR} in Pod {} of BrowserSession {} holds no files (nothing recorded yet)",
            target.pod, target.session
        );
        return Ok(());
    }
    let dir = args.output.unwrap_or_else(|| default_dir(&args.name));
    let mut total = 0;
    for file in &files {
        let remote = format!("{RECORDINGS_DIR}/{}", file.relative.display());
        let local = dir.join(&file.relative);
        let bytes = copy::fetch(&target, &remote, &local).await?;
        println!("{} -> {} ({bytes} bytes)", untrusted(&remote, false), untrusted(&local.display().to_string(), false));
        total += bytes;
    }
    println!("{} recording file(s), {total} bytes, in {}", files.len(), dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_directory_is_named_after_the_session() {
        assert_eq!(default_dir("demo"), PathBuf::from("demo-recordings"));
    }
}
