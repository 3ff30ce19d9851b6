//! A reconcile's report: the session's status (written whole when it
//! changed), the Events that need a human's attention, and a pooled
//! session's announcement of where its browser came from.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use std::time::Duration;

use kube::Resource;
use playpen_api::naming::MANAGER;
use playpen_api::v1alpha1::{condition, BrowserSessionStatus, SandboxMode};
use playpen_api::BrowserSession;
use serde::Serialize;
use serde_json::json;

use super::plan::Plan;
use super::read::{PoolAnswer, Read};
use crate::children::Identity;
use crate::claim::outcome::{self, ClaimResult};
use crate::claim::{Pooled, Refusal};
use crate::context::{key, Context};
use crate::error::{Error, Result};
use crate::own_writes::Key;
use crate::recovery::Recovery;
use crate::status::{self, Observed};

/// How often a session waiting on an empty pool looks again without being
/// woken: the wake-up is a ready pool Pod ([`crate::claim::wake`]); this covers
/// what does not wake it (the pool's `whenEmpty` changed, a missed event).
const WAITING_REQUEUE: Duration = Duration::from_secs(30);

/// The status of a session that runs a browser: what the cluster reports,
/// and for a pooled session where its browser came from (the claim's time
/// stays what the first status said).
pub(super) fn status(
    ctx: &Context,
    bs: &BrowserSession,
    read: &Read,
    (session, id): (&BrowserSession, &Identity),
    observed: Observed<'_>,
    now: Timestamp,
) -> BrowserSessionStatus {
    let mut new = status::compute(session, id, observed, &ctx.settings.egress, now);
    if let (Some(pooled), Some(pool_ref)) = (read.pool.pooled(), &bs.spec.pool) {
        new.pool = bs.status.as_ref().and_then(|s| s.pool.clone());
        status::pool::record_source(&mut new, &pool_ref.name, &pooled.source, &pooled.template, now);
    }
    new
}

/// The status and the Events it brings, at once, unless the first status
/// yields to a burst (`deferred`).
pub(super) async fn write_with_events(
    ctx: &Context,
    bs: &BrowserSession,
    id: &Identity,
    new: &BrowserSessionStatus,
    deferred: bool,
) -> Result<()> {
    if deferred {
        return Ok(());
    }
    let ((), written) = futures::join!(publish_events(ctx, bs, new), write_status(ctx, bs, id, new.clone()));
    written
}

/// After the status: a first status that waits for a burst is remembered
/// (and looked at again in [`crate::burst::RETRY`]); the reconcile that
/// chose a pooled session's browser announces it (a later one, even with a
/// cache that has not seen this status yet, finds it already there).
pub(super) async fn finish(ctx: &Context, bs: &BrowserSession, pool: &PoolAnswer, deferred: bool, now: Timestamp) {
    if deferred {
        ctx.burst.defer(bs.meta().uid.as_deref().unwrap_or_default());
    } else if let (Some(pooled), Some(pool_ref)) = (pool.pooled().filter(|p| p.decided), &bs.spec.pool) {
        announce_source(ctx, bs, &pool_ref.name, pooled, now).await;
    }
    ctx.failures.clear(&key(bs));
}

/// A pooled session without a browser: waiting for one, or refused.
pub(super) async fn without_browser(
    ctx: &Context,
    bs: &BrowserSession,
    own: &Identity,
    plan: Plan,
    pool: &PoolAnswer,
    now: Timestamp,
) -> Result<Action> {
    match (plan, pool, &bs.spec.pool) {
        (Plan::Refuse, PoolAnswer::Refused(refusal), _) => refuse(ctx, bs, own, refusal, now).await,
        (Plan::Wait, PoolAnswer::Placed(pooled), Some(pool_ref)) => wait(ctx, bs, &pool_ref.name, pooled, now).await,
        // Not reached: every other plan runs a browser.
        _ => Ok(Action::requeue(WAITING_REQUEUE)),
    }
}

/// A pooled session that cannot run: its status says why; the pool (not
/// watched from here) is looked for again soon.
async fn refuse(
    ctx: &Context,
    bs: &BrowserSession,
    id: &Identity,
    refusal: &Refusal,
    now: Timestamp,
) -> Result<Action> {
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    let mut new = status::compute(bs, id, observed, &ctx.settings.egress, now);
    let previous = bs.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
    status::pool::refuse(&mut new, refusal, &previous, now);
    write_status(ctx, bs, id, new).await?;
    Ok(Action::requeue(std::time::Duration::from_secs(10)))
}

/// A pooled session waiting for a ready Pod of its pool (`whenEmpty:
/// Wait`): no children yet (its NetworkPolicy comes with the claim), a
/// Pending status that names the pool, and a wake-up when a Pod of the
/// pool is ready ([`crate::claim::wake`]).
async fn wait(ctx: &Context, bs: &BrowserSession, pool: &str, pooled: &Pooled, now: Timestamp) -> Result<Action> {
    let observed = Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: None, export: None };
    let mut new = status::compute(&pooled.session, &pooled.id, observed, &ctx.settings.egress, now);
    status::pool::record_source(&mut new, pool, &pooled.source, &pooled.template, now);
    write_status(ctx, bs, &pooled.id, new).await?;
    ctx.failures.clear(&key(bs));
    Ok(Action::requeue(WAITING_REQUEUE))
}

