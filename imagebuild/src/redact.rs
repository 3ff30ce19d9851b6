//! Redaction of credentials in anything the builder prints.

/// Replaces userinfo and credential-looking query parameters in a URL with `***`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_owned(),
    };
    let path = match path.split_once('?') {
        Some((p, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
                    _ => kv.to_owned(),
                })
                .collect();
            format!("{p}?{}", query.join("&"))
        }
        None => path.to_owned(),
    };
    match scheme {
        Some(s) => format!("{s}://{authority}{path}"),
        None => format!("{authority}{path}"),
    }
}

fn is_secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["token", "auth", "key", "secret", "password", "sig", "signature", "credential"].iter().any(|s| k.contains(s))
}

/// Replaces every occurrence of `secret` in `text` with `***` (for error bodies
/// that might echo a token back).
pub fn redact_secret(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => text.replace(s, "***"),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_token_queries_are_hidden() {
        assert_eq!(redact_url("https://bob:pw@npm.corp/x/y"), "https://***@npm.corp/x/y");
        assert_eq!(
            redact_url("https://h/p?a=1&_authToken=zz&access_token=q"),
            "https://h/p?a=1&_authToken=***&access_token=***"
        );
        assert_eq!(redact_url("https://registry.npmjs.org/playwright"), "https://registry.npmjs.org/playwright");
    }

    #[test]
    fn secrets_are_replaced_in_free_text() {
        assert_eq!(redact_secret("401 for token abcd1234", Some("abcd1234")), "401 for token ***");
        assert_eq!(redact_secret("x", None), "x");
    }
}
