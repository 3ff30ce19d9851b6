//! A 403 from the API server, turned into the RBAC right that is missing, the
//! role that grants it, and the `kubectl auth can-i` line that checks it.
//!
//! The API server's RBAC denial reads
//! `<what> is forbidden: User "<u>" cannot <verb> resource "<res>[/<sub>]" in
//! API group "<group>" in the namespace "<ns>"` (or `at the cluster scope`).
//! When the message says so, it is the authority; otherwise (a refused
//! WebSocket upgrade has no body) the request the plugin made is.
//! A 403 that is not an RBAC decision (admission, quota, a terminating
//! namespace) is shown as the server worded it.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use kube::core::Status;
use kube::Client;

use crate::error::Error;

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
fn parse_rbac_message(message: &str) -> Option<(Option<String>, Attempt)> {
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

/// The error a 403 `status` for `attempt` becomes: the RBAC message when the
/// server's message is an RBAC denial, else the server's own words.
pub fn explain(status: &Status, attempt: &Attempt) -> Error {
    if let Some((user, parsed)) = parse_rbac_message(&status.message) {
        return Error::Forbidden(Box::new(Forbidden { attempt: parsed, user }));
    }
    if status.message.trim().is_empty() {
        return Error::Forbidden(Box::new(Forbidden { attempt: attempt.clone(), user: None }));
    }
    Error::Refused(status.message.clone())
}

/// The error a failed API call becomes: 403s through [`explain`], other
/// refusals as "`action`: the server's message", every other failure as
/// "`action`: error".
pub fn kube_error(err: kube::Error, attempt: &Attempt, action: impl Into<String>) -> Error {
    match &err {
        kube::Error::Api(status) if is_forbidden(status) => explain(status, attempt),
        kube::Error::Api(status) if !status.message.is_empty() => {
            Error::Api { action: action.into(), message: status.message.clone() }
        }
        kube::Error::UpgradeConnection(kube::client::UpgradeConnectionError::ProtocolSwitch(code))
            if code.as_u16() == 403 =>
        {
            Error::Forbidden(Box::new(Forbidden { attempt: attempt.clone(), user: None }))
        }
        _ => Error::Kube { action: action.into(), source: Box::new(err) },
    }
}

/// Asks the API server whether the caller may make each of `attempts`
/// (SelfSubjectAccessReview, which every authenticated user may create), so
/// a long-running command refuses at once instead of on its first
/// connection; the first one denied is the error. An unanswered review lets
/// the command go ahead: the requests themselves are checked anyway.
pub async fn check_access(client: &Client, attempts: &[Attempt]) -> Result<(), Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    for attempt in attempts {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(attempt.verb.clone()),
                    group: Some(attempt.group.clone()),
                    resource: Some(attempt.resource.clone()),
                    subresource: attempt.subresource.clone(),
                    namespace: attempt.namespace.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        if let Ok(answer) = api.create(&PostParams::default(), &review).await {
            if answer.status.as_ref().is_some_and(|s| !s.allowed) {
                return Err(Error::Forbidden(Box::new(Forbidden { attempt: attempt.clone(), user: None })));
            }
        }
    }
    Ok(())
}

