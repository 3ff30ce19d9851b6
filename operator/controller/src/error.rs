//! The operator's typed errors. `anyhow` is used only in `main`.

/// A child the API server refused to take (see [`Error::refused_child`]);
/// the status names it (`crate::status`). Here, not there: the status
/// module reads the validation phase, whose errors are these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Its kind.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The API server's message.
    pub message: String,
}

/// Result with the operator's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reconciling.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("{action} {kind} {namespace}/{name}: {source}")]
    Kube {
        /// What we tried to do (apply, get, patch status...).
        action: &'static str,
        /// Object kind.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Object name.
        name: String,
        /// The client error (boxed: it is large and errors are rare).
        #[source]
        source: Box<kube::Error>,
    },
    /// The object lacks metadata the API server always sets.
    #[error("BrowserSession is missing metadata.{0}")]
    MissingMetadata(&'static str),
    /// A BrowserPool lacks metadata the API server always sets.
    #[error("BrowserPool is missing metadata.{0}")]
    MissingPoolMetadata(&'static str),
    /// Serialising a child object failed (a bug).
    #[error("serialising {what}: {source}")]
    Serialize {
        /// What was being serialised.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The spec cannot be turned into children (admission should have refused it).
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// This replica's leadership term ended (or never began): it may not write.
    #[error("not writing: this replica does not hold the leader Lease (its term ended)")]
    NotLeader,
    /// The reconcile of this object panicked (a bug): caught, so that one
    /// object cannot stop the operator for every other session.
    #[error("reconcile panicked (a bug in playpen-operator; please report it): {0}")]
    Panicked(String),
}

impl Error {
    /// The error a failed API call `action` on `kind` `namespace/name` becomes
    /// (for `map_err`).
    pub fn kube(
        action: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> impl Fn(kube::Error) -> Error {
        let (namespace, name) = (namespace.to_owned(), name.to_owned());
        move |source| Error::Kube {
            action,
            kind,
            namespace: namespace.clone(),
            name: name.clone(),
            source: Box::new(source),
        }
    }

    /// The API server's refusal of a child this error is, if it is one: a
    /// write answered 400, 403 (a ResourceQuota, RBAC) or 422 (an admission
    /// policy), which retrying as is will not fix until someone changes the
    /// cluster. Conflicts, missing objects and transport errors are not.
    pub fn refused_child(&self) -> Option<Refused> {
        let Self::Kube { action, kind, name, source, .. } = self else { return None };
        let kube::Error::Api(status) = source.as_ref() else { return None };
        let writes = !matches!(*action, "get" | "list");
        (writes && matches!(status.code, 400 | 403 | 422)).then(|| Refused {
            kind,
            name: name.clone(),
            message: status.message.clone(),
        })
    }

    /// A short label for the failure counter.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Kube { action, .. } => action,
            Self::MissingMetadata(_) | Self::MissingPoolMetadata(_) => "missing_metadata",
            Self::Serialize { .. } => "serialize",
            Self::InvalidSpec(_) => "invalid_spec",
            Self::Panicked(_) => "panic",
            Self::NotLeader => "not_leader",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(action: &'static str, code: u16) -> Error {
        let status: kube::core::Status =
            serde_json::from_value(serde_json::json!({"code": code, "message": format!("said with {code}")}))
                .expect("status");
        Error::kube(action, "NetworkPolicy", "ns", "s-isolate")(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn only_a_lasting_refusal_of_a_write_is_a_refused_child() {
        for code in [400, 403, 422] {
            let refused = api_error("apply", code).refused_child().expect("refused");
            assert_eq!((refused.kind, refused.name.as_str()), ("NetworkPolicy", "s-isolate"));
            assert_eq!(refused.message, format!("said with {code}"));
        }
        for code in [404, 409, 429, 500, 503] {
            assert_eq!(api_error("apply", code).refused_child(), None, "{code} is not lasting");
        }
        assert_eq!(api_error("get", 403).refused_child(), None, "a read is not a child refused");
        assert_eq!(Error::NotLeader.refused_child(), None);
    }
}
