//! What runs on the node, read from the host's /proc (the suite runs as root
//! on the node it tests): processes by the container they belong to, so a
//! Chromium left behind by a container that no longer runs is counted, and
//! a fault can be aimed at one process of one Pod.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Pod;

/// One process on the node.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Host PID.
    pub pid: i32,
    /// `/proc/<pid>/comm`.
    pub comm: String,
    /// The command line, arguments joined by spaces.
    pub cmdline: String,
    /// The Pod UID from its cgroup, when it runs in a Pod.
    pub pod_uid: Option<String>,
    /// The container ID (64 hex) from its cgroup, when it runs in a container.
    pub container_id: Option<String>,
}

/// The Pod UID and container ID in a cgroup file, for the cgroupfs
/// (`/kubepods/burstable/pod<uid>/<id>`) and systemd
/// (`kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope`) layouts.
fn pod_and_container(cgroup: &str) -> (Option<String>, Option<String>) {
    for line in cgroup.lines() {
        let Some(at) = line.find("kubepods") else { continue };
        let path = &line[at..];
        let pod = path.split('/').find_map(|segment| {
            let segment = segment.trim_end_matches(".slice");
            let uid = segment.rsplit_once("-pod").map(|(_, uid)| uid).or_else(|| segment.strip_prefix("pod"))?;
            let uid = uid.replace('_', "-");
            (uid.len() == 36).then_some(uid)
        });
        let container = path
            .rsplit('/')
            .next()
            .map(|last| last.trim_start_matches("cri-containerd-").trim_end_matches(".scope").to_owned())
            .filter(|id| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()));
        return (pod, container);
    }
    (None, None)
}

/// Every process on the node (those that exit while being read are skipped).
pub fn processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let dir = Path::new("/proc").join(pid.to_string());
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?.trim().to_owned();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_owned();
            let cgroup = std::fs::read_to_string(dir.join("cgroup")).unwrap_or_default();
            let (pod_uid, container_id) = pod_and_container(&cgroup);
            Some(Proc { pid, comm, cmdline, pod_uid, container_id })
        })
        .collect()
}

/// The IDs of the containers `pods` report running now.
pub fn running_containers(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter()
        .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
        .flatten()
        .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        .filter_map(|c| c.container_id.as_deref()?.rsplit("://").next().map(str::to_owned))
        .collect()
}

/// Chromium processes in a Pod's cgroup whose container is not one of
/// `running` (every Pod of the cluster): left behind by a container or a Pod
/// that is gone.
pub fn orphan_chromium(procs: &[Proc], running: &BTreeSet<String>) -> Vec<Proc> {
    procs
        .iter()
        .filter(|p| p.comm == "chromium" && p.pod_uid.is_some())
        .filter(|p| p.container_id.as_ref().is_none_or(|id| !running.contains(id)))
        .cloned()
        .collect()
}

/// The processes of Pod `uid` whose command line contains `needle`.
pub fn in_pod<'a>(procs: &'a [Proc], uid: &str, needle: &str) -> Vec<&'a Proc> {
    procs.iter().filter(|p| p.pod_uid.as_deref() == Some(uid) && p.cmdline.contains(needle)).collect()
}

/// SIGKILLs `pid` from the host (a container's PID 1 cannot ignore it from here).
pub fn sigkill(pid: i32) -> anyhow::Result<()> {
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().context("running kill")?;
    if !status.success() {
        bail!("kill -9 {pid} failed: {status}");
    }
    Ok(())
}

/// `tests/cluster/fault.sh <action> <component> <down_seconds>`.
pub fn cluster_fault(action: &str, component: &str, down_seconds: u64) -> anyhow::Result<()> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/cluster/fault.sh");
    let out = Command::new("bash")
        .args([script, action, component, &down_seconds.to_string()])
        .output()
        .context("running tests/cluster/fault.sh")?;
    if !out.status.success() {
        bail!(
            "fault.sh {action} {component} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pod_and_container;

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn cgroupfs_and_systemd_layouts_name_the_pod_and_container() {
        let cgroupfs = format!("12:memory:/kubepods/burstable/pod3f1c2b7e-1111-2222-3333-444455556666/{ID}\n");
        assert_eq!(
            pod_and_container(&cgroupfs),
            (Some("3f1c2b7e-1111-2222-3333-444455556666".into()), Some(ID.into()))
        );
        let systemd = format!(
            "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3f1c2b7e_1111_2222_3333_444455556666.slice/cri-containerd-{ID}.scope\n"
        );
        assert_eq!(pod_and_container(&systemd), (Some("3f1c2b7e-1111-2222-3333-444455556666".into()), Some(ID.into())));
        assert_eq!(pod_and_container("0::/user.slice/session-1.scope\n"), (None, None));
    }
}
