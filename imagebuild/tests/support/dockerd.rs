//! A throwaway current Docker Engine: the dockerd `tests/imagebuild/engine-current.sh`
//! builds from the Go module proxy (its path in `PLAYPEN_TEST_DOCKERD`), on a
//! [`Containerd`] of the test's, with its own data root, exec root, pid file, socket
//! and configuration file (so /etc/docker/daemon.json is not read) in a directory
//! beside that containerd's, and its own containerd namespaces.
//!
//! It runs in its own network and mount namespaces (`unshare`): an engine with the
//! default bridge off deletes the host's `docker0` when it starts, which the system's
//! Docker Engine needs, and the bind mount it puts on its data root goes with its
//! namespace however it ends. iptables, IP forwarding and masquerading are off; it
//! listens on its unix socket only. Nothing is run in it: images are loaded and saved.
//!
//! [`Dockerd`] stops the daemon when dropped (its directory goes with the
//! containerd's); a killed test process takes it along (`setpriv --pdeathsig`).

use super::containerd::Containerd;
use bollard::Docker;
use futures::StreamExt as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What builds the engine; the tests runner exports its last line.
pub const ENGINE_CURRENT: &str = "bash tests/imagebuild/engine-current.sh";
/// The variable naming the dockerd binary.
pub const DOCKERD_ENV: &str = "PLAYPEN_TEST_DOCKERD";

const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the engine keeps images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// The classic image store (a graph driver, `overlay2`): what engines 25–28 use
    /// and later ones keep when they upgrade one that used it.
    Classic,
    /// The containerd image store: the default of a fresh install from Engine 29 on.
    Containerd,
}

impl Store {
    pub fn name(self) -> &'static str {
        match self {
            Store::Classic => "classic",
            Store::Containerd => "containerd",
        }
    }
}

/// A running throwaway Docker Engine.
pub struct Dockerd {
    child: Child,
    dir: PathBuf,
    /// A client on its socket (API version negotiated), once the socket is there.
    client: Option<Docker>,
    /// The highest API version it serves (`/version`).
    pub api_version: String,
}

/// The dockerd binary `PLAYPEN_TEST_DOCKERD` names; fails naming the script.
pub fn binary() -> PathBuf {
    let path = std::env::var(DOCKERD_ENV).unwrap_or_else(|_| {
        panic!(
            "{DOCKERD_ENV} is not set: run `export {DOCKERD_ENV}=\"$({ENGINE_CURRENT} | tail -n 1)\"` \
             first (tests/run.sh does); it builds a current dockerd from the Go module proxy"
        )
    });
    let path = PathBuf::from(path.trim());
    assert!(path.is_file(), "{DOCKERD_ENV}={} is not a file: run `{ENGINE_CURRENT}`", path.display());
    path
}

