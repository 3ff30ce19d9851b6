//! `suspend --wait` and `resume --wait`: watch the session's `status.phase`
//! until it is the goal (`Suspended`, or `Ready` again), printing each
//! phase seen. The phase is read as the string the operator wrote (see
//! `patch.rs` for why not the typed `Phase`); the decision on what a status
//! means is [`Waiter::see`], pure, and the watch around it is thin.

use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;

use super::{patch, Want};
use crate::commands::new::wait::watch_error;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::output::untrusted;

/// What one status says, as far as waiting is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// `status.phase`, `None` before the operator wrote one.
    pub phase: Option<String>,
    /// `status.observedGeneration`: the spec the status describes.
    pub observed_generation: Option<i64>,
    /// The Ready condition, worded `Ready=False (Reason) message`.
    pub ready: Option<String>,
}

impl Observed {
    /// Reads the status of a BrowserSession's JSON (`data` of a DynamicObject).
    pub fn of(data: &Value) -> Self {
        let status = data.get("status");
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let ready = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|all| all.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready")))
            .map(|c| {
                let reason = text(c, "reason");
                let message = text(c, "message");
                let reason = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
                let message = if message.is_empty() { String::new() } else { format!(" {message}") };
                format!("Ready={}{reason}{message}", text(c, "status"))
            });
        Self {
            phase: status.and_then(|s| s.get("phase")).and_then(Value::as_str).map(str::to_owned),
            observed_generation: status.and_then(|s| s.get("observedGeneration")).and_then(Value::as_i64),
            ready,
        }
    }
}

/// What to do after a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The goal phase, for the spec as patched: done.
    Reached,
    /// Failed or Completed: it will not get there; why.
    Ended(String),
    /// Keep watching.
    Waiting,
}

/// The wait's memory: the goal, the generation the patch made, and the
/// last status seen (for phase changes and the timeout message).
#[derive(Debug, Clone)]
pub struct Waiter {
    want: Want,
    session: String,
    namespace: String,
    generation: Option<i64>,
    last: Option<Observed>,
}

impl Waiter {
    /// Waits for `want` on `ns/name`, whose patch left `metadata.generation` at `generation`.
    pub fn new(want: Want, ns: &str, name: &str, generation: Option<i64>) -> Self {
        Self { want, session: name.to_owned(), namespace: ns.to_owned(), generation, last: None }
    }

    /// Whether `seen` describes the spec as patched. A status written
    /// before the operator saw the patch says nothing about it: the old
    /// `Ready` is not a resume, nor an old `Failed` the end of one. Without
    /// both generations there is nothing to compare: trusted.
    fn current(&self, seen: &Observed) -> bool {
        match (self.generation, seen.observed_generation) {
            (Some(patched), Some(observed)) => observed >= patched,
            _ => true,
        }
    }

    /// Takes one status: the line to print when the phase changed, and what to do.
    pub fn see(&mut self, seen: Observed) -> (Option<String>, Step) {
        let (ns, name) = (&self.namespace, &self.session);
        let previous = self.last.as_ref().and_then(|l| l.phase.clone());
        let line = match &seen.phase {
            Some(phase) if previous.as_ref() != Some(phase) => Some(format!("BrowserSession {ns}/{name} is {phase}")),
            _ => None,
        };
        let step = match seen.phase.as_deref() {
            _ if !self.current(&seen) => Step::Waiting,
            Some(goal) if goal == self.want.goal() => Step::Reached,
            Some(phase @ ("Failed" | "Completed")) => {
                let why = seen.ready.as_deref().unwrap_or("its status has no Ready condition");
                Step::Ended(format!(
                    "BrowserSession {ns}/{name} is {phase}, not {}, after the {} request: {why}",
                    self.want.goal(),
                    self.want.verb()
                ))
            }
            _ => Step::Waiting,
        };
        self.last = Some(seen);
        (line, step)
    }

