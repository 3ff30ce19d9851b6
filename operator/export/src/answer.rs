//! The store's answer to a failed request, cut to what a person needs (pure):
//! the HTTP status, S3's error code and message (`403 SignatureDoesNotMatch:
//! The request signature we calculated does not match …`), or, when the
//! store never answered, why not. The rest of an S3 error document (the
//! string to sign, the canonical request, the access key ID some stores echo)
//! is dropped, and every credential value is masked in what is kept.

use std::fmt;

/// The longest message kept (characters).
const MAX_MESSAGE: usize = 400;
/// What a masked credential reads as.
pub const MASK: &str = "<redacted>";

/// What the store said, or why it said nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreAnswer {
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// S3's error code (`SignatureDoesNotMatch`, `NoSuchBucket`, `AccessDenied` …).
    pub code: Option<String>,
    /// S3's message, or the client's description of the failure.
    pub message: String,
}

impl fmt::Display for StoreAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, &self.code) {
            (Some(status), Some(code)) => write!(f, "HTTP {status} {code}: {}", self.message),
            (Some(status), None) => write!(f, "HTTP {status}: {}", self.message),
            (None, Some(code)) => write!(f, "{code}: {}", self.message),
            (None, None) => write!(f, "no answer: {}", self.message),
        }
    }
}

impl StoreAnswer {
    /// Reads the answer out of the client's error text (`object_store`
    /// keeps its status and body in a private type; its text is stable:
    /// `… status code: 403 Forbidden: <?xml …><Error><Code>…`), masking
    /// every value of `secrets`.
    pub fn from_error_text(text: &str, secrets: &[&str]) -> Self {
        let status = status(text);
        let code = element(text, "Code").filter(|c| !c.is_empty());
        let message = match (&code, element(text, "Message")) {
            (Some(_), Some(message)) => message,
            _ => text.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        Self { status, code: code.map(|c| mask(&c, secrets)), message: cut(&mask(&message, secrets), MAX_MESSAGE) }
    }
}

fn status(text: &str) -> Option<u16> {
    let (_, rest) = text.split_once("status code: ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|s| (100..600).contains(s))
}

/// The unescaped text of the first `<name>…</name>`.
fn element(text: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{name}>"))? + start;
    Some(unescape(text[start..end].trim()))
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// `text` with every non-empty value of `secrets` replaced by [`MASK`].
pub fn mask(text: &str, secrets: &[&str]) -> String {
    secrets.iter().filter(|s| !s.is_empty()).fold(text.to_owned(), |text, secret| text.replace(secret, MASK))
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t/Key+value";

    /// What object_store prints for a refused signature (SeaweedFS's body).
    fn refused() -> String {
        format!(
            "The operation lacked the necessary privileges to complete for path rec/ns/demo/u/video/000001.webm: \
             Error performing PUT http://127.0.0.1:18333/rec/ns/demo/u/video/000001.webm in 3.2ms - Server \
             returned non-2xx status code: 403 Forbidden: <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>\
             <Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the \
             signature you provided. Check your key and signing method.</Message><Resource>/rec/x</Resource>\
             <AWSAccessKeyId>AKIDPLAYPEN</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 {SECRET}</StringToSign>\
             <RequestId>1</RequestId></Error>"
        )
    }

    #[test]
    fn a_refused_signature_keeps_status_code_and_message_only() {
        let answer = StoreAnswer::from_error_text(&refused(), &[SECRET, "AKIDPLAYPEN"]);
        assert_eq!(answer.status, Some(403));
        assert_eq!(answer.code.as_deref(), Some("SignatureDoesNotMatch"));
        assert_eq!(
            answer.to_string(),
            "HTTP 403 SignatureDoesNotMatch: The request signature we calculated does not match the signature you \
             provided. Check your key and signing method."
        );
        let text = format!("{answer} {answer:?}");
        assert!(!text.contains(SECRET) && !text.contains("AKIDPLAYPEN") && !text.contains("StringToSign"), "{text}");
    }

    #[test]
    fn without_an_error_document_the_client_text_is_kept_masked_and_cut() {
        let text = format!("Generic S3 error: Error performing PUT http://127.0.0.1:1/b/k - HTTP error: error sending request: connection refused {SECRET}");
        let answer = StoreAnswer::from_error_text(&text, &[SECRET]);
        assert_eq!(answer.status, None);
        assert!(answer.to_string().starts_with("no answer: Generic S3 error"), "{answer}");
        assert!(answer.message.contains("connection refused") && answer.message.contains(MASK), "{answer}");
        assert!(!answer.message.contains(SECRET));
        let long = StoreAnswer::from_error_text(&"x".repeat(1000), &[]);
        assert_eq!(long.message.chars().count(), MAX_MESSAGE + 1);
    }

    #[test]
    fn a_status_without_a_code_is_kept() {
        let answer = StoreAnswer::from_error_text("Server returned non-2xx status code: 502 Bad Gateway: ", &[]);
        assert_eq!(answer.status, Some(502));
        assert_eq!(answer.code, None);
        assert!(answer.to_string().starts_with("HTTP 502: "), "{answer}");
    }

    #[test]
    fn entities_are_unescaped_and_empty_secrets_mask_nothing() {
        let answer = StoreAnswer::from_error_text(
            "status code: 404 Not Found: <Error><Code>NoSuchBucket</Code><Message>bucket &quot;a&amp;b&quot; &lt;gone&gt;</Message></Error>",
            &[""],
        );
        assert_eq!(answer.to_string(), "HTTP 404 NoSuchBucket: bucket \"a&b\" <gone>");
    }
}
