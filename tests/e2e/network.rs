//! The browser Pod's network boundary on a node that enforces NetworkPolicy
//! (kube-network-policies, started by tests/cluster/start-node.sh). Traffic
//! goes only to this cluster's own fixture Pods and Service addresses.

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::Client;
use playpen_api::v1alpha1::condition;
use playpen_api::BrowserSession;

use crate::kubectl::{exec, kubectl, sh, Output};
use crate::session::BROWSER;

/// The API server's Service address (tests/cluster/lib.sh `SERVICE_FIRST_IP`).
pub const API_SERVER_URL: &str = "https://10.96.0.1/";
/// A port the tests open in the browser container on every address.
const PROBE_PORT: u16 = 8099;
/// Node's path in the images the fixtures and the browser share.
const NODE: &str = "/opt/playpen/node/bin/node";

/// `host:port` of an `http(s)://host[:port]/` URL.
pub(crate) fn authority(url: &str) -> anyhow::Result<(String, u16)> {
    let rest = url.split_once("://").context("no scheme")?.1;
    let host_port = rest.split('/').next().unwrap_or_default();
    match host_port.split_once(':') {
        Some((h, p)) => Ok((h.to_owned(), p.parse()?)),
        None => Ok((host_port.to_owned(), if url.starts_with("https") { 443 } else { 80 })),
    }
}

/// Connects from `pod`/`container` to `host:port` with a 3 s limit and
/// prints CONNECTED or the error code (a dropped SYN shows as TIMEOUT).
pub(crate) async fn connect(ns: &str, pod: &str, container: &str, host: &str, port: u16) -> anyhow::Result<String> {
    connect_within(ns, pod, container, host, port, 3000).await?.ok("connect probe").map(|out| out.trim().to_owned())
}

/// [`connect`] with a limit of `limit_ms`, returning the exec's whole
/// output (a caller may expect the probe itself to be killed).
pub(crate) async fn connect_within(
    ns: &str,
    pod: &str,
    container: &str,
    host: &str,
    port: u16,
    limit_ms: u32,
) -> anyhow::Result<Output> {
    let script = format!(
        "const s = require('net').connect({port}, '{host}'); s.setTimeout({limit_ms}, () => {{ console.log('TIMEOUT'); process.exit(0) }});\
         s.on('connect', () => {{ console.log('CONNECTED'); process.exit(0) }}).on('error', (e) => {{ console.log(e.code); process.exit(0) }})"
    );
    exec(ns, pod, container, &[NODE, "-e", &script]).await
}

/// `playwright-cli goto url` must fail without the page loading, and the
/// fixture Pod behind it (when there is one) must have seen no request.
async fn goto_fails(ns: &str, pod: &str, url: &str, fixture: Option<(&str, &str)>) -> anyhow::Result<()> {
    let out = exec(ns, pod, BROWSER, &["playwright-cli", "goto", url]).await?;
    let text = format!("{}{}", out.stdout, out.stderr);
    ensure!(!text.contains("Page Title: Playpen fixture"), "{url} loaded from {ns}/{pod}:\n{text}");
    ensure!(
        text.contains("net::ERR_") || text.contains("Timeout"),
        "goto {url} from {ns}/{pod} did not fail with a network error or timeout:\n{text}"
    );
    let error = text.lines().find(|l| l.contains("net::ERR_") || l.contains("Timeout")).unwrap_or_default();
    eprintln!("e2e: goto {url} from {ns}/{pod} failed: {}", error.trim());
    if let Some((fixture_ns, fixture_pod)) = fixture {
        let log = kubectl(&["logs", "-n", fixture_ns, fixture_pod]).await?.ok("fixture logs")?;
        ensure!(!log.contains("GET /"), "{fixture_ns}/{fixture_pod} was reached from {ns}/{pod}:\n{log}");
    }
    Ok(())
}

async fn pod_ip(client: &Client, ns: &str, pod: &str) -> anyhow::Result<String> {
    Api::<Pod>::namespaced(client.clone(), ns).get(pod).await?.status.and_then(|s| s.pod_ip).context("no Pod IP")
}

