//! The readiness endpoint the kubelet probes over HTTP: `GET /readyz` on the
//! Pod's own address answers 200 or 503 with an empty body, from the same
//! verdict as `playpen-session probe` ([`crate::probe`]), computed in this
//! process. An idle session then costs the node no process start per probe.
//!
//! Anyone who reaches the Pod's address learns one bit (ready or not) and
//! nothing else: the reason goes to this runtime's log, once per change.
//! `POST /suspend` answers the session's suspended state to the operator
//! bearing the control token, and `POST /resume` reopens one it sends
//! ([`super::control`]).
//! `GET /egress` answers what the egress proxy counted
//! ([`playpen_api::egress_report`], empty without host rules): the
//! operator reads it for Events and metrics. `GET /export` answers the
//! exporter container's last status file ([`playpen_api::export_status`],
//! 404 before it wrote one), for the session's status. Only the node, the
//! operator's Pods (admitted by the session's NetworkPolicy when host rules
//! or an export apply) and
//! the session's own processes reach this port, and each already knows or
//! may know where the session's browser went. A
//! request's size, the time it may take and the connections open at once are
//! bounded, so a client in the Pod's network (the page, an agent) can slow
//! only its own session's probe.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use playpen_api::export_status::{ExportStatus, EXPORT_STATE_DIR, EXPORT_STATUS_FILE, MAX_STATUS_BYTES};
use playpen_api::layout::{EGRESS_REPORT_PATH, EXPORT_STATUS_PATH, READINESS_PATH, RESUME_PATH, SUSPEND_PATH};
use playpen_api::runtime_config::RuntimeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use super::control::body::{self, DISCARD_MAX};
use super::control::{bearer, Answer, Control, ResumeRequest};
use super::egress_proxy::Tally;
use crate::error::Fatal;
use crate::probe;
use crate::run::browser::recording;

/// The longest request head read; the kubelet's is about 150 bytes.
const REQUEST_HEAD_MAX: usize = 2048;
/// How long a client may take to send its request head.
const READ_WITHIN: Duration = Duration::from_secs(2);
/// How long writing the answer may take.
const WRITE_WITHIN: Duration = Duration::from_secs(1);
/// How long writing a suspended state (up to 512 KiB) may take.
const WRITE_DOCUMENT_WITHIN: Duration = Duration::from_secs(10);
/// Connections answered at once; more are closed unanswered. The kubelet
/// sends one probe at a time.
const MAX_CONNECTIONS: usize = 4;

/// Binds the endpoint at `addr` (the Pod's address and the readiness port).
pub fn bind_at(addr: SocketAddr) -> Result<TcpListener, Fatal> {
    let bind = || -> std::io::Result<TcpListener> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        TcpListener::from_std(listener)
    };
    bind().map_err(|source| Fatal::ReadinessPortTaken { addr, source })
}

/// The verdict last answered, so that a change is logged once.
#[derive(Debug, Default)]
struct LastVerdict(Mutex<Option<Result<(), String>>>);

impl LastVerdict {
    fn note(&self, verdict: &Result<(), String>) {
        let Ok(mut last) = self.0.lock() else { return };
        if last.as_ref() == Some(verdict) {
            return;
        }
        match verdict {
            Ok(()) => tracing::info!("readiness: ready"),
            Err(why) => tracing::warn!(%why, "readiness: not ready"),
        }
        *last = Some(verdict.clone());
    }
}

