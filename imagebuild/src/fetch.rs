//! HTTPS on the host: rustls with the system trust store plus an optional extra
//! CA bundle, a bearer token read only from the environment and sent only to the
//! registry's host, every URL redacted in errors and logs, and a download cache
//! keyed by digest. Local paths (and `file://`) are read, not fetched.

use crate::digest::Integrity;
use crate::failure::{Classify, FailureClass};
use crate::redact::{redact_secret, redact_url};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the fetcher is set up.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// The npm registry or mirror (the only host the token is sent to).
    pub registry: String,
    /// Extra PEM CA bundle.
    pub ca_bundle: Option<PathBuf>,
    /// Name of the environment variable holding the registry token.
    pub token_env: Option<String>,
    /// The download cache directory.
    pub cache_dir: PathBuf,
}

/// Fetch failures, classified.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// 401/403.
    #[error("{url}: the server rejected the credentials (HTTP {status})")]
    AuthRejected {
        /// Redacted URL.
        url: String,
        /// HTTP status.
        status: u16,
    },
    /// DNS, TCP, TLS, timeouts, 5xx.
    #[error("{url}: unreachable: {detail}")]
    Unreachable {
        /// Redacted URL.
        url: String,
        /// What failed.
        detail: String,
    },
    /// 404 or a missing version/file.
    #[error("{url}: not found: {detail}")]
    Absent {
        /// Redacted URL.
        url: String,
        /// What is missing.
        detail: String,
    },
    /// The bytes do not have the pinned digest.
    #[error("{url}: digest mismatch: the lock pins {expected}, the download is {actual}")]
    DigestMismatch {
        /// Redacted URL or path.
        url: String,
        /// The pinned digest.
        expected: String,
        /// What arrived.
        actual: String,
    },
    /// A local file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The CA bundle is unusable, or the token variable is unset.
    #[error("{0}")]
    Config(String),
    /// The response is not what the protocol promises (bad JSON).
    #[error("{url}: unexpected response: {detail}")]
    Malformed {
        /// Redacted URL.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The server sent (or announced) more than the builder reads from one URL.
    #[error(
        "{url}: the response is larger than {max} bytes; do not build with it: a registry or mirror \
             that sends this is hostile or broken (check `registry.npm`, `node.distUrl`, `chromium.url`)"
    )]
    TooLarge {
        /// Redacted URL.
        url: String,
        /// The limit.
        max: u64,
    },
}

impl Classify for FetchError {
    fn class(&self) -> FailureClass {
        match self {
            FetchError::AuthRejected { .. } => FailureClass::AuthRejected,
            FetchError::Unreachable { .. } | FetchError::Malformed { .. } => FailureClass::RegistryUnreachable,
            FetchError::Absent { .. } => FailureClass::PackageAbsent,
            FetchError::DigestMismatch { .. } => FailureClass::DigestMismatch,
            FetchError::Io { .. } => FailureClass::Io,
            FetchError::Config(_) => FailureClass::InvalidSpec,
            FetchError::TooLarge { .. } => FailureClass::UnsafeInput,
        }
    }
}

/// Classifies an HTTP status that is not a success.
pub fn classify_status(url: &str, status: u16) -> FetchError {
    let url = redact_url(url);
    match status {
        401 | 403 => FetchError::AuthRejected { url, status },
        404 | 410 => FetchError::Absent { url, detail: format!("HTTP {status}") },
        _ => FetchError::Unreachable { url, detail: format!("HTTP {status}") },
    }
}

/// Most bytes read from one URL: far above any real artifact (Node's tarball is about
/// 50 MB, a Chromium archive about 200 MB), so a server streaming without end cannot
/// exhaust the builder's memory.
pub const MAX_DOWNLOAD: u64 = 1 << 30;

/// The HTTP client, the token and the cache.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    token: Option<String>,
    registry_origin: String,
    cache_dir: PathBuf,
    max_download: u64,
}

/// `scheme://host[:port]` of a URL (no userinfo), for deciding where the token goes.
pub fn origin_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{}", host.to_ascii_lowercase())
}

