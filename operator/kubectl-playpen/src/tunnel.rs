//! A local TCP listener on 127.0.0.1 whose every accepted connection gets a
//! port-forward stream of its own: a dropped connection or a failed stream
//! ends that connection only, and the listener serves until told to stop.
//! The Pod is looked up again for each connection, so a replaced Pod is
//! reached by the next one.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachedProcess, Portforwarder};
use playpen_api::BrowserSession;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;
use crate::sessions;
use crate::via::{self, Duplex, Via};

/// Opens one stream to the remote end per local connection.
pub trait Connector: Send + Sync + 'static {
    /// The stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// A new stream, or why there is none.
    fn connect(&self) -> impl Future<Output = Result<Self::Stream>> + Send;
}

/// A bound listener and what its connections reach.
#[derive(Debug)]
pub struct Tunnel<C> {
    listener: TcpListener,
    connector: Arc<C>,
}

impl<C: Connector> Tunnel<C> {
    /// Listens on 127.0.0.1:`port` (0: a free port).
    pub async fn bind(port: u16, connector: C) -> Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(Error::io(format!("listening on 127.0.0.1:{port}")))?;
        Ok(Self { listener, connector: Arc::new(connector) })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(Error::io("reading the listener's address"))
    }

    /// Serves connections until `stop` completes; then drops the open ones.
    pub async fn serve_until(self, stop: impl Future<Output = ()>) {
        let mut connections = JoinSet::new();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        let connector = self.connector.clone();
                        connections.spawn(async move {
                            if let Err(e) = relay(socket, connector.as_ref()).await {
                                eprintln!("connection from {peer}: {e}");
                            }
                        });
                    }
                    // EMFILE and the like: this connection only.
                    Err(e) => eprintln!("accepting a connection: {e}"),
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        connections.abort_all();
    }
}

/// Copies both ways until the remote end is done. A client's half-close is
/// not passed on: kube-rs ends the whole port-forward stream when its local
/// side reaches EOF, which would cut off a response still on its way.
async fn relay<C: Connector>(socket: tokio::net::TcpStream, connector: &C) -> Result<()> {
    let remote = connector.connect().await?;
    let (mut local_read, mut local_write) = socket.into_split();
    let (mut remote_read, mut remote_write) = tokio::io::split(remote);
    let upstream = async {
        match tokio::io::copy(&mut local_read, &mut remote_write).await {
            // EOF: the client may still be reading; the remote end decides when it is over.
            Ok(_) => std::future::pending().await,
            Err(e) => e,
        }
    };
    let downstream = async {
        let copied = tokio::io::copy(&mut remote_read, &mut local_write).await;
        let _ = local_write.shutdown().await;
        copied
    };
    let failed = tokio::select! {
        e = upstream => Some(e),
        copied = downstream => copied.err(),
    };
    match failed {
        None => Ok(()),
        // The browser or the remote end hung up: normal for HTTP and WebSockets.
        Some(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe) => Ok(()),
        Some(e) => Err(Error::Io { what: "relaying".into(), source: e }),
    }
}

/// A stream to the Pod's port that keeps what carries it (the port-forward,
/// or the exec of the relay) alive as long as it is used.
pub struct Forwarded {
    stream: Pin<Box<dyn Duplex>>,
    _carrier: Carrier,
}

/// What carries a [`Forwarded`] stream: held, never read.
enum Carrier {
    PortForward { _forwarder: Portforwarder },
    Exec { _relay: AttachedProcess },
}

impl std::fmt::Debug for Forwarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarded").finish_non_exhaustive()
    }
}

impl AsyncRead for Forwarded {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        self.stream.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for Forwarded {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.stream.as_mut().poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.stream.as_mut().poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.stream.as_mut().poll_shutdown(cx)
    }
}

/// Which port of the session's Pod: the viewer's or the CDP one.
pub type PortOf = fn(&BrowserSession) -> Result<u16>;

/// Port-forwards to a port of a session's current Pod.
#[derive(Debug)]
pub struct SessionPort {
    cluster: Cluster,
    name: String,
    port_of: PortOf,
    via: Via,
    last: Mutex<Option<(String, u16)>>,
}

