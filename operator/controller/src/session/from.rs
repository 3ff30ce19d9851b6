//! The first stage of a session started from a BrowserSnapshot
//! (`spec.from.snapshot`): until its status names a saved state, the
//! snapshot's pages are copied into the session's own `<session>-suspended`
//! Secret and the status says so; from then on the session resumes like a
//! suspended one ([`super::suspend`]), into its own Pod or a warm claim.
//!
//! The copy is the session's, not a reference to the snapshot's Secret: the
//! snapshot may be deleted the moment the copy exists, and the resume
//! deletes the copy once the tabs are back.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use playpen_api::layout::RESUME_STATE_FILE;
use playpen_api::naming::MANAGER;
use playpen_api::v1alpha1::{BrowserSnapshot, SnapshotPhase};
use playpen_api::BrowserSession;

use super::report;
use crate::children::suspend::suspended_state_secret;
use crate::children::Identity;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::recovery::Recovery;
use crate::status::from::{self, Waiting};
use crate::status::{self, Observed};

/// How soon a session waiting for its snapshot looks again.
const WAIT_LOOK: Duration = Duration::from_secs(5);
/// How soon a session that can never start from its snapshot looks again
/// (the snapshot may be deleted and taken again under the same name).
const FAILED_LOOK: Duration = Duration::from_secs(60);

/// The snapshot's pages copied, or why not.
enum Outcome {
    Copied { bytes: i64, tabs: i32 },
    Waits(Waiting),
}

/// Copies the snapshot's pages for a session started from one that has not
/// been yet; `Some` ends this reconcile (its status says what happened).
pub(super) async fn seed(ctx: &Context, bs: &BrowserSession, own: &Identity, now: Timestamp) -> Result<Option<Action>> {
    let Some(from) = &bs.spec.from else { return Ok(None) };
    // Copied before (then resumed, or suspended since): nothing to do.
    if bs.status.as_ref().is_some_and(|s| s.suspend.is_some()) {
        return Ok(None);
    }
    let outcome = copy(ctx, own, &from.snapshot).await?;
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    let mut new = status::compute(bs, own, observed, &ctx.settings.egress, now);
    let stored = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let look = match &outcome {
        Outcome::Copied { bytes, tabs } => {
            from::seeded(&mut new, &from.snapshot, &own.names.suspended_state, *bytes, *tabs, now);
            // The status write wakes the session; this is the fallback.
            WAIT_LOOK
        }
        Outcome::Waits(why) => {
            from::waiting(&mut new, why, &own.namespace, &from.snapshot, stored, now);
            if why.is_final() {
                FAILED_LOOK
            } else {
                WAIT_LOOK
            }
        }
    };
    report::write_status(ctx, bs, own, new).await?;
    Ok(Some(Action::requeue(look)))
}

/// Reads the snapshot and, when it is Ready, copies its document.
async fn copy(ctx: &Context, own: &Identity, name: &str) -> Result<Outcome> {
    let snapshots: Api<BrowserSnapshot> = Api::namespaced(ctx.client.clone(), &own.namespace);
    let snapshot =
        snapshots.get_opt(name).await.map_err(Error::kube("get", "BrowserSnapshot", &own.namespace, name))?;
    let Some(status) = snapshot.map(|s| s.status.unwrap_or_default()) else {
        return Ok(Outcome::Waits(Waiting::NotFound));
    };
    let secret_name = match (status.phase, status.state_secret) {
        (Some(SnapshotPhase::Ready), Some(secret)) => secret,
        (Some(SnapshotPhase::Failed), _) => return Ok(Outcome::Waits(Waiting::Failed)),
        (phase, _) => return Ok(Outcome::Waits(Waiting::NotReady(phase.map(|p| format!("{p:?}"))))),
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &own.namespace);
    let stored =
        secrets.get_opt(&secret_name).await.map_err(Error::kube("get", "Secret", &own.namespace, &secret_name))?;
    let Some(document) = stored.and_then(|s| s.data).and_then(|mut d| d.remove(RESUME_STATE_FILE)) else {
        return Ok(Outcome::Waits(Waiting::BytesMissing(secret_name)));
    };
    let bytes = i64::try_from(document.0.len()).unwrap_or(i64::MAX);
    let writer = ctx.fence.writer::<Secret>(&ctx.client, &own.namespace)?;
    let copy = suspended_state_secret(own, document.0);
    writer
        .patch(&own.names.suspended_state, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&copy))
        .await
        .map_err(Error::kube("apply", "Secret", &own.namespace, &own.names.suspended_state))?;
    Ok(Outcome::Copied { bytes, tabs: status.tabs.unwrap_or_default() })
}
