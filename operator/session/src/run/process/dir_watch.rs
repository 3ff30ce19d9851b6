//! Wakes a task when a directory changes: inotify, read on a thread of its
//! own (the runtime's single async thread never blocks on it), one permit on
//! a [`Notify`] per batch of events.

use std::path::Path;
use std::sync::Arc;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::sync::Notify;

/// Wakes `wake` on every `events` in any of `dirs` that can be watched (a
/// missing one is skipped). Fails when inotify cannot be set up or no
/// directory can be watched.
pub fn notify_on_changes(
    thread: &str,
    dirs: &[&Path],
    events: AddWatchFlags,
    wake: Arc<Notify>,
) -> std::io::Result<()> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC)?;
    let mut watched = 0;
    let mut last_error = None;
    for dir in dirs {
        match inotify.add_watch(*dir, events | AddWatchFlags::IN_ONLYDIR) {
            Ok(_) => watched += 1,
            Err(err) => last_error = Some(err),
        }
    }
    if watched == 0 {
        return Err(last_error.map_or_else(|| std::io::ErrorKind::NotFound.into(), std::io::Error::from));
    }
    std::thread::Builder::new().name(thread.into()).spawn(move || loop {
        match inotify.read_events() {
            Ok(_) => wake.notify_one(),
            Err(nix::errno::Errno::EINTR) => {}
            Err(err) => {
                tracing::warn!(%err, "a directory watch stopped");
                return;
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_change_in_any_watched_directory_wakes_and_quiet_does_not() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let wake = Arc::new(Notify::new());
        let missing = Path::new("/nonexistent/playpen");
        notify_on_changes("test-watch", &[a.path(), missing, b.path()], AddWatchFlags::IN_CREATE, wake.clone())
            .unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(200), wake.notified()).await.is_err(), "quiet");
        std::fs::write(b.path().join("x"), b"").unwrap();
        tokio::time::timeout(Duration::from_secs(5), wake.notified()).await.expect("the second directory woke it");
        let none = notify_on_changes("test-watch", &[missing], AddWatchFlags::IN_CREATE, wake);
        assert!(none.is_err(), "nothing to watch is an error");
    }
}
