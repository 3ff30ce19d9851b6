//! The seccomp profile that lets Chromium's namespace sandbox run under a
//! container runtime. One source: the chart's file, compiled in.

/// The profile text (charts/playpen/files/seccomp/chromium.json).
pub const CHROMIUM_PROFILE: &str = include_str!("../../charts/playpen/files/seccomp/chromium.json");

/// File name the builder writes beside the image.
pub const FILE_NAME: &str = "chromium.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_allows_the_sandbox_syscalls_and_denies_escapes() {
        let v: serde_json::Value = serde_json::from_str(CHROMIUM_PROFILE).unwrap();
        assert_eq!(v["defaultAction"], "SCMP_ACT_ALLOW");
        let denied: Vec<&str> = v["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|rule| rule["action"] == "SCMP_ACT_ERRNO")
            .flat_map(|rule| rule["names"].as_array().unwrap().iter().filter_map(|n| n.as_str()))
            .collect();
        for needed in ["clone", "unshare", "setns", "chroot"] {
            assert!(!denied.contains(&needed), "{needed} must stay allowed for the sandbox");
        }
        for escape in ["mount", "ptrace", "bpf", "kexec_load", "init_module"] {
            assert!(denied.contains(&escape), "{escape} must be refused");
        }
    }
}
