//! RBAC as the API server states it: a request as RBAC sees it
//! ([`Attempt`]), a refused one ([`Forbidden`], worded with the role that
//! grants it and the `kubectl auth can-i` line that checks it), and the
//! parse of the server's denial message
//! (`<what> is forbidden: User "<u>" cannot <verb> resource "<res>[/<sub>]" in
//! API group "<group>" in the namespace "<ns>"`, or `at the cluster scope`).

use kube::core::Status;

/// One API request as RBAC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// RBAC verb: get, list, watch, create, ...
    pub verb: String,
    /// API group ("" for the core group).
    pub group: String,
    /// Resource, plural.
    pub resource: String,
    /// Subresource (exec, portforward, log), if any.
    pub subresource: Option<String>,
    /// Namespace; `None` for every namespace (cluster scope).
    pub namespace: Option<String>,
}

/// The API group of BrowserSessions.
pub const PLAYPEN_GROUP: &str = "playpen.dev";

impl Attempt {
    /// `verb` on BrowserSessions in `namespace` (`None`: all namespaces).
    pub fn sessions(verb: &str, namespace: Option<&str>) -> Self {
        Self {
            verb: verb.to_owned(),
            group: PLAYPEN_GROUP.to_owned(),
            resource: "browsersessions".to_owned(),
            subresource: None,
            namespace: namespace.map(str::to_owned),
        }
    }

    /// `verb` on BrowserSnapshots in `namespace` (`fork`).
    pub fn snapshots(verb: &str, namespace: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            group: PLAYPEN_GROUP.to_owned(),
            resource: "browsersnapshots".to_owned(),
            subresource: None,
            namespace: Some(namespace.to_owned()),
        }
    }

    /// `verb` on Pods (or a subresource of them) in `namespace`.
    pub fn pods(verb: &str, subresource: Option<&str>, namespace: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            group: String::new(),
            resource: "pods".to_owned(),
            subresource: subresource.map(str::to_owned),
            namespace: Some(namespace.to_owned()),
        }
    }

    /// `resource/subresource`, with the group appended to non-core resources
    /// (`browsersessions.playpen.dev`), as RBAC rules and kubectl name them.
    pub fn qualified_resource(&self) -> String {
        let resource =
            if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) };
        match &self.subresource {
            Some(sub) => format!("{resource}/{sub}"),
            None => resource,
        }
    }

    /// The Playpen role (from the chart) whose rules grant this request.
    pub fn granting_role(&self) -> &'static str {
        match (self.resource.as_str(), self.subresource.as_deref(), self.verb.as_str()) {
            ("browsersessions", None, "get" | "list" | "watch") => "playpen-viewer",
            ("browsersessions", _, _) => "playpen-admin",
            // Reading snapshots is driving (suspend and fork); taking one is managing.
            ("browsersnapshots", None, "get" | "list" | "watch") => "playpen-driver",
            ("pods" | "services", None, "get" | "list" | "watch") => "playpen-viewer",
            ("pods", Some("portforward"), _) => "playpen-viewer",
            ("pods", Some("exec" | "log"), _) => "playpen-driver",
            _ => "playpen-admin",
        }
    }

    /// The `kubectl auth can-i` line that checks this right. Subresources go
    /// in `--subresource` (`pods/exec` there would name a Pod called "exec").
    pub fn can_i(&self) -> String {
        let resource =
            if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) };
        let mut line = format!("kubectl auth can-i {} {resource}", self.verb);
        if let Some(sub) = &self.subresource {
            line.push_str(&format!(" --subresource={sub}"));
        }
        match &self.namespace {
            Some(ns) => line.push_str(&format!(" -n {ns}")),
            None => line.push_str(" --all-namespaces"),
        }
        line
    }
}

/// A request RBAC refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    /// What was refused.
    pub attempt: Attempt,
    /// The user the server named, when it did.
    pub user: Option<String>,
}

impl std::fmt::Display for Forbidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.attempt;
        let scope = match &a.namespace {
            Some(ns) => format!("in namespace \"{ns}\""),
            None => "in all namespaces (cluster scope)".to_owned(),
        };
        let who = match &self.user {
            Some(user) => format!("{user} may not"),
            None => "you may not".to_owned(),
        };
        let bind = match &a.namespace {
            Some(ns) => format!(" in \"{ns}\""),
            None => String::new(),
        };
        write!(
            f,
            "forbidden: {who} \"{}\" \"{}\" {scope} (ask your platform team for the {} role{bind}, or check: {})",
            a.verb,
            a.qualified_resource(),
            a.granting_role(),
            a.can_i()
        )
    }
}

/// The RBAC decision in an API server message, if the message is one.
pub fn parse_rbac_message(message: &str) -> Option<(Option<String>, Attempt)> {
    // ... is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "team-a"
    let (_, denial) = message.split_once(" is forbidden: ")?;
    let user = denial
        .strip_prefix("User \"")
        .and_then(|rest| rest.split_once('"'))
        .map(|(user, _)| user.to_owned())
        .filter(|u| !u.is_empty());
    let (_, after_cannot) = denial.split_once(" cannot ")?;
    let (verb, after_verb) = after_cannot.split_once(" resource \"")?;
    let (resource, scope) = after_verb.split_once('"')?;
    let group = scope.split_once("in API group \"").and_then(|(_, g)| g.split_once('"')).map(|(g, _)| g.to_owned());
    let namespace =
        scope.split_once("in the namespace \"").and_then(|(_, n)| n.split_once('"')).map(|(n, _)| n.to_owned());
    if verb.is_empty() || verb.contains(' ') || resource.is_empty() {
        return None;
    }
    if namespace.is_none() && !scope.contains("at the cluster scope") {
        return None;
    }
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r.to_owned(), Some(s.to_owned())),
        None => (resource.to_owned(), None),
    };
    Some((user, Attempt { verb: verb.to_owned(), group: group.unwrap_or_default(), resource, subresource, namespace }))
}

/// Whether `status` is a 403.
pub fn is_forbidden(status: &Status) -> bool {
    status.code == 403 || status.reason == "Forbidden"
}