/// A bound tunnel to one of a session's pinned ports, and what it reaches.
#[derive(Debug)]
pub struct SessionTunnel {
    /// The session as read when the tunnel opened.
    pub session: BrowserSession,
    /// Its Pod then.
    pub pod: String,
    /// The pinned port in the Pod.
    pub port: u16,
    /// How its connections reach the port.
    pub via: Via,
    /// The local listener.
    pub tunnel: Tunnel<SessionPort>,
}

impl SessionTunnel {
    /// Reads session `name`, settles how to reach its Pod (`via`), checks the
    /// caller may (so a missing right fails now, not on the first
    /// connection) and binds 127.0.0.1:`local_port`.
    pub async fn open(cluster: &Cluster, name: &str, port_of: PortOf, local_port: u16, via: Via) -> Result<Self> {
        let session = sessions::get(cluster, name).await?;
        let port = port_of(&session)?;
        let pod = sessions::pod_name(&session);
        let via = via::resolve(cluster, &pod, via).await;
        forbidden::check_access(&cluster.client, &via::rights(via, &cluster.namespace)).await?;
        let connector = SessionPort::new(cluster.clone(), name, port_of, pod.clone(), port, via);
        let tunnel = Tunnel::bind(local_port, connector).await?;
        Ok(Self { session, pod, port, via, tunnel })
    }
}

impl SessionPort {
    /// For session `name`, resolved already to `pod` and `port`, reached `via`
    /// (resolved: not `Auto`).
    pub fn new(cluster: Cluster, name: &str, port_of: PortOf, pod: String, port: u16, via: Via) -> Self {
        Self { cluster, name: name.to_owned(), port_of, via, last: Mutex::new(Some((pod, port))) }
    }

    /// The session's Pod and port now; the last known ones if the session
    /// cannot be read for a moment.
    async fn resolve(&self) -> Result<(String, u16)> {
        let fresh = match sessions::get(&self.cluster, &self.name).await {
            Ok(session) => (self.port_of)(&session).map(|port| (sessions::pod_name(&session), port)),
            Err(e) => Err(e),
        };
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match fresh {
            Ok(now) => {
                if let Some(before) = last.as_ref() {
                    if before.0 != now.0 {
                        eprintln!("the session's Pod is now {} (was {}): new connections go there", now.0, before.0);
                    }
                }
                *last = Some(now.clone());
                Ok(now)
            }
            Err(e @ (Error::SessionNotFound { .. } | Error::Forbidden(_) | Error::Unavailable(_))) => Err(e),
            Err(e) => last.clone().ok_or(e),
        }
    }
}

impl Connector for SessionPort {
    type Stream = Forwarded;

    async fn connect(&self) -> Result<Forwarded> {
        let (pod, port) = self.resolve().await?;
        if self.via == Via::Exec {
            let (stream, process) = via::exec_stream(&self.cluster, &pod, port).await?;
            return Ok(Forwarded { stream, _carrier: Carrier::Exec { _relay: process } });
        }
        let ns = self.cluster.namespace.as_str();
        let pods: Api<Pod> = Api::namespaced(self.cluster.client.clone(), ns);
        let mut forwarder = pods.portforward(&pod, &[port]).await.map_err(|e| {
            forbidden::kube_error(
                e,
                &Attempt::pods("get", Some("portforward"), ns),
                format!("port-forward to {ns}/{pod}:{port}"),
            )
        })?;
        let stream = forwarder
            .take_stream(port)
            .ok_or_else(|| Error::Remote(format!("port-forward to {pod}:{port} gave no stream")))?;
        if let Some(error) = forwarder.take_error(port) {
            tokio::spawn(async move {
                if let Some(message) = error.await {
                    eprintln!("port-forward to {pod}:{port}: {}", crate::output::untrusted(&message, false));
                }
            });
        }
        Ok(Forwarded { stream: Box::pin(stream), _carrier: Carrier::PortForward { _forwarder: forwarder } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::net::TcpStream;

    /// Fails the first connection, hangs up on the second, echoes after that.
    #[derive(Debug, Default)]
    struct Flaky {
        calls: AtomicU32,
    }

    impl Connector for Flaky {
        type Stream = DuplexStream;
        async fn connect(&self) -> Result<DuplexStream> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if call == 0 {
                return Err(Error::Remote("the stream failed".into()));
            }
            let (ours, mut theirs) = tokio::io::duplex(1024);
            if call == 1 {
                drop(theirs);
                return Ok(ours);
            }
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = theirs.read(&mut buf).await {
                    if n == 0 || theirs.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            Ok(ours)
        }
    }

    async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
        let mut out = Vec::new();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut out)).await;
        out
    }

