//! The store's credentials: read from the files of a mounted Secret
//! (`accessKeyId`, `secretAccessKey`, optionally `sessionToken`), again for
//! every request, so that a fixed Secret takes effect without a restart
//! (the kubelet swaps a mounted Secret's files atomically).
//!
//! The secret never reaches a log line or an error: [`Secret`] prints as
//! `<redacted>`, and errors about the files name the file, never its content.

use std::fmt;
use std::path::{Path, PathBuf};

use playpen_api::layout::{EXPORT_ACCESS_KEY_ID_KEY, EXPORT_SECRET_ACCESS_KEY_KEY, EXPORT_SESSION_TOKEN_KEY};

/// A value that prints as `<redacted>`, in `{}` and `{:?}` alike.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for signing only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// An access key and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key ID: an identifier, shown in logs to say which key is used.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: Secret,
    /// A session token (temporary credentials).
    pub session_token: Option<Secret>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("session_token", &self.session_token)
            .finish()
    }
}

impl fmt::Display for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "access key {}", self.access_key_id)
    }
}

/// Why the credential files cannot be used. Never holds their content.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// A file the Secret must have is absent or empty.
    #[error(
        "the export credentials file {path} is missing or empty; the credentials Secret needs the keys \
         {EXPORT_ACCESS_KEY_ID_KEY} and {EXPORT_SECRET_ACCESS_KEY_KEY}"
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("the export credentials file {path} cannot be read: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// A file holds something no store accepts as a key.
    #[error("the export credentials file {path} {why}; write the key alone (a trailing newline is fine)")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, without the content.
        why: &'static str,
    },
    /// The Secret read through the API lacks a key, or holds one no store accepts.
    #[error(
        "the credentials Secret {secret} {why}; it needs the keys {EXPORT_ACCESS_KEY_ID_KEY} and \
         {EXPORT_SECRET_ACCESS_KEY_KEY} (and {EXPORT_SESSION_TOKEN_KEY} for temporary keys), each the key alone"
    )]
    SecretKey {
        /// `namespace/name`.
        secret: String,
        /// What is wrong, naming the key, never its value.
        why: String,
    },
}

/// The credentials in a Secret's data (`name` is `namespace/name`, for
/// messages): what the exporter reads from the mounted files, read from the
/// API by `kubectl playpen record`.
pub fn from_secret_data(
    secret: &str,
    value: impl Fn(&str) -> Option<Vec<u8>>,
) -> Result<Credentials, CredentialsError> {
    let key = |name: &str| {
        value(name)
            .map(parse_key)
            .transpose()
            .map(Option::flatten)
            .map_err(|why| CredentialsError::SecretKey { secret: secret.to_owned(), why: format!("key {name} {why}") })
    };
    let missing = |name: &str| CredentialsError::SecretKey {
        secret: secret.to_owned(),
        why: format!("has no key {name}, or it is empty"),
    };
    let access_key_id = key(EXPORT_ACCESS_KEY_ID_KEY)?.ok_or_else(|| missing(EXPORT_ACCESS_KEY_ID_KEY))?;
    let secret_key = key(EXPORT_SECRET_ACCESS_KEY_KEY)?.ok_or_else(|| missing(EXPORT_SECRET_ACCESS_KEY_KEY))?;
    let token = key(EXPORT_SESSION_TOKEN_KEY)?;
    Ok(Credentials { access_key_id, secret_access_key: Secret(secret_key), session_token: token.map(Secret) })
}

/// Reads the credentials from `dir` (a mounted Secret).
pub fn read(dir: &Path) -> Result<Credentials, CredentialsError> {
    let access_key_id = read_key(&dir.join(EXPORT_ACCESS_KEY_ID_KEY))?
        .ok_or_else(|| CredentialsError::Missing { path: dir.join(EXPORT_ACCESS_KEY_ID_KEY) })?;
    let secret = read_key(&dir.join(EXPORT_SECRET_ACCESS_KEY_KEY))?
        .ok_or_else(|| CredentialsError::Missing { path: dir.join(EXPORT_SECRET_ACCESS_KEY_KEY) })?;
    let token = read_key(&dir.join(EXPORT_SESSION_TOKEN_KEY))?;
    Ok(Credentials { access_key_id, secret_access_key: Secret(secret), session_token: token.map(Secret) })
}

/// A key file's content without the line end `kubectl create secret
/// --from-file` often keeps; `None` when the file is absent or empty.
fn read_key(path: &Path) -> Result<Option<String>, CredentialsError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CredentialsError::Unreadable { path: path.to_owned(), source }),
    };
    parse_key(bytes).map_err(|why| CredentialsError::Malformed { path: path.to_owned(), why })
}

