//! The namespaces' baseline NetworkPolicy ([`children::baseline_policy`]):
//! while it is in place a session's Pod is created at once with the policy
//! of its own, not after it, since the baseline isolates it meanwhile.
//!
//! Written once per namespace: in a burst the first sessions of a namespace
//! would otherwise all create it at once (one created, the rest refused and
//! read back). The reconciles that find it missing queue on one lock per
//! namespace; the first writes it, the others then find it answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::apply::{self, Target};
use crate::cache::applied::Verdict;
use crate::children;
use crate::error::Result;

/// Per namespace: its baseline as built and stamped (built once, not on
/// every reconcile), and the lock held while it is ensured.
#[derive(Debug, Default)]
pub struct Baselines(Mutex<HashMap<String, Arc<Namespace>>>);

#[derive(Debug)]
struct Namespace {
    stamped: NetworkPolicy,
    turn: tokio::sync::Mutex<()>,
}

impl Baselines {
    /// Makes sure `to.namespace` has its baseline as built. `Ok(())`: it is
    /// there, as the cache shows or as the API server answered lately.
    pub async fn ensure(&self, to: Target<'_>) -> Result<()> {
        let namespace = self.of(to.namespace)?;
        let stamped = &namespace.stamped;
        let digest = apply::digest_of(stamped);
        let as_wanted = || to.cache.network_policies.look(&stamped.metadata, digest) == Verdict::AsWanted;
        if as_wanted() {
            return Ok(());
        }
        let _turn = namespace.turn.lock().await;
        if as_wanted() {
            return Ok(());
        }
        apply::ensure(to, stamped).await.map(drop)
    }

    /// Forgets every namespace `keep` does not name (no session left in it).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut namespaces) = self.0.lock() {
            namespaces.retain(|ns, _| keep(ns));
        }
    }

    /// Namespaces remembered.
    pub fn len(&self) -> usize {
        self.0.lock().map(|n| n.len()).unwrap_or(0)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn of(&self, namespace: &str) -> Result<Arc<Namespace>> {
        let build = || -> Result<Arc<Namespace>> {
            let stamped = apply::stamp(&children::baseline_policy(namespace))?;
            Ok(Arc::new(Namespace { stamped, turn: tokio::sync::Mutex::new(()) }))
        };
        let Ok(mut namespaces) = self.0.lock() else { return build() };
        if let Some(known) = namespaces.get(namespace) {
            return Ok(known.clone());
        }
        let built = build()?;
        namespaces.insert(namespace.to_owned(), built.clone());
        Ok(built)
    }
}