    /// Why waiting stopped after `timeout`: the last phase seen, its Ready
    /// condition, and whether the operator had acted on the patch at all.
    pub fn timeout_message(&self, timeout: Duration) -> String {
        let (ns, name) = (&self.namespace, &self.session);
        let head =
            format!("timed out after {timeout:?} waiting for BrowserSession {ns}/{name} to be {}", self.want.goal());
        let Some(last) = &self.last else {
            return format!("{head}: no status of it was seen");
        };
        let Some(phase) = &last.phase else {
            return format!(
                "{head}: it has no phase yet (no status): is the Playpen operator running and watching namespace {ns}?"
            );
        };
        let ready = last.ready.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
        let stale = match (self.generation, last.observed_generation) {
            (Some(patched), Some(observed)) if observed < patched => format!(
                "; the operator has not acted on the {} yet (status.observedGeneration {observed} < \
                 metadata.generation {patched}): is it running, and a version with suspend?",
                self.want.verb()
            ),
            _ => String::new(),
        };
        format!("{head}: its last phase was {phase}{ready}{stale}")
    }
}

/// Watches session `name` until `waiter` says it got there, printing each
/// phase; an end, a deletion or the timeout is the error.
pub async fn until(cluster: &Cluster, name: &str, waiter: &mut Waiter, timeout: Duration) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(patch::api(cluster, ns), config).default_backoff().boxed();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let event = match tokio::time::timeout_at(deadline, events.next()).await {
            Err(_) => return Err(Error::Timeout(waiter.timeout_message(timeout))),
            Ok(None) => return Err(Error::Timeout(format!("the watch on BrowserSession {ns}/{name} ended"))),
            Ok(Some(event)) => event,
        };
        let object = match event {
            Ok(Event::Apply(o) | Event::InitApply(o)) => o,
            Ok(Event::Delete(_)) => {
                return Err(Error::SessionFailed(format!("BrowserSession {ns}/{name} was deleted while waiting")))
            }
            Ok(Event::Init | Event::InitDone) => continue,
            Err(e) => match watch_error(e, ns, name) {
                Some(fatal) => return Err(fatal),
                None => continue,
            },
        };
        let (line, step) = waiter.see(Observed::of(&object.data));
        if let Some(line) = line {
            println!("{}", untrusted(&line, false));
        }
        match step {
            Step::Reached => return Ok(()),
            Step::Ended(why) => return Err(Error::SessionFailed(why)),
            Step::Waiting => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seen(phase: &str, generation: i64) -> Observed {
        Observed { phase: Some(phase.to_owned()), observed_generation: Some(generation), ready: None }
    }

    /// Feeds `statuses` in order: the lines printed and the last step.
    fn run(want: Want, generation: Option<i64>, statuses: Vec<Observed>) -> (Vec<String>, Step) {
        let mut waiter = Waiter::new(want, "team-a", "demo", generation);
        let mut lines = Vec::new();
        let mut step = Step::Waiting;
        for status in statuses {
            let (line, next) = waiter.see(status);
            lines.extend(line);
            step = next;
            if step != Step::Waiting {
                break;
            }
        }
        (lines, step)
    }

    #[test]
    fn the_status_is_read_from_json_whatever_the_phase() {
        let data = json!({"status": {
            "phase": "Suspending", "observedGeneration": 4,
            "conditions": [
                {"type": "BrowserReady", "status": "True", "reason": "Ready", "message": "no"},
                {"type": "Ready", "status": "False", "reason": "Suspending", "message": "taking a snapshot"},
            ],
        }});
        assert_eq!(
            Observed::of(&data),
            Observed {
                phase: Some("Suspending".into()),
                observed_generation: Some(4),
                ready: Some("Ready=False (Suspending) taking a snapshot".into()),
            }
        );
        assert_eq!(Observed::of(&json!({"spec": {}})), Observed::default());
        let bare = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(Observed::of(&bare).ready.as_deref(), Some("Ready=Unknown"));
    }

    #[test]
    fn suspend_prints_each_phase_once_until_suspended() {
        let (lines, step) = run(
            Want::Suspend,
            Some(2),
            vec![seen("Ready", 1), seen("Suspending", 2), seen("Suspending", 2), seen("Suspended", 2)],
        );
        assert_eq!(step, Step::Reached);
        assert_eq!(
            lines,
            [
                "BrowserSession team-a/demo is Ready",
                "BrowserSession team-a/demo is Suspending",
                "BrowserSession team-a/demo is Suspended"
            ]
        );
    }

    #[test]
    fn resume_ends_at_ready_and_a_ready_from_before_the_patch_does_not_count() {
        let (lines, step) = run(
            Want::Resume,
            Some(5),
            vec![seen("Ready", 4), seen("Suspended", 5), seen("Resuming", 5), seen("Ready", 5)],
        );
        assert_eq!(step, Step::Reached);
        assert_eq!(lines.len(), 4, "{lines:?}");
        let (_, step) = run(Want::Resume, Some(5), vec![seen("Ready", 4)]);
        assert_eq!(step, Step::Waiting, "the operator has not seen the patch yet");
    }

    #[test]
    fn already_there_is_done_at_once_and_no_generations_are_trusted() {
        assert_eq!(run(Want::Suspend, Some(3), vec![seen("Suspended", 3)]).1, Step::Reached);
        let no_generation = Observed { phase: Some("Ready".into()), ..Observed::default() };
        assert_eq!(run(Want::Resume, None, vec![no_generation.clone()]).1, Step::Reached);
        assert_eq!(run(Want::Resume, Some(2), vec![no_generation]).1, Step::Reached);
        assert_eq!(run(Want::Suspend, Some(3), vec![Observed::default()]), (vec![], Step::Waiting));
    }

    #[test]
    fn failed_ends_with_the_ready_condition() {
        let failed = Observed {
            ready: Some("Ready=False (SnapshotFailed) runsc checkpoint: exit status 1".into()),
            ..seen("Failed", 7)
        };
        let (lines, step) = run(Want::Suspend, Some(7), vec![seen("Suspending", 7), failed]);
        assert_eq!(lines.last().map(String::as_str), Some("BrowserSession team-a/demo is Failed"));
        assert_eq!(
            step,
            Step::Ended(
                "BrowserSession team-a/demo is Failed, not Suspended, after the suspend request: \
                 Ready=False (SnapshotFailed) runsc checkpoint: exit status 1"
                    .into()
            )
        );
        let (_, step) = run(Want::Resume, Some(7), vec![seen("Completed", 7)]);
        assert_eq!(
            step,
            Step::Ended(
                "BrowserSession team-a/demo is Completed, not Ready, after the resume request: \
                 its status has no Ready condition"
                    .into()
            )
        );
        assert_eq!(run(Want::Resume, Some(8), vec![seen("Failed", 7)]).1, Step::Waiting, "a failure from before");
    }

    #[test]
    fn timeouts_say_how_long_and_the_last_phase() {
        let t = Duration::from_secs(120);
        let mut waiter = Waiter::new(Want::Suspend, "team-a", "demo", Some(3));
        assert_eq!(
            waiter.timeout_message(t),
            "timed out after 120s waiting for BrowserSession team-a/demo to be Suspended: no status of it was seen"
        );
        waiter.see(Observed::default());
        assert!(waiter.timeout_message(t).ends_with(
            "it has no phase yet (no status): is the Playpen operator running and watching namespace team-a?"
        ));
        waiter.see(Observed {
            ready: Some("Ready=False (Suspending) taking a snapshot".into()),
            ..seen("Suspending", 3)
        });
        assert_eq!(
            waiter.timeout_message(t),
            "timed out after 120s waiting for BrowserSession team-a/demo to be Suspended: its last phase was \
             Suspending (Ready=False (Suspending) taking a snapshot)"
        );
        waiter.see(seen("Ready", 2));
        assert_eq!(
            waiter.timeout_message(Duration::from_secs(5)),
            "timed out after 5s waiting for BrowserSession team-a/demo to be Suspended: its last phase was Ready; \
             the operator has not acted on the suspend yet (status.observedGeneration 2 < metadata.generation 3): \
             is it running, and a version with suspend?"
        );
    }
}