/// Answers probes on `listener` for the session `config` will describe once
/// the start-up checks have read it, until the process ends. Bound before
/// those checks: the kubelet probes a container as soon as it starts, and a
/// probe refused then would leave a fresh session unready for a whole probe
/// period after its browser is up; a probe that arrives early is held.
pub async fn serve(
    listener: TcpListener,
    config: watch::Receiver<Option<RuntimeConfig>>,
    tally: Arc<Tally>,
    control: Arc<Control>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let last = Arc::new(LastVerdict::default());
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors and the like: try again shortly.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let (config, last, tally, control) = (config.clone(), last.clone(), tally.clone(), control.clone());
        tokio::spawn(async move {
            answer(stream, config, &last, &tally, &control).await;
            drop(slot);
        });
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `GET /readyz` (any query string, any headers).
    Readiness,
    /// `GET /egress`.
    EgressReport,
    /// `GET /export`.
    ExportStatus,
    /// `POST /suspend`, with the bearer token it presented and the body
    /// bytes still to read (bounded).
    Suspend {
        /// The token after `Authorization: Bearer `.
        bearer: Option<Vec<u8>>,
        /// Body bytes announced and not yet read, at most [`DISCARD_MAX`].
        unread: usize,
    },
    /// `POST /resume`: the document is its body, read once it is admitted.
    Resume(ResumeRequest),
    /// Anything else that ended its head.
    Other,
}

/// Reads a request head: `None` when the client sent none in time, closed
/// early or sent more than [`REQUEST_HEAD_MAX`] bytes without ending it.
async fn read_head(stream: &mut TcpStream) -> Option<Request> {
    let mut head = [0u8; REQUEST_HEAD_MAX];
    let mut filled = 0;
    let complete = tokio::time::timeout(READ_WITHIN, async {
        while filled < head.len() {
            match stream.read(&mut head[filled..]).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => filled += n,
            }
            if head[..filled].windows(4).any(|w| w == b"\r\n\r\n") {
                return true;
            }
        }
        false
    })
    .await;
    complete.unwrap_or(false).then(|| classify(&head[..filled]))
}

/// The value of header `name` (lower case) in a request head.
fn header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(head.len());
    head[..end].split(|b| *b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|b| *b == b':')?;
        line[..colon].eq_ignore_ascii_case(name).then(|| line[colon + 1..].trim_ascii())
    })
}

fn classify(head: &[u8]) -> Request {
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let path_of = |method: &[u8]| {
        let target = line.strip_prefix(method).and_then(|rest| rest.split(|b| *b == b' ').next());
        target.unwrap_or_default().split(|b| *b == b'?').next().unwrap_or_default()
    };
    let post = path_of(b"POST ");
    if post == SUSPEND_PATH.as_bytes() || post == RESUME_PATH.as_bytes() {
        let length = body::length(header(head, b"content-length"), header(head, b"transfer-encoding"));
        let body_start = head.windows(4).position(|w| w == b"\r\n\r\n").map_or(head.len(), |at| at + 4);
        let bearer = header(head, b"authorization").and_then(bearer).map(<[u8]>::to_vec);
        if post == RESUME_PATH.as_bytes() {
            return Request::Resume(ResumeRequest { bearer, length, received: head[body_start..].to_vec() });
        }
        let announced = match length {
            body::Length::Announced(n) => n,
            _ => 0,
        };
        let unread = announced.saturating_sub(head.len() - body_start).min(DISCARD_MAX);
        return Request::Suspend { bearer, unread };
    }
    let path = path_of(b"GET ");
    if path == READINESS_PATH.as_bytes() {
        Request::Readiness
    } else if path == EGRESS_REPORT_PATH.as_bytes() {
        Request::EgressReport
    } else if path == EXPORT_STATUS_PATH.as_bytes() {
        Request::ExportStatus
    } else {
        Request::Other
    }
}

/// The verdict for the session once its configuration is known, waiting
/// for both up to [`probe::startup_wait`].
async fn verdict(config: &mut watch::Receiver<Option<RuntimeConfig>>) -> Result<(), String> {
    let started = Instant::now();
    let wait = probe::startup_wait();
    let config = match tokio::time::timeout(wait, config.wait_for(Option::is_some)).await {
        Ok(Ok(config)) => config.clone(),
        _ => None,
    };
    match config {
        Some(config) => probe::check_waiting(&config, wait.saturating_sub(started.elapsed())).await,
        None => Err("the runtime is still checking its configuration".to_owned()),
    }
}

