//! The daemon protocol, as the Node client's `SocketConnectionClient` speaks
//! it: one newline-terminated JSON request
//! `{"id":1,"method":"run","params":{"args":…,"cwd":…,"raw":…,"json":…}}`
//! on a fresh connection to the session's socket, answered by one line
//! `{"id":1,"result":{"isError":…,"text":…}}` or `{"id":1,"error":"…"}`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use super::args::{json_string, Argv};

/// The request line (with its newline), byte for byte what the Node client writes.
pub fn run_request(args: &Argv, cwd: &str, raw: bool, json: bool) -> String {
    format!(
        "{{\"id\":1,\"method\":\"run\",\"params\":{{\"args\":{},\"cwd\":{},\"raw\":{raw},\"json\":{json}}}}}\n",
        args.to_json(),
        json_string(cwd)
    )
}

/// A reply the Node client understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `result`: print `text` (`undefined` when absent) and exit 1 on `isError`.
    Result {
        /// `result.isError`, as JS truthiness.
        is_error: bool,
        /// `result.text`.
        text: Option<String>,
    },
    /// `error`: the daemon rejected the command before running any tool
    /// (argument validation); the Node client throws it.
    Error(String),
}

/// Why a reply is not one this client can reproduce the Node client's
/// reaction to.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Connecting failed; the Node client reports this itself (and removes the socket file).
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Writing the request or reading the reply failed.
    #[error("socket i/o failed: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon closed the connection without a reply.
    #[error("the daemon closed the connection without replying")]
    Closed,
    /// A line that is not the reply to request 1.
    #[error("unexpected reply: {0}")]
    Unexpected(String),
}

/// Sends `request` over a new connection to `socket_path` and reads one reply line.
pub fn exchange(socket_path: &str, request: &str) -> Result<Vec<u8>, ProtocolError> {
    let stream = UnixStream::connect(socket_path)
        .map_err(|source| ProtocolError::Connect { path: socket_path.to_owned(), source })?;
    (&stream).write_all(request.as_bytes())?;
    let mut reader = BufReader::new(&stream);
    let mut line = Vec::with_capacity(4096);
    reader.read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(ProtocolError::Closed);
    }
    line.pop();
    Ok(line)
}

/// Interprets a reply line as `SocketConnectionClient._onMessage` does.
pub fn parse_reply(line: &[u8]) -> Result<Reply, ProtocolError> {
    let text = String::from_utf8_lossy(line);
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        // JSON.stringify writes lone surrogates as `\udxxx`, which serde_json
        // refuses; Node prints them as U+FFFD.
        Err(_) => serde_json::from_str(&replace_lone_surrogates(&text)).map_err(|_| unexpected(&text))?,
    };
    let object = value.as_object().ok_or_else(|| unexpected(&text))?;
    if object.get("id").and_then(serde_json::Value::as_f64) != Some(1.0) {
        return Err(unexpected(&text));
    }
    match object.get("error") {
        None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => {}
        Some(serde_json::Value::String(e)) if !e.is_empty() => return Ok(Reply::Error(e.clone())),
        Some(_) => return Err(unexpected(&text)),
    }
    let result = object.get("result").and_then(serde_json::Value::as_object).ok_or_else(|| unexpected(&text))?;
    let is_error = match result.get("isError") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(_) => return Err(unexpected(&text)),
    };
    let text_field = match result.get("text") {
        None => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(unexpected(&text)),
    };
    Ok(Reply::Result { is_error, text: text_field })
}

fn unexpected(text: &str) -> ProtocolError {
    let mut shown: String = text.chars().take(200).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    ProtocolError::Unexpected(shown.replace('\n', "\\n"))
}

/// Replaces `\uD800`–`\uDFFF` escapes that are not a high-low pair with `\ufffd`.
pub fn replace_lone_surrogates(json: &str) -> String {
    let hex4 = |s: &str| -> Option<u32> {
        (s.len() >= 4 && s.is_char_boundary(4)).then(|| u32::from_str_radix(&s[..4], 16).ok()).flatten()
    };
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let esc = &rest[at..];
        if let Some(code) = esc.strip_prefix("\\u").and_then(hex4) {
            if (0xD800..0xDC00).contains(&code) {
                let low = esc[6..].strip_prefix("\\u").and_then(hex4);
                if low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                    out.push_str(&esc[..12]);
                    rest = &esc[12..];
                    continue;
                }
                out.push_str("\\ufffd");
            } else if (0xDC00..0xE000).contains(&code) {
                out.push_str("\\ufffd");
            } else {
                out.push_str(&esc[..6]);
            }
            rest = &esc[6..];
        } else {
            // Any other escape is two characters (`\\`, `\"`, `\n`…).
            let len = esc.chars().take(2).map(char::len_utf8).sum::<usize>();
            out.push_str(&esc[..len]);
            rest = &esc[len..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::fastpath::args::{minimist, Value};

    #[test]
    fn the_request_is_what_the_node_client_writes() {
        let mut args = minimist(&["click".into(), "e1".into()], &[]).unwrap();
        args.set("modifiers", Value::Str("Shift".into()));
        assert_eq!(
            run_request(&args, "/home/a \"b\"", false, true),
            "{\"id\":1,\"method\":\"run\",\"params\":{\"args\":{\"_\":[\"click\",\"e1\"],\"modifiers\":\"Shift\"},\
             \"cwd\":\"/home/a \\\"b\\\"\",\"raw\":false,\"json\":true}}\n"
        );
    }

    #[test]
    fn replies() {
        assert_eq!(
            parse_reply(br####"{"id":1,"result":{"isError":false,"text":"### Page\n- x"}}"####).unwrap(),
            Reply::Result { is_error: false, text: Some("### Page\n- x".into()) }
        );
        assert_eq!(
            parse_reply(br####"{"id":1,"result":{"isError":true,"text":"### Error"}}"####).unwrap(),
            Reply::Result { is_error: true, text: Some("### Error".into()) }
        );
        assert_eq!(parse_reply(br#"{"id":1,"result":{}}"#).unwrap(), Reply::Result { is_error: false, text: None });
        assert_eq!(parse_reply(br#"{"id":1,"error":"bad"}"#).unwrap(), Reply::Error("bad".into()));
        for bad in
            [&b"nope"[..], br#"{"id":2,"result":{}}"#, br#"{"id":1}"#, br#"[1]"#, br#"{"id":1,"result":{"text":5}}"#]
        {
            assert!(matches!(parse_reply(bad), Err(ProtocolError::Unexpected(_))), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let line = br#"{"id":1,"result":{"text":"a\ud83d\ude00b\ud800c\\ud800\udfff"}}"#;
        let Reply::Result { text: Some(text), .. } = parse_reply(line).unwrap() else { panic!() };
        assert_eq!(text, "a\u{1F600}b\u{FFFD}c\\ud800\u{FFFD}");
    }
}
