//! Where the browser's own DevTools server listens. The runtime launches
//! Chromium with `--remote-debugging-port=0`, so the kernel picks a free
//! port (no race with the dashboard's port 0, nothing to collide with), and
//! Chromium writes it to `DevToolsActivePort` in its user data directory —
//! a temporary one, unless the session has a persistent profile. That
//! directory is read from the browser process's command line, found among
//! this runtime's own descendants (never another process in a shared PID
//! namespace, such as an agent sidecar's).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// The launch argument the runtime adds (see [`super::launch`]).
pub const PORT_ARG: &str = "--remote-debugging-port=0";

/// The DevTools address of the browser this runtime started, if it is up.
pub fn browser_endpoint(proc_root: &Path, runtime_pid: u32) -> Option<SocketAddr> {
    let entries = std::fs::read_dir(proc_root).ok()?;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let Some(user_data_dir) = debugging_browser(&raw) else { continue };
        if !descends_from(proc_root, pid, runtime_pid) {
            continue;
        }
        let text = std::fs::read_to_string(user_data_dir.join("DevToolsActivePort")).ok()?;
        return active_port(&text).map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    None
}

/// The user data directory of a Chromium browser process (not a renderer,
/// zygote or GPU helper: those carry `--type=`) launched with [`PORT_ARG`].
pub fn debugging_browser(cmdline: &[u8]) -> Option<PathBuf> {
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    if !args.contains(&PORT_ARG.as_bytes()) || args.iter().any(|a| a.starts_with(b"--type=")) {
        return None;
    }
    let dir = args.iter().find_map(|a| a.strip_prefix(b"--user-data-dir="))?;
    let dir = std::str::from_utf8(dir).ok()?;
    Path::new(dir).is_absolute().then(|| PathBuf::from(dir))
}

/// The port on the first line of `DevToolsActivePort` ("9222\n/devtools/browser/<id>").
pub fn active_port(text: &str) -> Option<u16> {
    text.lines().next()?.trim().parse().ok().filter(|&port| port != 0)
}

/// Is `pid` a descendant of `ancestor`? Follows parent links from `/proc/<pid>/stat`.
fn descends_from(proc_root: &Path, mut pid: u32, ancestor: u32) -> bool {
    // A process tree deeper than this is not one the runtime built.
    for _ in 0..64 {
        match parent_of(proc_root, pid) {
            Some(parent) if parent == ancestor => return true,
            Some(parent) if parent > 0 && parent != pid => pid = parent,
            _ => return false,
        }
    }
    false
}

fn parent_of(proc_root: &Path, pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmdline(args: &[&str]) -> Vec<u8> {
        args.iter().flat_map(|a| a.bytes().chain([0])).collect()
    }

    #[test]
    fn only_the_browser_process_launched_for_debugging_is_chosen() {
        let browser =
            cmdline(&["/usr/lib/chromium/chromium", "--headless", PORT_ARG, "--user-data-dir=/tmp/p-1", "about:blank"]);
        assert_eq!(debugging_browser(&browser), Some(PathBuf::from("/tmp/p-1")));
        let renderer =
            cmdline(&["/usr/lib/chromium/chromium", "--type=renderer", PORT_ARG, "--user-data-dir=/tmp/p-1"]);
        assert_eq!(debugging_browser(&renderer), None);
        let other_port = cmdline(&["chromium", "--remote-debugging-port=9222", "--user-data-dir=/tmp/p"]);
        assert_eq!(debugging_browser(&other_port), None, "not the runtime's launch");
        assert_eq!(debugging_browser(&cmdline(&["chromium", PORT_ARG, "--user-data-dir=relative"])), None);
        assert_eq!(debugging_browser(&cmdline(&["chromium", PORT_ARG])), None);
    }

    #[test]
    fn the_port_is_the_first_line() {
        assert_eq!(active_port("40123\n/devtools/browser/abc\n"), Some(40123));
        assert_eq!(active_port("0\n"), None);
        assert_eq!(active_port(""), None);
        assert_eq!(active_port("x\n"), None);
    }

    fn fake_process(root: &Path, pid: u32, parent: u32, args: &[&str]) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("stat"), format!("{pid} (odd) name) S {parent} 1 1 0")).unwrap();
        std::fs::write(dir.join("cmdline"), cmdline(args)).unwrap();
    }

    #[test]
    fn a_browser_outside_the_runtimes_tree_is_ignored() {
        let proc_root = tempfile::tempdir().unwrap();
        let profile = tempfile::tempdir().unwrap();
        std::fs::write(profile.path().join("DevToolsActivePort"), "40123\n/devtools/browser/x\n").unwrap();
        let dir_arg = format!("--user-data-dir={}", profile.path().display());
        // A sidecar's Chromium (parent 7, not below the runtime, pid 10).
        fake_process(proc_root.path(), 30, 7, &["chromium", PORT_ARG, &dir_arg]);
        assert_eq!(browser_endpoint(proc_root.path(), 10), None);
        // The runtime's: runtime 10 → daemon 20 → chromium 21.
        fake_process(proc_root.path(), 20, 10, &["node", "daemon"]);
        fake_process(proc_root.path(), 21, 20, &["chromium", PORT_ARG, &dir_arg]);
        assert_eq!(browser_endpoint(proc_root.path(), 10), Some("127.0.0.1:40123".parse().unwrap()));
    }

    #[test]
    fn a_parent_loop_ends() {
        let proc_root = tempfile::tempdir().unwrap();
        fake_process(proc_root.path(), 5, 6, &["a"]);
        fake_process(proc_root.path(), 6, 5, &["b"]);
        assert!(!descends_from(proc_root.path(), 5, 1));
    }
}