/// A key's bytes without the line end `kubectl create secret --from-file`
/// often keeps; `None` when empty; what is wrong (never the content) when
/// no store would accept it.
fn parse_key(bytes: Vec<u8>) -> Result<Option<String>, &'static str> {
    let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text")?;
    let key = text.strip_suffix('\n').unwrap_or(&text);
    let key = key.strip_suffix('\r').unwrap_or(key);
    if key.is_empty() {
        return Ok(None);
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("has whitespace or control characters inside the key");
    }
    Ok(Some(key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        dir
    }

    #[test]
    fn neither_debug_nor_display_shows_the_secret_or_the_token() {
        let creds = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new(SECRET),
            session_token: Some(Secret::new("token-value-123")),
        };
        for text in [format!("{creds:?}"), format!("{creds:#?}"), creds.to_string()] {
            assert!(!text.contains(SECRET) && !text.contains("token-value-123"), "{text}");
            assert!(text.contains("AKIDEXAMPLE"), "{text}");
        }
        assert_eq!(format!("{:?} {}", creds.secret_access_key, creds.secret_access_key), "<redacted> <redacted>");
        assert_eq!(creds.secret_access_key.expose(), SECRET);
    }

    #[test]
    fn keys_are_read_without_their_line_end() {
        let dir = dir_with(&[
            (EXPORT_ACCESS_KEY_ID_KEY, b"AKIDEXAMPLE\n"),
            (EXPORT_SECRET_ACCESS_KEY_KEY, format!("{SECRET}\r\n").as_bytes()),
        ]);
        let creds = read(dir.path()).unwrap();
        assert_eq!(creds.access_key_id, "AKIDEXAMPLE");
        assert_eq!(creds.secret_access_key.expose(), SECRET);
        assert_eq!(creds.session_token, None);
        std::fs::write(dir.path().join(EXPORT_SESSION_TOKEN_KEY), "tok").unwrap();
        assert_eq!(read(dir.path()).unwrap().session_token.unwrap().expose(), "tok");
    }

    #[test]
    fn a_missing_or_empty_key_names_the_file_and_the_keys_needed() {
        let dir = dir_with(&[(EXPORT_ACCESS_KEY_ID_KEY, b"AKIDEXAMPLE")]);
        let err = read(dir.path()).unwrap_err();
        assert!(matches!(&err, CredentialsError::Missing { path } if path.ends_with(EXPORT_SECRET_ACCESS_KEY_KEY)));
        assert!(err.to_string().contains("accessKeyId and secretAccessKey"), "{err}");
        std::fs::write(dir.path().join(EXPORT_SECRET_ACCESS_KEY_KEY), "\n").unwrap();
        assert!(matches!(read(dir.path()).unwrap_err(), CredentialsError::Missing { .. }));
    }

    #[test]
    fn a_secret_read_through_the_api_gives_the_same_keys_and_names_what_is_missing() {
        let data = |pairs: &'static [(&'static str, &'static [u8])]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_vec())
        };
        let creds = from_secret_data(
            "team-a/rec",
            data(&[(EXPORT_ACCESS_KEY_ID_KEY, b"AKIDEXAMPLE\n"), (EXPORT_SECRET_ACCESS_KEY_KEY, b"s3cr3t\r\n")]),
        )
        .unwrap();
        assert_eq!((creds.access_key_id.as_str(), creds.secret_access_key.expose()), ("AKIDEXAMPLE", "s3cr3t"));
        let err = from_secret_data("team-a/rec", data(&[(EXPORT_ACCESS_KEY_ID_KEY, b"AKIDEXAMPLE")])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("team-a/rec has no key secretAccessKey"), "{text}");
        let err = from_secret_data(
            "team-a/rec",
            data(&[(EXPORT_ACCESS_KEY_ID_KEY, b"AKID"), (EXPORT_SECRET_ACCESS_KEY_KEY, b"hunter2 secret")]),
        )
        .unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(text.contains("key secretAccessKey has whitespace") && !text.contains("hunter2"), "{text}");
    }

    #[test]
    fn a_malformed_key_is_refused_without_echoing_it() {
        let bad = format!("{SECRET} extra\n");
        let dir =
            dir_with(&[(EXPORT_ACCESS_KEY_ID_KEY, b"AKIDEXAMPLE"), (EXPORT_SECRET_ACCESS_KEY_KEY, bad.as_bytes())]);
        let err = read(dir.path()).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(matches!(err, CredentialsError::Malformed { .. }), "{text}");
        assert!(!text.contains(SECRET), "{text}");
        std::fs::write(dir.path().join(EXPORT_SECRET_ACCESS_KEY_KEY), [0xff, 0xfe]).unwrap();
        assert!(matches!(read(dir.path()).unwrap_err(), CredentialsError::Malformed { why: "is not UTF-8 text", .. }));
    }
}
