//! The I/O half of retention: what the snapshot volume holds.

use std::path::Path;

use super::plan::{Entry, Listing};

/// The most entries counted below the directory: a tree the agent made
/// cannot make a pass slow.
const MAX_WALK: usize = 100_000;

fn allocated(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512)
}

/// Bytes below `dir` (not following symlinks), counting at most `budget` entries.
fn tree_bytes(dir: &Path, budget: &mut usize) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if *budget == 0 {
                return total;
            }
            *budget -= 1;
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            total = total.saturating_add(allocated(&meta));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

/// Lists the regular files directly in `dir`, and counts what else is there.
pub fn scan(dir: &Path) -> std::io::Result<Listing> {
    let mut out = Listing::default();
    let mut budget = MAX_WALK;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.file_type().is_file() {
            if let Ok(modified) = meta.modified() {
                out.files.push(Entry { path: entry.path(), modified, bytes: allocated(&meta) });
            }
        } else if meta.is_dir() {
            out.other_bytes = out.other_bytes.saturating_add(tree_bytes(&entry.path(), &mut budget));
        }
    }
    Ok(out)
}

/// The size of the filesystem holding `dir`, in bytes.
pub fn filesystem_bytes(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    stat.blocks().checked_mul(stat.fragment_size())
}
