//! The seccomp profile that lets Chromium's namespace sandbox run under a
//! container runtime: an allow-list (everything else fails with EPERM). One
//! source: the chart's file, compiled in; its README says how it was derived.

/// The profile text (charts/playpen/files/seccomp/chromium.json).
pub const CHROMIUM_PROFILE: &str = include_str!("../../charts/playpen/files/seccomp/chromium.json");

/// File name the builder writes beside the image.
pub const FILE_NAME: &str = "chromium.json";

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

    fn rules(action: &str) -> Vec<Value> {
        let v: Value = serde_json::from_str(CHROMIUM_PROFILE).expect("json");
        v["syscalls"].as_array().expect("syscalls").iter().filter(|r| r["action"] == action).cloned().collect()
    }

    fn names(rule: &Value) -> Vec<&str> {
        rule["names"].as_array().expect("names").iter().filter_map(Value::as_str).collect()
    }

    #[test]
    fn profile_is_an_allow_list() {
        let v: Value = serde_json::from_str(CHROMIUM_PROFILE).expect("json");
        assert_eq!(v["defaultAction"], "SCMP_ACT_ERRNO");
        assert_eq!(v["defaultErrnoRet"], 1, "EPERM, as the runtime's default profile");
        let allow = rules("SCMP_ACT_ALLOW");
        let unconditional: Vec<&str> = allow.iter().filter(|r| r.get("args").is_none()).flat_map(names).collect();
        for needed in ["read", "mmap", "futex", "epoll_pwait", "sendmsg", "setns", "chroot", "seccomp", "prctl"] {
            assert!(unconditional.contains(&needed), "{needed} must be allowed");
        }
        for refused in [
            "mount",
            "umount2",
            "pivot_root",
            "ptrace",
            "process_vm_readv",
            "bpf",
            "kexec_load",
            "init_module",
            "io_uring_setup",
            "userfaultfd",
            "keyctl",
            "perf_event_open",
            "open_by_handle_at",
            "fsopen",
        ] {
            assert!(!allow.iter().any(|r| names(r).contains(&refused)), "{refused} must not be allowed");
        }
        // Only the runtime's own fallback errno rule: clone3 answers ENOSYS so libc uses clone.
        let errno = rules("SCMP_ACT_ERRNO");
        assert_eq!(errno.len(), 1);
        assert_eq!((names(&errno[0]), &errno[0]["errnoRet"]), (vec!["clone3"], &Value::from(38)));
    }

    #[test]
    fn namespaces_are_filtered_by_flag() {
        // clone and unshare may create user, PID and network namespaces (the
        // sandbox), never mount, UTS, IPC or cgroup ones.
        let refused = 0x0002_0000 | 0x0200_0000 | 0x0400_0000 | 0x0800_0000;
        for call in ["clone", "unshare"] {
            let allow = rules("SCMP_ACT_ALLOW");
            let rule = allow.iter().find(|r| names(r) == [call]).unwrap_or_else(|| panic!("{call} rule"));
            let args = rule["args"].as_array().expect("args");
            assert_eq!(args.len(), 1, "{call}");
            assert_eq!(args[0]["op"], "SCMP_CMP_MASKED_EQ");
            assert_eq!((args[0]["index"].as_u64(), args[0]["value"].as_u64()), (Some(0), Some(refused)));
            assert_eq!(args[0]["valueTwo"].as_u64(), Some(0));
        }
    }
}
