//! Which tab URLs a resume may open. A document is hostile: a `javascript:`
//! URL would run script in whatever page it lands on, `file:` reads the
//! container's files, `chrome:` and friends reach browser internals. Only
//! what a page can be loaded from over the network, a blank page and
//! self-contained `data:` documents are reopened.

use super::MAX_URL_BYTES;

/// Why a URL is not reopened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefused {
    /// Longer than [`MAX_URL_BYTES`].
    #[error("the URL is {0} bytes, over the {MAX_URL_BYTES} a tab may keep")]
    TooLong(usize),
    /// Holds whitespace or control characters (browsers strip some, which
    /// would let `" javascript:"` through a scheme check).
    #[error("the URL holds whitespace or control characters")]
    Unprintable,
    /// No `scheme:` prefix.
    #[error("the URL has no scheme")]
    NoScheme,
    /// A scheme resume does not open.
    #[error("{0}: URLs are not reopened (only http, https, data and about:blank are)")]
    Scheme(String),
    /// `about:` other than `about:blank`.
    #[error("only about:blank is reopened of the about: pages")]
    AboutPage,
}

/// Whether resume may open `url` in a tab.
pub fn reopenable(url: &str) -> Result<(), UrlRefused> {
    if url.len() > MAX_URL_BYTES {
        return Err(UrlRefused::TooLong(url.len()));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(UrlRefused::Unprintable);
    }
    let Some((scheme, rest)) = url.split_once(':') else { return Err(UrlRefused::NoScheme) };
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return Err(UrlRefused::NoScheme);
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" if rest.starts_with("//") && rest.len() > 2 => Ok(()),
        "http" | "https" => Err(UrlRefused::NoScheme),
        "data" => Ok(()),
        "about" if rest.split(['?', '#']).next() == Some("blank") => Ok(()),
        "about" => Err(UrlRefused::AboutPage),
        other => Err(UrlRefused::Scheme(crate::text::truncate(other, 32))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_web_blank_and_data_reopen() {
        for url in [
            "http://127.0.0.1:8080/a?b=c#d",
            "https://example.com/",
            "HTTPS://EXAMPLE.COM/",
            "about:blank",
            "about:blank#x",
            "data:text/html,<p>hi</p>",
        ] {
            assert_eq!(reopenable(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn script_files_and_browser_internals_do_not() {
        let refused = |url: &str| reopenable(url).unwrap_err();
        assert_eq!(refused("javascript:alert(1)"), UrlRefused::Scheme("javascript".into()));
        assert_eq!(refused("JavaScript:alert(1)"), UrlRefused::Scheme("javascript".into()));
        assert_eq!(refused("file:///etc/passwd"), UrlRefused::Scheme("file".into()));
        assert_eq!(refused("chrome://settings"), UrlRefused::Scheme("chrome".into()));
        assert_eq!(refused("chrome-extension://x/y"), UrlRefused::Scheme("chrome-extension".into()));
        assert_eq!(refused("blob:https://a/b"), UrlRefused::Scheme("blob".into()));
        assert_eq!(refused("view-source:https://a/"), UrlRefused::Scheme("view-source".into()));
        assert_eq!(refused("about:config"), UrlRefused::AboutPage);
        assert_eq!(refused(" javascript:alert(1)"), UrlRefused::Unprintable);
        assert_eq!(refused("java\tscript:alert(1)"), UrlRefused::Unprintable);
        assert_eq!(refused("jav\u{0}ascript:x"), UrlRefused::Unprintable);
        assert_eq!(refused("no-scheme"), UrlRefused::NoScheme);
        assert_eq!(refused(":x"), UrlRefused::NoScheme);
        assert_eq!(refused("1http://x"), UrlRefused::NoScheme);
        assert_eq!(refused("http:x"), UrlRefused::NoScheme);
        assert_eq!(refused(&format!("data:,{}", "a".repeat(MAX_URL_BYTES))), UrlRefused::TooLong(MAX_URL_BYTES + 6));
        assert!(refused("javascript:x").to_string().contains("javascript: URLs are not reopened"));
    }
}
