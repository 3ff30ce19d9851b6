//! Where a session's recordings go (pure): the destination as configured,
//! and its checked form the uploader is built from. Each error names the
//! field and how to fix it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::credentials::Credentials;
use crate::prefix::{PrefixError, PrefixTemplate, DEFAULT_PREFIX};

/// The region signed into requests when a destination names none (what
/// most S3-compatible stores expect).
pub const DEFAULT_REGION: &str = playpen_api::v1alpha1::DEFAULT_EXPORT_REGION;

/// An S3-compatible destination, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Destination {
    /// `https://host[:port]`, or `http://` for a store on a network the
    /// cluster trusts; no path, no credentials.
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// The key prefix template (`prefix.rs`); [`DEFAULT_PREFIX`] when empty.
    #[serde(default)]
    pub prefix: String,
    /// The region signed into requests; [`DEFAULT_REGION`] when empty.
    #[serde(default)]
    pub region: String,
    /// Path-style requests (`<endpoint>/<bucket>/<key>`), what most
    /// self-hosted stores need; otherwise virtual-hosted (`<bucket>.<host>`).
    #[serde(default)]
    pub path_style: bool,
    /// Where the credentials come from.
    pub credentials: CredentialsSource,
}

/// Where the uploader reads its credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "camelCase")]
pub enum CredentialsSource {
    /// The files of a mounted Secret (`credentials.rs`), read again for every request.
    Files {
        /// The directory the Secret is mounted at.
        dir: PathBuf,
    },
    /// Keys the caller holds: `kubectl playpen record` reads the Secret
    /// with the user's own rights. Never written anywhere.
    #[serde(skip)]
    Given(Credentials),
}

/// A destination that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidDestination {
    /// `scheme://host[:port]`, no trailing `/`.
    pub endpoint: Url,
    /// The bucket.
    pub bucket: String,
    /// The parsed prefix template.
    pub prefix: PrefixTemplate,
    /// The region.
    pub region: String,
    /// Path-style requests.
    pub path_style: bool,
    /// Where the credentials come from.
    pub credentials: CredentialsSource,
}

impl ValidDestination {
    /// Plain HTTP (the endpoint says so).
    pub fn allow_http(&self) -> bool {
        self.endpoint.scheme() == "http"
    }

    /// The endpoint requests go to: the configured one for path-style
    /// requests, `<bucket>.<host>` for virtual-hosted ones.
    pub fn request_endpoint(&self) -> String {
        let scheme = self.endpoint.scheme();
        let host = self.endpoint.host_str().unwrap_or_default();
        let port = self.endpoint.port().map(|p| format!(":{p}")).unwrap_or_default();
        if self.path_style {
            format!("{scheme}://{host}{port}")
        } else {
            format!("{scheme}://{}.{host}{port}", self.bucket)
        }
    }
}

/// A field of a destination that cannot work, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recording export {field}: {problem}; {fix}")]
pub struct InvalidDestination {
    /// The field, as configured (`endpoint`, `bucket`, `prefix`, `region`, `credentials.dir`).
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
    /// What to do.
    pub fix: String,
}

