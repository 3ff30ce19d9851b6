//! CPU seconds by process on this machine: the local control plane, the
//! operator and the bench all run here, share its two cores, and whoever
//! of them burns more CPU leaves less to the API server and etcd. Read from
//! `/proc/<pid>/stat` (utime + stime) before and after a phase.

use std::collections::BTreeMap;

/// `/proc` counts CPU time in USER_HZ ticks, 100 per second on Linux
/// whatever the kernel's own tick rate.
const TICKS_PER_SECOND: f64 = 100.0;

/// The API server's group.
pub const API_SERVER: &str = "API server";
/// etcd's group.
pub const ETCD: &str = "etcd";
/// The controller-manager's group.
pub const CONTROLLER_MANAGER: &str = "controller-manager";
/// The control plane's groups.
pub const CONTROL_PLANE: [&str; 3] = [API_SERVER, ETCD, CONTROLLER_MANAGER];

/// The processes a phase's table names, by the start of their `comm`
/// (the kernel keeps 15 bytes of it); everything else is "other".
const GROUPS: &[(&str, &str)] = &[
    ("kube-apiserver", API_SERVER),
    ("etcd", ETCD),
    ("kube-controller", CONTROLLER_MANAGER),
    ("kube-scheduler", "scheduler"),
    ("kubelet", "kubelet"),
    ("playpen-operato", "operator"),
];

/// The bench's own process, wherever its binary is.
pub const BENCH: &str = "bench (sessions, watches, ideal)";

/// CPU seconds of every process alive at one instant, by pid.
#[derive(Debug, Clone, Default)]
pub struct Sample(BTreeMap<u32, (String, f64)>);

pub fn sample() -> Sample {
    let me = std::process::id();
    let mut seen = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Sample(seen) };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process may exit between listing and reading: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((comm, seconds)) = parse_stat(&stat) else { continue };
        let group = if pid == me { BENCH.to_owned() } else { group_of(comm).to_owned() };
        seen.insert(pid, (group, seconds));
    }
    Sample(seen)
}

/// CPU seconds each group spent from `before` to `after` (processes
/// started meanwhile count whole; those that ended are lost).
pub fn between(before: &Sample, after: &Sample) -> BTreeMap<String, f64> {
    let mut spent = BTreeMap::new();
    for (pid, (group, seconds)) in &after.0 {
        let earlier = before.0.get(pid).map_or(0.0, |(_, s)| *s);
        *spent.entry(group.clone()).or_insert(0.0) += (seconds - earlier).max(0.0);
    }
    spent
}

fn group_of(comm: &str) -> &'static str {
    GROUPS.iter().find(|(prefix, _)| comm.starts_with(prefix)).map_or("other", |(_, group)| group)
}

/// `pid (comm) state ppid …`: comm may hold spaces and parentheses, so the
/// fields are counted from its last `)`; utime and stime are fields 14, 15.
fn parse_stat(stat: &str) -> Option<(&str, f64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let mut fields = stat.get(close + 1..)?.split_whitespace();
    // After comm: state is field 3, so utime (14) is the 12th from here.
    let utime: f64 = fields.nth(11)?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((comm, (utime + stime) / TICKS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_after_a_comm_with_spaces_and_parentheses() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat(stat), Some(("a (b) c", 3.0)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn groups_by_the_start_of_the_kernel_s_short_name() {
        assert_eq!(group_of("kube-apiserver"), "API server");
        assert_eq!(group_of("playpen-operato"), "operator");
        assert_eq!(group_of("bash"), "other");
    }

    #[test]
    fn a_process_started_meanwhile_counts_whole_and_one_that_ended_is_dropped() {
        let before = Sample(BTreeMap::from([(1, ("etcd".into(), 5.0)), (2, ("operator".into(), 1.0))]));
        let after = Sample(BTreeMap::from([(1, ("etcd".into(), 7.5)), (3, ("operator".into(), 0.5))]));
        let spent = between(&before, &after);
        assert_eq!(spent["etcd"], 2.5);
        assert_eq!(spent["operator"], 0.5);
    }

    #[test]
    fn this_process_is_found_as_the_bench() {
        let spent = sample();
        assert!(spent.0.get(&std::process::id()).is_some_and(|(g, _)| g == BENCH));
    }
}
