//! What each exporting session's exporter last reported, by session UID,
//! and the channel that wakes a session whose status should show a newer
//! report. The watch writes; a session's reconcile reads its own entry
//! into its status ([`crate::status::export`]).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use kube::runtime::reflector::ObjectRef;
use playpen_api::export_status::ExportStatus;
use playpen_api::BrowserSession;
use tokio::sync::broadcast;

/// Wake-ups buffered per controller; a controller that falls this far
/// behind misses some, and the next round sends them again (a session is
/// woken until its status shows its report).
const WAKES_BUFFERED: usize = 1024;

/// The reports, and the wake-ups for the session controllers.
#[derive(Debug)]
pub struct ExportBook {
    reports: Mutex<HashMap<String, ExportStatus>>,
    wakes: broadcast::Sender<ObjectRef<BrowserSession>>,
}

impl Default for ExportBook {
    fn default() -> Self {
        Self { reports: Mutex::default(), wakes: broadcast::channel(WAKES_BUFFERED).0 }
    }
}

impl ExportBook {
    /// The last report of the session with `uid`.
    pub fn get(&self, uid: &str) -> Option<ExportStatus> {
        self.reports.lock().ok()?.get(uid).cloned()
    }

    /// Keeps `report` as the session's last.
    pub fn put(&self, uid: &str, report: ExportStatus) {
        if let Ok(mut reports) = self.reports.lock() {
            reports.insert(uid.to_owned(), report);
        }
    }

    /// Forgets the sessions not in `uids`.
    pub fn retain(&self, uids: &HashSet<String>) {
        if let Ok(mut reports) = self.reports.lock() {
            reports.retain(|uid, _| uids.contains(uid));
        }
    }

    /// How many sessions have a report.
    pub fn len(&self) -> usize {
        self.reports.lock().map(|r| r.len()).unwrap_or_default()
    }

    /// Whether no session has one.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Asks the controllers to reconcile `session`.
    pub fn wake(&self, session: ObjectRef<BrowserSession>) {
        // No receiver (no controller runs yet): nothing to wake.
        let _ = self.wakes.send(session);
    }

    /// The wake-ups for the controller of `namespace` (`None`: every namespace).
    pub fn wakes_for(
        &self,
        namespace: Option<String>,
    ) -> impl futures::Stream<Item = ObjectRef<BrowserSession>> + Send + 'static {
        futures::stream::unfold(self.wakes.subscribe(), move |mut rx| {
            let namespace = namespace.clone();
            async move {
                loop {
                    match rx.recv().await {
                        Ok(session) if namespace.is_none() || session.namespace == namespace => {
                            return Some((session, rx));
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;

    #[tokio::test]
    async fn a_controller_is_woken_for_its_own_namespace_only() {
        let book = ExportBook::default();
        let mut team_a = Box::pin(book.wakes_for(Some("a".into())));
        let mut everyone = Box::pin(book.wakes_for(None));
        book.wake(ObjectRef::new("s1").within("b"));
        book.wake(ObjectRef::new("s2").within("a"));
        assert_eq!(team_a.next().await.map(|r| r.name), Some("s2".to_owned()), "b's session is not a's");
        assert_eq!(everyone.next().await.map(|r| r.name), Some("s1".to_owned()));
        assert_eq!(everyone.next().await.map(|r| r.name), Some("s2".to_owned()));
    }

    #[test]
    fn reports_are_kept_per_session_and_forgotten_with_it() {
        let book = ExportBook::default();
        book.put("u1", ExportStatus { objects: 1, ..ExportStatus::default() });
        book.put("u2", ExportStatus::default());
        assert_eq!(book.get("u1").map(|r| r.objects), Some(1));
        book.retain(&HashSet::from(["u2".to_owned()]));
        assert!(book.get("u1").is_none());
        assert_eq!(book.len(), 1);
    }
}