impl Fetcher {
    /// Builds the client: system roots (rustls-native-certs) plus the extra bundle.
    pub fn new(config: &FetchConfig) -> Result<Fetcher, FetchError> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(Duration::from_secs(20))
            .timeout(Duration::from_secs(600))
            .user_agent(concat!("playpen-imagebuild/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &config.ca_bundle {
            let pem =
                std::fs::read(path).map_err(|source| FetchError::Io { path: path.display().to_string(), source })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                FetchError::Config(format!("registry.caBundle {}: not a PEM bundle: {e}", path.display()))
            })?;
            if certs.is_empty() {
                return Err(FetchError::Config(format!("registry.caBundle {}: holds no certificate", path.display())));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|e| FetchError::Config(format!("HTTP client: {e}")))?;
        let token = match &config.token_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(t) if !t.is_empty() => Some(t),
                _ => {
                    return Err(FetchError::Config(format!(
                        "registry.tokenEnv names {var}, but {var} is not set in the environment: export it (never pass a token as a flag)"
                    )))
                }
            },
        };
        Ok(Fetcher {
            client,
            token,
            registry_origin: origin_of(&config.registry),
            cache_dir: config.cache_dir.clone(),
            max_download: MAX_DOWNLOAD,
        })
    }

    /// The same fetcher with another download limit (tests use a small one).
    pub fn with_max_download(self, max_download: u64) -> Fetcher {
        Fetcher { max_download, ..self }
    }

    fn redacted(&self, text: &str) -> String {
        redact_secret(&redact_url(text), self.token.as_deref())
    }

    /// GET a URL (or read a local path) into memory.
    pub async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        if let Some(path) = local_path(url) {
            return std::fs::read(&path).map_err(|source| FetchError::Io { path: path.display().to_string(), source });
        }
        tracing::info!(url = %self.redacted(url), "GET");
        let mut req = self.client.get(url);
        if let Some(token) = &self.token {
            if origin_of(url) == self.registry_origin {
                req = req.bearer_auth(token);
            }
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| FetchError::Unreachable { url: redact_url(url), detail: self.redacted(&error_chain(&e)) })?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            return Err(classify_status(url, status));
        }
        let too_large = || FetchError::TooLarge { url: redact_url(url), max: self.max_download };
        if resp.content_length().is_some_and(|len| len > self.max_download) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| FetchError::Unreachable { url: redact_url(url), detail: self.redacted(&error_chain(&e)) })?
        {
            if body.len() as u64 + chunk.len() as u64 > self.max_download {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// GET JSON.
    pub async fn get_json(&self, url: &str) -> Result<serde_json::Value, FetchError> {
        let bytes = self.get(url).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| FetchError::Malformed { url: redact_url(url), detail: e.to_string() })
    }

    /// GET text.
    pub async fn get_text(&self, url: &str) -> Result<String, FetchError> {
        let bytes = self.get(url).await?;
        String::from_utf8(bytes).map_err(|e| FetchError::Malformed { url: redact_url(url), detail: e.to_string() })
    }

    /// The cache file for a digest.
    pub fn cache_path(&self, integrity: &Integrity) -> PathBuf {
        self.cache_dir.join(integrity.algorithm()).join(integrity.hex())
    }

    /// The bytes of `url` with digest `integrity`: from the cache when present and
    /// intact, else downloaded, checked and cached. A mismatch is refused.
    pub async fn fetch_verified(&self, url: &str, integrity: &Integrity) -> Result<Vec<u8>, FetchError> {
        let cached = self.cache_path(integrity);
        if let Ok(bytes) = std::fs::read(&cached) {
            if integrity.matches(&bytes) {
                tracing::debug!(url = %self.redacted(url), cache = %cached.display(), "cache hit");
                return Ok(bytes);
            }
            tracing::warn!(cache = %cached.display(), "cached file is corrupt; downloading again");
        }
        let bytes = self.get(url).await?;
        check_digest(url, integrity, &bytes)?;
        store(&cached, &bytes)?;
        Ok(bytes)
    }
}

/// Refuses bytes whose digest differs from `integrity`.
pub fn check_digest(url: &str, integrity: &Integrity, bytes: &[u8]) -> Result<(), FetchError> {
    let actual = integrity.compute_like(bytes);
    if &actual == integrity {
        Ok(())
    } else {
        Err(FetchError::DigestMismatch {
            url: redact_url(url),
            expected: integrity.to_string(),
            actual: actual.to_string(),
        })
    }
}