/// A listener on every address of the browser Pod: reachable from inside
/// the Pod, not from the fixture Pod beside it.
pub async fn no_ingress(client: &Client, ns: &str, pod: &str, neighbour: &str) -> anyhow::Result<()> {
    let ip = pod_ip(client, ns, pod).await?;
    sh(
        ns,
        pod,
        BROWSER,
        &format!(
            "setsid {NODE} -e \"require('net').createServer((c) => c.end('hello')).listen({PROBE_PORT}, '0.0.0.0')\" \
             </dev/null >/dev/null 2>&1 &"
        ),
    )
    .await?;
    let inside = connect(ns, pod, BROWSER, &ip, PROBE_PORT).await?;
    ensure!(inside == "CONNECTED", "the probe listener on {ip}:{PROBE_PORT} is not up inside the Pod: {inside}");
    for port in [PROBE_PORT, crate::session::VIEWER_PORT] {
        let outside = connect(ns, neighbour, "server", &ip, port).await?;
        ensure!(outside != "CONNECTED", "{ns}/{neighbour} opened {ip}:{port} of the browser Pod");
    }
    Ok(())
}

/// The default mode with one allow-listed peer: the peer loads, the rest of
/// the cluster does not, and the status says which policy is in force.
pub async fn default_egress(
    client: &Client,
    ns: &str,
    name: &str,
    pod: &str,
    allowed_url: &str,
    internal_url: &str,
    other: (&str, &str),
) -> anyhow::Result<()> {
    let status = Api::<BrowserSession>::namespaced(client.clone(), ns).get(name).await?.status.context("no status")?;
    let policy = status.conditions.iter().find(|c| c.type_ == condition::EGRESS_POLICY).context("no EgressPolicy")?;
    ensure!(policy.reason == "Internet" && policy.message.contains("10.0.0.0/8"), "EgressPolicy: {policy:?}");
    let describe = kubectl(&["describe", "bs", "-n", ns, name]).await?.ok("kubectl describe")?;
    ensure!(describe.contains("EgressPolicy") && describe.contains("the internet except"), "describe:\n{describe}");

    let (allowed_host, allowed_port) = authority(allowed_url)?;
    let reach = connect(ns, pod, BROWSER, &allowed_host, allowed_port).await?;
    ensure!(reach == "CONNECTED", "the allow-listed fixture {allowed_url}: {reach}");
    for url in [internal_url, other.1, API_SERVER_URL] {
        let (host, port) = authority(url)?;
        let reach = connect(ns, pod, BROWSER, &host, port).await?;
        ensure!(reach != "CONNECTED", "the browser Pod opened {url}");
    }
    goto_fails(ns, pod, internal_url, Some((ns, "internal"))).await.context("the internal fixture")?;
    goto_fails(ns, pod, other.1, Some((other.0, "fixture"))).await.context("a fixture in another namespace")?;
    goto_fails(ns, pod, API_SERVER_URL, None).await.context("the API server's Service address")?;
    // The allow-listed peer still loads after the refusals.
    let out = exec(ns, pod, BROWSER, &["playwright-cli", "goto", allowed_url]).await?.ok("goto the allowed peer")?;
    ensure!(out.contains("Page Title: Playpen fixture"), "the allow-listed fixture did not load:\n{out}");
    Ok(())
}

/// A DenyAll session reaches nothing, not even what another session may.
pub async fn deny_all(
    client: &Client,
    ns: &str,
    name: &str,
    pod: &str,
    urls: &[&str],
    goto_url: (&str, &str, &str),
) -> anyhow::Result<()> {
    let status = Api::<BrowserSession>::namespaced(client.clone(), ns).get(name).await?.status.context("no status")?;
    let policy = status.conditions.iter().find(|c| c.type_ == condition::EGRESS_POLICY).context("no EgressPolicy")?;
    ensure!(policy.reason == "DenyAll", "EgressPolicy: {policy:?}");
    for url in urls {
        let (host, port) = authority(url)?;
        let reach = connect(ns, pod, BROWSER, &host, port).await?;
        ensure!(reach != "CONNECTED", "the DenyAll session opened {url}");
    }
    let (url, fixture_ns, fixture_pod) = goto_url;
    goto_fails(ns, pod, url, Some((fixture_ns, fixture_pod))).await.context("the DenyAll session's goto")
}

#[cfg(test)]
mod tests {
    #[test]
    fn authority_reads_host_and_port() {
        assert_eq!(super::authority("http://10.96.3.4:8080/").expect("a"), ("10.96.3.4".into(), 8080));
        assert_eq!(super::authority("https://10.96.0.1/").expect("a"), ("10.96.0.1".into(), 443));
    }
}
