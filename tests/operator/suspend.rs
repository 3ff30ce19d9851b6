//! Suspend and resume against the real API server, with a stand-in for the
//! session runtime's readiness port on a loopback address (there is no
//! kubelet: the tests write the Pod's status and address): the control
//! token, the capture, the saved-state Secret, the Pod freed and brought
//! back with the state mounted, and hostile answers that change nothing.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use playpen_api::layout::READINESS_PORT;
use playpen_api::suspend::{SuspendedState, Tab};
use playpen_api::v1alpha1::{BrowserSessionStatus, Phase};
use playpen_api::BrowserSession;
use playpen_tests::{client, ensure_crd, eventually, RunningOperator, TestNamespace};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::{after_scheduler_verdict, condition, container, create, session, set_pod_status};

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// What the stand-in answers to `POST /suspend`.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// 200 with this body.
    Ok(Vec<u8>),
    /// 503 with the runtime's error body.
    Failed,
}

/// A stand-in runtime: answers `POST /suspend` as told and takes any
/// `POST /resume` (recording the document) once the bearer token is the
/// one in `control` (a Secret read when a request comes), records every
/// token presented.
#[derive(Clone)]
pub(crate) struct StandIn {
    answer: Arc<Mutex<Answer>>,
    pub(crate) presented: Arc<Mutex<Vec<String>>>,
    pub(crate) resumed: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl StandIn {
    pub(crate) async fn start(ip: IpAddr, secrets: Api<Secret>, control: &str, answer: Answer) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::new(ip, READINESS_PORT)).await?;
        let me = Self { answer: Arc::new(Mutex::new(answer)), presented: Arc::default(), resumed: Arc::default() };
        let (serving, control) = (me.clone(), control.to_owned());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (me, secrets, control) = (serving.clone(), secrets.clone(), control.clone());
                tokio::spawn(async move {
                    let (head, body) = read_request(&mut stream).await;
                    let token = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Authorization: Bearer "))
                        .map(str::to_owned)
                        .unwrap_or_default();
                    me.presented.lock().expect("the stand-in's record").push(token.clone());
                    let stored = secrets
                        .get(&control)
                        .await
                        .ok()
                        .and_then(|s| s.data)
                        .and_then(|d| d.get("control-token").map(|v| String::from_utf8_lossy(&v.0).into_owned()));
                    let answer = me.answer.lock().expect("the stand-in's answer").clone();
                    let authorised = stored == Some(token);
                    let (status, body) = match (head.split(' ').take(2).collect::<Vec<_>>().as_slice(), authorised) {
                        (["POST", "/suspend" | "/resume"], false) => ("401 Unauthorized", vec![]),
                        (["POST", "/suspend"], true) => match answer {
                            Answer::Ok(body) => ("200 OK", body),
                            Answer::Failed => (
                                "503 Service Unavailable",
                                br#"{"error":"suspend failed","step":"state-save"}"#.to_vec(),
                            ),
                        },
                        (["POST", "/resume"], true) => {
                            me.resumed.lock().expect("the stand-in's record").push(body);
                            ("200 OK", br#"{"tabs":1,"failed":[],"tookMs":5}"#.to_vec())
                        }
                        _ => ("404 Not Found", vec![]),
                    };
                    let head =
                        format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                });
            }
        });
        Ok(me)
    }

    pub(crate) fn answer(&self, answer: Answer) {
        *self.answer.lock().expect("the stand-in's answer") = answer;
    }
}

/// A request's head and its body (as long as its Content-Length says).
async fn read_request(stream: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    while let Ok(n @ 1..) = stream.read(&mut chunk).await {
        bytes.extend_from_slice(&chunk[..n]);
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if bytes.len() >= end + 4 + length {
            return (head, bytes[end + 4..end + 4 + length].to_vec());
        }
    }
    (String::from_utf8_lossy(&bytes).into_owned(), vec![])
}