/// A pooled session whose claim the API server refused a child (its
/// NetworkPolicy or viewer Service): its status says so, with no Pod yet
/// (a Pod the claim took meanwhile is found as the session's next time).
/// Returns the error to back off with (the status write's, if it failed).
pub(super) async fn refused_before_placing(
    ctx: &Context,
    bs: &BrowserSession,
    id: &Identity,
    error: Error,
    now: Timestamp,
) -> Error {
    let Some(refused) = error.refused_child() else { return error };
    let observed =
        Observed { missing: &[], pod: None, recovery: &Recovery::None, refused: Some(&refused), export: None };
    let mut new = status::compute(bs, id, observed, &ctx.settings.egress, now);
    // What it said of its pool stays.
    let previous = bs.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    new.conditions.extend(previous.iter().filter(|c| c.type_ == condition::POOL_CLAIMED).cloned());
    new.pool = bs.status.as_ref().and_then(|s| s.pool.clone());
    match write_status(ctx, bs, id, new).await {
        Ok(()) => error,
        Err(written) => written,
    }
}

/// Writes `new` as the session's status when it differs from the stored one.
pub(super) async fn write_status(
    ctx: &Context,
    bs: &BrowserSession,
    id: &Identity,
    new: BrowserSessionStatus,
) -> Result<()> {
    if bs.status.as_ref() == Some(&new) {
        return Ok(());
    }
    let api: Api<BrowserSession> = ctx.fence.writer(&ctx.client, &id.namespace)?;
    // The status is computed whole, so it is written whole: a JSON patch
    // replaces it (fields it no longer has go too) and costs the API
    // server less than a server-side apply, which merges per field.
    let patch: json_patch::Patch = serde_json::from_value(json!([{"op": "add", "path": "/status", "value": new}]))
        .map_err(|source| Error::Serialize { what: "a status patch", source })?;
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..PatchParams::default() };
    let uid = &id.owner.uid;
    let key = Key::status_of(bs);
    ctx.own.expect(&key, ctx.own.fingerprint(&as_reconciled(bs, Some(&new))));
    match api.patch_status(&id.name, &params, &Patch::Json::<()>(patch)).await {
        Ok(written) => {
            ctx.own.wrote(&key, written.meta().resource_version.as_deref());
            ctx.burst.forget(uid);
            Ok(())
        }
        Err(e) => {
            ctx.own.abandon(&key);
            Err(Error::kube("patch status", "BrowserSession", &id.namespace, &id.name)(e))
        }
    }
}

/// What a reconcile reads of a session but its resourceVersion (its spec
/// by generation): a watch event that shows what a status write made of
/// the session is that write's echo ([`crate::own_writes::OwnWrites::is_echo`]).
pub(crate) fn as_reconciled<'a>(
    bs: &'a BrowserSession,
    status: Option<&'a BrowserSessionStatus>,
) -> impl Serialize + 'a {
    let meta = bs.meta();
    (
        meta.generation,
        &meta.labels,
        &meta.annotations,
        &meta.finalizers,
        &meta.owner_references,
        &meta.deletion_timestamp,
        status,
    )
}

fn previous_condition<'a>(bs: &'a BrowserSession, type_: &str) -> Option<&'a Condition> {
    bs.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)
}

/// Events for what changed between the stored status and the new one:
/// what needs a human's attention. Not one per created Pod: the status says
/// which Pod and since when (and the Pod has its own Events), and in a burst
/// that Event was one write in seven.
async fn publish_events(ctx: &Context, bs: &BrowserSession, new: &BrowserSessionStatus) {
    if bs.spec.browser.sandbox == SandboxMode::Disabled && previous_condition(bs, condition::SANDBOX_ENFORCED).is_none()
    {
        let note = "Chromium's sandbox is disabled by spec.sandbox=Disabled".into();
        ctx.publish(bs, EventType::Warning, "SandboxDisabled", note).await;
    }
    // Uploads that start failing: once per failure (the condition keeps the store's latest answer).
    let exported = new.conditions.iter().find(|c| c.type_ == condition::RECORDINGS_EXPORTED);
    if let Some(c) = exported.filter(|c| c.reason == status::export::UPLOAD_FAILING) {
        let was_failing = previous_condition(bs, condition::RECORDINGS_EXPORTED)
            .is_some_and(|p| p.reason == status::export::UPLOAD_FAILING);
        if !was_failing {
            ctx.publish(bs, EventType::Warning, &c.reason, c.message.clone()).await;
        }
    }
    let resolved = new.conditions.iter().find(|c| c.type_ == condition::CONFIG_RESOLVED);
    if let Some(c) = resolved.filter(|c| c.status == "False") {
        let unchanged = previous_condition(bs, condition::CONFIG_RESOLVED).is_some_and(|p| p.message == c.message);
        if !unchanged {
            ctx.publish(bs, EventType::Warning, &c.reason, c.message.clone()).await;
        }
    }
}

/// The `Claimed` or `ColdStart` Event and the wait metric, once, when
/// `status.pool` first appears.
async fn announce_source(ctx: &Context, bs: &BrowserSession, pool: &str, pooled: &Pooled, now: Timestamp) {
    let before = bs.status.as_ref().and_then(|s| s.pool.as_ref());
    let Some(said) = outcome::announcement(before, pool, &pooled.source) else { return };
    if let Some(seconds) = outcome::waited(bs.meta().creation_timestamp.as_ref(), now) {
        ctx.metrics.session_placed(ClaimResult::of(&pooled.source).as_str(), seconds);
    }
    ctx.publish(bs, said.type_, said.reason, said.note).await;
}
