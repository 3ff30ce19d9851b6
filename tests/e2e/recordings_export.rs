//! Recordings that leave the Pod while the session runs (issue 33), on the
//! kubelet: a SeaweedFS Pod in the team's namespace stands in for the
//! team's object store (SigV4 enforced; the image is built by
//! tests/e2e/images.sh from the binary tests/objectstore/build.sh makes); a
//! session records video and trace in 10 s segments and exports them; it is
//! driven for longer than two segments, then its browser container's PID 1
//! is killed with SIGKILL from the host, then the session ends at its
//! maximum lifetime (the exporter's final pass uploads the last segment). The
//! store then holds finished video segments that Debian's ffprobe decodes,
//! trace files, a manifest listing them in order and an `interrupted`
//! marker for the recording the kill cut short.
//!
//! Beside it, a second session's Secret holds a wrong secret key:
//! `RecordingsExported` turns False quoting the store's answer; the Secret
//! fixed, it turns True without a browser restart; the session then
//! deleted, the segment it was recording still reaches the store.
//!
//! Objects are read back through the store's filer (`kubectl port-forward`
//! to its Pod), never through the exporter.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use playpen_api::v1alpha1::condition;
use playpen_api::BrowserSession;
use playpen_tests::eventually;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::kubectl::{exec, port_forward, sh};
use crate::network::authority;
use crate::session::{create_with, pod_name, wait_ready, BROWSER};
use crate::setup::{start_fixture, tolerations, Installed};

/// The store's Pod, Service and image.
const STORE: &str = "objectstore";
const STORE_IMAGE: &str = "playpen/objectstore:dev";
/// Its ports (tests/objectstore/lib.sh's).
const S3_PORT: u16 = 18333;
const MASTER_PORT: u16 = 18334;
const VOLUME_PORT: u16 = 18335;
const FILER_PORT: u16 = 18336;
const BUCKET: &str = "playpen-recordings";
/// The Secret the session names.
const KEYS: &str = "recordings-s3";
/// The Secret with a wrong secret key at first.
const WRONG_KEYS: &str = "recordings-s3-wrong";
/// The fixture the agent drives.
const FIXTURE: &str = "exported-fixture";
const SEGMENT_SECONDS: u64 = 10;
/// When the session ends on its own, from its creation.
const LIFETIME_SECONDS: u64 = 150;

/// The scenario.
pub async fn segments_leave_the_pod_and_a_kill_is_marked(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let (store_ip, fixture_url) = tokio::try_join!(start_store(client, ns), start_fixture(client, ns, FIXTURE))?;
    tokio::try_join!(
        segments_and_a_kill(client, ns, &store_ip, &fixture_url),
        a_wrong_key_is_said_and_its_fix_resumes_uploads(client, ns, &store_ip),
    )?;
    Ok(())
}

/// The session's egress: the store, and the fixture when there is one.
fn store_network(store_ip: &str, fixture_ip: Option<&str>) -> Value {
    let mut cidrs = vec![format!("{store_ip}/32")];
    let mut peers = vec![json!({"podLabels": {"app": STORE}})];
    if let Some(fixture_ip) = fixture_ip {
        cidrs.push(format!("{fixture_ip}/32"));
        peers.push(json!({"podLabels": {"app": FIXTURE}}));
    }
    // Service addresses before the Service's translation, the Pods after it.
    json!({"egress": {"mode": "AllowListOnly", "allowCIDRs": cidrs, "allowPeers": peers}})
}

/// `spec.recording` exporting to the store with the keys in Secret `keys`.
fn exported_recording(store_ip: &str, keys: &str) -> Value {
    json!({"video": true, "trace": true, "segmentSeconds": SEGMENT_SECONDS, "export": {"s3": {
        "endpoint": format!("http://{store_ip}:{S3_PORT}"), "bucket": BUCKET, "pathStyle": true,
        "credentialsSecret": {"name": keys}}}})
}

