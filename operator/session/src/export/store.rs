//! The store client: `object_store`'s S3 client for a checked destination,
//! signing every request with the credentials read from their files at that
//! moment (`credentials.rs`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use object_store::aws::{AmazonS3Builder, AwsCredential};
use object_store::{BackoffConfig, ClientOptions, CredentialProvider, ObjectStore, RetryConfig};

use super::credentials;
use super::destination::{CredentialsSource, ValidDestination};
use super::error::ExportError;

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
        Ok(Arc::new(AwsCredential {
            key_id: creds.access_key_id,
            secret_key: creds.secret_access_key.expose().to_owned(),
            token: creds.session_token.map(|t| t.expose().to_owned()),
        }))
    }
}

/// The S3 client for `destination`.
pub(crate) fn connect(destination: &ValidDestination) -> Result<Arc<dyn ObjectStore>, ExportError> {
    let CredentialsSource::Files { dir } = &destination.credentials;
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
        .with_credentials(Arc::new(FileCredentials { dir: dir.clone() }))
        .with_retry(request_retries())
        .with_client_options(options)
        .build()
        .map_err(|e| ExportError::Client { endpoint: destination.endpoint.to_string(), message: e.to_string() })?;
    Ok(Arc::new(store))
}