    #[tokio::test]
    async fn failed_and_dropped_streams_end_only_their_connection() {
        let tunnel = Tunnel::bind(0, Flaky::default()).await.unwrap();
        let addr = tunnel.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(tunnel.serve_until(async {
            let _ = stop_rx.await;
        }));

        // 1: the stream cannot be opened: the connection closes, nothing else.
        let mut first = TcpStream::connect(addr).await.unwrap();
        assert!(read_all(&mut first).await.is_empty());
        // 2: the remote end hangs up at once.
        let mut second = TcpStream::connect(addr).await.unwrap();
        assert!(read_all(&mut second).await.is_empty());
        // 3 and 4: served, concurrently, each on its own stream.
        let mut third = TcpStream::connect(addr).await.unwrap();
        let mut fourth = TcpStream::connect(addr).await.unwrap();
        third.write_all(b"ping").await.unwrap();
        fourth.write_all(b"pong").await.unwrap();
        let mut buf = [0u8; 4];
        third.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        fourth.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
        // A client that goes away mid-stream does not end the server either.
        drop(third);
        let mut fifth = TcpStream::connect(addr).await.unwrap();
        fifth.write_all(b"again").await.unwrap();
        let mut buf = [0u8; 5];
        fifth.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"again");

        stop_tx.send(()).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), server).await.unwrap().unwrap();
        // Stopped: open connections are dropped and the port is closed.
        assert!(read_all(&mut fourth).await.is_empty());
        assert!(TcpStream::connect(addr).await.is_err());
    }

    /// Like a kube-rs port-forward: EOF from the local side ends the stream
    /// at once; answers come a moment after the request.
    #[derive(Debug, Default)]
    struct SlowAnswer;

    impl Connector for SlowAnswer {
        type Stream = DuplexStream;
        async fn connect(&self) -> Result<DuplexStream> {
            let (ours, theirs) = tokio::io::duplex(1024);
            tokio::spawn(async move {
                let (mut read, mut write) = tokio::io::split(theirs);
                let mut buf = [0u8; 64];
                loop {
                    match read.read(&mut buf).await {
                        Ok(0) | Err(_) => return, // EOF: the whole stream is gone
                        Ok(n) => {
                            let answer = buf[..n].to_vec();
                            let mut peek = [0u8; 1];
                            tokio::select! {
                                // an EOF before the answer is ready cuts it off
                                r = read.read(&mut peek) => if matches!(r, Ok(0) | Err(_)) { return },
                                () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
                            }
                            if write.write_all(&answer).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
            Ok(ours)
        }
    }

    #[tokio::test]
    async fn a_clients_half_close_does_not_cut_off_the_answer() {
        let tunnel = Tunnel::bind(0, SlowAnswer).await.unwrap();
        let addr = tunnel.local_addr().unwrap();
        let server = tokio::spawn(tunnel.serve_until(std::future::pending()));
        let mut client = TcpStream::connect(addr).await.unwrap();
        client.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
        client.shutdown().await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            let mut buf = [0u8; 64];
            while answer.len() < 18 {
                match client.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => answer.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(answer, b"GET / HTTP/1.0\r\n\r\n");
        server.abort();
    }

    #[tokio::test]
    async fn a_taken_port_is_a_clear_error() {
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = Tunnel::bind(port, Flaky::default()).await.unwrap_err().to_string();
        assert!(err.starts_with(&format!("listening on 127.0.0.1:{port}: ")), "{err}");
    }
}