/// What a port-forward over WebSockets needs: the upgrade is a GET, and API
/// servers with AuthorizePodWebsocketUpgradeCreatePermission also check "create".
pub fn port_forward_rights(namespace: &str) -> [Attempt; 2] {
    [Attempt::pods("get", Some("portforward"), namespace), Attempt::pods("create", Some("portforward"), namespace)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Status {
        Status { code, reason: reason.to_owned(), message: message.to_owned(), ..Status::failure("", "") }
    }

    fn forbidden(err: Error) -> Forbidden {
        match err {
            Error::Forbidden(f) => *f,
            other => panic!("not an RBAC error: {other:?}"),
        }
    }

    #[test]
    fn exec_denial_names_verb_subresource_namespace_role_and_can_i() {
        let s = status(
            403,
            "Forbidden",
            "pods \"demo-browser\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"team-a\"",
        );
        let err = explain(&s, &Attempt::sessions("get", Some("elsewhere")));
        let f = forbidden(err);
        assert_eq!(f.attempt, Attempt::pods("create", Some("exec"), "team-a"));
        assert_eq!(f.user.as_deref(), Some("alice"));
        assert_eq!(
            f.to_string(),
            "forbidden: alice may not \"create\" \"pods/exec\" in namespace \"team-a\" (ask your platform team for \
             the playpen-driver role in \"team-a\", or check: kubectl auth can-i create pods --subresource=exec -n team-a)"
        );
    }

    #[test]
    fn custom_resource_list_in_a_namespace() {
        let s = status(
            403,
            "Forbidden",
            "browsersessions.playpen.dev is forbidden: User \"someone\" cannot list resource \"browsersessions\" in API group \"playpen.dev\" in the namespace \"ns\"",
        );
        let f = forbidden(explain(&s, &Attempt::sessions("list", Some("ns"))));
        assert_eq!(f.attempt, Attempt::sessions("list", Some("ns")));
        let text = f.to_string();
        assert!(
            text.starts_with("forbidden: someone may not \"list\" \"browsersessions.playpen.dev\" in namespace \"ns\"")
        );
        assert!(text.contains("playpen-viewer role"), "{text}");
        assert!(text.ends_with("kubectl auth can-i list browsersessions.playpen.dev -n ns)"), "{text}");
    }

    #[test]
    fn cluster_scope_has_no_namespace() {
        let s = status(
            403,
            "Forbidden",
            "browsersessions.playpen.dev is forbidden: User \"bob\" cannot list resource \"browsersessions\" in API group \"playpen.dev\" at the cluster scope",
        );
        let f = forbidden(explain(&s, &Attempt::sessions("list", None)));
        assert_eq!(f.attempt.namespace, None);
        let text = f.to_string();
        assert!(text.contains("in all namespaces (cluster scope)"), "{text}");
        assert!(text.ends_with("kubectl auth can-i list browsersessions.playpen.dev --all-namespaces)"), "{text}");
    }

    #[test]
    fn service_account_users_and_log_and_portforward() {
        let s = status(
            403,
            "Forbidden",
            "pods \"x-browser\" is forbidden: User \"system:serviceaccount:team-a:agent\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"team-a\"",
        );
        let f = forbidden(explain(&s, &Attempt::pods("get", Some("log"), "team-a")));
        assert_eq!(f.user.as_deref(), Some("system:serviceaccount:team-a:agent"));
        assert_eq!(f.attempt.qualified_resource(), "pods/log");
        assert_eq!(f.attempt.granting_role(), "playpen-driver");
        assert_eq!(Attempt::pods("create", Some("portforward"), "n").granting_role(), "playpen-viewer");
        assert_eq!(Attempt::sessions("create", Some("n")).granting_role(), "playpen-admin");
        assert_eq!(Attempt::sessions("delete", Some("n")).granting_role(), "playpen-admin");
        assert_eq!(Attempt::sessions("watch", Some("n")).granting_role(), "playpen-viewer");
        assert_eq!(Attempt::pods("get", None, "n").granting_role(), "playpen-viewer");
        assert_eq!(Attempt::pods("delete", None, "n").granting_role(), "playpen-admin");
    }

    #[test]
    fn a_denial_without_a_body_falls_back_to_the_attempt() {
        let f = forbidden(explain(&status(403, "", ""), &Attempt::pods("create", Some("portforward"), "team-a")));
        assert_eq!(
            f.to_string(),
            "forbidden: you may not \"create\" \"pods/portforward\" in namespace \"team-a\" (ask your platform team \
             for the playpen-viewer role in \"team-a\", or check: kubectl auth can-i create pods \
             --subresource=portforward -n team-a)"
        );
    }

    #[test]
    fn non_rbac_forbidden_keeps_the_servers_words() {
        for message in [
            "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1",
            "browsersessions.playpen.dev \"x\" is forbidden: unable to create new content in namespace t because it is being terminated",
            "admission webhook \"x\" denied the request",
            "is forbidden: User \"u\" cannot do things",
        ] {
            match explain(&status(403, "Forbidden", message), &Attempt::sessions("create", Some("t"))) {
                Error::Refused(m) => assert_eq!(m, message),
                other => panic!("{message}: {other:?}"),
            }
        }
    }

    #[test]
    fn forbidden_is_recognised_by_code_or_reason() {
        assert!(is_forbidden(&status(403, "", "")));
        assert!(is_forbidden(&status(0, "Forbidden", "")));
        assert!(!is_forbidden(&status(404, "NotFound", "")));
        assert!(!is_forbidden(&status(401, "Unauthorized", "")));
    }

    #[test]
    fn kube_errors_other_than_403_keep_their_action() {
        let err = kube_error(
            kube::Error::Api(status(404, "NotFound", "nope").boxed()),
            &Attempt::sessions("get", Some("n")),
            "get BrowserSession n/x",
        );
        assert_eq!(err.to_string(), "get BrowserSession n/x: nope");
        let err = kube_error(
            kube::Error::Api(status(500, "", "").boxed()),
            &Attempt::sessions("get", Some("n")),
            "get BrowserSession n/x",
        );
        assert!(matches!(err, Error::Kube { ref action, .. } if action == "get BrowserSession n/x"), "{err:?}");
        let err = kube_error(
            kube::Error::Api(status(403, "Forbidden", "").boxed()),
            &Attempt::pods("create", Some("exec"), "n"),
            "exec",
        );
        assert_eq!(forbidden(err).attempt, Attempt::pods("create", Some("exec"), "n"));
    }

    #[test]
    fn a_refused_websocket_upgrade_is_an_rbac_error_for_the_attempt() {
        let err = kube_error(
            kube::Error::UpgradeConnection(kube::client::UpgradeConnectionError::ProtocolSwitch(
                http::StatusCode::FORBIDDEN,
            )),
            &Attempt::pods("create", Some("exec"), "team-a"),
            "exec",
        );
        assert_eq!(forbidden(err).attempt, Attempt::pods("create", Some("exec"), "team-a"));
    }
}
