//! What a session's reconcile read: the pool's answer and the facts its
//! plan is made from.

use k8s_openapi::api::core::v1::Pod;
use playpen_api::BrowserSession;

use super::plan::{Browser, Facts};
use crate::children::Identity;
use crate::claim::{Pooled, Refusal, Source};

/// What a pooled session's claim resolved.
#[derive(Debug)]
pub(super) enum PoolAnswer {
    /// Not pooled.
    Own,
    /// The pool cannot serve it.
    Refused(Refusal),
    /// Its browser (or its wait for one).
    Placed(Box<Pooled>),
}

impl PoolAnswer {
    pub(super) fn pooled(&self) -> Option<&Pooled> {
        match self {
            PoolAnswer::Placed(pooled) => Some(pooled),
            _ => None,
        }
    }

    pub(super) fn claimed_pod(&self) -> Option<&Pod> {
        match self.pooled().map(|p| &p.source) {
            Some(Source::Claimed(pod)) => Some(pod),
            _ => None,
        }
    }

    pub(super) fn browser(&self) -> Browser {
        match self {
            PoolAnswer::Own => Browser::Own,
            PoolAnswer::Refused(_) => Browser::Refused,
            PoolAnswer::Placed(pooled) => match pooled.source {
                Source::Waiting { .. } => Browser::Waiting,
                Source::Claimed(_) => Browser::Claimed { fresh: pooled.decided },
                Source::Cold { .. } => Browser::PooledCold,
            },
        }
    }
}

/// What a reconcile read: the facts its plan is made from, and what the
/// apply and the report need of them.
#[derive(Debug)]
pub(super) struct Read {
    pub(super) facts: Facts,
    pub(super) pool: PoolAnswer,
}

impl Read {
    /// The session as it runs (a pooled one: the effective spec) and the
    /// identity its children use.
    pub(super) fn session<'a>(
        &'a self,
        bs: &'a BrowserSession,
        own: &'a Identity,
    ) -> (&'a BrowserSession, &'a Identity) {
        self.pool.pooled().map_or((bs, own), |p| (&p.session, &p.id))
    }
}
