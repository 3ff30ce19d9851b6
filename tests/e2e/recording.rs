//! A recorded session as a platform user meets it: `spec.recording` on, the
//! agent drives two pages, the BrowserSession is deleted (the kubelet's
//! SIGTERM, a graceful close), and its snapshot volume keeps a WebM video
//! that Debian's ffprobe decodes and a Playwright trace holding the agent's
//! navigation. The volume is a claim on a hostPath volume of this node, read
//! from the host after the Pod is gone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use playpen_api::BrowserSession;
use playpen_tests::eventually;
use serde_json::json;

use crate::kubectl::exec;
use crate::session::{create_with, pod_name, wait_ready, BROWSER};
use crate::setup::Installed;

/// Where the claim's hostPath volume lives on the node.
const VOLUME_ROOT: &str = "/var/tmp/playpen-e2e";
/// The claim the session's snapshots (and so its recordings) go to.
const CLAIM: &str = "recorded-snapshots";

/// A claim bound to a fresh hostPath directory that the browser user can write.
struct HostVolume {
    client: Client,
    ns: String,
    dir: PathBuf,
}

impl HostVolume {
    fn pv_name(ns: &str) -> String {
        format!("{ns}-recorded")
    }

    async fn create(client: &Client, ns: &str) -> anyhow::Result<HostVolume> {
        let dir = Path::new(VOLUME_ROOT).join(Self::pv_name(ns));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
        let volume = HostVolume { client: client.clone(), ns: ns.to_owned(), dir: dir.clone() };
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": Self::pv_name(ns)},
            "spec": {
                "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                "hostPath": {"path": dir, "type": "Directory"},
                "claimRef": {"namespace": ns, "name": CLAIM}
            }
        }))?;
        Api::<PersistentVolume>::all(client.clone()).create(&PostParams::default(), &pv).await?;
        let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": CLAIM},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": Self::pv_name(ns),
                "resources": {"requests": {"storage": "1Gi"}}}
        }))?;
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns).create(&PostParams::default(), &pvc).await?;
        Ok(volume)
    }

    /// Deletes the claim, the volume and the directory (best effort: cleanup).
    async fn remove(self) {
        let _ = Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), &self.ns)
            .delete(CLAIM, &DeleteParams::default())
            .await;
        let _ = Api::<PersistentVolume>::all(self.client.clone())
            .delete(&Self::pv_name(&self.ns), &DeleteParams::default())
            .await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The files in `dir` whose names end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(suffix)))
        .collect();
    found.sort();
    Ok(found)
}

/// Codec and decoded frame count of a video's first stream, by Debian's ffprobe.
async fn probe(video: &Path) -> anyhow::Result<(String, u64)> {
    let out = tokio::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-count_frames"])
        .args(["-show_entries", "stream=codec_name,nb_read_frames", "-of", "default=noprint_wrappers=1"])
        .arg(video)
        .output()
        .await
        .context("running ffprobe (tests/session/setup.sh installs Debian's ffmpeg)")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure!(out.status.success(), "ffprobe {}: {}", video.display(), String::from_utf8_lossy(&out.stderr));
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).map(str::to_owned);
    let codec = field("codec_name=").with_context(|| format!("no codec in {text}"))?;
    let frames = field("nb_read_frames=").with_context(|| format!("no frame count in {text}"))?.parse()?;
    Ok((codec, frames))
}

/// A session records video and trace, is deleted, and its volume keeps both, finalised.
pub async fn a_deleted_session_leaves_its_recordings(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let volume = HostVolume::create(client, ns).await?;
    let result = record_drive_delete(client, installed, &volume.dir).await;
    volume.remove().await;
    result
}

async fn record_drive_delete(client: &Client, installed: &Installed, dir: &Path) -> anyhow::Result<()> {
    let (ns, name) = (installed.team_a.name.as_str(), "recorded");
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "fixture"}}]}});
    let extra = json!({
        "recording": {"video": true, "trace": true},
        "snapshots": {"volume": {"persistentVolumeClaim": {"claimName": CLAIM}}}
    });
    create_with(client, ns, name, "Enforced", network, extra).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    let recording = status.recording.clone().context("status.recording is empty on a recording session")?;
    ensure!(recording.video && recording.trace, "status.recording: {recording:?}");
    ensure!(recording.directory.ends_with("/recordings"), "status.recording.directory: {}", recording.directory);
    let pod = pod_name(&status)?;

    let colour = format!("{}colour", installed.fixture_url);
    for url in [installed.fixture_url.as_str(), colour.as_str()] {
        exec(ns, &pod, BROWSER, &["playwright-cli", "goto", url]).await?.ok("playwright-cli goto")?;
    }
    // The screencast sends frames as pages paint; give the encoder a moment of the second page.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Deleted as a user deletes it: the Pod gets SIGTERM and its grace period.
    Api::<BrowserSession>::namespaced(client.clone(), ns).delete(name, &DeleteParams::default()).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    eventually(Duration::from_secs(120), || async {
        match pods.get_opt(&pod).await? {
            Some(p) => bail!("{ns}/{pod} still exists (phase {:?})", p.status.and_then(|s| s.phase)),
            None => Ok(()),
        }
    })
    .await
    .context("the recorded session's Pod never went away")?;

    let recordings = dir.join("recordings");
    ensure!(
        !recordings.join("in-progress.json").exists(),
        "a graceful close finalises the recording, but in-progress.json is left in {}",
        recordings.display()
    );
    ensure!(!recordings.join("interrupted.json").exists(), "a graceful close is not a crash");
    let videos = files_ending(&recordings, ".webm")?;
    ensure!(videos.len() == 1, "one video per browser start, found {videos:?}");
    let (codec, frames) = probe(&videos[0]).await?;
    ensure!(codec == "vp8", "{} holds {codec}, not Playwright's VP8", videos[0].display());
    ensure!(frames >= 2, "{} holds {frames} frame(s); two pages were shown", videos[0].display());

    let traces = files_ending(&recordings.join("traces"), ".trace")?;
    ensure!(traces.len() == 1, "one trace per browser start, found {traces:?}");
    let text = std::fs::read_to_string(&traces[0])?;
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or_default()).context("the trace's first line")?;
    ensure!(first["type"] == "context-options", "the trace format begins with context-options: {first:.300}");
    ensure!(text.contains(&colour), "the agent's navigation to {colour} is not in the trace");
    eprintln!(
        "e2e: {ns}/{name} deleted; its volume holds {} ({frames} VP8 frames) and {}",
        videos[0].display(),
        traces[0].display()
    );
    Ok(())
}
