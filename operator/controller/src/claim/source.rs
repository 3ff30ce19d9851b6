//! What a pooled session's resolution decides (pure): where its browser
//! comes from, the template it runs, and why it cannot run. The status
//! reads these without touching the claim's I/O.

use k8s_openapi::api::core::v1::Pod;
use playpen_api::v1alpha1::{BrowserPool, BrowserSpec, WhenEmpty};
use playpen_api::BrowserSession;

use crate::error::Result;

/// How a pooled session got its browser.
#[derive(Debug, Clone)]
pub enum Source {
    /// A warm Pod taken from the pool (now the session's).
    Claimed(Box<Pod>),
    /// A cold start from the pool's template, and why.
    Cold {
        /// The condition reason.
        reason: ColdReason,
        /// The condition message.
        message: String,
    },
    /// None yet: the pool has no ready Pod and its `whenEmpty` is `Wait`.
    Waiting {
        /// Unclaimed Pods of the current template still starting.
        warming: usize,
    },
}

/// Why a pooled session starts cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdReason {
    /// The pool had no ready browser of its current template.
    PoolEmpty,
    /// The session brings what a warm browser cannot take.
    NeedsColdStart,
}

impl ColdReason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PoolEmpty => "PoolEmpty",
            Self::NeedsColdStart => "NeedsColdStart",
        }
    }
}

/// What a session finding no ready Pod in pool `pool` gets: a cold start,
/// or (`whenEmpty: Wait`) nothing yet.
pub fn when_none_ready(pool: &str, when_empty: WhenEmpty, warming: usize) -> Source {
    match when_empty {
        WhenEmpty::ColdStart => Source::Cold {
            reason: ColdReason::PoolEmpty,
            message: format!(
                "BrowserPool {pool:?} had no ready browser of its current template; this session started cold"
            ),
        },
        WhenEmpty::Wait => Source::Waiting { warming },
    }
}

/// The pool template a session's browser runs: the one recorded in
/// `status.pool` when its browser was placed, else (nothing placed yet, or
/// placed by an operator that kept no record) the pool's current one.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// Its hash (the pool Pods' template label).
    pub hash: String,
    /// The template.
    pub spec: BrowserSpec,
}

impl Template {
    /// The pool's current template.
    pub fn of(pool: &BrowserPool) -> Result<Self> {
        Ok(Self { hash: crate::pool::warm::template_hash(&pool.spec.template)?, spec: pool.spec.template.clone() })
    }

    /// The template recorded in the session's status for pool `pool`, if any.
    pub fn recorded(bs: &BrowserSession, pool: &str) -> Option<Self> {
        let placed = bs.status.as_ref()?.pool.as_ref().filter(|p| p.name == pool)?;
        Some(Self { hash: placed.template_hash.clone()?, spec: placed.template.clone()? })
    }
}

/// Why a pooled session cannot run at all (said in `ConfigResolved`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The BrowserPool does not exist.
    PoolNotFound(String),
    /// Fields the pool's template defines are set on the session.
    TemplateConflict(Vec<String>),
}

impl Refusal {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::PoolNotFound(_) => "PoolNotFound",
            Self::TemplateConflict(_) => "PoolTemplateConflict",
        }
    }

    /// The condition message: the field and the fix.
    pub fn message(&self) -> String {
        match self {
            Self::PoolNotFound(name) => format!(
                "spec.pool.name: no BrowserPool {name:?} in this namespace; create it or name an existing one \
                 (kubectl get browserpools)"
            ),
            Self::TemplateConflict(fields) => format!(
                "{} set on a session with spec.pool: the pool's template defines the browser; remove {} or drop \
                 spec.pool and name an image",
                fields.join(", "),
                if fields.len() == 1 { "it" } else { "them" }
            ),
        }
    }
}

/// Why a session placed before starts its new Pod cold: the pool no longer
/// runs (or no longer exists with) the template the session was placed with.
pub fn template_gone(pool: &str) -> String {
    format!(
        "BrowserPool {pool:?} no longer has browsers of the template this session was placed with (edited or \
         deleted since): its new Pod started cold from the template recorded in status.pool"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_pool_starts_the_session_cold_or_makes_it_wait_as_the_pool_says() {
        match when_none_ready("agents", WhenEmpty::ColdStart, 2) {
            Source::Cold { reason: ColdReason::PoolEmpty, message } => {
                assert!(message.starts_with("BrowserPool \"agents\" had no ready browser"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(when_none_ready("agents", WhenEmpty::Wait, 2), Source::Waiting { warming: 2 }));
        assert!(matches!(when_none_ready("agents", WhenEmpty::Wait, 0), Source::Waiting { warming: 0 }));
        assert_eq!(WhenEmpty::default(), WhenEmpty::ColdStart, "the default keeps the old behaviour");
    }
}
