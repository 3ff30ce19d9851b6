//! A throwaway containerd: its own process, root, state directory and socket in a
//! temporary directory, shared with nothing. The CRI plugin and the snapshotters
//! that cannot work here are off, no debug or metrics address is set (no TCP
//! listener at all), and `opt` points into the temporary directory (its default is
//! /opt/containerd). The task runtimes stay on: a Docker Engine on top of it
//! ([`super::dockerd`]) refuses to start without them, though nothing is run. The
//! node's containerd (tests/cluster) and Docker Engine's are never contacted.
//!
//! [`Containerd`] stops the daemon and removes its directory (with the test's
//! [`Containerd::scratch`] files and the engines' directories) when dropped, so also
//! when the test panics. If the test process is killed first, the kernel sends the
//! daemons SIGTERM (`setpriv --pdeathsig`), and the next start removes the directory
//! they left.

use super::SETUP;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name prefix of every daemon's directory in the temporary directory.
const PREFIX: &str = "playpen-containerd-";
/// How long the daemon gets to answer on its socket, and to exit on SIGTERM.
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running throwaway containerd.
pub struct Containerd {
    child: Child,
    /// Removed (after the daemon has stopped) when the guard is dropped.
    dir: tempfile::TempDir,
    socket: PathBuf,
}

/// Fails naming the set-up script when `program` does not run.
fn require(program: &str, package: &str) {
    let out = Command::new(program).arg("--version").output().unwrap_or_else(|e| {
        panic!("{program} is required for this test ({e}): run `{SETUP}` first (it installs Debian's {package})")
    });
    assert!(out.status.success(), "`{program} --version` failed: run `{SETUP}` first (it installs Debian's {package})");
}

fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid.trim()).exists()
}

/// Removes the directories earlier runs left when they were killed before their guard
/// ran: those whose test process (`owner`) and daemons (every `*.pid` file) are all
/// gone. A directory without an `owner` is being set up by a running test and is left
/// alone.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let dir = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(dir.join("owner")) else { continue };
        let mut daemons = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|f| f.path().extension().is_some_and(|e| e == "pid"))
            .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default());
        if !alive(&owner) && !daemons.any(|pid| !pid.trim().is_empty() && alive(&pid)) {
            eprintln!("removing {}, left by test process {} (gone)", dir.display(), owner.trim());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

fn config(dir: &Path, socket: &Path) -> String {
    let d = dir.display();
    let s = socket.display();
    format!(
        r#"# A throwaway containerd for playpen-imagebuild's tests.
version = 2
root = "{d}/root"
state = "{d}/state"
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "{s}"

[ttrpc]
  address = "{s}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
"#
    )
}

impl Containerd {
    /// Starts Debian's containerd as root in a fresh temporary directory and waits
    /// until it answers on its socket.
    pub fn start() -> Containerd {
        require("containerd", "containerd");
        require("ctr", "containerd");
        require("setpriv", "util-linux");
        assert_eq!(effective_uid(), 0, "a containerd of its own needs root: run this test as root");
        remove_stale(&std::env::temp_dir());
        let dir = tempfile::Builder::new().prefix(PREFIX).tempdir().unwrap();
        std::fs::create_dir(dir.path().join("scratch")).unwrap();
        let socket = dir.path().join("containerd.sock");
        // sun_path holds 108 bytes.
        assert!(
            socket.as_os_str().len() < 100,
            "{}: too long for a socket; set TMPDIR to a shorter path",
            socket.display()
        );
        let config_path = dir.path().join("config.toml");
        std::fs::write(&config_path, config(dir.path(), &socket)).unwrap();
        let log = std::fs::File::create(dir.path().join("containerd.log")).unwrap();
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "TERM", "containerd", "--config"])
            .arg(&config_path)
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting containerd: {e}"));
        // setpriv execs containerd: one process, this pid.
        std::fs::write(dir.path().join("containerd.pid"), child.id().to_string()).unwrap();
        std::fs::write(dir.path().join("owner"), std::process::id().to_string()).unwrap();
        let mut containerd = Containerd { child, dir, socket };
        let started = Instant::now();
        loop {
            if let Some(status) = containerd.child.try_wait().unwrap() {
                panic!("containerd exited ({status}) before answering:\n{}", containerd.log());
            }
            let ping = Command::new("ctr").arg("-a").arg(&containerd.socket).arg("version").output().unwrap();
            if ping.status.success() {
                break;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "containerd did not answer on {} within {START_TIMEOUT:?}:\n{}",
                containerd.socket.display(),
                containerd.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!(
            "containerd (pid {}) answering on {} after {:.1}s",
            containerd.child.id(),
            containerd.socket.display(),
            started.elapsed().as_secs_f64()
        );
        containerd
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default()
    }

    /// Runs `ctr -a <socket> -n <namespace> <args>`; returns its stdout, fails with its stderr.
    pub fn ctr(&self, namespace: &str, args: &[&str]) -> String {
        let out = Command::new("ctr")
            .arg("-a")
            .arg(&self.socket)
            .args(["-n", namespace])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running ctr: {e}"));
        assert!(
            out.status.success(),
            "ctr -n {namespace} {} failed ({}):\n{}\ncontainerd's log:\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A directory for the test's own files (archives, layouts), removed with the daemon's.
    pub fn scratch(&self) -> PathBuf {
        self.dir.path().join("scratch")
    }

    /// The daemon's directory (an engine on top of it keeps its own beside it, and
    /// writes `<name>.pid` there so [`remove_stale`] waits for it too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The daemon's gRPC socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let started = Instant::now();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        while started.elapsed() < STOP_TIMEOUT {
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            eprintln!("containerd (pid {pid}) still running {STOP_TIMEOUT:?} after SIGTERM; killing it");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let stopped = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let removed = std::fs::remove_dir_all(self.dir.path());
        eprintln!(
            "containerd (pid {pid}) stopped after {stopped:.1}s; {} removed in {:.1}s{}",
            self.dir.path().display(),
            started.elapsed().as_secs_f64(),
            removed.err().map(|e| format!(" (error: {e})")).unwrap_or_default()
        );
        // The TempDir field tries again once this returns (a no-op when it is gone).
    }
}