fn invalid(field: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> InvalidDestination {
    InvalidDestination { field, problem: problem.into(), fix: fix.into() }
}

impl Destination {
    /// Checks every field.
    pub fn validate(&self) -> Result<ValidDestination, InvalidDestination> {
        let template = if self.prefix.is_empty() { DEFAULT_PREFIX } else { &self.prefix };
        Ok(ValidDestination {
            endpoint: endpoint(&self.endpoint)?,
            bucket: bucket(&self.bucket, self.path_style)?,
            prefix: PrefixTemplate::parse(template).map_err(|e| prefix_error(&e))?,
            region: region(&self.region)?,
            path_style: self.path_style,
            credentials: credentials(&self.credentials)?,
        })
    }
}

fn endpoint(text: &str) -> Result<Url, InvalidDestination> {
    const FIELD: &str = "endpoint";
    const EXAMPLE: &str = "write it as https://s3.example.com or https://minio.storage.svc:9000";
    // Not echoed when it may hold a password (`user:password@`).
    let shown = if text.contains('@') { "the value".to_owned() } else { format!("{text:?}") };
    let url = Url::parse(text).map_err(|e| invalid(FIELD, format!("{shown} is not a URL ({e})"), EXAMPLE))?;
    // Checked before anything else that would echo the URL: it may hold a password.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            FIELD,
            "the URL carries credentials",
            "remove them from the URL; credentials come only from the credentials Secret",
        ));
    }
    if !matches!(url.scheme(), "https" | "http") {
        return Err(invalid(FIELD, format!("the scheme {:?} is not http or https", url.scheme()), EXAMPLE));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(FIELD, format!("{text:?} names no host"), EXAMPLE));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            FIELD,
            format!("{text:?} has a path, query or fragment"),
            "give the store's base URL only; the bucket goes in `bucket`, the key prefix in `prefix`",
        ));
    }
    Ok(url)
}

/// S3's bucket naming rules (the general-purpose ones).
fn bucket(name: &str, path_style: bool) -> Result<String, InvalidDestination> {
    const FIELD: &str = "bucket";
    const FIX: &str = "use 3 to 63 lowercase letters, digits, '-' and '.', beginning and ending with a letter or digit";
    let fail = |problem: String| Err(invalid(FIELD, problem, FIX));
    if !(3..=63).contains(&name.len()) {
        return fail(format!("{name:?} is {} characters long", name.len()));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.')) {
        return fail(format!("{name:?} has {c:?}"));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(name.chars().next()) || !edge(name.chars().last()) {
        return fail(format!("{name:?} does not begin and end with a letter or digit"));
    }
    if name.contains("..") {
        return fail(format!("{name:?} has two dots in a row"));
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return fail(format!("{name:?} is an IP address"));
    }
    if !path_style && name.contains('.') {
        return Err(invalid(
            FIELD,
            format!("{name:?} has a dot, which breaks the store's TLS certificate in virtual-hosted requests"),
            "set pathStyle: true, or use a bucket without dots",
        ));
    }
    Ok(name.to_owned())
}

fn region(region: &str) -> Result<String, InvalidDestination> {
    if region.is_empty() {
        return Ok(DEFAULT_REGION.to_owned());
    }
    let ok = region.len() <= 64 && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Err(invalid(
            "region",
            format!("{region:?} is not a region name"),
            format!("use the store's region such as eu-west-1 (lowercase letters, digits, '-'), or leave it empty for {DEFAULT_REGION}"),
        ));
    }
    Ok(region.to_owned())
}

fn prefix_error(e: &PrefixError) -> InvalidDestination {
    invalid("prefix", e.to_string(), format!("placeholders are replaced per session, e.g. {DEFAULT_PREFIX:?}"))
}

