//! Wakes retention when a file is written.

use std::path::Path;
use std::sync::Arc;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::sync::Notify;

/// Wakes `written` whenever a file in `dir` is created, written or moved in,
/// so a burst of writes meets the size budget before the kubelet measures the
/// volume. Runs on a thread of its own; fails when inotify cannot be set up.
pub fn watch_writes(dir: &Path, written: Arc<Notify>) -> std::io::Result<()> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC)?;
    let events = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_ONLYDIR;
    inotify.add_watch(dir, events)?;
    std::thread::Builder::new().name("retention-watch".into()).spawn(move || {
        while inotify.read_events().is_ok() {
            written.notify_one();
        }
    })?;
    Ok(())
}