async fn answer(
    mut stream: TcpStream,
    mut config: watch::Receiver<Option<RuntimeConfig>>,
    last: &LastVerdict,
    tally: &Tally,
    control: &Control,
) {
    let Some(request) = read_head(&mut stream).await else { return };
    let (status, body) = match request {
        Request::Suspend { bearer, unread } => {
            body::discard(&mut stream, unread, READ_WITHIN).await;
            let known = config.borrow().clone();
            let answer = control.suspend(bearer.as_deref(), known).await;
            write_answer(&mut stream, &answer, WRITE_DOCUMENT_WITHIN).await;
            return;
        }
        Request::Resume(request) => {
            let known = config.borrow().clone();
            let answer = control.resume(request, &mut stream, known).await;
            write_answer(&mut stream, &answer, WRITE_WITHIN).await;
            return;
        }
        Request::Other => ("404 Not Found", String::new()),
        Request::EgressReport => ("200 OK", serde_json::to_string(&tally.report()).unwrap_or_default()),
        Request::ExportStatus => {
            let output_dir = config.borrow().as_ref().map(|c| PathBuf::from(&c.output_dir));
            match output_dir.and_then(|dir| export_status(&dir)) {
                Some(status) => ("200 OK", serde_json::to_string(&status).unwrap_or_default()),
                None => ("404 Not Found", String::new()),
            }
        }
        Request::Readiness => {
            let verdict = verdict(&mut config).await;
            last.note(&verdict);
            (if verdict.is_ok() { "200 OK" } else { "503 Service Unavailable" }, String::new())
        }
    };
    let headers = if body.is_empty() { "" } else { "Content-Type: application/json\r\n" };
    write_answer(&mut stream, &Answer { status, headers, body: body.into_bytes() }, WRITE_WITHIN).await;
}

async fn write_answer(stream: &mut TcpStream, answer: &Answer, within: Duration) {
    let Answer { status, headers, body } = answer;
    let mut response =
        format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len())
            .into_bytes();
    response.extend_from_slice(body);
    let _ = tokio::time::timeout(within, stream.write_all(&response)).await;
    let _ = tokio::time::timeout(WRITE_WITHIN, stream.shutdown()).await;
}

