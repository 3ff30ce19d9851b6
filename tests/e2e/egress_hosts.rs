//! Host-name egress (issue 36) on the kubelet: a session whose
//! `allowHosts` admit `*.allowed.test` reaches an allowed fixture by name
//! and no other, whatever the page tries (a navigation, `fetch()`, an
//! `<img>`, a WebSocket, a redirect from the allowed host); a WebRTC offer
//! sends no UDP even to an address the NetworkPolicy admits; a name mapped
//! to the API server's Service address is refused at the CIDR floor even in
//! `Internet` mode; a `denyHosts` change applies
//! to the running browser without a restart; `recordings/egress.jsonl` and
//! `kubectl playpen egress` show each attempt with its rule; the operator
//! announces the refusals in one `EgressRefused` Event.
//!
//! The test cluster has no DNS: names map to the fixture Services' addresses
//! through `spec.pod.hostAliases` (the Pod's /etc/hosts, which the proxy's
//! resolver reads). Service addresses lie in the cluster's denied ranges,
//! so the allowed fixture's address is also in `allowCIDRs` (the floor lets
//! it through) and its Pod in `allowPeers` (the NetworkPolicy sees the Pod
//! address after the Service's translation); the other fixture is in
//! neither, so nothing but the host rules decides for it.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use playpen_api::layout::{EGRESS_LOG_FILE, RECORDINGS_DIR};
use playpen_api::BrowserSession;
use playpen_tests::eventually;
use serde_json::{json, Value};

use crate::kubectl::{exec, kubectl, playpen};
use crate::network::{authority, API_SERVER_URL};
use crate::session::{create_with, pod_name, wait_ready, BROWSER};
use crate::setup::{start_fixture, tolerations, Installed};

/// The fixture the host rules admit, and the one they do not.
const ALLOWED_FIXTURE: &str = "egress-a";
const OTHER_FIXTURE: &str = "egress-b";
/// Names of the fixtures in the sessions' /etc/hosts.
const ALLOWED_HOST: &str = "a.allowed.test";
const OTHER_HOST: &str = "b.other.test";
/// A name the host rules admit, mapped to the API server's Service address.
const API_SERVER_HOST: &str = "kube.allowed.test";
/// The fixtures' port.
const PORT: u16 = 8080;

/// The scenario: one `AllowListOnly` session with host rules, one
/// `Internet` session for the API server's address, side by side.
pub async fn a_page_reaches_allowed_hosts_only(client: &Client, installed: &Installed) -> anyhow::Result<()> {
    let ns = installed.team_a.name.as_str();
    let (allowed_url, other_url) =
        tokio::try_join!(start_fixture(client, ns, ALLOWED_FIXTURE), start_fixture(client, ns, OTHER_FIXTURE))?;
    let allowed_ip = authority(&allowed_url)?.0;
    let other_ip = authority(&other_url)?.0;
    let (listed, rebound) =
        tokio::join!(allow_list_only(client, ns, &allowed_ip, &other_ip), api_server_by_name(client, ns));
    listed.context("the AllowListOnly session with host rules")?;
    rebound.context("a name mapped to the API server, in Internet mode")
}

/// The spec's `pod` with the e2e defaults (tolerations, /dev/shm) and `aliases`.
fn pod_with(aliases: Value) -> Value {
    json!({"tolerations": tolerations(), "shmSize": "256Mi", "hostAliases": aliases})
}

