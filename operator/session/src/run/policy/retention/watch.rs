//! Wakes retention when a file is written.

use std::path::Path;
use std::sync::Arc;

use nix::sys::inotify::AddWatchFlags;
use tokio::sync::Notify;

use crate::run::process::dir_watch::notify_on_changes;

/// Wakes `written` whenever a file in `dir` is created, written or moved in,
/// so a burst of writes meets the size budget before the kubelet measures the
/// volume. Runs on a thread of its own; fails when inotify cannot be set up.
pub fn watch_writes(dir: &Path, written: Arc<Notify>) -> std::io::Result<()> {
    let events = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_TO;
    notify_on_changes("retention-watch", &[dir], events, written)
}
