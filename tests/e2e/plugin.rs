//! `kubectl playpen` on a real session: listed, driven with `run`, viewed
//! and reached over CDP through its own port-forward tunnels, its snapshot,
//! recordings and logs copied out, all through kubectl's plugin mechanism.

use std::net::SocketAddr;

use anyhow::{ensure, Context as _};
use kube::api::{Api, DeleteParams};
use kube::Client;
use playpen_api::layout::RECORDINGS_DIR;
use playpen_api::BrowserSession;
use playpen_tests::http_get;
use serde_json::json;

use crate::kubectl::{playpen, playpen_serving, sh};
use crate::session::{create_with, wait_ready, BROWSER};
use crate::setup::Installed;

/// The local address in a URL the plugin printed (`http://127.0.0.1:<port>[/]`).
fn local_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let rest = url.strip_prefix("http://127.0.0.1:").with_context(|| format!("not a local URL: {url:?}"))?;
    let port: u16 = rest.trim_end_matches('/').parse().with_context(|| format!("no port in {url:?}"))?;
    Ok(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// A fresh local directory for copies, removed on drop.
struct LocalDir(std::path::PathBuf);

impl LocalDir {
    fn new(name: &str) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("playpen-e2e-plugin-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }

    fn path(&self) -> anyhow::Result<&str> {
        self.0.to_str().context("a non-UTF-8 temporary directory")
    }
}

impl Drop for LocalDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One session with CDP on, driven, viewed, tunnelled to and copied from
/// with `kubectl playpen` only; deleted at the end.
pub async fn plugin_drives_a_session(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let (ns, fixture_url) = (installed.team_a.name.as_str(), installed.fixture_url.as_str());
    let name = "plugged";
    let network = json!({"egress": {"allowPeers": [{"namespace": ns, "podLabels": {"app": "fixture"}}]}});
    create_with(client, ns, name, "Enforced", network, json!({"cdp": {"enabled": true}})).await?;
    let (status, took) = wait_ready(client, ns, name).await.context("the plugin's session becomes Ready")?;
    eprintln!("e2e: {ns}/{name} Ready after {took:?}");
    let pod = status.pod_name.clone().context("status.podName is empty")?;

    // ls: the session, Ready.
    let table = playpen(&["ls", "-n", ns]).await?.ok("kubectl playpen ls")?;
    let row: Vec<&str> =
        table.lines().find(|l| l.starts_with(name)).context(table.clone())?.split_whitespace().collect();
    ensure!(row.get(1..3) == Some(&["Ready", "True"][..]) && row.get(4) == Some(&pod.as_str()), "ls:\n{table}");

    // run: playwright-cli in the browser container, its output and exit code.
    let out = playpen(&["run", name, "-n", ns, "--", "goto", fixture_url]).await?.ok("kubectl playpen run -- goto")?;
    ensure!(out.contains("Page Title: Playpen fixture"), "run goto printed:\n{out}");

    // snapshot: the newest snapshot file, copied out, is the page's.
    let copies = LocalDir::new("snapshot")?;
    let out = playpen(&["snapshot", name, "-n", ns, "-o", copies.path()?]).await?.ok("kubectl playpen snapshot")?;
    let local = out.split(" -> ").nth(1).and_then(|rest| rest.split(" (").next()).context(out.clone())?;
    let tree = std::fs::read_to_string(local).with_context(|| format!("reading the copied snapshot {local}"))?;
    ensure!(tree.contains("Record a click"), "the copied snapshot is not the fixture page's:\n{tree}");

    // view: the dashboard through the plugin's tunnel, on two connections (each its own stream).
    let view = playpen_serving(&["view", name, "-n", ns], 1).await.context("kubectl playpen view")?;
    let addr = local_addr(&view.lines[0])?;
    let (code, _) = http_get(addr, "/").await.context("GET / through kubectl playpen view")?;
    ensure!(code == 302 || code == 200, "the dashboard root answered {code} through the plugin");
    let (code, body) = http_get(addr, "/index.html").await.context("a second connection through the tunnel")?;
    ensure!(code == 200 && body.contains("<html"), "the dashboard page answered {code}: {body:.200}");
    drop(view);

    // cdp: the endpoint and the browser's webSocketDebuggerUrl, read through the tunnel.
    let cdp = playpen_serving(&["cdp", name, "-n", ns], 2).await.context("kubectl playpen cdp")?;
    let addr = local_addr(&cdp.lines[0])?;
    let ws = cdp.lines[1].strip_prefix("webSocketDebuggerUrl: ").context(cdp.lines[1].clone())?;
    ensure!(
        ws.starts_with(&format!("ws://127.0.0.1:{}/devtools/browser/", addr.port())),
        "webSocketDebuggerUrl {ws} does not name the tunnel's local end {addr}"
    );
    let (code, body) = http_get(addr, "/json/version").await.context("GET /json/version through the tunnel")?;
    ensure!(code == 200 && body.contains("webSocketDebuggerUrl"), "/json/version answered {code}: {body:.300}");
    drop(cdp);

    // record: none yet, said so; then every file under the recordings directory, tree kept.
    let out = playpen(&["record", name, "-n", ns]).await?.ok("kubectl playpen record (none)")?;
    ensure!(out.contains("no recordings"), "record with nothing recorded:\n{out}");
    sh(ns, &pod, BROWSER, &format!("mkdir -p {RECORDINGS_DIR}/e2e && printf frame > {RECORDINGS_DIR}/e2e/clip.webm"))
        .await?;
    let recordings = LocalDir::new("record")?;
    let out = playpen(&["record", name, "-n", ns, "-o", recordings.path()?]).await?.ok("kubectl playpen record")?;
    let clip = std::fs::read_to_string(recordings.0.join("e2e/clip.webm")).with_context(|| out.clone())?;
    ensure!(clip == "frame", "the copied recording holds {clip:?}");

    // logs: the runtime's output.
    let log = playpen(&["logs", name, "-n", ns]).await?.ok("kubectl playpen logs")?;
    ensure!(log.contains("runtime started"), "the browser container's log lacks the runtime's start:\n{log}");

    Api::<BrowserSession>::namespaced(client.clone(), ns).delete(name, &DeleteParams::background()).await?;
    Ok(())
}