async fn allow_list_only(client: &Client, ns: &str, allowed_ip: &str, other_ip: &str) -> anyhow::Result<()> {
    let name = "egress-hosts";
    let network = json!({"egress": {
        "mode": "AllowListOnly",
        "allowHosts": ["*.allowed.test"],
        // The floor admits the allowed fixture's Service address only: an
        // address in allowCIDRs is allowed for any host name.
        "allowCIDRs": [format!("{allowed_ip}/32")],
        "allowPeers": [{"namespace": ns, "podLabels": {"app": ALLOWED_FIXTURE}}]
    }});
    let aliases = json!([
        {"ip": allowed_ip, "hostnames": [ALLOWED_HOST]},
        {"ip": other_ip, "hostnames": [OTHER_HOST]}
    ]);
    create_with(client, ns, name, "Enforced", network, json!({"pod": pod_with(aliases)})).await?;
    let (status, took) = wait_ready(client, ns, name).await?;
    eprintln!("e2e: {ns}/{name} Ready after {took:?}");
    let pod = pod_name(&status)?;
    let allowed = format!("http://{ALLOWED_HOST}:{PORT}/");
    let other = format!("http://{OTHER_HOST}:{PORT}/");

    // An allowed name loads, through the proxy.
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &allowed]).await?.ok("goto the allowed name")?;
    ensure!(out.contains("Page Title: Playpen fixture"), "{allowed} did not load:\n{out}");
    fixture_saw(ns, ALLOWED_FIXTURE, "GET / ").await.context("the allowed fixture served the page")?;

    // A page's fetch() and <img> to the other name are refused; it sees nothing.
    let fetched = eval(
        ns,
        &pod,
        &format!(
            "async () => {{ try {{ const r = await fetch('{other}fetch-probe'); return 'status ' + r.status; }} \
             catch (e) {{ return 'failed'; }} }}"
        ),
    )
    .await?;
    ensure!(fetched.contains("failed") && !fetched.contains("status 200"), "fetch() of {other}: {fetched}");
    let image = eval(
        ns,
        &pod,
        &format!(
            "() => new Promise((done) => {{ const i = new Image(); i.onload = () => done('loaded'); \
             i.onerror = () => done('refused'); i.src = '{other}img-probe'; }})"
        ),
    )
    .await?;
    ensure!(image.contains("refused") && !image.contains("loaded"), "<img> of {other}: {image}");

    // A navigation to it does not reach it either: a 403 page from the proxy
    // (plain HTTP) or a network error, never the fixture.
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &other]).await?;
    let text = format!("{}{}", out.stdout, out.stderr);
    ensure!(!text.contains("Page Title: Playpen fixture"), "{other} loaded:\n{text}");
    let shown = eval(ns, &pod, "() => document.body ? document.body.innerText : ''").await?;
    ensure!(
        text.contains("net::ERR_") || shown.contains("refused (mode AllowListOnly)"),
        "goto {other} was neither a network error nor the proxy's refusal:\n{text}\n{shown}"
    );
    websockets_reach_allowed_hosts_only(ns, &pod).await.context("WebSockets")?;
    // A redirect from an allowed host to a refused one stops at the proxy.
    let bounce = format!("{allowed}redirect?to={}", urlencode(&format!("{other}after-redirect")));
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &bounce]).await?;
    fixture_saw(ns, ALLOWED_FIXTURE, "GET /redirect?to=").await.context("the allowed host answered the redirect")?;
    let text = format!("{}{}", out.stdout, out.stderr);
    ensure!(!text.contains("Page Title: Playpen fixture"), "the redirect to {other} loaded:\n{text}");
    webrtc_sends_no_udp(client, ns, &pod).await.context("WebRTC")?;
    let log = kubectl(&["logs", "-n", ns, OTHER_FIXTURE]).await?.ok("the other fixture's log")?;
    ensure!(!log.contains("GET /") && !log.contains("UPGRADE"), "{ns}/{OTHER_FIXTURE} was reached:\n{log}");

    // The log names each attempt and its rule. The allowed fixture's address
    // is admitted by allowCIDRs, which the log names first (every cluster
    // address is in the floor, so allowHosts alone cannot admit one here);
    // the other name is resolved (an allow-listed CIDR could have admitted
    // it) and refused by the mode.
    let records = egress_log(ns, &pod).await?;
    ensure!(
        has(&records, ALLOWED_HOST, "allowed", |rule| rule == "allowCIDRs[0]"),
        "no allowed record of {ALLOWED_HOST}: {records:#?}"
    );
    ensure!(
        records
            .iter()
            .filter(|r| {
                r["host"] == OTHER_HOST
                    && r["verdict"] == "refused"
                    && r["rule"] == "mode AllowListOnly"
                    && r["address"] == other_ip
            })
            .count()
            >= 5,
        "the fetch(), the <img>, the navigation, the WebSocket and the redirect to {OTHER_HOST} are each \
         logged refused: {records:#?}"
    );
    plugin_shows_the_log(ns, name, other_ip).await.context("kubectl playpen egress")?;

    // A deny added to the running session refuses the allowed name: same Pod,
    // same container. The kubelet refreshes a mounted ConfigMap at its Pod
    // sync (every minute, jittered: about 60 s here), then the runtime
    // re-reads it within 30 s; a busy node is slower.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before = pods.get(&pod).await?;
    // With its port: a rule without one means 80 and 443 only.
    let patch = json!({"spec": {"network": {"egress": {"denyHosts": [format!("{ALLOWED_HOST}:{PORT}")]}}}});
    let sessions: Api<BrowserSession> = Api::namespaced(client.clone(), ns);
    sessions.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let t0 = Instant::now();
    let again = format!("{allowed}after-deny");
    eventually(Duration::from_secs(240), || async {
        let _ = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &again]).await?;
        let records = egress_log(ns, &pod).await?;
        ensure!(
            has(&records, ALLOWED_HOST, "refused", |rule| rule == "denyHosts[0]"),
            "{ALLOWED_HOST} not refused by denyHosts[0] yet"
        );
        Ok(())
    })
    .await
    .context("the deny applies to the running browser")?;
    eprintln!("e2e: denyHosts applied to the running browser after {:?}", t0.elapsed());
    // Requests before the rule arrived reached the fixture; none after it.
    let denied = format!("{allowed}denied-now");
    let _ = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &denied]).await?;
    let log = kubectl(&["logs", "-n", ns, ALLOWED_FIXTURE]).await?.ok("the allowed fixture's log")?;
    ensure!(!log.contains("/denied-now"), "the denied name was reached once the rule applied:\n{log}");
    let after = pods.get(&pod).await?;
    ensure!(after.uid() == before.uid(), "the Pod was replaced");
    ensure!(restarts(&after) == restarts(&before), "the browser container restarted: {:?}", restarts(&after));
    refusals_are_announced(client, ns, name).await.context("the EgressRefused Event")
}