/// The exporter's last status in the CLI's output directory, bounded: the
/// exporter shares the volume with the browser, so the file is the Pod's
/// word, and the operator bounds it again.
fn export_status(output_dir: &Path) -> Option<ExportStatus> {
    use std::io::Read as _;
    let path = recording::dir(output_dir).join(EXPORT_STATE_DIR).join(EXPORT_STATUS_FILE);
    let mut bytes = Vec::new();
    let file = std::fs::File::open(path).ok()?;
    file.take(MAX_STATUS_BYTES as u64 + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() > MAX_STATUS_BYTES {
        return None;
    }
    serde_json::from_slice::<ExportStatus>(&bytes).ok().map(ExportStatus::bounded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::expose::control::body::Length;
    use std::net::Ipv4Addr;
    use std::os::unix::net::UnixListener;

    async fn ask(addr: SocketAddr, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn no_control() -> Arc<Control> {
        Arc::new(super::super::control::tests::control("/nonexistent/control-token"))
    }

    const PROBE: &[u8] = b"GET /readyz HTTP/1.1\r\nHost: 10.0.0.5:9321\r\nUser-Agent: kube-probe/1.35\r\n\r\n";

    /// A session whose daemon socket `tmp/cli/...-demo.sock` may be bound,
    /// already past its first pass (so a failure answers at once).
    fn session(tmp: &std::path::Path) -> RuntimeConfig {
        std::fs::create_dir_all(tmp.join("s/cli")).unwrap();
        std::fs::write(tmp.join(probe::PASSED_FILE), b"").unwrap();
        let mut config = crate::config::tests::sample();
        config.sockets_dir = tmp.join("s").display().to_string();
        config.viewer_port = None;
        config
    }

    async fn serving(config: RuntimeConfig) -> SocketAddr {
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (_, known) = watch::channel(Some(config));
        tokio::spawn(serve(listener, known, Arc::default(), no_control()));
        addr
    }

    #[tokio::test]
    async fn a_probe_before_the_configuration_is_read_is_held_and_answered_when_ready() {
        let tmp = tempfile::tempdir().unwrap();
        let config = session(tmp.path());
        let _daemon = UnixListener::bind(tmp.path().join("s/cli/0123456789abcdef-demo.sock")).unwrap();
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tell, known) = watch::channel(None);
        tokio::spawn(serve(listener, known, Arc::default(), no_control()));
        let started = Instant::now();
        let early = tokio::spawn(ask(addr, PROBE));
        tokio::time::sleep(Duration::from_millis(300)).await;
        tell.send(Some(config)).unwrap();
        let answer = early.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(started.elapsed() >= Duration::from_millis(250), "it was held until the configuration was known");
        drop(tell);
    }

    #[tokio::test]
    async fn without_a_configuration_in_time_the_answer_is_not_ready() {
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (_tell, known) = watch::channel(None);
        tokio::spawn(serve(listener, known, Arc::default(), no_control()));
        let answer = ask(addr, PROBE).await;
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    }

    #[tokio::test]
    async fn answers_200_when_ready_and_503_when_not_with_nothing_else_said() {
        let tmp = tempfile::tempdir().unwrap();
        let addr = serving(session(tmp.path())).await;
        let answer = ask(addr, PROBE).await;
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        assert!(answer.ends_with("Content-Length: 0\r\nConnection: close\r\n\r\n"), "no reason leaks: {answer}");
        let _daemon = UnixListener::bind(tmp.path().join("s/cli/0123456789abcdef-demo.sock")).unwrap();
        let answer = ask(addr, PROBE).await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(ask(addr, b"GET /readyz?x=1 HTTP/1.0\r\n\r\n").await.starts_with("HTTP/1.1 200 "));
    }

    #[test]
    fn a_suspend_request_carries_its_bearer_and_a_bounded_body_to_read() {
        let head = b"POST /suspend HTTP/1.1\r\nHost: x\r\nauthorization: Bearer t0k\r\nContent-Length: 7\r\n\r\n{}";
        assert_eq!(classify(head), Request::Suspend { bearer: Some(b"t0k".to_vec()), unread: 5 });
        let huge = b"POST /suspend?x HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n";
        assert_eq!(classify(huge), Request::Suspend { bearer: None, unread: DISCARD_MAX });
        assert_eq!(classify(b"GET /suspend HTTP/1.1\r\n\r\n"), Request::Other, "only POST");
        assert_eq!(classify(b"POST /readyz HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n"), Request::Other);
    }

    #[test]
    fn a_resume_request_keeps_its_length_and_the_body_bytes_that_came_with_the_head() {
        let resume = |head: &[u8]| match classify(head) {
            Request::Resume(request) => request,
            other => panic!("{other:?}"),
        };
        let got = resume(b"POST /resume HTTP/1.1\r\nAuthorization: Bearer t0k\r\nContent-Length: 7\r\n\r\n{\"a\"");
        assert_eq!(
            got,
            ResumeRequest { bearer: Some(b"t0k".to_vec()), length: Length::Announced(7), received: b"{\"a\"".to_vec() }
        );
        assert_eq!(resume(b"POST /resume HTTP/1.1\r\n\r\n").length, Length::Missing);
        let chunked = resume(b"POST /resume HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(chunked.length, Length::Missing);
        assert_eq!(resume(b"POST /resume HTTP/1.1\r\nContent-Length: -5\r\n\r\n").length, Length::Malformed);
        let huge = resume(b"POST /resume?x HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n");
        assert_eq!((huge.length, huge.bearer), (Length::Announced(99_999_999), None));
        assert_eq!(classify(b"GET /resume HTTP/1.1\r\n\r\n"), Request::Other, "only POST");
    }

    #[tokio::test]
    async fn resume_refuses_a_missing_or_oversized_length_unread_and_quotes_no_garbage() {
        let tmp = tempfile::tempdir().unwrap();
        let token = tmp.path().join("control-token");
        std::fs::write(&token, b"right\n").unwrap();
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (_tell, known) = watch::channel(Some(session(tmp.path())));
        tokio::spawn(serve(listener, known, Arc::default(), Arc::new(super::super::control::tests::control(&token))));
        let auth = "Authorization: Bearer right\r\n";
        let answer =
            ask(addr, format!("POST /resume HTTP/1.1\r\n{auth}Content-Length: 9999999\r\n\r\n").as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
        let answer = ask(addr, format!("POST /resume HTTP/1.1\r\n{auth}\r\n").as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 411 "), "{answer}");
        let answer = ask(addr, b"POST /resume HTTP/1.1\r\nContent-Length: 9999999\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 401 "), "the token before anything else: {answer}");
        let garbage = r#"{"format":1,"capturedAtMs":"s3ssion-cookie"}"#;
        let post = format!("POST /resume HTTP/1.1\r\n{auth}Content-Length: {}\r\n\r\n{garbage}", garbage.len());
        let answer = ask(addr, post.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 400 ") && answer.contains("Cache-Control: no-store"), "{answer}");
        assert!(answer.contains("expected u64") && !answer.contains("s3ssion"), "{answer}");
        // A whole document and no daemon: the step is named, nothing else.
        let doc = String::from_utf8(playpen_api::suspend::SuspendedState::new(1).to_bytes()).unwrap();
        let post = format!("POST /resume HTTP/1.1\r\n{auth}Content-Length: {}\r\n\r\n{doc}", doc.len());
        let answer = ask(addr, post.as_bytes()).await;
        assert!(answer.ends_with(r#"{"error":"the reopen failed","step":"find-daemon"}"#), "{answer}");
    }

    #[tokio::test]
    async fn suspend_without_a_token_file_is_404_and_with_a_wrong_token_401() {
        let tmp = tempfile::tempdir().unwrap();
        let token = tmp.path().join("control-token");
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (_tell, known) = watch::channel(Some(session(tmp.path())));
        tokio::spawn(serve(listener, known, Arc::default(), Arc::new(super::super::control::tests::control(&token))));
        let post = |auth: &str| format!("POST /suspend HTTP/1.1\r\n{auth}Content-Length: 2\r\n\r\n{{}}");
        let answer = ask(addr, post("Authorization: Bearer right\r\n").as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 404 "), "{answer}");
        std::fs::write(&token, b"right\n").unwrap();
        for auth in ["", "Authorization: Bearer wrong\r\n", "Authorization: Basic right\r\n"] {
            let answer = ask(addr, post(auth).as_bytes()).await;
            assert!(answer.starts_with("HTTP/1.1 401 ") && answer.ends_with("\r\n\r\n"), "{answer}");
        }
        // The right token and no daemon: the step is named, nothing else.
        let answer = ask(addr, post("Authorization: Bearer right\r\n").as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 503 ") && answer.contains("Cache-Control: no-store"), "{answer}");
        assert!(answer.ends_with(r#"{"error":"the capture failed","step":"find-daemon"}"#), "{answer}");
    }

    #[tokio::test]
    async fn other_requests_learn_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let config = session(tmp.path());
        let _daemon = UnixListener::bind(tmp.path().join("s/cli/0123456789abcdef-demo.sock")).unwrap();
        let addr = serving(config).await;
        for request in
            [&b"GET / HTTP/1.1\r\n\r\n"[..], b"POST /readyz HTTP/1.1\r\n\r\n", b"GET /readyzz HTTP/1.1\r\n\r\n"]
        {
            let answer = ask(addr, request).await;
            assert!(answer.starts_with("HTTP/1.1 404 "), "{answer}");
        }
        // No end of the head within the size bound: closed unanswered.
        let mut long = b"GET /readyz HTTP/1.1\r\nX: ".to_vec();
        long.resize(REQUEST_HEAD_MAX + 10, b'a');
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let _ = stream.write_all(&long).await;
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    }

    #[tokio::test]
    async fn the_exporters_status_is_answered_bounded_and_404_before_it_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let mut config = session(tmp.path());
        config.output_dir = tmp.path().join("out").display().to_string();
        let state = tmp.path().join("out/recordings").join(EXPORT_STATE_DIR);
        let addr = serving(config).await;
        let ask_export = || ask(addr, b"GET /export HTTP/1.1\r\n\r\n");
        assert!(ask_export().await.starts_with("HTTP/1.1 404 "), "no status yet");
        std::fs::create_dir_all(&state).unwrap();
        let written = ExportStatus {
            destination: "s3://rec/a/".into(),
            objects: 3,
            last_error: Some(format!("\u{1b}[31m{}", "e".repeat(5000))),
            ..ExportStatus::default()
        };
        std::fs::write(state.join(EXPORT_STATUS_FILE), serde_json::to_vec(&written).unwrap()).unwrap();
        let answer = ask_export().await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        let body: ExportStatus = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!((body.destination.as_str(), body.objects), ("s3://rec/a/", 3));
        assert!(!body.last_error.unwrap().contains('\u{1b}'), "cut to its bounds before it leaves");
        // A file past the bound, or not a status, is not answered.
        std::fs::write(state.join(EXPORT_STATUS_FILE), vec![b' '; MAX_STATUS_BYTES + 1]).unwrap();
        assert!(ask_export().await.starts_with("HTTP/1.1 404 "));
        std::fs::write(state.join(EXPORT_STATUS_FILE), b"[1,").unwrap();
        assert!(ask_export().await.starts_with("HTTP/1.1 404 "));
    }

    #[tokio::test]
    async fn silent_clients_hold_only_their_slots_and_the_kubelet_still_gets_an_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let config = session(tmp.path());
        let _daemon = UnixListener::bind(tmp.path().join("s/cli/0123456789abcdef-demo.sock")).unwrap();
        let addr = serving(config).await;
        // Every slot held by a client that never sends a request.
        let mut silent = Vec::new();
        for _ in 0..MAX_CONNECTIONS + 3 {
            silent.push(TcpStream::connect(addr).await.unwrap());
        }
        let started = Instant::now();
        let answer = loop {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(PROBE).await.unwrap();
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer).await;
            if !answer.is_empty() {
                break answer;
            }
            assert!(started.elapsed() < READ_WITHIN * 3, "the silent clients were never cut off");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(started.elapsed() >= READ_WITHIN / 2, "the slots were full until the silent clients timed out");
    }

    #[tokio::test]
    async fn the_egress_report_is_json_and_answered_before_the_configuration_is_known() {
        let listener = bind_at(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let (_tell, known) = watch::channel(None);
        tokio::spawn(serve(listener, known, Arc::default(), no_control()));
        let answer = ask(addr, b"GET /egress HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.contains("Content-Type: application/json\r\n"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let report: playpen_api::egress_report::EgressReport = serde_json::from_str(body).unwrap();
        assert_eq!(report, playpen_api::egress_report::EgressReport::default());
    }

    #[test]
    fn a_taken_port_is_a_fatal_error_that_names_the_address() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let err = runtime.block_on(async { bind_at(addr).unwrap_err() });
        assert_eq!(err.reason(), "ReadinessPortTaken");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
