//! CPU time by thread name, from the scheduler's own nanosecond account
//! (`/proc/self/task/<tid>/schedstat`): the proxy's threads (its runtime's
//! and the resolver's blocking threads, all named [`PROXY`]…) against the
//! rest of the process.

use std::time::Duration;

/// The prefix of every proxy thread's name (the kernel keeps 15 bytes).
pub const PROXY: &str = "egress-proxy";

/// CPU time of the threads of this process whose name `pick` accepts.
pub fn threads(pick: impl Fn(&str) -> bool) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Duration::ZERO };
    tasks
        .filter_map(|task| {
            let dir = task.ok()?.path();
            let name = std::fs::read_to_string(dir.join("comm")).ok()?;
            if !pick(name.trim_end()) {
                return None;
            }
            let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            Some(Duration::from_nanos(stat.split_whitespace().next()?.parse().ok()?))
        })
        .sum()
}

/// CPU time of the proxy's threads.
pub fn proxy() -> Duration {
    threads(|name| name.starts_with(PROXY))
}

/// CPU time of every other thread: the client and the origin.
pub fn endpoints() -> Duration {
    threads(|name| !name.starts_with(PROXY))
}
