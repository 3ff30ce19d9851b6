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
use crate::rbac::parse_rbac_message;
use crate::rbac::{is_forbidden, Attempt, Forbidden};

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
