//! Real parts for the integration tests: the pinned playwright-cli installed
//! by `tests/session/setup.sh`, Debian's chromium, a loopback fixture server,
//! and `playpen-session run` as a real process. Every process a test starts
//! is found again through a marker in its environment and killed on drop.

#![allow(dead_code)]
// Test support: a failed set-up step should panic with its location.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const SETUP: &str = "export PLAYPEN_TEST_CLI_PREFIX=\"$(tests/session/setup.sh | tail -n 1)\"";

/// The CLI install prefix; fails loudly (never skips) when it is not set up.
pub fn cli_prefix() -> PathBuf {
    let prefix = std::env::var("PLAYPEN_TEST_CLI_PREFIX").unwrap_or_else(|_| {
        panic!("PLAYPEN_TEST_CLI_PREFIX is not set: these tests drive the real playwright-cli. From the repository root run:\n  {SETUP}\nthen re-run the tests")
    });
    let prefix = PathBuf::from(prefix);
    assert!(cli_bin(&prefix).exists(), "{} has no playwright-cli; run:\n  {SETUP}", prefix.display());
    assert!(Path::new("/usr/bin/chromium").exists(), "/usr/bin/chromium is missing; run:\n  {SETUP}");
    prefix
}

pub fn cli_bin(prefix: &Path) -> PathBuf {
    prefix.join("node_modules/.bin/playwright-cli")
}

pub fn runtime_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_playpen-session"))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits for `cond` up to `timeout`, polling.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A loopback HTTP server with two pages (`/` and `/next.html`); records every requested path.
pub struct Fixture {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<String>>>,
}

const MAIN_PAGE: &str = "<html><head><title>Fixture</title></head><body><a href=\"/next.html\">Next</a></body></html>";
const NEXT_PAGE: &str = "<html><head><title>Next page</title></head><body><p>arrived</p></body></html>";

impl Fixture {
    pub fn start() -> Self {
        Self::with_pages(MAIN_PAGE, NEXT_PAGE)
    }

    /// The same server with other pages at `/` and `/next.html`.
    pub fn with_pages(main: &'static str, next: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(vec![]));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || serve(conn, &seen, main, next));
            }
        });
        Self { port, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn saw(&self, path: &str) -> bool {
        self.requests.lock().unwrap().iter().any(|p| p == path)
    }
}

/// The path of the HTTP request `conn` sends (its headers read and
/// dropped); `None` when no request line arrives.
pub fn request_path(conn: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(n) if n > 2 => continue,
            _ => break,
        }
    }
    Some(path)
}

