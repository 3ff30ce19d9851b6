//! `build --push`: the verified tag pushed through Docker Engine, with credentials
//! taken only from the environment, handed to the engine only for the tag's registry
//! host, and redacted from every line and error; the manifest digest the registry
//! received goes into the build report.

use crate::engine::Engine;
use crate::failure::{Classify, FailureClass};
use crate::redact::redact_secret;
use base64::Engine as _;
use std::fmt;

/// The user name for basic auth (with [`PASSWORD_ENV`]).
pub const USERNAME_ENV: &str = "PLAYPEN_REGISTRY_USERNAME";
/// The password (or access token used as one) for basic auth (with [`USERNAME_ENV`]).
pub const PASSWORD_ENV: &str = "PLAYPEN_REGISTRY_PASSWORD";
/// A registry bearer token, instead of a user name and password.
pub const TOKEN_ENV: &str = "PLAYPEN_REGISTRY_TOKEN";
/// Optional: the registry host the credentials are for; they are withheld from any other host.
pub const HOST_ENV: &str = "PLAYPEN_REGISTRY_HOST";

/// Docker's name for the registry of a tag without a host.
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// A credential from the environment. Never printed: its `Debug` says only its kind.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// `PLAYPEN_REGISTRY_USERNAME` + `PLAYPEN_REGISTRY_PASSWORD`.
    Basic {
        /// User name.
        username: String,
        /// Password or access token.
        password: String,
    },
    /// `PLAYPEN_REGISTRY_TOKEN`.
    Token(String),
}

impl Credential {
    fn kind(&self) -> &'static str {
        match self {
            Credential::Basic { .. } => "basic",
            Credential::Token(_) => "token",
        }
    }

    fn source(&self) -> String {
        match self {
            Credential::Basic { .. } => format!("{USERNAME_ENV}/{PASSWORD_ENV}"),
            Credential::Token(_) => TOKEN_ENV.to_owned(),
        }
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({}, ***)", self.kind())
    }
}

/// What `--push` authenticates with: an optional credential and the host it is scoped to.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RegistryAuth {
    credential: Option<Credential>,
    host: Option<String>,
}

impl fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryAuth")
            .field("credential", &self.credential.as_ref().map(Credential::kind))
            .field("host", &self.host)
            .finish()
    }
}

/// How the push authenticated (recorded in the report; never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// No credential in the environment.
    Nothing,
    /// A credential exists but is scoped ([`HOST_ENV`]) to another host, so it was not sent.
    Withheld {
        /// The host the credential is for.
        scope: String,
    },
    /// The credential was sent for the tag's registry.
    Credential {
        /// `basic` or `token`.
        kind: &'static str,
        /// The variables it came from.
        source: String,
    },
}

impl Sent {
    fn describe(&self) -> String {
        match self {
            Sent::Nothing => "none".to_owned(),
            Sent::Withheld { scope } => format!("withheld ({HOST_ENV}={scope})"),
            Sent::Credential { kind, source } => format!("{kind} from {source}"),
        }
    }
}

impl RegistryAuth {
    /// No credential.
    pub fn none() -> RegistryAuth {
        RegistryAuth::default()
    }

    /// A user name and password (for tests and embedders; the binary reads [`RegistryAuth::from_env`]).
    pub fn basic(username: &str, password: &str) -> RegistryAuth {
        RegistryAuth {
            credential: Some(Credential::Basic { username: username.to_owned(), password: password.to_owned() }),
            host: None,
        }
    }

    /// Scopes the credential to `host` (as [`HOST_ENV`] does).
    pub fn scoped_to(mut self, host: &str) -> RegistryAuth {
        self.host = Some(host.to_owned());
        self
    }

    /// Reads [`USERNAME_ENV`], [`PASSWORD_ENV`], [`TOKEN_ENV`] and [`HOST_ENV`]; empty values count as unset.
    pub fn from_env() -> Result<RegistryAuth, PushError> {
        RegistryAuth::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`RegistryAuth::from_env`] over any lookup (pure, for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<RegistryAuth, PushError> {
        let (user, password, token) = (get(USERNAME_ENV), get(PASSWORD_ENV), get(TOKEN_ENV));
        let credential = match (user, password, token) {
            (None, None, None) => None,
            (Some(username), Some(password), None) => Some(Credential::Basic { username, password }),
            (None, None, Some(token)) => Some(Credential::Token(token)),
            (_, _, Some(_)) => {
                return Err(PushError::Credentials(format!(
                    "both {TOKEN_ENV} and {USERNAME_ENV}/{PASSWORD_ENV} are set: export one or the other"
                )))
            }
            (Some(_), None, None) => {
                return Err(PushError::Credentials(format!("{USERNAME_ENV} is set but {PASSWORD_ENV} is not")))
            }
            (None, Some(_), None) => {
                return Err(PushError::Credentials(format!("{PASSWORD_ENV} is set but {USERNAME_ENV} is not")))
            }
        };
        Ok(RegistryAuth { credential, host: get(HOST_ENV).map(|h| h.trim().to_ascii_lowercase()) })
    }

    /// Replaces the secret (and its basic-auth base64 form) in `text` with `***`.
    pub fn redact(&self, text: &str) -> String {
        match &self.credential {
            None => text.to_owned(),
            Some(Credential::Token(t)) => redact_secret(text, Some(t)),
            Some(Credential::Basic { username, password }) => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                redact_secret(&redact_secret(text, Some(&b64)), Some(password))
            }
        }
    }