/// The operator reads the runtime's egress report (through the one ingress
/// the session's NetworkPolicy admits) and says what was refused in an
/// `EgressRefused` Event naming the refused host.
async fn refusals_are_announced(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let other = format!("{OTHER_HOST}:{PORT}");
    eventually(Duration::from_secs(150), || async {
        let listed = events.list(&ListParams::default().fields(&format!("involvedObject.name={name}"))).await?;
        let notes: Vec<String> = listed
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("EgressRefused"))
            .filter_map(|e| e.message.clone())
            .collect();
        ensure!(notes.iter().any(|n| n.contains(&other) && n.contains("mode AllowListOnly")), "{notes:?}");
        ensure!(notes.len() == 1, "one Event within five minutes, not one per attempt: {notes:?}");
        Ok(())
    })
    .await
}

/// An `Internet` session with a deny rule (so the proxy runs) maps an
/// allowed name to the API server's Service address: the proxy refuses the
/// address at the floor, after its own resolution.
async fn api_server_by_name(client: &Client, ns: &str) -> anyhow::Result<()> {
    let name = "egress-rebind";
    let api_server_ip = authority(API_SERVER_URL)?.0;
    let network = json!({"egress": {"mode": "Internet", "denyHosts": ["ads.allowed.test"]}});
    let aliases = json!([{"ip": api_server_ip, "hostnames": [API_SERVER_HOST]}]);
    create_with(client, ns, name, "Enforced", network, json!({"pod": pod_with(aliases)})).await?;
    let (status, _) = wait_ready(client, ns, name).await?;
    let pod = pod_name(&status)?;
    let url = format!("https://{API_SERVER_HOST}/version");
    let out = exec(ns, &pod, BROWSER, &["playwright-cli", "goto", &url]).await?;
    let text = format!("{}{}", out.stdout, out.stderr);
    ensure!(text.contains("net::ERR_"), "goto {url} did not fail with a network error:\n{text}");
    ensure!(!text.contains("gitVersion"), "the API server answered:\n{text}");
    let records = egress_log(ns, &pod).await?;
    let refused = records
        .iter()
        .find(|r| r["host"] == API_SERVER_HOST && r["verdict"] == "refused")
        .with_context(|| format!("no refused record of {API_SERVER_HOST}: {records:#?}"))?;
    ensure!(refused["address"] == api_server_ip.as_str(), "{refused}");
    ensure!(refused["rule"].as_str().is_some_and(|r| r.starts_with("denied range ")), "{refused}");
    ensure!(refused["port"] == 443, "{refused}");
    Ok(())
}