/// A document with `tabs` tabs and one cookie whose value is `cookie`.
pub(crate) fn document(tabs: usize, cookie: &str) -> Vec<u8> {
    let mut doc = SuspendedState::new(1_796_443_000_000);
    doc.storage.cookies.push(json!({"name": "sid", "value": cookie, "domain": "app.test", "path": "/"}));
    doc.tabs = (0..tabs)
        .map(|i| Tab { url: format!("https://app.test/{i}"), scroll_x: 0.0, scroll_y: 10.0, fields: vec![] })
        .collect();
    doc.to_bytes()
}

/// Writes the Pod's status as a kubelet would: running, Ready, at `ip`.
pub(crate) async fn ready_at(pods: &Api<Pod>, name: &str, ip: IpAddr) -> anyhow::Result<()> {
    after_scheduler_verdict(pods, name).await;
    let conditions = json!([{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]);
    let running = container(true, 0, json!({"running": {}}), json!({}));
    set_pod_status(
        pods,
        name,
        json!({"phase": "Running", "podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}],
            "conditions": conditions, "containerStatuses": [running]}),
    )
    .await
}

pub(crate) async fn status(sessions: &Api<BrowserSession>, name: &str) -> anyhow::Result<BrowserSessionStatus> {
    sessions.get(name).await?.status.context("no status yet")
}

pub(crate) async fn phase_is(
    sessions: &Api<BrowserSession>,
    name: &str,
    want: Phase,
) -> anyhow::Result<BrowserSessionStatus> {
    eventually(WAIT, || async {
        let s = status(sessions, name).await?;
        ensure!(s.phase == Some(want), "phase {:?}, want {want:?}; conditions {:?}", s.phase, s.conditions);
        Ok(s)
    })
    .await
}

async fn set_suspended(sessions: &Api<BrowserSession>, name: &str, suspended: bool) -> anyhow::Result<()> {
    let patch = json!({"spec": {"suspended": suspended}});
    sessions.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

pub(crate) struct Scene {
    pub(crate) client: Client,
    pub(crate) ns: TestNamespace,
    _op: RunningOperator,
    pub(crate) pods: Api<Pod>,
    pub(crate) sessions: Api<BrowserSession>,
    pub(crate) secrets: Api<Secret>,
}

pub(crate) async fn scene(prefix: &str) -> anyhow::Result<Scene> {
    let client = client().await?;
    ensure_crd(&client).await?;
    let ns = TestNamespace::new(&client, prefix).await?;
    let n = ns.name.clone();
    let op = RunningOperator::start(&client, &n, None).await?;
    Ok(Scene {
        pods: Api::namespaced(client.clone(), &n),
        sessions: Api::namespaced(client.clone(), &n),
        secrets: Api::namespaced(client.clone(), &n),
        client,
        ns,
        _op: op,
    })
}

#[tokio::test]
async fn a_ready_session_is_saved_parked_and_resumed_with_its_state() -> anyhow::Result<()> {
    let s = scene("suspend").await?;
    let n = s.ns.name.as_str();
    create(&s.client, n, session("demo", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let ip = IpAddr::from([127, 0, 35, 1]);
    let saved = document(3, "the-cookie-value");
    let runtime = StandIn::start(ip, s.secrets.clone(), "demo-control", Answer::Ok(saved.clone())).await?;
    ready_at(&s.pods, "demo-browser", ip).await?;
    phase_is(&s.sessions, "demo", Phase::Ready).await?;
    let first_pod = s.pods.get("demo-browser").await?.uid();

    set_suspended(&s.sessions, "demo", true).await?;
    let parked = phase_is(&s.sessions, "demo", Phase::Suspended).await?;
    let said = parked.suspend.clone().context("status.suspend")?;
    assert_eq!(
        (said.path.as_str(), said.tabs, said.state_secret.as_deref()),
        ("State", Some(3), Some("demo-suspended"))
    );
    assert!(said.bytes.is_some_and(|b| b > 0) && said.suspend_millis.is_some() && said.suspended_at.is_some());
    assert_eq!(condition(&parked, "Suspended").map(|c| c.0), Some("True".into()));
    assert_eq!(condition(&parked, "Ready").map(|c| (c.0, c.1)), Some(("False".into(), "Suspended".into())));
    assert!(parked.pod_name.is_none());
    // The Secret holds the runtime's document, owned by the session.
    let secret = s.secrets.get("demo-suspended").await?;
    assert_eq!(secret.type_.as_deref(), Some("playpen.dev/suspended-state"));
    assert!(secret.owner_references().iter().any(|o| o.kind == "BrowserSession" && o.name == "demo"));
    let stored = secret.data.and_then(|d| d.get("state.json").cloned()).context("state.json")?;
    let stored: SuspendedState = serde_json::from_slice(&stored.0)?;
    assert_eq!(stored, serde_json::from_slice::<SuspendedState>(&saved)?);
    // The token presented was the session's control Secret's, created once.
    let token =
        s.secrets.get("demo-control").await?.data.and_then(|d| d.get("control-token").cloned()).context("token")?;
    let token = String::from_utf8(token.0)?;
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    assert!(runtime.presented.lock().expect("the stand-in's record").contains(&token));
    // The Pod is gone, and a parked session is not written again and again.
    eventually(WAIT, || async {
        ensure!(s.pods.get_opt("demo-browser").await?.is_none_or(|p| p.uid() != first_pod), "the Pod is still there");
        Ok(())
    })
    .await?;
    ensure!(s.pods.get_opt("demo-browser").await?.is_none(), "a parked session got a new Pod");
    let version = s.sessions.get("demo").await?.resource_version();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.sessions.get("demo").await?.resource_version(), version, "a parked session's status keeps changing");

    // Resume: a Pod with the saved state mounted, Resuming until it is Ready.
    set_suspended(&s.sessions, "demo", false).await?;
    let pod = eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let volumes = pod.spec.and_then(|p| p.volumes).unwrap_or_default();
    let resume = volumes.iter().find(|v| v.name == "resume-state").context("no resume-state volume")?;
    assert_eq!(resume.secret.as_ref().and_then(|v| v.secret_name.as_deref()), Some("demo-suspended"));
    let config = Api::<ConfigMap>::namespaced(s.client.clone(), n).get("demo-runtime").await?;
    let runtime_json = config.data.and_then(|d| d.get("runtime.json").cloned()).unwrap_or_default();
    assert!(runtime_json.contains("\"resumeStateFile\": \"/etc/playpen/resume/state.json\""), "{runtime_json}");
    // The time it was parked (at least the 3 s above) does not count toward maxLifetimeSeconds.
    let config: serde_json::Value = serde_json::from_str(&runtime_json)?;
    let started: k8s_openapi::jiff::Timestamp =
        config["sessionStartedAt"].as_str().context("sessionStartedAt")?.parse()?;
    let created = s.sessions.get("demo").await?.metadata.creation_timestamp.context("creation")?.0;
    let parked_seconds = status(&s.sessions, "demo").await?.suspend.and_then(|x| x.suspended_seconds);
    assert!(parked_seconds.is_some_and(|p| p >= 3), "status.suspend.suspendedSeconds {parked_seconds:?}");
    assert_eq!(started.duration_since(created).as_secs(), parked_seconds.unwrap_or_default(), "{runtime_json}");
    let resuming = phase_is(&s.sessions, "demo", Phase::Resuming).await?;
    assert_eq!(condition(&resuming, "Suspended").map(|c| c.1), Some("Resuming".into()));
    ready_at(&s.pods, "demo-browser", ip).await?;
    let back = phase_is(&s.sessions, "demo", Phase::Ready).await?;
    let suspend = back.suspend.context("status.suspend")?;
    assert!(suspend.state_secret.is_none() && suspend.last_resume_millis.is_some(), "{suspend:?}");
    eventually(WAIT, || async {
        ensure!(s.secrets.get_opt("demo-suspended").await?.is_none(), "the saved state outlived the resume");
        Ok(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_failing_or_hostile_runtime_keeps_the_browser_and_says_why() -> anyhow::Result<()> {
    let s = scene("suspend-hostile").await?;
    let n = s.ns.name.as_str();
    create(&s.client, n, session("demo", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let ip = IpAddr::from([127, 0, 35, 2]);
    let runtime = StandIn::start(ip, s.secrets.clone(), "demo-control", Answer::Failed).await?;
    ready_at(&s.pods, "demo-browser", ip).await?;
    phase_is(&s.sessions, "demo", Phase::Ready).await?;
    set_suspended(&s.sessions, "demo", true).await?;
    let failed = eventually(WAIT, || async {
        let st = status(&s.sessions, "demo").await?;
        let c = condition(&st, "Suspended").context("no Suspended condition")?;
        ensure!(c.1 == "SuspendFailed", "{c:?}");
        Ok((st, c))
    })
    .await?;
    assert_eq!(failed.0.phase, Some(Phase::Ready), "the browser keeps running");
    assert!(failed.1 .2.contains("503") && failed.1 .2.contains("state-save"), "{:?}", failed.1);

    // A document that is not one, quoting a secret: refused without a byte of it.
    runtime.answer(Answer::Ok(br#"{"format":1,"storage":{"cookies":"sid=hunter2-secret"}}"#.to_vec()));
    let refused = eventually(Duration::from_secs(60), || async {
        let st = status(&s.sessions, "demo").await?;
        let c = condition(&st, "Suspended").context("no Suspended condition")?;
        ensure!(c.2.contains("not a suspended state"), "{c:?}");
        Ok(c)
    })
    .await?;
    assert!(!refused.2.contains("hunter2"), "the answer leaked into the status: {refused:?}");
    ensure!(s.pods.get_opt("demo-browser").await?.is_some(), "a failed suspend deleted the Pod");
    ensure!(s.secrets.get_opt("demo-suspended").await?.is_none(), "a refused answer was stored");

    // Then an answer too large for any document: refused as well; then a good one parks it.
    runtime.answer(Answer::Ok(vec![b' '; 3 * 1024 * 1024]));
    eventually(Duration::from_secs(60), || async {
        let c = condition(&status(&s.sessions, "demo").await?, "Suspended").context("no Suspended condition")?;
        ensure!(c.2.contains("more than"), "{c:?}");
        Ok(())
    })
    .await?;
    runtime.answer(Answer::Ok(document(1, "v")));
    let parked = eventually(Duration::from_secs(90), || async {
        let st = status(&s.sessions, "demo").await?;
        ensure!(st.phase == Some(Phase::Suspended), "phase {:?}", st.phase);
        Ok(st)
    })
    .await?;
    assert_eq!(parked.suspend.and_then(|x| x.tabs), Some(1));
    Ok(())
}

#[tokio::test]
async fn a_session_parked_past_its_bound_loses_its_state_and_completes() -> anyhow::Result<()> {
    let s = scene("suspend-expire").await?;
    let n = s.ns.name.as_str();
    create(&s.client, n, session("demo", json!({"image": "i", "suspend": {"maxSuspendedSeconds": 3}}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let ip = IpAddr::from([127, 0, 35, 10]);
    let _runtime = StandIn::start(ip, s.secrets.clone(), "demo-control", Answer::Ok(document(1, "c"))).await?;
    ready_at(&s.pods, "demo-browser", ip).await?;
    phase_is(&s.sessions, "demo", Phase::Ready).await?;
    set_suspended(&s.sessions, "demo", true).await?;
    phase_is(&s.sessions, "demo", Phase::Suspended).await?;
    ensure!(s.secrets.get_opt("demo-suspended").await?.is_some(), "nothing was saved");
    // Three seconds on: Completed, the saved state deleted, and it says why.
    let expired = phase_is(&s.sessions, "demo", Phase::Completed).await?;
    let said = condition(&expired, "Ready").context("Ready")?;
    assert_eq!((said.0.as_str(), said.1.as_str()), ("False", "SuspendExpired"));
    let suspend = expired.suspend.context("status.suspend")?;
    assert!(suspend.state_secret.is_none() && suspend.expired_at.is_some(), "{suspend:?}");
    eventually(WAIT, || async {
        ensure!(s.secrets.get_opt("demo-suspended").await?.is_none(), "the expired state is still stored");
        Ok(())
    })
    .await?;
    ensure!(s.pods.get_opt("demo-browser").await?.is_none(), "an expired session got a Pod");
    // Asked back: a fresh browser, nothing to reopen.
    set_suspended(&s.sessions, "demo", false).await?;
    let pod = eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let volumes = pod.spec.and_then(|p| p.volumes).unwrap_or_default();
    assert!(!volumes.iter().any(|v| v.name == "resume-state"), "an expired state was mounted");
    let back = phase_is(&s.sessions, "demo", Phase::Pending).await?;
    assert!(back.suspend.is_some_and(|x| x.expired_at.is_none() && x.suspended_seconds.is_some_and(|p| p >= 3)));
    Ok(())
}

#[tokio::test]
async fn a_browser_that_is_not_ready_is_parked_with_nothing_saved() -> anyhow::Result<()> {
    let s = scene("suspend-empty").await?;
    let n = s.ns.name.as_str();
    create(&s.client, n, session("demo", json!({"image": "i"}))).await?;
    eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    set_suspended(&s.sessions, "demo", true).await?;
    let parked = phase_is(&s.sessions, "demo", Phase::Suspended).await?;
    let said = parked.suspend.context("status.suspend")?;
    assert_eq!((said.path.as_str(), said.state_secret), ("Empty", None));
    eventually(WAIT, || async {
        ensure!(s.pods.get_opt("demo-browser").await?.is_none(), "the Pod is still there");
        Ok(())
    })
    .await?;
    // Resumed: a plain new browser.
    set_suspended(&s.sessions, "demo", false).await?;
    let pod = eventually(WAIT, || async { Ok(s.pods.get("demo-browser").await?) }).await?;
    let volumes = pod.spec.and_then(|p| p.volumes).unwrap_or_default();
    assert!(!volumes.iter().any(|v| v.name == "resume-state"), "nothing to resume from, nothing mounted");
    let st = phase_is(&s.sessions, "demo", Phase::Pending).await?;
    assert_eq!(st.suspend.map(|x| x.path), Some("Empty".into()), "what the suspend did stays said");
    Ok(())
}

#[tokio::test]
async fn a_pooled_session_is_parked_and_resumed_into_a_new_warm_claim() -> anyhow::Result<()> {
    let s = scene("suspend-pool").await?;
    let n = s.ns.name.as_str();
    let pool = json!({"apiVersion": "playpen.dev/v1alpha1", "kind": "BrowserPool", "metadata": {"name": "agents"},
        "spec": {"minReady": 1, "template": {"image": "i"}}});
    let pool: playpen_api::v1alpha1::BrowserPool = serde_json::from_value(pool)?;
    Api::<playpen_api::v1alpha1::BrowserPool>::namespaced(s.client.clone(), n)
        .create(&Default::default(), &pool)
        .await?;
    // The first warm Pod, Ready at a stand-in's address; the session claims it.
    let (first, first_ip) = (warm_pod(&s.pods).await?, IpAddr::from([127, 0, 35, 3]));
    let saved = document(2, "pooled-cookie");
    let first_runtime =
        StandIn::start(first_ip, s.secrets.clone(), &control_of(&first), Answer::Ok(saved.clone())).await?;
    ready_at(&s.pods, &first, first_ip).await?;
    create(&s.client, n, session("pooled", json!({"pool": {"name": "agents"}}))).await?;
    let placed = phase_is(&s.sessions, "pooled", Phase::Ready).await?;
    ensure!(placed.pod_name.as_deref() == Some(first.as_str()), "not the warm Pod: {:?}", placed.pod_name);
    // The pool made the warm Pod's control Secret with it; the claim gave it to the session.
    let control = eventually(WAIT, || async {
        let secret = s.secrets.get(&control_of(&first)).await?;
        ensure!(secret.owner_references().iter().any(|o| o.name == "pooled"), "{:?}", secret.owner_references());
        Ok(secret)
    })
    .await
    .context("the claimed Pod's control Secret, re-owned")?;
    let made_by_the_pool = control.data.and_then(|d| d.get("control-token").cloned()).context("no token")?;

    set_suspended(&s.sessions, "pooled", true).await?;
    let parked = phase_is(&s.sessions, "pooled", Phase::Suspended).await?;
    assert_eq!(parked.suspend.as_ref().and_then(|x| x.tabs), Some(2));
    // The token came from the warm Pod's own control Secret, the one its launch-config volume projects.
    let token = s.secrets.get(&control_of(&first)).await?.data.and_then(|d| d.get("control-token").cloned());
    let token = String::from_utf8(token.context("no token")?.0)?;
    assert_eq!(token.as_bytes(), made_by_the_pool.0.as_slice(), "the token the pool made, never a new one");
    assert!(first_runtime.presented.lock().expect("the stand-in's record").contains(&token));
    eventually(WAIT, || async {
        ensure!(s.pods.get_opt(&first).await?.is_none(), "{first} is still there");
        Ok(())
    })
    .await?;

    // A new warm Pod; the resume claims it and the operator reopens the state in it.
    let second = eventually(WAIT, || async {
        let name = warm_pod(&s.pods).await?;
        ensure!(name != first, "still the first");
        Ok(name)
    })
    .await?;
    let second_ip = IpAddr::from([127, 0, 35, 4]);
    let second_runtime = StandIn::start(second_ip, s.secrets.clone(), &control_of(&second), Answer::Failed).await?;
    ready_at(&s.pods, &second, second_ip).await?;
    set_suspended(&s.sessions, "pooled", false).await?;
    let back = phase_is(&s.sessions, "pooled", Phase::Ready).await?;
    ensure!(back.pod_name.as_deref() == Some(second.as_str()), "not the new warm Pod: {:?}", back.pod_name);
    assert!(back.pool.as_ref().is_some_and(|p| p.claimed), "{:?}", back.pool);
    let resumed = second_runtime.resumed.lock().expect("the stand-in's record").clone();
    ensure!(resumed.len() == 1, "{} reopen requests", resumed.len());
    let reopened: SuspendedState = serde_json::from_slice(&resumed[0])?;
    assert_eq!(reopened, serde_json::from_slice::<SuspendedState>(&saved)?, "the saved document, as it was");
    let suspend = back.suspend.context("status.suspend")?;
    assert!(suspend.state_secret.is_none() && suspend.last_resume_millis.is_some(), "{suspend:?}");
    eventually(WAIT, || async {
        ensure!(s.secrets.get_opt("pooled-suspended").await?.is_none(), "the saved state outlived the resume");
        Ok(())
    })
    .await?;
    Ok(())
}

/// The pool's one warm Pod.
async fn warm_pod(pods: &Api<Pod>) -> anyhow::Result<String> {
    let params = kube::api::ListParams::default().labels("playpen.dev/pool=agents,playpen.dev/pool-state=warm");
    eventually(WAIT, || async {
        let warm: Vec<String> = pods
            .list(&params)
            .await?
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| p.name_any())
            .collect();
        ensure!(warm.len() == 1, "warm Pods: {warm:?}");
        Ok(warm[0].clone())
    })
    .await
}

/// A warm Pod's control Secret: `<warm name>-control` (the Pod is `<warm name>-browser`).
fn control_of(pod: &str) -> String {
    format!("{}-control", pod.trim_end_matches("-browser"))
}