/// A session whose Secret holds a wrong secret key: `RecordingsExported`
/// turns False quoting the store's answer (and never the key); the Secret
/// fixed, the kubelet updates the mounted files, the exporter's next
/// attempt succeeds and the condition turns True, with the browser
/// container never restarted.
async fn a_wrong_key_is_said_and_its_fix_resumes_uploads(
    client: &Client,
    ns: &str,
    store_ip: &str,
) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let right = secrets.get(KEYS).await?.data.context("the store's Secret has no data")?;
    let key_id = String::from_utf8(right.get("accessKeyId").context("accessKeyId")?.0.clone())?;
    let secret_key = String::from_utf8(right.get("secretAccessKey").context("secretAccessKey")?.0.clone())?;
    let wrong_key = format!("wrong{secret_key}");
    let apply = PatchParams::apply("playpen-e2e").force();
    let keys = |secret: &str| -> anyhow::Result<Secret> {
        Ok(serde_json::from_value(json!({"metadata": {"name": WRONG_KEYS},
            "stringData": {"accessKeyId": key_id, "secretAccessKey": secret}}))?)
    };
    secrets.patch(WRONG_KEYS, &apply, &Patch::Apply(&keys(&wrong_key)?)).await?;
    let name = "export-wrong-key";
    let pod_spec = json!({"tolerations": tolerations(), "shmSize": "256Mi"});
    let extra = json!({"recording": exported_recording(store_ip, WRONG_KEYS), "pod": pod_spec});
    create_with(client, ns, name, "Enforced", store_network(store_ip, None), extra).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    let pod = pod_name(&status)?;
    // A page of its own (a browser without one records nothing).
    let page = "data:text/html,<h1>recorded with a wrong key</h1>";
    exec(ns, &pod, BROWSER, &["playwright-cli", "goto", page]).await?.ok("goto a data: page")?;
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    let exported = |bs: &BrowserSession| {
        let conditions = bs.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
        conditions.into_iter().find(|c| c.type_ == condition::RECORDINGS_EXPORTED)
    };
    let failing = eventually(Duration::from_secs(120), || async {
        let bs = sessions.get(name).await?;
        let said = exported(&bs).context("no RecordingsExported condition yet")?;
        ensure!(said.status == "False" && said.reason == "UploadFailing", "{said:?}");
        let shown = bs.status.and_then(|s| s.recording).and_then(|r| r.export).context("no status.recording.export")?;
        Ok((said.message, shown))
    })
    .await
    .context("RecordingsExported=False with the store's answer")?;
    let (message, shown) = failing;
    ensure!(message.contains("SignatureDoesNotMatch") || message.contains("403"), "the store's answer: {message}");
    ensure!(shown.last_error.is_some(), "status.recording.export.lastError: {shown:?}");
    ensure!(!message.contains(&wrong_key) && !message.contains(&secret_key), "a key in the condition: {message}");
    eprintln!("e2e: {ns}/{name}: RecordingsExported=False: {message}");
    let restarts = browser_restarts(&Api::<Pod>::namespaced(client.clone(), ns).get(&pod).await?);

    // The Secret fixed: uploads resume without a restart.
    let fixed_at = std::time::Instant::now();
    secrets.patch(WRONG_KEYS, &apply, &Patch::Apply(&keys(&secret_key)?)).await?;
    eventually(Duration::from_secs(300), || async {
        let bs = sessions.get(name).await?;
        let said = exported(&bs).context("no RecordingsExported condition")?;
        ensure!(said.status == "True", "{said:?}");
        Ok(())
    })
    .await
    .context("RecordingsExported=True once the Secret is fixed")?;
    let now = Api::<Pod>::namespaced(client.clone(), ns).get(&pod).await?;
    ensure!(browser_restarts(&now) == restarts, "the browser restarted for the fix");
    eprintln!("e2e: {ns}/{name}: uploads resumed {:?} after the Secret was fixed, no restart", fixed_at.elapsed());

    // Deleted: the segment in progress still reaches the store (the Pod owns
    // the session's NetworkPolicy too, so the policy outlives the session
    // until the Pod has stopped).
    let uid = sessions.get(name).await?.uid().context("uid")?;
    let recording_now = last_rotation(ns, &pod).await?;
    sessions.delete(name, &Default::default()).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    eventually(Duration::from_secs(180), || async {
        ensure!(pods.get_opt(&pod).await?.is_none(), "{pod} is still there");
        Ok(())
    })
    .await
    .context("the deleted session's Pod goes")?;
    let filer = port_forward(ns, &format!("pod/{STORE}"), FILER_PORT).await?;
    let starts = video_starts(&manifest(filer.local_port, &format!("{ns}/{name}/{uid}")).await?);
    ensure!(
        starts.iter().any(|s| *s >= recording_now),
        "the segment recording at the deletion (from {recording_now}) is not in the store: {starts:?}"
    );
    eprintln!("e2e: {ns}/{name}: deleted, its last segment (from {recording_now}) is in the store");
    Ok(())
}