/// A page's WebSocket opens to an allowed host (through the proxy's
/// CONNECT) and fails to a refused one, which sees no upgrade.
async fn websockets_reach_allowed_hosts_only(ns: &str, pod: &str) -> anyhow::Result<()> {
    let open = |url: String| {
        format!(
            "() => new Promise((done) => {{ const ws = new WebSocket('{url}'); \
             const t = setTimeout(() => done('timeout'), 8000); \
             ws.onopen = () => {{ clearTimeout(t); ws.close(); done('open'); }}; \
             ws.onerror = () => {{ clearTimeout(t); done('error'); }}; }})"
        )
    };
    let allowed = eval(ns, pod, &open(format!("ws://{ALLOWED_HOST}:{PORT}/ws-allowed"))).await?;
    ensure!(allowed.contains("open"), "a WebSocket to {ALLOWED_HOST}: {allowed}");
    fixture_saw(ns, ALLOWED_FIXTURE, "UPGRADE /ws-allowed").await?;
    let other = eval(ns, pod, &open(format!("ws://{OTHER_HOST}:{PORT}/ws-refused"))).await?;
    ensure!(other.contains("error") && !other.contains("open"), "a WebSocket to {OTHER_HOST}: {other}");
    Ok(())
}

/// A page's WebRTC offer with a STUN server at the allowed fixture's Pod
/// address (which the NetworkPolicy admits, by `allowPeers`, for UDP too):
/// the browser sends no UDP at all, since non-proxied UDP is off whenever
/// host rules apply; the fixture logs every datagram it gets.
async fn webrtc_sends_no_udp(client: &Client, ns: &str, pod: &str) -> anyhow::Result<()> {
    let fixture = Api::<Pod>::namespaced(client.clone(), ns).get(ALLOWED_FIXTURE).await?;
    let fixture_ip = fixture.status.and_then(|s| s.pod_ip).context("the allowed fixture has no Pod address")?;
    let offer = format!(
        "async () => {{ const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:{fixture_ip}:{PORT}'}}]}}); \
         const seen = []; pc.onicecandidate = (e) => {{ if (e.candidate) seen.push(e.candidate.candidate); }}; \
         pc.createDataChannel('probe'); await pc.setLocalDescription(await pc.createOffer()); \
         await new Promise((done) => {{ const t = setTimeout(done, 5000); \
           pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') {{ clearTimeout(t); done(); }} }}; }}); \
         pc.close(); return 'candidates ' + JSON.stringify(seen); }}"
    );
    let candidates = eval(ns, pod, &offer).await?;
    ensure!(candidates.contains("candidates"), "the WebRTC offer did not run: {candidates}");
    eprintln!("e2e: WebRTC with host rules gathered {}", candidates.trim());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = kubectl(&["logs", "-n", ns, ALLOWED_FIXTURE]).await?.ok("the allowed fixture's log")?;
    ensure!(!log.contains("UDP "), "the browser sent UDP to {fixture_ip}:{PORT}:\n{log}");
    Ok(())
}