fn store(path: &Path, bytes: &[u8]) -> Result<(), FetchError> {
    let io = |source| FetchError::Io { path: path.display().to_string(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A local path for `file://` URLs and plain paths; `None` for http(s).
pub fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(p) = url.strip_prefix("file://") {
        return Some(PathBuf::from(p));
    }
    (!url.contains("://")).then(|| PathBuf::from(url))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The build host's environment variable for `--cache-dir`.
pub const CACHE_ENV: &str = "PLAYPEN_IMAGEBUILD_CACHE";

/// The default cache directory: `$XDG_CACHE_HOME/playpen-imagebuild` or `~/.cache/playpen-imagebuild`.
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("playpen-imagebuild")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify_status("https://r/x", 401).class(), FailureClass::AuthRejected);
        assert_eq!(classify_status("https://r/x", 403).class(), FailureClass::AuthRejected);
        assert_eq!(classify_status("https://r/x", 404).class(), FailureClass::PackageAbsent);
        assert_eq!(classify_status("https://r/x", 503).class(), FailureClass::RegistryUnreachable);
    }

    #[test]
    fn errors_never_print_credentials() {
        let e = classify_status("https://bob:hunter2@npm.corp/x?_authToken=abc", 401);
        assert!(!e.to_string().contains("hunter2") && !e.to_string().contains("abc"), "{e}");
    }

    #[test]
    fn token_goes_only_to_the_registry_origin() {
        assert_eq!(origin_of("https://Npm.Corp/a/b"), "https://npm.corp");
        assert_eq!(origin_of("https://u:p@npm.corp:8443/a"), "https://npm.corp:8443");
        assert_ne!(origin_of("https://cdn.example/x"), origin_of("https://npm.corp/"));
    }

    #[test]
    fn local_paths_are_recognised() {
        assert_eq!(local_path("/tmp/x.tgz"), Some(PathBuf::from("/tmp/x.tgz")));
        assert_eq!(local_path("file:///tmp/x.tgz"), Some(PathBuf::from("/tmp/x.tgz")));
        assert_eq!(local_path("https://h/x"), None);
    }

    #[test]
    fn a_missing_token_variable_is_a_config_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = FetchConfig {
            registry: "https://npm.corp".into(),
            ca_bundle: None,
            token_env: Some("PLAYPEN_TEST_TOKEN_THAT_IS_NOT_SET".into()),
            cache_dir: dir.path().into(),
        };
        let err = Fetcher::new(&cfg).unwrap_err();
        assert!(err.to_string().contains("PLAYPEN_TEST_TOKEN_THAT_IS_NOT_SET is not set"), "{err}");
    }

    #[test]
    fn a_bad_ca_bundle_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap();
        let cfg = FetchConfig {
            registry: "https://r".into(),
            ca_bundle: Some(ca),
            token_env: None,
            cache_dir: dir.path().into(),
        };
        assert!(Fetcher::new(&cfg).is_err());
    }

    #[tokio::test]
    async fn cache_is_keyed_by_digest_and_mismatches_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("artifact.tgz");
        std::fs::write(&file, b"good bytes").unwrap();
        let cfg = FetchConfig {
            registry: "https://r".into(),
            ca_bundle: None,
            token_env: None,
            cache_dir: dir.path().join("cache"),
        };
        let f = Fetcher::new(&cfg).unwrap();
        let good = Integrity::sha256_of(b"good bytes");
        let url = file.display().to_string();
        assert_eq!(f.fetch_verified(&url, &good).await.unwrap(), b"good bytes");
        assert!(f.cache_path(&good).exists());
        // Served from the cache even when the source is gone.
        std::fs::remove_file(&file).unwrap();
        assert_eq!(f.fetch_verified(&url, &good).await.unwrap(), b"good bytes");
        std::fs::write(&file, b"evil bytes").unwrap();
        let err = f.fetch_verified(&url, &Integrity::sha512_of(b"good bytes")).await.unwrap_err();
        assert_eq!(err.class(), FailureClass::DigestMismatch);
        assert_eq!(err.class().exit_code(), 17);
    }
}