    /// The engine credentials for a push to `registry`: only when the credential's scope
    /// (if any) is that host. `serveraddress` is always the tag's own registry.
    pub fn credentials_for(&self, registry: &str) -> (Option<bollard::auth::DockerCredentials>, Sent) {
        let Some(credential) = &self.credential else { return (None, Sent::Nothing) };
        if let Some(scope) = &self.host {
            if !same_host(scope, registry) {
                return (None, Sent::Withheld { scope: scope.clone() });
            }
        }
        let base = bollard::auth::DockerCredentials { serveraddress: Some(registry.to_owned()), ..Default::default() };
        let creds = match credential {
            Credential::Basic { username, password } => bollard::auth::DockerCredentials {
                username: Some(username.clone()),
                password: Some(password.clone()),
                ..base
            },
            Credential::Token(t) => bollard::auth::DockerCredentials { registrytoken: Some(t.clone()), ..base },
        };
        (Some(creds), Sent::Credential { kind: credential.kind(), source: credential.source() })
    }
}

fn same_host(a: &str, b: &str) -> bool {
    let norm = |h: &str| {
        let h = h.trim().trim_end_matches('/').to_ascii_lowercase();
        let h = h.strip_prefix("https://").or_else(|| h.strip_prefix("http://")).unwrap_or(&h).to_owned();
        match h.as_str() {
            "index.docker.io" | "registry-1.docker.io" | "docker.io" => DEFAULT_REGISTRY.to_owned(),
            _ => h,
        }
    };
    norm(a) == norm(b)
}

/// The registry host of a reference, by Docker's rule: the first path component when
/// it has a `.` or a `:` or is `localhost`, else Docker Hub.
pub fn registry_host(reference: &str) -> String {
    match reference.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            first.to_ascii_lowercase()
        }
        _ => DEFAULT_REGISTRY.to_owned(),
    }
}

/// What was pushed (in `build-report.json` as `push`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
    /// The registry host.
    pub registry: String,
    /// The tag pushed.
    pub reference: String,
    /// The manifest digest the registry received (`sha256:…`).
    pub digest: String,
    /// `reference`'s repository `@digest`: pull by this to get exactly what was verified.
    pub pinned: String,
    /// How the push authenticated: `none`, `basic from …`, `token from …`, `withheld (…)`.
    pub credentials: String,
    /// Seconds spent pushing.
    pub seconds: f64,
}

/// Push failures: which registry, what the engine said (redacted), and the fix.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The credential variables contradict each other.
    #[error("push credentials: {0}")]
    Credentials(String),
    /// The registry refused, or asked for, credentials.
    #[error("the registry {registry} refused the push of {reference}: Docker Engine said \"{engine}\"; {fix}")]
    AuthRejected {
        /// The registry host.
        registry: String,
        /// The tag.
        reference: String,
        /// The engine's message, redacted.
        engine: String,
        /// What to do.
        fix: String,
    },
    /// The registry could not be reached, or refused the push for another reason.
    #[error("pushing {reference} to the registry {registry} failed: Docker Engine said \"{engine}\"; {fix}")]
    Failed {
        /// The registry host.
        registry: String,
        /// The tag.
        reference: String,
        /// The engine's message, redacted.
        engine: String,
        /// What to do.
        fix: String,
    },
}

impl Classify for PushError {
    fn class(&self) -> FailureClass {
        match self {
            PushError::Credentials(_) | PushError::AuthRejected { .. } => FailureClass::PushAuthRejected,
            PushError::Failed { .. } => FailureClass::PushFailed,
        }
    }
}

/// Whether the engine's message says the registry wants (other) credentials.
pub fn is_auth_failure(engine: &str) -> bool {
    let m = engine.to_ascii_lowercase();
    [
        "unauthorized",
        "authentication required",
        "no basic auth credentials",
        "denied",
        "forbidden",
        "insufficient_scope",
        "401",
        "403",
    ]
    .iter()
    .any(|s| m.contains(s))
}