/// `text` with everything but unreserved characters percent-encoded.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `playwright-cli --raw eval <function>` on the page: its result only
/// (without `--raw` the output repeats the code, whose strings would match).
async fn eval(ns: &str, pod: &str, function: &str) -> anyhow::Result<String> {
    let out = exec(ns, pod, BROWSER, &["playwright-cli", "--raw", "eval", function]).await?;
    Ok(format!("{}{}", out.stdout, out.stderr))
}

/// Waits (20 s) for `needle` in fixture `name`'s log.
async fn fixture_saw(ns: &str, name: &str, needle: &str) -> anyhow::Result<()> {
    eventually(Duration::from_secs(20), || async {
        let log = kubectl(&["logs", "-n", ns, name]).await?.ok("fixture logs")?;
        ensure!(log.contains(needle), "{ns}/{name} has no {needle:?}:\n{log}");
        Ok(())
    })
    .await
}

/// `recordings/egress.jsonl`, read as an agent would (`kubectl exec cat`).
async fn egress_log(ns: &str, pod: &str) -> anyhow::Result<Vec<Value>> {
    let path = format!("{RECORDINGS_DIR}/{EGRESS_LOG_FILE}");
    let text = exec(ns, pod, BROWSER, &["cat", &path]).await?.ok("cat egress.jsonl")?;
    text.lines().map(|line| serde_json::from_str(line).with_context(|| format!("a log line: {line}"))).collect()
}

/// Whether `records` hold one for `host` with `verdict` and a rule `rule_is` accepts.
fn has(records: &[Value], host: &str, verdict: &str, rule_is: impl Fn(&str) -> bool) -> bool {
    records.iter().any(|r| r["host"] == host && r["verdict"] == verdict && r["rule"].as_str().is_some_and(&rule_is))
}

/// The browser container's restart count.
fn restarts(pod: &Pod) -> Option<i32> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find(|c| c.name == BROWSER).map(|c| c.restart_count)
}

/// `kubectl playpen egress` prints the same attempts: the table, `--refused`
/// and `--json --tail 1`.
async fn plugin_shows_the_log(ns: &str, name: &str, other_ip: &str) -> anyhow::Result<()> {
    let table = playpen(&["egress", name, "-n", ns]).await?.ok("kubectl playpen egress")?;
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    ensure!(rows.first().is_some_and(|h| h[..3] == ["TIME", "VERDICT", "HOST:PORT"]), "no table header:\n{table}");
    let allowed = format!("{ALLOWED_HOST}:{PORT}");
    let other = format!("{OTHER_HOST}:{PORT}");
    ensure!(
        rows.iter().any(|r| r.get(1) == Some(&"allowed")
            && r.get(2) == Some(&allowed.as_str())
            && r.contains(&"allowCIDRs[0]")),
        "no allowed row for {allowed}:\n{table}"
    );
    ensure!(
        rows.iter()
            .any(|r| r.get(1) == Some(&"refused") && r.get(2) == Some(&other.as_str()) && r.get(3) == Some(&other_ip)),
        "no refused row for {other} at {other_ip}:\n{table}"
    );
    let refused = playpen(&["egress", name, "-n", ns, "--refused"]).await?.ok("kubectl playpen egress --refused")?;
    let data: Vec<&str> = refused.lines().skip(1).collect();
    ensure!(!data.is_empty() && data.iter().all(|l| l.split_whitespace().nth(1) == Some("refused")), "{refused}");
    let last =
        playpen(&["egress", name, "-n", ns, "--json", "--tail", "1"]).await?.ok("kubectl playpen egress --json")?;
    let lines: Vec<&str> = last.lines().collect();
    ensure!(lines.len() == 1, "--tail 1 printed {} lines:\n{last}", lines.len());
    let record: Value = serde_json::from_str(lines[0]).context("--json prints JSON lines")?;
    ensure!(record["host"].is_string() && record["verdict"].is_string(), "{record}");
    Ok(())
}
