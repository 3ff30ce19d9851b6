//! PID 1 duties: reap zombies. The runtime also makes itself a child
//! subreaper, so that outside a PID namespace (tests) orphans of its children
//! (a browser whose daemon was killed) are reparented to it as they would be
//! to PID 1. Children tokio waits for itself are registered in [`Managed`]
//! and left alone, so their exit status is never stolen.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// PIDs of the children the runtime waits for itself.
#[derive(Debug, Clone, Default)]
pub struct Managed(Arc<Mutex<BTreeSet<u32>>>);

impl Managed {
    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<u32>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Registers a child right after spawning it.
    pub fn add(&self, pid: u32) {
        self.set().insert(pid);
    }
    /// Unregisters a child once it has been waited for.
    pub fn remove(&self, pid: u32) {
        self.set().remove(&pid);
    }
    /// No child registered?
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.set().is_empty()
    }
    /// Is `pid` one of ours?
    pub fn contains(&self, pid: u32) -> bool {
        self.set().contains(&pid)
    }
}

/// State and parent of a process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// One-letter state (`Z` for a zombie).
    pub state: char,
    /// Parent PID.
    pub ppid: u32,
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parentheses.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid })
}

/// Children of `parent` (from `/proc`) with their state.
pub fn children_of(parent: u32) -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
            (stat.ppid == parent).then_some((pid, stat))
        })
        .collect()
}

/// Reaps every zombie child that is not managed. Returns how many.
pub fn reap_orphans(managed: &Managed) -> usize {
    reap(children_of(std::process::id()), managed)
}

/// Reaps the unmanaged zombies among `candidates`.
pub fn reap(candidates: impl IntoIterator<Item = (u32, Stat)>, managed: &Managed) -> usize {
    let mut reaped = 0;
    for (pid, stat) in candidates {
        if stat.state != 'Z' || managed.contains(pid) {
            continue;
        }
        let Ok(raw) = i32::try_from(pid) else { continue };
        if waitpid(Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)).is_ok() {
            tracing::debug!(pid, "reaped an orphan");
            reaped += 1;
        }
    }
    reaped
}

/// Live adopted processes: children of the runtime it did not start itself
/// (for example a browser whose daemon died).
pub fn live_orphans(managed: &Managed) -> Vec<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|(pid, stat)| stat.state != 'Z' && !managed.contains(*pid))
        .map(|(pid, _)| pid)
        .collect()
}

/// Becomes the reaper of orphaned descendants (a no-op for PID 1).
pub fn become_subreaper() {
    if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::warn!(%err, "PR_SET_CHILD_SUBREAPER failed; orphans go to the real init");
    }
}

/// How often orphans are looked for without a SIGCHLD: a safety net only
/// (each look reads every `/proc/<pid>/stat` of the container), so an idle
/// session does not wake for it every second.
const SAFETY_NET: std::time::Duration = std::time::Duration::from_secs(30);

/// Reaps orphans on every SIGCHLD, and every [`SAFETY_NET`]. Without a
/// SIGCHLD stream, every second.
pub async fn run(managed: Managed) {
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    loop {
        match sigchld.as_mut() {
            Some(s) => {
                let _ = tokio::time::timeout(SAFETY_NET, s.recv()).await;
            }
            None => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
        }
        reap_orphans(&managed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        assert_eq!(parse_stat("42 (node) S 1 42 42 0"), Some(Stat { state: 'S', ppid: 1 }));
        assert_eq!(parse_stat("7 (a) b (c)) Z 99 7"), Some(Stat { state: 'Z', ppid: 99 }));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R notanumber"), None);
    }

    #[test]
    fn managed_set_tracks_pids() {
        let m = Managed::default();
        m.add(5);
        assert!(m.contains(5));
        m.remove(5);
        assert!(!m.contains(5));
    }

    #[test]
    // The orphan is deliberately never waited for: the reaper must reap it.
    #[allow(clippy::zombie_processes)]
    fn an_unmanaged_zombie_child_is_reaped_and_a_managed_one_is_not() {
        let managed = Managed::default();
        let keep = std::process::Command::new("/bin/true").spawn().unwrap();
        let orphan = std::process::Command::new("/bin/true").spawn().unwrap();
        managed.add(keep.id());
        let is_zombie = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| parse_stat(&t)).map(|s| s.state)
                == Some('Z')
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !(is_zombie(keep.id()) && is_zombie(orphan.id())) {
            assert!(std::time::Instant::now() < deadline, "children did not exit");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Only these two: other tests of this process have children of their own.
        let ours = [keep.id(), orphan.id()];
        reap(children_of(std::process::id()).into_iter().filter(|(pid, _)| ours.contains(pid)), &managed);
        assert!(!is_zombie(orphan.id()), "the unmanaged zombie is reaped");
        assert!(is_zombie(keep.id()), "the managed child is left for its owner");
        let mut keep = keep;
        assert!(keep.wait().unwrap().success());
    }
}
