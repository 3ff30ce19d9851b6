//! gVisor's `runsc`, run against the state root containerd's shim uses
//! (`/run/containerd/runsc/k8s.io` by default). The agent needs the node's
//! PID namespace (runsc checks the sandbox process is alive) and that root;
//! nothing else of the host.

use crate::Error;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// The longest a `runsc list` may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest a checkpoint may take (a few hundred MiB written to disk).
const CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of runsc's error output an error carries.
const MAX_DETAIL: usize = 600;

/// The runsc binary and its state root.
#[derive(Clone, Debug)]
pub struct Runsc {
    pub binary: PathBuf,
    pub root: PathBuf,
}

#[derive(Debug, Deserialize)]
struct ListedContainer {
    id: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The id of the running sandbox of Pod `pod_uid` in `runsc list
/// -format=json`'s output (containerd's CRI names it in annotations).
pub fn sandbox_of(list_json: &str, pod_uid: &str) -> Result<Option<String>, serde_json::Error> {
    let listed: Option<Vec<ListedContainer>> = serde_json::from_str(list_json)?;
    Ok(listed.unwrap_or_default().into_iter().find_map(|c| {
        let sandbox = c.annotations.get("io.kubernetes.cri.container-type").map(String::as_str) == Some("sandbox");
        let of_pod = c.annotations.get("io.kubernetes.cri.sandbox-uid").map(String::as_str) == Some(pod_uid);
        (sandbox && of_pod && c.status == "running").then_some(c.id)
    }))
}

impl Runsc {
    /// The id of Pod `pod_uid`'s running sandbox.
    pub async fn find_sandbox(&self, pod_uid: &str) -> Result<String, Error> {
        let out = self.run("list", &["list", "-format=json"], LIST_TIMEOUT).await?;
        let parsed = sandbox_of(&out, pod_uid).map_err(|e| Error::Runsc { action: "list", detail: e.to_string() })?;
        parsed.ok_or_else(|| Error::NoSandbox(pod_uid.into()))
    }

    /// Checkpoints sandbox `id` into `image` (uncompressed: restores on the
    /// same node read it fastest). The sandbox stops.
    pub async fn checkpoint(&self, id: &str, image: &Path) -> Result<(), Error> {
        let image = format!("--image-path={}", image.display());
        self.run("checkpoint", &["checkpoint", &image, id], CHECKPOINT_TIMEOUT).await.map(drop)
    }

    async fn run(&self, action: &'static str, args: &[&str], timeout: Duration) -> Result<String, Error> {
        let mut command = Command::new(&self.binary);
        command.arg(format!("--root={}", self.root.display())).args(args).kill_on_drop(true);
        let out = tokio::time::timeout(timeout, command.output())
            .await
            .map_err(|_| Error::Runsc { action, detail: format!("no answer within {} s", timeout.as_secs()) })?
            .map_err(|e| Error::Runsc { action, detail: format!("starting {}: {e}", self.binary.display()) })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let detail: String = stderr.trim().chars().take(MAX_DETAIL).collect();
            return Err(Error::Runsc { action, detail: format!("{}: {detail}", out.status) });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: &str = r#"[
      {"id":"c1","status":"running","annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-uid":"u1"}},
      {"id":"s0","status":"stopped","annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-uid":"u1"}},
      {"id":"s1","status":"running","annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-uid":"u1"}},
      {"id":"s2","status":"running","annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-uid":"u2"}}
    ]"#;

    #[test]
    fn the_running_sandbox_of_the_pod_is_found() {
        assert_eq!(sandbox_of(LISTED, "u1").unwrap().as_deref(), Some("s1"));
        assert_eq!(sandbox_of(LISTED, "u2").unwrap().as_deref(), Some("s2"));
        assert_eq!(sandbox_of(LISTED, "u3").unwrap(), None);
        // runsc prints `null` when it has no containers.
        assert_eq!(sandbox_of("null", "u1").unwrap(), None);
        assert!(sandbox_of("not json", "u1").is_err());
    }

    #[tokio::test]
    async fn a_failing_runsc_is_an_error_that_says_what_it_printed() {
        let runsc = Runsc { binary: "/bin/sh".into(), root: "/nonexistent".into() };
        // `sh --root=/nonexistent list ...` fails: the error carries sh's words.
        let err = runsc.find_sandbox("u1").await.unwrap_err();
        assert!(matches!(err, Error::Runsc { action: "list", ref detail } if !detail.is_empty()), "{err}");
        let missing = Runsc { binary: "/nonexistent/runsc".into(), root: "/".into() };
        let err = missing.find_sandbox("u1").await.unwrap_err();
        assert!(err.to_string().contains("starting /nonexistent/runsc"), "{err}");
    }
}
