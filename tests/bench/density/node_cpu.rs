//! The node's CPU over a window: busy time from `/proc/stat` (everything,
//! short-lived processes included), and the same split by who spent it,
//! from `/proc/<pid>/stat`. A process's own time plus the time of the
//! children it reaped (`cutime`, `cstime`) is counted, so what an exec probe
//! costs (runc and the probe, reaped by the container's shim) lands on the
//! shim; a process that both started and ended inside the window and was
//! reaped by one that did too is lost from the split, not from the total.

use std::collections::BTreeMap;

/// `/proc` counts CPU time in USER_HZ ticks, 100 per second on Linux.
const TICKS_PER_SECOND: f64 = 100.0;

/// Who spent it, by the start of a process's `comm` (15 bytes kept by the kernel).
const GROUPS: &[(&str, &str)] = &[
    ("kubelet", "kubelet"),
    ("containerd-shim", "containerd shims (and exec probes)"),
    ("containerd", "containerd"),
    ("runc", "runc"),
    ("playpen-session", "session runtimes"),
    ("node", "playwright-cli daemons (node)"),
    ("MainThread", "playwright-cli daemons (node)"),
    ("chromium", "chromium"),
    ("chrome", "chromium"),
    ("kube-apiserver", "API server"),
    ("etcd", "etcd"),
    ("kube-controller", "controller-manager"),
    ("kube-scheduler", "scheduler"),
    ("kube-proxy", "kube-proxy"),
    ("playpen-operato", "operator"),
    ("kube-network-po", "network policy agent"),
    ("coredns", "coredns"),
];

/// The group of everything else.
pub const OTHER: &str = "other";

/// Busy and total ticks of all CPUs (`/proc/stat`'s first line).
#[derive(Debug, Clone, Copy, Default)]
pub struct Busy {
    busy: u64,
    total: u64,
}

/// Reads `/proc/stat`.
pub fn busy() -> Busy {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    parse_busy(&text)
}

fn parse_busy(text: &str) -> Busy {
    let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else { return Busy::default() };
    let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().take(8).sum();
    // idle and iowait are not busy; nor is steal, the hypervisor giving this
    // VM's time to others (on a shared host it swings from run to run).
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    Busy { busy: total.saturating_sub(field(3) + field(4) + field(7)), total }
}

/// Cores busy on average from `before` to `after`, given `cores`.
pub fn busy_cores(before: Busy, after: Busy, cores: f64) -> f64 {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return 0.0;
    }
    after.busy.saturating_sub(before.busy) as f64 / total as f64 * cores
}

/// CPU seconds of every process alive at one instant, by pid: (group,
/// command name, own + reaped children).
#[derive(Debug, Clone, Default)]
pub struct Sample(BTreeMap<u32, (&'static str, String, f64)>);

/// Reads every `/proc/<pid>/stat`.
pub fn sample() -> Sample {
    let mut seen = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Sample(seen) };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process may exit between listing and reading: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some((comm, seconds)) = parse_stat(&stat) {
            seen.insert(pid, (group_of(comm), comm.to_owned(), seconds));
        }
    }
    Sample(seen)
}

/// CPU seconds each group spent from `before` to `after`, and what the
/// processes of no group spent, by command name.
pub fn between(before: &Sample, after: &Sample) -> (BTreeMap<&'static str, f64>, BTreeMap<String, f64>) {
    let mut spent = BTreeMap::new();
    let mut others = BTreeMap::new();
    for (pid, (group, comm, seconds)) in &after.0 {
        let earlier = before.0.get(pid).map_or(0.0, |(_, _, s)| *s);
        let delta = (seconds - earlier).max(0.0);
        *spent.entry(*group).or_insert(0.0) += delta;
        if *group == OTHER {
            *others.entry(comm.clone()).or_insert(0.0) += delta;
        }
    }
    (spent, others)
}

fn group_of(comm: &str) -> &'static str {
    GROUPS.iter().find(|(prefix, _)| comm.starts_with(prefix)).map_or(OTHER, |(_, group)| group)
}

/// `pid (comm) state …`: fields counted from comm's last `)`; utime, stime,
/// cutime, cstime are fields 14 to 17.
fn parse_stat(stat: &str) -> Option<(&str, f64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After comm, state is field 3: field k is at index k - 3.
    let ticks: f64 = (14..=17).map(|k| fields.get(k - 3).and_then(|f| f.parse::<f64>().ok())).sum::<Option<f64>>()?;
    Some((comm, ticks / TICKS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_reaped_children_time_after_a_comm_with_spaces() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 100 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat(stat), Some(("a (b) c", 4.0)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn busy_leaves_out_idle_and_iowait() {
        let b = parse_busy("cpu  100 0 50 780 50 0 0 20 0 0\ncpu0 1 1 1 1\n");
        assert_eq!((b.busy, b.total), (150, 1000), "steal is not this node's work");
        let later = Busy { busy: 250, total: 1200 };
        assert!((busy_cores(b, later, 2.0) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_shims_are_not_counted_as_containerd() {
        assert_eq!(group_of("containerd-shim"), "containerd shims (and exec probes)");
        assert_eq!(group_of("containerd"), "containerd");
        assert_eq!(group_of("bash"), OTHER);
    }
}
