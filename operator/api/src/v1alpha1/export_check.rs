//! The CRD's rules for `spec.recording.export`, in Rust, for a destination
//! that does not pass the API server: the chart's cluster-wide default
//! (`recordings.export`, the operator's `--recording-export`). The same
//! cases go through the API server in the admission tests, so the two
//! cannot drift apart unseen.

use super::spec::{RecordingExport, S3Export, MAX_EXPORT_ENDPOINT_LEN, MAX_EXPORT_PREFIX_LEN};

impl RecordingExport {
    /// Whether the CRD would accept this destination; the error names the
    /// field and the fix, as its rule's message does.
    pub fn check(&self) -> Result<(), String> {
        self.s3.check()
    }
}

impl S3Export {
    /// See [`RecordingExport::check`].
    pub fn check(&self) -> Result<(), String> {
        if self.endpoint.len() > MAX_EXPORT_ENDPOINT_LEN as usize || !endpoint_ok(&self.endpoint) {
            return Err(format!(
                "s3.endpoint {:?} must be a URL like https://s3.example.com or http://store.ns.svc:8333: scheme, host \
                 name or IPv4 address and optional port only (no path, no user:password@)",
                self.endpoint
            ));
        }
        if !bucket_ok(&self.bucket) {
            return Err(format!(
                "s3.bucket {:?} must be an S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', starting \
                 and ending with a letter or digit",
                self.bucket
            ));
        }
        if let Some(region) = &self.region {
            let ok = !region.is_empty()
                && region.len() <= 64
                && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !ok {
                return Err(format!("s3.region {region:?} must be a region name such as us-east-1"));
            }
        }
        if let Some(prefix) = &self.prefix {
            let ok = prefix.len() <= MAX_EXPORT_PREFIX_LEN as usize
                && prefix.contains("{uid}")
                && !prefix.starts_with('/')
                && !prefix.contains("..")
                && !prefix.contains("//");
            if !ok {
                return Err(format!(
                    "s3.prefix {prefix:?} must hold {{uid}} (so two sessions never share a manifest), not start with \
                     '/', and hold no '..' or '//'; the default is {{namespace}}/{{name}}/{{uid}}"
                ));
            }
        }
        let name = &self.credentials_secret.name;
        if !secret_name_ok(name) {
            return Err(format!("s3.credentialsSecret.name {name:?} must name a Secret (a DNS subdomain)"));
        }
        Ok(())
    }
}

/// `^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$`
fn endpoint_ok(endpoint: &str) -> bool {
    let Some(rest) = endpoint.strip_prefix("https://").or_else(|| endpoint.strip_prefix("http://")) else {
        return false;
    };
    let (host, port) = match rest.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let port_ok = port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
}

/// `^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`
fn bucket_ok(bucket: &str) -> bool {
    let bytes = bucket.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (3..=63).contains(&bytes.len())
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'.' || *b == b'-')
}

/// `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, at most 253 characters.
fn secret_name_ok(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'.' || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn export(s3: serde_json::Value) -> RecordingExport {
        serde_json::from_value(json!({"s3": s3})).expect("export")
    }

    fn good() -> serde_json::Value {
        json!({"endpoint": "http://store.rec.svc:8333", "bucket": "agent-recordings", "region": "eu-west-1",
            "prefix": "{namespace}/{date}/{uid}", "credentialsSecret": {"name": "recordings-s3"}})
    }

    #[test]
    fn a_destination_the_crd_accepts_passes() {
        assert_eq!(export(good()).check(), Ok(()));
        let minimal = json!({"endpoint": "https://10.0.0.5", "bucket": "abc", "credentialsSecret": {"name": "k"}});
        assert_eq!(export(minimal).check(), Ok(()));
    }

    #[test]
    fn each_rule_refuses_naming_its_field() {
        let cases = [
            ("endpoint", json!("ftp://store")),
            ("endpoint", json!("https://user:pw@store")),
            ("endpoint", json!("https://store/path")),
            ("endpoint", json!("https://store:123456")),
            ("endpoint", json!("https://")),
            ("endpoint", json!(format!("https://{}", "a".repeat(600)))),
            ("bucket", json!("ab")),
            ("bucket", json!("Agent")),
            ("bucket", json!("-agent")),
            ("bucket", json!("a".repeat(64))),
            ("region", json!("EU")),
            ("region", json!("")),
            ("prefix", json!("{namespace}/{name}")),
            ("prefix", json!("/{uid}")),
            ("prefix", json!("a/../{uid}")),
            ("prefix", json!("a//{uid}")),
            ("credentialsSecret", json!({"name": "Keys"})),
            ("credentialsSecret", json!({"name": ""})),
        ];
        for (field, value) in cases {
            let mut s3 = good();
            s3[field] = value.clone();
            let said = export(s3).check().expect_err(&format!("{field} = {value}"));
            assert!(said.starts_with(&format!("s3.{field}")), "{field} = {value}: {said}");
        }
    }
}