/// Segments while the session runs, a kill marked, the close's last segment.
async fn segments_and_a_kill(client: &Client, ns: &str, store_ip: &str, fixture_url: &str) -> anyhow::Result<()> {
    let fixture_url = fixture_url.to_owned();
    let fixture_ip = authority(&fixture_url)?.0;
    let name = "exported";
    let network = store_network(store_ip, Some(&fixture_ip));
    let recording = exported_recording(store_ip, KEYS);
    let pod_spec = json!({"tolerations": tolerations(), "shmSize": "256Mi"});
    let extra = json!({"recording": recording, "pod": pod_spec, "maxLifetimeSeconds": LIFETIME_SECONDS});
    create_with(client, ns, name, "Enforced", network, extra).await?;
    let (status, took) = wait_ready(client, ns, name).await?;
    eprintln!("e2e: {ns}/{name} (exported recordings) Ready after {took:?}");
    let pod = pod_name(&status)?;
    let uid = Api::<BrowserSession>::namespaced(client.clone(), ns).get(name).await?.uid().context("uid")?;
    let prefix = format!("{ns}/{name}/{uid}");

    // Driven for more than two segments.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(SEGMENT_SECONDS * 2 + 8) {
        exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &fixture_url]).await?.ok("goto the fixture")?;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let filer = port_forward(ns, &format!("pod/{STORE}"), FILER_PORT).await?;
    let running = eventually(Duration::from_secs(60), || async {
        let manifest = manifest(filer.local_port, &prefix).await?;
        let videos = videos(&manifest);
        ensure!(videos.len() >= 2, "{} video segments in the store so far: {manifest}", videos.len());
        Ok(manifest)
    })
    .await
    .context("two finished video segments while the session runs")?;
    eprintln!("e2e: {} segments exported while the session ran", running["segments"].as_array().map_or(0, Vec::len));

    // kill -9 of the browser container's PID 1, from the host.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before_kill = pods.get(&pod).await?;
    let pod_uid = before_kill.uid().context("pod uid")?;
    let restarts = browser_restarts(&before_kill);
    let killed = kill_runtime(&pod_uid).context("kill -9 of playpen-session")?;
    eprintln!("e2e: killed playpen-session (pid {killed}) in {pod}");
    eventually(Duration::from_secs(120), || async {
        let now = pods.get(&pod).await?;
        let ready = now
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.name == BROWSER && c.ready));
        ensure!(
            browser_restarts(&now) > restarts && ready,
            "the browser container has not restarted and turned ready yet"
        );
        Ok(())
    })
    .await
    .context("the browser container restarted in place after the kill")?;
    eprintln!("e2e: {ns}/{name} restarted in place after the kill");
    // The restarted browser has no page until an agent acts (nothing to record).
    for _ in 0..4 {
        exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &fixture_url]).await?.ok("goto after the kill")?;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let marked = eventually(Duration::from_secs(60), || async {
        let manifest = manifest(filer.local_port, &prefix).await?;
        ensure!(
            manifest["interruptions"].as_array().is_some_and(|m| !m.is_empty()),
            "no interrupted marker yet: {manifest}"
        );
        Ok(manifest)
    })
    .await
    .context("the interrupted marker")?;
    let marker_key = marked["interruptions"][0].as_str().context("marker key")?.to_owned();
    let marker: Value = serde_json::from_slice(&get(filer.local_port, &marker_key).await?)?;
    ensure!(marker["lastSegment"].as_str().is_some_and(|k| k.contains("/video/")), "{marker}");

    // The session ends on its own (maxLifetimeSeconds): the browser's close
    // finishes the segment in progress, then the kubelet stops the exporter,
    // whose final pass uploads it (a deleted session's: the wrong-key scenario).
    eventually(Duration::from_secs(LIFETIME_SECONDS + 120), || async {
        let phase = pods.get(&pod).await?.status.and_then(|s| s.phase).unwrap_or_default();
        ensure!(phase == "Succeeded", "the Pod is {phase}");
        Ok(())
    })
    .await
    .context("the session's Pod completes at its lifetime")?;
    let logs = crate::kubectl::kubectl(&["logs", "-n", ns, &pod, "-c", "exporter"]).await?.ok("the exporter's log")?;
    let done =
        logs.lines().find(|l| l.contains("final pass done")).with_context(|| format!("no final pass:\n{logs}"))?;
    eprintln!("e2e: exporter {}", done.trim());
    // The segment the close finished is the last one a rotation started
    // (the runtime logs each `next=`); the store has it, by its start.
    let last_started = last_rotation(ns, &pod).await?;
    let last = manifest(filer.local_port, &prefix).await?;
    let starts = video_starts(&last);
    ensure!(
        starts.contains(&last_started),
        "the last segment ({last_started}) is not in the store: {starts:?}\nthe exporter's log:\n{logs}"
    );
    let keys = videos(&last);
    for key in &keys {
        let bytes = get(filer.local_port, key).await?;
        ffprobe_webm(&bytes).with_context(|| format!("{key} ({} bytes)", bytes.len()))?;
    }
    let traces = last["segments"].as_array().into_iter().flatten().filter(|s| s["kind"] == "trace").count();
    ensure!(traces >= 1, "no trace file in the store: {last}");
    eprintln!("e2e: {} video segments decode, {traces} trace files, 1+ interrupted markers", keys.len());
    Ok(())
}