/// Types the engine's message (already redacted) with a fix naming the registry.
pub fn classify(registry: &str, reference: &str, engine: &str, sent: &Sent) -> PushError {
    let (registry, reference, engine) = (registry.to_owned(), reference.to_owned(), engine.trim().to_owned());
    if is_auth_failure(&engine) {
        let fix = match sent {
            Sent::Nothing => format!(
                "no credentials were sent: export {USERNAME_ENV} and {PASSWORD_ENV} (or {TOKEN_ENV}) for {registry} \
                 and run again (credentials are read from the environment only)"
            ),
            Sent::Withheld { scope } => format!(
                "the credentials in the environment are scoped by {HOST_ENV} to {scope}, so they were not sent to \
                 {registry}: set {HOST_ENV}={registry} if they are meant for it"
            ),
            Sent::Credential { kind, source } => format!(
                "{registry} rejected the {kind} credentials from {source}: check them and that the account may push \
                 to this repository"
            ),
        };
        return PushError::AuthRejected { registry, reference, engine, fix };
    }
    let m = engine.to_ascii_lowercase();
    let fix = if m.contains("server gave http response to https client") {
        format!(
            "{registry} speaks plain HTTP: serve it over TLS, or list it under \"insecure-registries\" in the \
             engine's /etc/docker/daemon.json (127.0.0.0/8 is allowed by default)"
        )
    } else if m.contains("x509") || m.contains("certificate") {
        format!("Docker Engine does not trust {registry}'s certificate: put its CA at /etc/docker/certs.d/{registry}/ca.crt")
    } else if ["connection refused", "no such host", "i/o timeout", "no route to host", "dial tcp", "timeout"]
        .iter()
        .any(|s| m.contains(s))
    {
        format!(
            "Docker Engine could not reach {registry}: check that it runs and that the engine (not only this \
             shell) reaches it: its HTTP(S)_PROXY/NO_PROXY and DNS"
        )
    } else if m.contains("does not exist locally") || m.contains("no such image") {
        format!("{reference} is not in the engine: build it first")
    } else {
        format!("see the engine's message; {reference} stays tagged locally")
    };
    PushError::Failed { registry, reference, engine, fix }
}

