//! What the viewer relay forwards to, shared between the relay and the
//! dashboard supervisor. The supervisor publishes the dashboard's state
//! ([`Upstream`]); the relay counts its open viewer connections
//! ([`Viewers`]). A counted connection is the demand: a stopped dashboard is
//! started when one appears, and stopped again once there has been none for
//! a while.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The dashboard, as the relay sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// Not running; the next viewer connection starts it.
    Stopped,
    /// Being started, or restarted after a crash.
    Starting,
    /// Serving on this loopback address.
    Serving(SocketAddr),
    /// The last start failed, for this reason; the next viewer connection tries again.
    Failed(String),
}

/// Why a viewer connection gets no dashboard: the text of its 503.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The start this connection waited for failed.
    #[error("the viewer's dashboard could not start ({0}); the runtime's log has its output. Retry to start it again")]
    StartFailed(String),
    /// Neither started nor failed within the wait.
    #[error("the viewer's dashboard is not up after {0:?} (starting or restarting); retry")]
    TimedOut(Duration),
    /// The supervisor is gone: the session is closing.
    #[error("the viewer's dashboard is stopped: the session is closing")]
    Closing,
}

/// Open viewer connections, and since when there has been none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewers {
    /// Connections counted now (each one a viewer's request or WebSocket).
    pub open: usize,
    /// When `open` last fell to 0 (or the relay started).
    pub none_since: Instant,
}

/// The relay's end: the dashboard's state and the viewer count.
#[derive(Debug, Clone)]
pub struct Dashboard {
    state: watch::Receiver<Upstream>,
    viewers: Arc<watch::Sender<Viewers>>,
}

/// The supervisor's end.
#[derive(Debug)]
pub struct Publisher {
    state: watch::Sender<Upstream>,
    /// Open viewer connections, watched for the start and the idle stop.
    pub viewers: watch::Receiver<Viewers>,
}

/// A connected pair, the dashboard stopped and no viewer open.
pub fn channel() -> (Publisher, Dashboard) {
    let (state_tx, state_rx) = watch::channel(Upstream::Stopped);
    let (viewers_tx, viewers_rx) = watch::channel(Viewers { open: 0, none_since: Instant::now() });
    (Publisher { state: state_tx, viewers: viewers_rx }, Dashboard { state: state_rx, viewers: Arc::new(viewers_tx) })
}

impl Publisher {
    /// Tells the relay (and connections waiting in it) what the dashboard does now.
    pub fn publish(&self, upstream: Upstream) {
        self.state.send_replace(upstream);
    }
}

/// A viewer connection, counted while it is open.
#[derive(Debug)]
pub struct ViewerConnection(Arc<watch::Sender<Viewers>>);

impl Drop for ViewerConnection {
    fn drop(&mut self) {
        self.0.send_modify(|v| {
            v.open -= 1;
            if v.open == 0 {
                v.none_since = Instant::now();
            }
        });
    }
}

impl Dashboard {
    /// Counts a viewer connection until the guard is dropped; the first one
    /// starts a stopped dashboard.
    pub fn viewer(&self) -> ViewerConnection {
        self.viewers.send_modify(|v| v.open += 1);
        ViewerConnection(self.viewers.clone())
    }

    /// What the dashboard does now.
    pub fn now(&self) -> Upstream {
        self.state.borrow().clone()
    }

    /// Whether a supervisor is there to start the dashboard.
    pub fn supervised(&self) -> bool {
        self.state.has_changed().is_ok()
    }

    /// The address to forward to: at once when the dashboard serves,
    /// otherwise once the start under way (or the next one) serves, at most
    /// `wait`. Call it with a [`ViewerConnection`] held: that is the demand.
    pub async fn upstream(&self, wait: Duration) -> Result<SocketAddr, Unavailable> {
        let mut state = self.state.clone();
        // Marked seen: a failure from before this connection arrived is not its answer.
        if let Upstream::Serving(addr) = *state.borrow_and_update() {
            return Ok(addr);
        }
        let outcome = async {
            loop {
                state.changed().await.map_err(|_| Unavailable::Closing)?;
                match &*state.borrow_and_update() {
                    Upstream::Serving(addr) => return Ok(*addr),
                    Upstream::Failed(why) => return Err(Unavailable::StartFailed(why.clone())),
                    Upstream::Stopped | Upstream::Starting => {}
                }
            }
        };
        tokio::time::timeout(wait, outcome).await.unwrap_or(Err(Unavailable::TimedOut(wait)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:4000".parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn viewers_are_counted_and_the_last_one_out_starts_the_idle_clock() {
        let (publisher, dashboard) = channel();
        let start = publisher.viewers.borrow().none_since;
        let a = dashboard.viewer();
        let b = dashboard.viewer();
        assert_eq!(publisher.viewers.borrow().open, 2);
        tokio::time::advance(Duration::from_secs(5)).await;
        drop(a);
        assert_eq!(*publisher.viewers.borrow(), Viewers { open: 1, none_since: start });
        tokio::time::advance(Duration::from_secs(5)).await;
        drop(b);
        assert_eq!(*publisher.viewers.borrow(), Viewers { open: 0, none_since: start + Duration::from_secs(10) });
    }

    #[tokio::test]
    async fn a_serving_dashboard_answers_at_once() {
        let (publisher, dashboard) = channel();
        publisher.publish(Upstream::Serving(addr()));
        assert_eq!(dashboard.upstream(Duration::ZERO).await, Ok(addr()));
    }

    #[tokio::test]
    async fn waiting_connections_get_the_start_they_waited_for() {
        let (publisher, dashboard) = channel();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let d = dashboard.clone();
                tokio::spawn(async move { d.upstream(Duration::from_secs(5)).await })
            })
            .collect();
        tokio::task::yield_now().await;
        publisher.publish(Upstream::Starting);
        publisher.publish(Upstream::Serving(addr()));
        for w in waiters {
            assert_eq!(w.await.unwrap(), Ok(addr()));
        }
    }

    #[tokio::test]
    async fn a_failure_before_the_connection_is_not_its_answer_but_a_new_one_is() {
        let (publisher, dashboard) = channel();
        publisher.publish(Upstream::Failed("old".into()));
        let d = dashboard.clone();
        let waiter = tokio::spawn(async move { d.upstream(Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "the old failure does not answer a new connection");
        publisher.publish(Upstream::Starting);
        publisher.publish(Upstream::Failed("no Listening line".into()));
        let answer = waiter.await.unwrap().unwrap_err();
        assert_eq!(answer, Unavailable::StartFailed("no Listening line".into()));
        assert!(answer.to_string().contains("could not start (no Listening line)"), "{answer}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_and_a_gone_supervisor_is_said_so() {
        let (publisher, dashboard) = channel();
        let wait = Duration::from_secs(60);
        assert_eq!(dashboard.upstream(wait).await, Err(Unavailable::TimedOut(wait)));
        assert!(dashboard.supervised());
        drop(publisher);
        assert!(!dashboard.supervised());
        assert_eq!(dashboard.upstream(wait).await, Err(Unavailable::Closing));
    }
}
