//! The store client: `object_store`'s S3 client for a checked destination,
//! signing every request with the credentials read from their files at that
//! moment (`credentials.rs`), or with the keys the caller holds; and what a
//! failed request becomes, the secret values masked.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use object_store::aws::{AmazonS3Builder, AwsCredential};
use object_store::{BackoffConfig, ClientOptions, CredentialProvider, ObjectStore, RetryConfig};

use crate::answer::StoreAnswer;
use crate::credentials::{self, Credentials, CredentialsError};
use crate::destination::{CredentialsSource, ValidDestination};
use crate::error::ExportError;
use crate::keys::ObjectKey;

/// How the client itself retries one request (5xx, dropped connections):
/// briefly, so that a failure reaches the uploader's own backoff, which
/// reads the credentials again, within seconds.
fn request_retries() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: Duration::from_secs(30),
    }
}

/// The credentials of a mounted Secret, read for every request.
#[derive(Debug)]
pub(crate) struct FileCredentials {
    dir: PathBuf,
}

#[async_trait]
impl CredentialProvider for FileCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let dir = self.dir.clone();
        let read = tokio::task::spawn_blocking(move || credentials::read(&dir)).await;
        let creds = read
            .map_err(|e| object_store::Error::Generic { store: "S3", source: Box::new(e) })?
            .map_err(|e| object_store::Error::Generic { store: "S3", source: Box::new(e) })?;
        Ok(Arc::new(aws(creds)))
    }
}

/// Keys the caller holds, the same for every request.
#[derive(Debug)]
struct GivenCredentials(Arc<AwsCredential>);

#[async_trait]
impl CredentialProvider for GivenCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        Ok(self.0.clone())
    }
}

fn aws(creds: Credentials) -> AwsCredential {
    AwsCredential {
        key_id: creds.access_key_id,
        secret_key: creds.secret_access_key.expose().to_owned(),
        token: creds.session_token.map(|t| t.expose().to_owned()),
    }
}

/// The S3 client for `destination`.
pub(crate) fn connect(destination: &ValidDestination) -> Result<Arc<dyn ObjectStore>, ExportError> {
    let provider: Arc<dyn CredentialProvider<Credential = AwsCredential>> = match &destination.credentials {
        CredentialsSource::Files { dir } => Arc::new(FileCredentials { dir: dir.clone() }),
        CredentialsSource::Given(creds) => Arc::new(GivenCredentials(Arc::new(aws(creds.clone())))),
    };
    let options = ClientOptions::new()
        .with_allow_http(destination.allow_http())
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout(Duration::from_secs(120));
    // `new`, not `from_env`: the destination alone says where and as whom.
    let store = AmazonS3Builder::new()
        .with_endpoint(destination.request_endpoint())
        .with_bucket_name(&destination.bucket)
        .with_region(&destination.region)
        .with_virtual_hosted_style_request(!destination.path_style)
        .with_allow_http(destination.allow_http())
        .with_credentials(provider)
        .with_retry(request_retries())
        .with_client_options(options)
        .build()
        .map_err(|e| ExportError::Client { endpoint: destination.endpoint.to_string(), message: e.to_string() })?;
    Ok(Arc::new(store))
}

/// The client's error as an [`ExportError`]: the credential files' own
/// error when reading them failed, the store's answer otherwise, with the
/// current secret values masked.
pub(crate) fn error(
    destination: &ValidDestination,
    operation: &'static str,
    key: &ObjectKey,
    error: object_store::Error,
) -> ExportError {
    let error = match error {
        object_store::Error::Generic { store, source } => match source.downcast::<CredentialsError>() {
            Ok(credentials) => return ExportError::Credentials(*credentials),
            Err(source) => object_store::Error::Generic { store, source },
        },
        other => other,
    };
    let secrets = secrets(&destination.credentials);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    ExportError::Store {
        operation,
        bucket: destination.bucket.clone(),
        key: key.clone(),
        answer: StoreAnswer::from_error_text(&chain(&error), &secrets),
    }
}

/// The secret values now, to mask them.
fn secrets(source: &CredentialsSource) -> Vec<String> {
    let creds = match source {
        CredentialsSource::Files { dir } => credentials::read(dir).ok(),
        CredentialsSource::Given(creds) => Some(creds.clone()),
    };
    creds
        .map(|c| {
            let mut values = vec![c.secret_access_key.expose().to_owned()];
            values.extend(c.session_token.map(|t| t.expose().to_owned()));
            values
        })
        .unwrap_or_default()
}

/// An error and its sources, each said once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer: inner said no")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner said no")]
    struct Inner(#[source] std::io::Error);

    #[test]
    fn the_chain_says_each_source_once() {
        let error = Outer(Inner(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)));
        assert_eq!(chain(&error), "outer: inner said no: connection refused");
    }

    #[test]
    fn given_keys_are_masked_in_what_the_store_said() {
        let destination = crate::Destination {
            endpoint: "http://127.0.0.1:1".into(),
            bucket: "rec".into(),
            prefix: String::new(),
            region: String::new(),
            path_style: true,
            credentials: CredentialsSource::Given(Credentials {
                access_key_id: "AKID".into(),
                secret_access_key: credentials::Secret::new("hunter2secret"),
                session_token: Some(credentials::Secret::new("tok3n")),
            }),
        }
        .validate()
        .unwrap();
        let failed = object_store::Error::Generic {
            store: "S3",
            source: "status code: 403 Forbidden: <Error><Code>AccessDenied</Code><Message>no hunter2secret tok3n</Message></Error>".into(),
        };
        let key = crate::Layout::new(
            crate::PrefixTemplate::parse("{uid}")
                .and_then(|t| {
                    t.render(
                        &crate::SessionId { namespace: "n".into(), name: "a".into(), uid: "u".into() },
                        chrono::Utc::now(),
                    )
                })
                .unwrap(),
        )
        .manifest();
        let text = error(&destination, "GET", &key, failed).to_string();
        assert_eq!(text, "GET s3://rec/u/manifest.json: HTTP 403 AccessDenied: no <redacted> <redacted>");
    }
}