/// Pushes `reference` with `auth` and returns the digest the registry received.
/// Every progress line passed to `on_line` and every error is redacted.
pub async fn push(
    engine: &Engine,
    reference: &str,
    auth: &RegistryAuth,
    mut on_line: impl FnMut(&str),
) -> Result<PushReport, PushError> {
    let registry = registry_host(reference);
    let (credentials, sent) = auth.credentials_for(&registry);
    if let Sent::Withheld { scope } = &sent {
        tracing::warn!(%registry, %scope, "{HOST_ENV} names another host: pushing without credentials");
    }
    tracing::info!(%registry, reference, credentials = %sent.describe(), "pushing");
    on_line(&format!("push: {reference} to {registry} (credentials: {})", sent.describe()));
    let started = std::time::Instant::now();
    let digest = engine
        .push_raw(reference, credentials, |line| on_line(&auth.redact(line)))
        .await
        .map_err(|message| classify(&registry, reference, &auth.redact(&message), &sent))?;
    let (repo, _) = crate::engine::split_reference(reference);
    let digest = match digest {
        Some(d) => d,
        // The engine records `repo@digest` on the image after a push.
        None => engine
            .repo_digests(reference)
            .await
            .map_err(|e| classify(&registry, reference, &auth.redact(&e.to_string()), &sent))?
            .iter()
            .find_map(|rd| rd.strip_prefix(&format!("{repo}@")).map(str::to_owned))
            .ok_or_else(|| PushError::Failed {
                registry: registry.clone(),
                reference: reference.to_owned(),
                engine: "the push finished without a manifest digest".into(),
                fix: "push again; if it persists, check the registry's log".into(),
            })?,
    };
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(%registry, reference, %digest, seconds, "pushed");
    on_line(&format!("push: {reference} is {repo}@{digest}"));
    Ok(PushReport {
        registry,
        reference: reference.to_owned(),
        pinned: format!("{repo}@{digest}"),
        digest,
        credentials: sent.describe(),
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn registry_hosts_follow_dockers_rule() {
        assert_eq!(registry_host("127.0.0.1:15000/playpen/browser:1"), "127.0.0.1:15000");
        assert_eq!(registry_host("registry.example.com/playpen/browser:1"), "registry.example.com");
        assert_eq!(registry_host("localhost/x"), "localhost");
        assert_eq!(registry_host("playpen/browser:1"), "docker.io");
        assert_eq!(registry_host("browser"), "docker.io");
    }

    #[test]
    fn credentials_come_in_pairs_or_as_a_token() {
        assert_eq!(RegistryAuth::from_lookup(lookup(&[])).unwrap(), RegistryAuth::none());
        let basic = RegistryAuth::from_lookup(lookup(&[(USERNAME_ENV, "u"), (PASSWORD_ENV, "pw-secret")])).unwrap();
        assert_eq!(basic, RegistryAuth::basic("u", "pw-secret"));
        let token = RegistryAuth::from_lookup(lookup(&[(TOKEN_ENV, "tok-secret")])).unwrap();
        assert!(format!("{token:?}").contains("token") && !format!("{token:?}").contains("tok-secret"));
        for bad in [
            vec![(USERNAME_ENV, "u")],
            vec![(PASSWORD_ENV, "p")],
            vec![(USERNAME_ENV, "u"), (PASSWORD_ENV, "p"), (TOKEN_ENV, "t")],
        ] {
            let e = RegistryAuth::from_lookup(lookup(&bad)).unwrap_err();
            assert_eq!(e.class(), FailureClass::PushAuthRejected);
            assert!(e.to_string().contains("PLAYPEN_REGISTRY_"), "{e}");
        }
    }

    #[test]
    fn credentials_go_only_to_the_tags_registry() {
        let auth = RegistryAuth::basic("u", "pw-secret");
        let (c, sent) = auth.credentials_for("reg.example.com:5000");
        let c = c.unwrap();
        assert_eq!(c.serveraddress.as_deref(), Some("reg.example.com:5000"));
        assert_eq!(c.password.as_deref(), Some("pw-secret"));
        assert!(matches!(sent, Sent::Credential { kind: "basic", .. }));

        let scoped = auth.clone().scoped_to("reg.example.com:5000");
        assert!(scoped.credentials_for("reg.example.com:5000").0.is_some());
        let (c, sent) = scoped.credentials_for("evil.example.com");
        assert!(c.is_none());
        assert_eq!(sent, Sent::Withheld { scope: "reg.example.com:5000".into() });
        assert!(RegistryAuth::basic("u", "p").scoped_to("index.docker.io").credentials_for("docker.io").0.is_some());

        let (c, _) = RegistryAuth::from_lookup(lookup(&[(TOKEN_ENV, "tok")])).unwrap().credentials_for("r.io");
        let c = c.unwrap();
        assert_eq!((c.registrytoken.as_deref(), c.password), (Some("tok"), None));
    }

    #[test]
    fn secrets_and_their_basic_auth_form_are_redacted() {
        let auth = RegistryAuth::basic("u", "pw-secret");
        let b64 = base64::engine::general_purpose::STANDARD.encode("u:pw-secret");
        let text = format!("got pw-secret and Basic {b64}");
        assert_eq!(auth.redact(&text), "got *** and Basic ***");
        assert!(!format!("{auth:?}").contains("pw-secret"));
    }

    #[test]
    fn engine_messages_are_typed_with_the_registry_and_a_fix() {
        let e = classify("127.0.0.1:15000", "127.0.0.1:15000/x:1", "no basic auth credentials", &Sent::Nothing);
        assert_eq!(e.class(), FailureClass::PushAuthRejected);
        assert_eq!(e.class().exit_code(), 22);
        let text = e.to_string();
        assert!(text.contains("127.0.0.1:15000") && text.contains("no basic auth credentials"), "{text}");
        assert!(text.contains(USERNAME_ENV) && text.contains(PASSWORD_ENV), "{text}");

        let sent = Sent::Credential { kind: "basic", source: "X".into() };
        let e = classify("r.io", "r.io/x:1", "unauthorized: authentication required", &sent);
        assert!(e.to_string().contains("rejected the basic credentials"), "{e}");

        let e = classify("r.io", "r.io/x:1", "Get \"https://r.io/v2/\": dial tcp: connection refused", &Sent::Nothing);
        assert_eq!(e.class(), FailureClass::PushFailed);
        assert_eq!(e.class().exit_code(), 23);
        assert!(e.to_string().contains("could not reach r.io"), "{e}");
        let e = classify("r.io", "r.io/x:1", "x509: certificate signed by unknown authority", &Sent::Nothing);
        assert!(e.to_string().contains("/etc/docker/certs.d/r.io/ca.crt"), "{e}");
        let e = classify("r.io", "r.io/x:1", "http: server gave HTTP response to HTTPS client", &Sent::Nothing);
        assert!(e.to_string().contains("insecure-registries"), "{e}");
    }
}