/// The start (ms) of the video segment the runtime of `pod` records now:
/// the last one a rotation started (the runtime logs each `next=`).
async fn last_rotation(ns: &str, pod: &str) -> anyhow::Result<i64> {
    let runtime = crate::kubectl::kubectl(&["logs", "-n", ns, pod, "-c", BROWSER]).await?.ok("the runtime's log")?;
    runtime
        .lines()
        .rev()
        .filter(|l| l.contains("video segment finished; the next one records"))
        .find_map(|l| l.split("next=").nth(1)?.split("video-").nth(1)?.split(".webm").next()?.parse::<i64>().ok())
        .with_context(|| format!("no rotation in the runtime's log:\n{runtime}"))
}

/// The starts (ms) of the manifest's video segments.
fn video_starts(manifest: &Value) -> Vec<i64> {
    manifest["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "video")
        .filter_map(|s| s["start"].as_str()?.parse::<k8s_openapi::jiff::Timestamp>().ok())
        .map(|t| t.as_millisecond())
        .collect()
}

/// The browser container's restarts.
fn browser_restarts(pod: &Pod) -> i32 {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    statuses.into_iter().flatten().find(|c| c.name == BROWSER).map_or(0, |c| c.restart_count)
}

/// The video segments' keys, in the manifest's order.
fn videos(manifest: &Value) -> Vec<String> {
    manifest["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "video")
        .filter_map(|s| s["key"].as_str().map(str::to_owned))
        .collect()
}

async fn manifest(port: u16, prefix: &str) -> anyhow::Result<Value> {
    Ok(serde_json::from_slice(&get(port, &format!("{prefix}/manifest.json")).await?)?)
}

/// An object's bytes, through the filer (`/buckets/<bucket>/<key>`).
async fn get(port: u16, key: &str) -> anyhow::Result<Vec<u8>> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let request = format!("GET /buckets/{BUCKET}/{key} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer)).await??;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").context("no HTTP head")?;
    let head = String::from_utf8_lossy(&answer[..end]);
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("GET {key}: {}", head.lines().next().unwrap_or_default());
    }
    Ok(answer[end + 4..].to_vec())
}

/// Debian's ffprobe decodes `bytes` as a WebM with a video stream.
fn ffprobe_webm(bytes: &[u8]) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("pp-e2e-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("segment.webm");
    std::fs::write(&path, bytes)?;
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0"])
        .arg(&path)
        .output()
        .context("running ffprobe (tests/session/setup.sh installs it)")?;
    let _ = std::fs::remove_dir_all(&dir);
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success() && said.contains("video"), "ffprobe: {said}{}", String::from_utf8_lossy(&out.stderr));
    Ok(())
}

/// SIGKILLs the `playpen-session run` process of Pod `pod_uid` from the
/// host (a container's PID 1 ignores it from inside); its pid.
fn kill_runtime(pod_uid: &str) -> anyhow::Result<i32> {
    let needle = pod_uid.replace('-', "_");
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let cgroup = std::fs::read_to_string(entry.path().join("cgroup")).unwrap_or_default();
        if !cgroup.contains(pod_uid) && !cgroup.contains(&needle) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("playpen-session run") {
            let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status()?;
            ensure!(status.success(), "kill -9 {pid}: {status}");
            return Ok(pid);
        }
    }
    bail!("no playpen-session run process in Pod {pod_uid}'s cgroup")
}

