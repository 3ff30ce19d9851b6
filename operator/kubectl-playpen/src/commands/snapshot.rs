//! `kubectl playpen snapshot NAME [-o FILE|DIR]`: copy the newest snapshot
//! out of the session's snapshot directory.

use playpen_api::layout::SNAPSHOT_DIR;

use super::copy::{self, destination, newest, parse_top_level, LIST_TOP_LEVEL};
use crate::cli::SnapshotArgs;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::output::untrusted;

/// Runs `snapshot`.
pub async fn run(cluster: &Cluster, args: SnapshotArgs) -> Result<()> {
    let (_, target) = super::browser(cluster, &args.name).await?;
    let raw = copy::list(&target, LIST_TOP_LEVEL, SNAPSHOT_DIR).await?;
    let entries = parse_top_level(&raw)
        .ok_or_else(|| Error::Unavailable(format!("Pod {} has no snapshot directory {SNAPSHOT_DIR}", target.pod)))?;
    let chosen = newest(&entries).ok_or_else(|| {
        Error::Unavailable(format!(
            "no snapshot in {SNAPSHOT_DIR} of BrowserSession {} yet: drive it first, e.g. \
             kubectl playpen run {} -n {} -- snapshot",
            target.session, args.name, cluster.namespace
        ))
    })?;
    let local = destination(args.output.as_deref(), &chosen.name, |p| p.is_dir());
    let remote = format!("{SNAPSHOT_DIR}/{}", chosen.name);
    let bytes = copy::fetch(&target, &remote, &local).await?;
    println!("{} -> {} ({bytes} bytes)", untrusted(&remote, false), untrusted(&local.display().to_string(), false));
    if bytes != chosen.size {
        eprintln!("note: the file was {} bytes when listed; it changed while being copied", chosen.size);
    }
    Ok(())
}
