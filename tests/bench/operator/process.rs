//! The operator under test as a separate process (the release binary, as
//! deployed), which the bench starts, measures and restarts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use playpen_tests::http_get;

/// How to start the operator.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `playpen-operator` binary.
    pub binary: PathBuf,
    /// The only namespace it watches (so it never touches anything else on a shared cluster).
    pub namespace: String,
    /// Where it serves /metrics and /readyz.
    pub addr: SocketAddr,
    /// Its log (appended to).
    pub log: PathBuf,
    /// A file that holds the pid of the running operator, for the script's cleanup.
    pub pidfile: Option<PathBuf>,
}

/// The environment the operator gets beyond its own settings: every
/// `PLAYPEN_BENCH_OPERATOR_ENV_<NAME>=<value>` becomes `<NAME>=<value>`
/// (for example a heap profiler's `LD_PRELOAD`, only for the operator).
fn passed_env(vars: impl Iterator<Item = (String, String)>) -> Vec<(String, String)> {
    vars.filter_map(|(k, v)| Some((k.strip_prefix("PLAYPEN_BENCH_OPERATOR_ENV_")?.to_owned(), v)))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// A running operator process; killed when dropped.
#[derive(Debug)]
pub struct Operator {
    child: tokio::process::Child,
    pid: u32,
    addr: SocketAddr,
}

impl Operator {
    /// Starts it and waits for its /readyz.
    pub async fn start(launch: &Launch) -> anyhow::Result<Self> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&launch.log)
            .with_context(|| format!("opening {}", launch.log.display()))?;
        let child = tokio::process::Command::new(&launch.binary)
            .arg("run")
            .env("PLAYPEN_NAMESPACES", &launch.namespace)
            .env("PLAYPEN_HTTP_ADDR", launch.addr.to_string())
            .env("RUST_LOG", std::env::var("PLAYPEN_BENCH_OPERATOR_RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .envs(passed_env(std::env::vars()))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", launch.binary.display()))?;
        let pid = child.id().context("the operator exited at once")?;
        if let Some(file) = &launch.pidfile {
            std::fs::write(file, format!("{pid}\n")).with_context(|| format!("writing {}", file.display()))?;
        }
        let mut op = Self { child, pid, addr: launch.addr };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = op.child.try_wait()? {
                bail!("the operator exited ({status}) before it was ready; its log: {}", launch.log.display());
            }
            if matches!(http_get(op.addr, "/readyz").await, Ok((200, _))) {
                return Ok(op);
            }
            if Instant::now() > deadline {
                bail!(
                    "timed out after 60 s waiting for the operator's /readyz on {} to answer 200 (log: {})",
                    op.addr,
                    launch.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `playpen_reconciles_total` on its /metrics.
    pub async fn reconciles(&self) -> anyhow::Result<f64> {
        let (code, text) = http_get(self.addr, "/metrics").await.context("reading the operator's /metrics")?;
        anyhow::ensure!(code == 200, "the operator's /metrics answered {code}");
        text.lines()
            .find_map(|l| l.strip_prefix("playpen_reconciles_total "))
            .context("playpen_reconciles_total is not in the operator's /metrics")?
            .trim()
            .parse()
            .context("parsing playpen_reconciles_total")
    }

    /// Waits until the reconcile counter has not moved for `quiet` (the
    /// follow-up reconciles of status writes are done), at most `timeout`.
    /// Returns the counter.
    pub async fn settle(&self, quiet: Duration, timeout: Duration) -> anyhow::Result<f64> {
        let deadline = Instant::now() + timeout;
        let mut last = self.reconciles().await?;
        let mut since = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = self.reconciles().await?;
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() >= quiet {
                return Ok(now);
            }
            if Instant::now() > deadline {
                eprintln!("note: the operator still reconciles after {timeout:?} (counter {now}); measuring anyway");
                return Ok(now);
            }
        }
    }

    /// User plus system CPU seconds so far.
    pub fn cpu_seconds(&self) -> anyhow::Result<f64> {
        cpu_seconds(self.pid)
    }

    /// Peak resident set (VmHWM), MiB.
    pub fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        self.status_mib("VmHWM")
    }

    /// Resident set now (VmRSS), MiB.
    #[allow(dead_code)] // bench-churn's
    pub fn rss_mib(&self) -> anyhow::Result<f64> {
        self.status_mib("VmRSS")
    }

    /// A `kB` field of `/proc/<pid>/status`, in MiB.
    fn status_mib(&self, field: &str) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .with_context(|| field.to_owned())?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()?;
        Ok(kb / 1024.0)
    }

    /// Where it serves /metrics.
    #[allow(dead_code)] // bench-churn's
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// SIGKILL at once: nothing the process holds is freed.
    #[allow(dead_code)] // only the churn bench ends an operator this way
    pub async fn kill(mut self) -> anyhow::Result<()> {
        Ok(self.child.kill().await?)
    }

    /// SIGTERM, then SIGKILL if it has not exited within 15 s.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = tokio::process::Command::new("kill").args(["-TERM", &self.pid.to_string()]).status().await;
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await.is_err() {
            eprintln!("note: the operator did not exit within 15 s of SIGTERM; killing it");
            self.child.kill().await?;
        }
        Ok(())
    }
}

/// utime + stime of `pid` from /proc, in seconds.
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces), from field 3 (state) on.
    let rest = stat.rsplit_once(')').context("/proc/PID/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<f64> { Ok(fields.get(i).context("/proc/PID/stat is short")?.parse()?) };
    // utime and stime are fields 14 and 15: indexes 11 and 12 here.
    Ok((ticks(11)? + ticks(12)?) / clock_ticks())
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux when that fails).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_its_own_cpu_time() {
        let spent = super::cpu_seconds(std::process::id()).expect("own /proc/PID/stat");
        assert!(spent >= 0.0);
    }
}