fn serve(conn: TcpStream, seen: &Mutex<Vec<String>>, main: &str, next: &str) {
    let Some(path) = request_path(&conn) else { return };
    seen.lock().unwrap().push(path.clone());
    let (status, body) = match path.as_str() {
        "/" => ("200 OK", main),
        "/next.html" => ("200 OK", next),
        _ => ("404 Not Found", "not found"),
    };
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// One HTTP/1.0 GET; returns the status line.
pub fn http_status(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().map(str::to_owned)
}

/// A temp data home with a runtime.json and a launch config.
pub struct Session {
    pub dir: tempfile::TempDir,
    pub name: String,
    pub viewer_port: Option<u16>,
    pub prefix: PathBuf,
    pub child: Option<Child>,
    pub sockets_dir: PathBuf,
    /// One extra variable for the runtime.
    pub start_with_env: Option<(String, String)>,
    /// Run the runtime and the CLI as this (uid, gid), through `setpriv`.
    pub run_as: Option<(u32, u32)>,
    /// Run the runtime inside this many nested user namespaces.
    pub nested_user_namespaces: usize,
    /// The runtime's readiness endpoint (the kubelet's `GET /readyz`), a port of its own.
    pub readiness_port: u16,
}

impl Session {
    /// Lays out the files; `sockets_dir` defaults to `<tmp>/pw/1a2b3c4d/s`.
    pub fn new(name: &str, viewer_port: Option<u16>) -> Self {
        let prefix = cli_prefix();
        let dir = tempfile::Builder::new().prefix("pps").tempdir().unwrap();
        let sockets_dir = dir.path().join("pw/1a2b3c4d/s");
        let s = Self {
            dir,
            name: name.into(),
            viewer_port,
            prefix,
            child: None,
            sockets_dir,
            start_with_env: None,
            run_as: None,
            nested_user_namespaces: 0,
            readiness_port: free_port(),
        };
        s.write_launch_config(false);
        s.write_runtime_config();
        s
    }

    /// The session's socket namespace (`<data home>/pw/<8hex>`): the restart
    /// record and an agent's close note live there.
    pub fn namespace_dir(&self) -> PathBuf {
        self.sockets_dir.parent().unwrap().to_owned()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write_launch_config(&self, sandbox: bool) {
        let config = serde_json::json!({"browser": {"browserName": "chromium", "launchOptions": {
            "executablePath": "/usr/bin/chromium", "headless": true, "chromiumSandbox": sandbox,
            "args": ["--disable-background-networking", "--disable-component-update", "--disable-quic"]}}});
        std::fs::write(self.path("launch.json"), config.to_string()).unwrap();
    }

    pub fn write_runtime_config(&self) {
        let mut config = serde_json::json!({
            "sessionName": self.name,
            "socketsDir": self.sockets_dir,
            "daemonSessionDir": self.sockets_dir.parent().unwrap().join("d"),
            "launchConfig": self.path("launch.json"),
            "outputDir": self.path("snapshots"),
            "sandbox": "Disabled",
            "snapshotMaxAgeSeconds": 3600,
            "snapshotMaxCount": 500,
        });
        if let Some(port) = self.viewer_port {
            config["viewerPort"] = port.into();
        }
        std::fs::write(self.path("runtime.json"), config.to_string()).unwrap();
    }

    /// The environment every process of this session gets; the data home path
    /// in it is how leftover processes are found.
    pub fn base_env(&self) -> Vec<(String, String)> {
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", cli_bin(&self.prefix).parent().unwrap().display());
        vec![
            ("PATH".into(), path),
            ("HOME".into(), self.path("home").display().to_string()),
            ("TMPDIR".into(), self.path("tmp").display().to_string()),
        ]
    }

    /// The session env of `kubectl exec … playwright-cli`.
    pub fn session_env(&self) -> Vec<(String, String)> {
        let mut env = self.base_env();
        env.extend([
            ("PLAYWRIGHT_CLI_SESSION".into(), self.name.clone()),
            ("PWTEST_SOCKETS_DIR".into(), self.sockets_dir.display().to_string()),
            ("PWTEST_DAEMON_SESSION_DIR".into(), self.sockets_dir.parent().unwrap().join("d").display().to_string()),
            ("PLAYWRIGHT_MCP_CONFIG".into(), self.path("launch.json").display().to_string()),
            ("PLAYWRIGHT_MCP_OUTPUT_DIR".into(), self.path("snapshots").display().to_string()),
            ("NO_UPDATE_NOTIFIER".into(), "1".into()),
        ]);
        env
    }

    /// `program` as is, or through `setpriv` as [`Self::run_as`].
    fn command(&self, program: &Path) -> Command {
        self.command_nested(program, 0)
    }

    fn command_nested(&self, program: &Path, nesting: usize) -> Command {
        match self.run_as {
            Some((uid, gid)) => {
                let mut cmd = Command::new("/usr/bin/setpriv");
                cmd.args(["--reuid", &uid.to_string(), "--regid", &gid.to_string(), "--clear-groups", "--"]);
                for _ in 0..nesting {
                    // `unshare` without --fork execs in place: the PID stays the runtime's.
                    cmd.args(["/usr/bin/unshare", "--user", "--map-user=1000", "--map-group=1000"]);
                }
                cmd.arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    /// Hands the data home to the unprivileged user.
    pub fn chown_to(&mut self, user: &str) {
        let uid =
            nix::unistd::User::from_name(user).unwrap().unwrap_or_else(|| panic!("no user {user}; run:\n  {SETUP}"));
        std::fs::create_dir_all(self.path("tmp")).unwrap();
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", uid.uid, uid.gid))
            .arg(self.dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        self.run_as = Some((uid.uid.as_raw(), uid.gid.as_raw()));
    }

    pub fn runtime_command(&self, subcommand: &str) -> Command {
        std::fs::create_dir_all(self.path("tmp")).unwrap();
        let nesting = if subcommand == "run" { self.nested_user_namespaces } else { 0 };
        let mut cmd = self.command_nested(&runtime_bin(), nesting);
        cmd.arg(subcommand)
            .env_clear()
            .envs(self.base_env())
            .env("PLAYPEN_RUNTIME_CONFIG", self.path("runtime.json"))
            .env("PLAYPEN_TERMINATION_LOG", self.path("termination-log"))
            .env("PLAYPEN_RETENTION_INTERVAL_SECONDS", "1")
            .env("PLAYPEN_RETENTION_GRACE_SECONDS", "1")
            .env("PLAYPEN_LOG", "info")
            .env("PLAYPEN_READINESS_ADDR", format!("127.0.0.1:{}", self.readiness_port))
            .current_dir(self.dir.path());
        if let Some((k, v)) = &self.start_with_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts `playpen-session run`, its log in `<tmp>/runtime.log`.
    pub fn start(&mut self) {
        let log = std::fs::File::create(self.path("runtime.log")).unwrap();
        let child = self
            .runtime_command("run")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// Runs the runtime to completion (for refusals).
    pub fn run_to_exit(&mut self, timeout: Duration) -> (i32, String) {
        self.start();
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "runtime did not exit within {timeout:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        };
        self.child = None;
        (status.code().unwrap_or(-1), std::fs::read_to_string(self.path("termination-log")).unwrap_or_default())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("runtime.log")).unwrap_or_default()
    }

    pub fn runtime_pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// `playwright-cli <args>` from a separate process with the session env.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.command(&cli_bin(&self.prefix))
            .args(args)
            .env_clear()
            .envs(self.session_env())
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// `playwright-cli <args>` with the session env minus `unset` (what an
    /// agent sidecar without some mount or variable sees).
    pub fn cli_without(&self, args: &[&str], unset: &[&str]) -> Output {
        let env = self.session_env().into_iter().filter(|(k, _)| !unset.contains(&k.as_str()));
        self.command(&cli_bin(&self.prefix))
            .args(args)
            .env_clear()
            .envs(env)
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// `playpen-session cli <args>`: the image's `playwright-cli` wrapper.
    pub fn wrapper(&self, args: &[&str]) -> Output {
        self.wrapper_with(args, &[])
    }

    /// `playpen-session cli <args>` with extra variables (e.g. the fast path's
    /// `PLAYPEN_CLI_NODE_ONLY` or `PLAYPEN_CLI_FAST_REPORT`).
    pub fn wrapper_with(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        self.command(&runtime_bin())
            .arg("cli")
            .args(args)
            .env_clear()
            .envs(self.session_env())
            .env("PLAYPEN_CLI_PACKAGE", self.prefix.join("node_modules/@playwright/cli"))
            .env("PLAYPEN_NODE", "/usr/bin/node")
            .envs(extra.iter().copied())
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    pub fn cli_ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && !stdout.contains("### Error"),
            "playwright-cli {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}\nruntime log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        stdout
    }

    /// What the kubelet sees: `GET /readyz` on the runtime's readiness endpoint answers 200.
    pub fn probe_ok(&self) -> bool {
        http_status(self.readiness_port, "/readyz").is_some_and(|status| status.starts_with("HTTP/1.1 200 "))
    }

    /// `playpen-session probe`, the same verdict from a process of its own.
    pub fn probe_exec_ok(&self) -> bool {
        self.runtime_command("probe").stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap().success()
    }

    pub fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.probe_ok() {
            assert!(Instant::now() < deadline, "not ready after {timeout:?}; runtime log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Sets one field of runtime.json (`null` removes it from effect), as a ConfigMap update does.
    pub fn set_runtime_field(&self, key: &str, value: serde_json::Value) {
        let path = self.path("runtime.json");
        let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config[key] = value;
        // Written whole, then renamed: the runtime never reads half a file.
        let tmp = self.path("runtime.json.tmp");
        std::fs::write(&tmp, config.to_string()).unwrap();
        std::fs::rename(tmp, path).unwrap();
    }

    /// Sends the runtime SIGTERM (what the kubelet sends on delete) and waits
    /// for its exit, as [`Self::wait_exit`].
    pub fn terminate(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.runtime_pid() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        self.wait_exit(timeout)
    }

    /// Waits for the runtime to exit on its own; panics with its log after `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "still running after {timeout:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        };
        self.child = None;
        status
    }

    /// The daemon the runtime runs now.
    pub fn daemon_pid(&self) -> Option<u32> {
        let me = self.runtime_pid();
        all_processes()
            .into_iter()
            .find(|p| p.ppid == me && p.cmdline.contains("cliDaemon.js") && p.state != 'Z')
            .map(|p| p.pid)
    }

    /// Browser main processes (not renderers, zygotes or helpers) of this session.
    pub fn browser_pids(&self) -> Vec<u32> {
        let looks_like_a_browser: Vec<Proc> = self
            .processes()
            .into_iter()
            .filter(|p| {
                p.cmdline.contains("chromium")
                    && p.cmdline.contains("--remote-debugging-pipe")
                    && !p.cmdline.contains("--type=")
            })
            .collect();
        // A browser's child caught between fork and exec still shows its
        // parent's command line (seen in CI): only one whose parent is no
        // browser is one.
        let pids: Vec<u32> = looks_like_a_browser.iter().map(|p| p.pid).collect();
        looks_like_a_browser.iter().filter(|p| !pids.contains(&p.ppid)).map(|p| p.pid).collect()
    }

    /// Every live process whose environment mentions this session's data home.
    /// Chromium rewrites its title over argv and environ, so descendants of
    /// the runtime count too, as do processes naming the data home in argv.
    pub fn processes(&self) -> Vec<Proc> {
        let marker = self.dir.path().display().to_string();
        let all = all_processes();
        let mut tree: Vec<u32> = self.child.as_ref().map(Child::id).into_iter().collect();
        let mut grew = true;
        while grew {
            grew = false;
            for p in &all {
                if tree.contains(&p.ppid) && !tree.contains(&p.pid) {
                    tree.push(p.pid);
                    grew = true;
                }
            }
        }
        all.into_iter()
            .filter(|p| p.state != 'Z')
            .filter(|p| p.environ.contains(&marker) || p.cmdline.contains(&marker) || tree.contains(&p.pid))
            .collect()
    }

    /// SIGTERM, then SIGKILL, of the runtime and of everything it left.
    pub fn cleanup(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for p in self.processes() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p.pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cleanup();
    }
}

#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub state: char,
    pub cmdline: String,
    pub environ: String,
}

pub fn sigkill(pid: u32) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
}

pub fn all_processes() -> Vec<Proc> {
    let mut out = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(close) = stat.rfind(')') else { continue };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let read = |f: &str| {
            std::fs::read(format!("/proc/{pid}/{f}"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default()
        };
        out.push(Proc { pid, ppid, state, cmdline: read("cmdline"), environ: read("environ") });
    }
    out
}

/// Listening TCP sockets (local address hex, inode) from /proc/net/tcp{,6}.
pub fn listening_sockets() -> Vec<(String, String)> {
    let mut out = vec![];
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(file).unwrap_or_default().lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" {
                out.push((f[1].to_owned(), f[9].to_owned()));
            }
        }
    }
    out
}

/// Socket inodes held open by `pid`.
pub fn socket_inodes(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            link.to_str().and_then(|s| s.strip_prefix("socket:[")).map(|s| s.trim_end_matches(']').to_owned())
        })
        .collect()
}

/// An HTTP GET returning (status line, headers and body as text).
pub fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    (text.lines().next().unwrap_or_default().to_owned(), text)
}

/// A WebSocket upgrade of `path`; returns the status line and the first
/// frame's opcode byte, if the server sent one within a few seconds.
pub fn websocket_upgrade(port: u16, path: &str) -> (String, Option<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = vec![];
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
    let first = match s.read(&mut byte) {
        Ok(1) => Some(byte[0]),
        _ => None,
    };
    (status, first)
}