fn credentials(source: &CredentialsSource) -> Result<CredentialsSource, InvalidDestination> {
    match source {
        CredentialsSource::Files { dir } if !dir.is_absolute() => Err(invalid(
            "credentials.dir",
            format!("{} is not an absolute path", dir.display()),
            "name the directory the credentials Secret is mounted at",
        )),
        source @ (CredentialsSource::Files { .. } | CredentialsSource::Given(_)) => Ok(source.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination() -> Destination {
        Destination {
            endpoint: "http://127.0.0.1:18333".into(),
            bucket: "playpen-recordings".into(),
            prefix: String::new(),
            region: String::new(),
            path_style: true,
            credentials: CredentialsSource::Files { dir: "/etc/playpen/export".into() },
        }
    }

    fn field_of(d: Destination) -> &'static str {
        d.validate().unwrap_err().field
    }

    #[test]
    fn a_valid_destination_gets_defaults_and_its_request_endpoint() {
        let valid = destination().validate().unwrap();
        assert_eq!(valid.region, DEFAULT_REGION);
        assert!(valid.allow_http());
        assert_eq!(valid.request_endpoint(), "http://127.0.0.1:18333");
        let hosted = Destination {
            endpoint: "https://s3.eu-west-1.amazonaws.com/".into(),
            bucket: "rec".into(),
            region: "eu-west-1".into(),
            path_style: false,
            ..destination()
        };
        let valid = hosted.validate().unwrap();
        assert!(!valid.allow_http());
        assert_eq!(valid.request_endpoint(), "https://rec.s3.eu-west-1.amazonaws.com");
    }

    #[test]
    fn the_endpoint_must_be_a_bare_http_or_https_url() {
        for bad in
            ["s3.example.com", "ftp://s3.example.com", "https://s3.example.com/bucket", "https://h/?x=1", "http://"]
        {
            let err = Destination { endpoint: bad.into(), ..destination() }.validate().unwrap_err();
            assert_eq!(err.field, "endpoint", "{bad}: {err}");
            assert!(err.to_string().starts_with("recording export endpoint: "), "{err}");
        }
    }

    #[test]
    fn credentials_in_the_endpoint_are_refused_and_not_echoed() {
        let err = Destination { endpoint: "https://AKID:hunter2secret@s3.example.com".into(), ..destination() }
            .validate()
            .unwrap_err();
        let text = format!("{err} {err:?}");
        assert_eq!(err.field, "endpoint");
        assert!(text.contains("credentials Secret"), "{text}");
        assert!(!text.contains("hunter2secret") && !text.contains("AKID"), "{text}");
        let unparsable = Destination { endpoint: "https://AKID:hunter2secret@".into(), ..destination() };
        let text = unparsable.validate().unwrap_err().to_string();
        assert!(text.contains("is not a URL") && !text.contains("hunter2secret"), "{text}");
    }

    #[test]
    fn bucket_names_follow_the_s3_rules() {
        for bad in ["ab", &"a".repeat(64), "Upper", "under_score", "-lead", "trail-", "a..b", "192.168.1.2", "sp ace"] {
            assert_eq!(field_of(Destination { bucket: bad.into(), ..destination() }), "bucket", "{bad}");
        }
        for good in ["abc", "rec-2026", "a.b.c", &"a".repeat(63)] {
            assert!(Destination { bucket: good.into(), ..destination() }.validate().is_ok(), "{good}");
        }
        let dotted = Destination { bucket: "a.b.c".into(), path_style: false, ..destination() };
        let err = dotted.validate().unwrap_err();
        assert_eq!(err.field, "bucket");
        assert!(err.fix.contains("pathStyle: true"), "{err}");
    }

    #[test]
    fn prefix_region_and_credentials_errors_name_their_field() {
        let err = Destination { prefix: "{namespace}/{nope}/{uid}".into(), ..destination() }.validate().unwrap_err();
        assert_eq!(err.field, "prefix");
        assert!(err.problem.contains("{nope}"), "{err}");
        assert_eq!(field_of(Destination { region: "EU West".into(), ..destination() }), "region");
        assert_eq!(
            field_of(Destination { credentials: CredentialsSource::Files { dir: "rel/dir".into() }, ..destination() }),
            "credentials.dir"
        );
    }

    #[test]
    fn it_reads_from_camel_case_json_with_a_tagged_credentials_source() {
        let d: Destination = serde_json::from_str(
            r#"{"endpoint": "https://s3.example.com", "bucket": "rec", "pathStyle": true,
                "credentials": {"source": "files", "dir": "/etc/playpen/export"}}"#,
        )
        .unwrap();
        assert!(d.path_style);
        assert_eq!(d.credentials, CredentialsSource::Files { dir: "/etc/playpen/export".into() });
        assert!(d.validate().is_ok());
    }
}