/// The store: identities (the session's key pair may only read, write and
/// list the bucket), the Secret the session names, the Pod and its
/// Service, the bucket; the Service's address.
async fn start_store(client: &Client, ns: &str) -> anyhow::Result<String> {
    let apply = PatchParams::apply("playpen-e2e").force();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
    let (key, secret) = (format!("E2E{:X}", nanos % 0xFFFF_FFFF), format!("s{nanos:x}{}", std::process::id()));
    let admin_secret = format!("a{nanos:x}");
    let identities = json!({"identities": [
        {"name": "playpen-recorder", "credentials": [{"accessKey": key, "secretKey": secret}],
         "actions": [format!("Read:{BUCKET}"), format!("Write:{BUCKET}"), format!("List:{BUCKET}")]},
        {"name": "playpen-admin", "credentials": [{"accessKey": "E2EADMIN", "secretKey": admin_secret}],
         "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
    ]});
    let config: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": STORE}, "data": {"identities.json": identities.to_string()}}),
    )?;
    Api::<ConfigMap>::namespaced(client.clone(), ns).patch(STORE, &apply, &Patch::Apply(&config)).await?;
    let keys: Secret = serde_json::from_value(json!({"metadata": {"name": KEYS},
        "stringData": {"accessKeyId": key, "secretAccessKey": secret}}))?;
    Api::<Secret>::namespaced(client.clone(), ns).patch(KEYS, &apply, &Patch::Apply(&keys)).await?;
    let args = [
        "server".to_owned(),
        "-dir=/data".into(),
        // The kubelet expands $(POD_IP) from the container's env.
        "-ip=$(POD_IP)".into(),
        "-ip.bind=0.0.0.0".into(),
        format!("-master.port={MASTER_PORT}"),
        "-master.telemetry=false".into(),
        "-master.volumeSizeLimitMB=256".into(),
        "-master.defaultReplication=000".into(),
        format!("-volume.port={VOLUME_PORT}"),
        "-volume.max=16".into(),
        "-filer".into(),
        format!("-filer.port={FILER_PORT}"),
        "-s3".into(),
        format!("-s3.port={S3_PORT}"),
        "-s3.config=/config/identities.json".into(),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
    ];
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": STORE, "labels": {"app": STORE}},
        "spec": {
            "tolerations": tolerations(),
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "weed",
                "image": STORE_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["/usr/local/bin/weed"],
                "args": args,
                "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "ports": [{"containerPort": S3_PORT}, {"containerPort": FILER_PORT}],
                "readinessProbe": {"tcpSocket": {"port": S3_PORT}, "periodSeconds": 1},
                "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "config", "mountPath": "/config"}, {"name": "data", "mountPath": "/data"}]
            }],
            "volumes": [{"name": "config", "configMap": {"name": STORE}}, {"name": "data", "emptyDir": {}}]
        }
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.patch(STORE, &apply, &Patch::Apply(&pod)).await?;
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": STORE},
        "spec": {"selector": {"app": STORE}, "ports": [{"port": S3_PORT, "targetPort": S3_PORT}]}
    }))?;
    let service = Api::<Service>::namespaced(client.clone(), ns).patch(STORE, &apply, &Patch::Apply(&service)).await?;
    let ip = service.spec.and_then(|s| s.cluster_ip).context("the store's Service has no ClusterIP")?;
    eventually(Duration::from_secs(120), || async {
        let pod = pods.get(STORE).await?;
        let ready = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        ensure!(ready.iter().any(|c| c.type_ == "Ready" && c.status == "True"), "{STORE} not ready: {ready:?}");
        Ok(())
    })
    .await
    .context("the object store Pod")?;
    // The bucket, with weed's own shell (the recorder may not create buckets).
    eventually(Duration::from_secs(60), || async {
        let made = sh(
            ns,
            STORE,
            "weed",
            &format!("echo 's3.bucket.create -name {BUCKET}' | /usr/local/bin/weed shell -master=127.0.0.1:{MASTER_PORT} 2>&1; echo 'fs.ls /buckets' | /usr/local/bin/weed shell -master=127.0.0.1:{MASTER_PORT} 2>&1"),
        )
        .await?;
        ensure!(made.contains(BUCKET), "no bucket yet: {made}");
        Ok(())
    })
    .await
    .context("creating the bucket")?;
    Ok(ip)
}