impl Dockerd {
    /// Starts the engine on `containerd` with the image store `store`; waits until it answers.
    pub async fn start(containerd: &Containerd, store: Store) -> Dockerd {
        let dockerd = binary();
        let name = format!("dockerd-{}", store.name());
        let dir = containerd.dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("daemon.json");
        std::fs::write(&config, "{}\n").unwrap();
        let socket = dir.join("docker.sock");
        let namespace = format!("playpen-{}", store.name());
        let log = std::fs::File::create(dir.join("dockerd.log")).unwrap();
        let mut cmd = Command::new("setpriv");
        cmd.args(["--pdeathsig", "TERM", "unshare", "--net", "--mount", "--propagation", "private", "--"])
            .arg(&dockerd)
            .arg("--config-file")
            .arg(&config)
            .arg("--host")
            .arg(format!("unix://{}", socket.display()))
            .arg("--data-root")
            .arg(dir.join("data"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("--pidfile")
            .arg(dir.join("exec.pid"))
            .arg("--containerd")
            .arg(containerd.socket())
            .args(["--containerd-namespace", &namespace])
            .args(["--containerd-plugins-namespace", &format!("{namespace}-plugins")])
            .args(["--bridge", "none", "--iptables=false", "--ip6tables=false", "--ip-forward=false"])
            .args(["--ip-masq=false", "--userland-proxy=false"]);
        match store {
            // overlay2 keeps each layer once (vfs copies the whole tree per layer); its
            // mounts stay in the engine's mount namespace.
            Store::Classic => cmd.args(["--feature", "containerd-snapshotter=false", "--storage-driver", "overlay2"]),
            Store::Containerd => cmd.args(["--feature", "containerd-snapshotter=true"]),
        };
        let child = cmd
            .env_remove("DOCKER_DRIVER")
            .env_remove("TEST_INTEGRATION_USE_GRAPHDRIVER")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", dockerd.display()));
        // setpriv and unshare exec: one process, this pid. Beside the containerd's pid,
        // so a stale directory is removed only once this daemon is gone too.
        std::fs::write(containerd.dir().join(format!("{name}.pid")), child.id().to_string()).unwrap();
        let mut engine = Dockerd { child, dir, client: None, api_version: String::new() };
        let started = Instant::now();
        loop {
            if let Some(status) = engine.child.try_wait().unwrap() {
                panic!("dockerd ({}) exited ({status}) before answering:\n{}", store.name(), engine.log());
            }
            if let Ok(client) =
                Docker::connect_with_unix(&socket.display().to_string(), 600, bollard::API_DEFAULT_VERSION)
            {
                if client.ping().await.is_ok() {
                    engine.client = Some(client);
                    break;
                }
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "dockerd ({}) did not answer on {} within {START_TIMEOUT:?}:\n{}",
                store.name(),
                socket.display(),
                engine.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let version = engine.docker().version().await.unwrap();
        engine.api_version = version.api_version.unwrap_or_default();
        engine.client = Some(engine.docker().clone().negotiate_version().await.unwrap());
        let info = engine.docker().info().await.unwrap();
        let driver = info.driver.unwrap_or_default();
        eprintln!(
            "dockerd {} (API {}, {} image store, storage driver {driver}) answering after {:.1}s",
            version.version.unwrap_or_default(),
            engine.api_version,
            store.name(),
            started.elapsed().as_secs_f64()
        );
        engine
    }

    /// The client on its socket.
    pub fn docker(&self) -> &Docker {
        self.client.as_ref().expect("connected in start()")
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default()
    }

    /// `docker load` of an archive, streamed from the file.
    pub async fn load(&self, archive: &Path) {
        let file = std::fs::File::open(archive).unwrap();
        let chunks = futures::stream::unfold(file, |mut file| async move {
            let mut buf = vec![0u8; 1 << 20];
            let n = file.read(&mut buf).unwrap();
            (n > 0).then(|| {
                buf.truncate(n);
                (buf.into(), file)
            })
        });
        let options = bollard::query_parameters::ImportImageOptionsBuilder::new().quiet(true).build();
        let mut progress = self.docker().import_image_stream(options, chunks, None);
        while let Some(info) = progress.next().await {
            let info = info.unwrap_or_else(|e| panic!("docker load {}: {e}\n{}", archive.display(), self.log()));
            if let Some(stream) = info.stream {
                eprint!("load: {stream}");
            }
        }
    }

    /// `docker save` of `reference` into `out`.
    pub async fn save(&self, reference: &str, out: &Path) {
        let mut file = std::fs::File::create(out).unwrap();
        let mut stream = self.docker().export_image(reference);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.unwrap_or_else(|e| panic!("docker save {reference}: {e}\n{}", self.log()));
            file.write_all(&chunk).unwrap();
        }
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let started = Instant::now();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        while started.elapsed() < STOP_TIMEOUT && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(100));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            eprintln!("dockerd (pid {pid}) still running {STOP_TIMEOUT:?} after SIGTERM; killing it");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        eprintln!("dockerd (pid {pid}) stopped after {:.1}s", started.elapsed().as_secs_f64());
    }
}
