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

use kube::ResourceExt;

use crate::apply::{self, Target};
use crate::cache::applied::Verdict;
use crate::children;
use crate::error::Result;

/// One lock per namespace, held while its baseline is ensured.
#[derive(Debug, Default)]
pub struct Baselines(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl Baselines {
    /// Makes sure `to.namespace` has its baseline as built. `Ok(())`: it is
    /// there, as the cache shows or as the API server answered lately.
    pub async fn ensure(&self, to: Target<'_>) -> Result<()> {
        let stamped = apply::stamp(&children::baseline_policy(to.namespace))?;
        let (name, digest) = (stamped.name_any(), apply::digest_of(&stamped));
        let as_wanted = || to.cache.network_policies.look(to.namespace, &name, digest) == Verdict::AsWanted;
        if as_wanted() {
            return Ok(());
        }
        let lock = match self.0.lock() {
            Ok(mut locks) => locks.entry(to.namespace.to_owned()).or_default().clone(),
            Err(_) => Arc::default(),
        };
        let _turn = lock.lock().await;
        if as_wanted() {
            return Ok(());
        }
        apply::ensure(to, &stamped).await.map(drop)
    }
}
