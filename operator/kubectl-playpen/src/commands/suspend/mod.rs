//! `kubectl playpen suspend NAME` and `resume NAME`: set `spec.suspended`
//! with a JSON merge patch, then (`--wait`) watch `status.phase` until the
//! operator has got there (docs/suspend-resume.md). The patch is all the
//! command asks; parking and bringing back the browser is the operator's.

pub mod patch;
pub mod wait;

use crate::cli::SuspendArgs;
use crate::connect::Cluster;
use crate::error::Result;

/// Which way: `suspend` or `resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// `spec.suspended: true`, waited for until `Suspended`.
    Suspend,
    /// `spec.suspended: false`, waited for until `Ready`.
    Resume,
}

impl Want {
    /// The value of `spec.suspended` asked for.
    pub fn suspended(self) -> bool {
        self == Self::Suspend
    }

    /// The command's name.
    pub fn verb(self) -> &'static str {
        match self {
            Self::Suspend => "suspend",
            Self::Resume => "resume",
        }
    }

    /// The phase that means done (a resumed session is simply Ready again).
    pub fn goal(self) -> &'static str {
        match self {
            Self::Suspend => "Suspended",
            Self::Resume => "Ready",
        }
    }
}

/// The merge patch: `spec.suspended` alone, so no other field is read or
/// written (no read-modify-write race with whoever edits the rest).
pub fn body(want: Want) -> serde_json::Value {
    serde_json::json!({"spec": {"suspended": want.suspended()}})
}

/// The line saying what was asked; `already` when `spec.suspended` was
/// already the value asked for (patched all the same: idempotent).
pub fn requested(ns: &str, name: &str, want: Want, already: bool) -> String {
    let value = want.suspended();
    let how = if already {
        format!("spec.suspended was already {value}: patched again, no change")
    } else {
        format!("spec.suspended: {value}")
    };
    format!("browsersession.playpen.dev/{name} {} requested in namespace {ns} ({how})", want.verb())
}

/// How to follow the session without `--wait`.
pub fn follow_hint(ns: &str, name: &str) -> String {
    format!("follow it: kubectl get browsersession {name} -n {ns} -w")
}

/// Runs `suspend` or `resume`.
pub async fn run(cluster: &Cluster, args: SuspendArgs, want: Want) -> Result<()> {
    let ns = cluster.namespace.as_str();
    // Read first only to say whether the patch changes anything; the patch
    // is sent either way.
    let before = patch::get(cluster, &args.name).await?;
    let already = patch::suspended(&before) == want.suspended();
    let after = patch::send(cluster, &args.name, want).await?;
    let requested = requested(ns, &args.name, want, already);
    let Some(timeout) = args.wait else {
        println!("{requested}; {}", follow_hint(ns, &args.name));
        return Ok(());
    };
    println!("{requested}; waiting up to {timeout:?} for phase {}", want.goal());
    let mut waiter = wait::Waiter::new(want, ns, &args.name, after.metadata.generation);
    wait::until(cluster, &args.name, &mut waiter, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_sets_spec_suspended_and_nothing_else() {
        assert_eq!(body(Want::Suspend).to_string(), r#"{"spec":{"suspended":true}}"#);
        assert_eq!(body(Want::Resume).to_string(), r#"{"spec":{"suspended":false}}"#);
    }

    #[test]
    fn each_way_has_its_goal() {
        assert_eq!(
            (Want::Suspend.verb(), Want::Suspend.goal(), Want::Suspend.suspended()),
            ("suspend", "Suspended", true)
        );
        assert_eq!((Want::Resume.verb(), Want::Resume.goal(), Want::Resume.suspended()), ("resume", "Ready", false));
    }

    #[test]
    fn the_line_says_what_was_asked_and_whether_it_was_so_already() {
        assert_eq!(
            requested("team-a", "demo", Want::Suspend, false),
            "browsersession.playpen.dev/demo suspend requested in namespace team-a (spec.suspended: true)"
        );
        assert_eq!(
            requested("team-a", "demo", Want::Resume, true),
            "browsersession.playpen.dev/demo resume requested in namespace team-a \
             (spec.suspended was already false: patched again, no change)"
        );
        assert_eq!(follow_hint("team-a", "demo"), "follow it: kubectl get browsersession demo -n team-a -w");
    }
}
