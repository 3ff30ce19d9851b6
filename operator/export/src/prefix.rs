//! The prefix template (pure): where in the bucket a session's objects go,
//! e.g. `recordings/{namespace}/{name}/{uid}`, rendered once per session.
//!
//! A template is checked when it is parsed, and the rendered prefix again
//! (the values come from the session): both must be a relative key prefix
//! of safe characters, without empty, `.` or `..` segments, and short enough
//! that every key under it fits the store's 1,024-byte limit.

use std::fmt;

use chrono::{DateTime, Utc};

/// The template the export uses when a destination names none.
pub const DEFAULT_PREFIX: &str = playpen_api::v1alpha1::DEFAULT_EXPORT_PREFIX;
/// The longest template accepted (characters).
pub const MAX_TEMPLATE_LEN: usize = playpen_api::v1alpha1::MAX_EXPORT_PREFIX_LEN as usize;
/// The longest rendered prefix (bytes): leaves room under S3's 1,024-byte
/// key limit for what `keys.rs` adds.
pub const MAX_PREFIX_LEN: usize = 512;

/// A placeholder's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Namespace,
    Name,
    Uid,
    /// `YYYY-MM-DD` (UTC).
    Date,
    /// `HHMMSS` (UTC).
    Time,
    Year,
    Month,
    Day,
    Hour,
}

impl Field {
    const ALL: [(&'static str, Field); 9] = [
        ("namespace", Field::Namespace),
        ("name", Field::Name),
        ("uid", Field::Uid),
        ("date", Field::Date),
        ("time", Field::Time),
        ("year", Field::Year),
        ("month", Field::Month),
        ("day", Field::Day),
        ("hour", Field::Hour),
    ];

    fn parse(word: &str) -> Option<Field> {
        Self::ALL.iter().find(|(name, _)| *name == word).map(|(_, field)| *field)
    }

    fn known() -> String {
        Self::ALL.iter().map(|(name, _)| format!("{{{name}}}")).collect::<Vec<_>>().join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Field(Field),
}

/// A parsed, checked prefix template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixTemplate {
    parts: Vec<Part>,
}

/// The session a prefix is rendered for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionId {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

/// A rendered prefix: relative, no trailing `/`, safe characters only.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Prefix(String);

impl Prefix {
    /// The prefix as a key prefix (no trailing `/`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a template, or what it rendered to, is not a usable prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// Nothing to render.
    #[error("the prefix template is empty; use for example {DEFAULT_PREFIX:?}")]
    Empty,
    /// Longer than [`MAX_TEMPLATE_LEN`].
    #[error("the prefix template is {len} characters long; keep it within {MAX_TEMPLATE_LEN}")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// A placeholder that does not exist.
    #[error("the prefix template names an unknown placeholder {{{word}}}; the known ones are {known}", known = Field::known())]
    UnknownPlaceholder {
        /// The word between the braces.
        word: String,
    },
    /// `{` without `}`, or `}` alone.
    #[error("the prefix template has an unmatched {brace:?} at character {at}; braces only surround a placeholder such as {{uid}}")]
    UnmatchedBrace {
        /// Which brace.
        brace: char,
        /// Its position (characters from 0).
        at: usize,
    },
    /// A control character (a newline pasted into YAML, say).
    #[error("the prefix {what} has a control character (U+{code:04X}) at character {at}; remove it")]
    ControlCharacter {
        /// `template` or `rendered for this session`.
        what: &'static str,
        /// Its code point.
        code: u32,
        /// Its position.
        at: usize,
    },
    /// A character outside the safe set.
    #[error(
        "the prefix {what} has {ch:?} at character {at}; use letters, digits and - _ . ! * ' ( ) = and / between segments"
    )]
    UnsafeCharacter {
        /// `template` or `rendered for this session`.
        what: &'static str,
        /// The character.
        ch: char,
        /// Its position.
        at: usize,
    },
    /// Starts with `/`.
    #[error("the prefix {what} starts with '/'; a prefix is relative to the bucket, drop the leading '/'")]
    Leading {
        /// `template` or `rendered for this session`.
        what: &'static str,
    },
    /// Ends with `/`.
    #[error("the prefix {what} ends with '/'; the export adds the '/' itself, drop it")]
    Trailing {
        /// `template` or `rendered for this session`.
        what: &'static str,
    },
    /// `a//b`, `./` or `../`.
    #[error("the prefix {what} has an empty, '.' or '..' segment ({segment:?}); every segment between '/' must name something")]
    BadSegment {
        /// `template` or `rendered for this session`.
        what: &'static str,
        /// The segment.
        segment: String,
    },
    /// The template could render the same prefix for two sessions.
    #[error("the prefix template has no {{uid}}: two sessions of one name would write over each other's objects; add {{uid}}")]
    NotUnique,
    /// Rendered longer than [`MAX_PREFIX_LEN`].
    #[error("the prefix rendered for this session is {len} bytes long; keep it within {MAX_PREFIX_LEN} (shorten the template)")]
    RenderedTooLong {
        /// Its length in bytes.
        len: usize,
    },
}

const TEMPLATE: &str = "template";
const RENDERED: &str = "rendered for this session";

impl PrefixTemplate {
    /// Parse and check a template.
    pub fn parse(template: &str) -> Result<Self, PrefixError> {
        if template.is_empty() {
            return Err(PrefixError::Empty);
        }
        let len = template.chars().count();
        if len > MAX_TEMPLATE_LEN {
            return Err(PrefixError::TooLong { len });
        }
        let parts = tokenize(template)?;
        let literal_text: String = parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.as_str(),
                // Stands in for a value when the shape is checked.
                Part::Field(_) => "x",
            })
            .collect();
        check_shape(&literal_text, TEMPLATE)?;
        if !parts.contains(&Part::Field(Field::Uid)) {
            return Err(PrefixError::NotUnique);
        }
        Ok(Self { parts })
    }

    /// The prefix for `session`, its time placeholders from `at` (UTC).
    pub fn render(&self, session: &SessionId, at: DateTime<Utc>) -> Result<Prefix, PrefixError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Field(field) => out.push_str(&value(*field, session, at)),
            }
        }
        check_shape(&out, RENDERED)?;
        if out.len() > MAX_PREFIX_LEN {
            return Err(PrefixError::RenderedTooLong { len: out.len() });
        }
        Ok(Prefix(out))
    }
}

fn value(field: Field, session: &SessionId, at: DateTime<Utc>) -> String {
    match field {
        Field::Namespace => session.namespace.clone(),
        Field::Name => session.name.clone(),
        Field::Uid => session.uid.clone(),
        Field::Date => at.format("%Y-%m-%d").to_string(),
        Field::Time => at.format("%H%M%S").to_string(),
        Field::Year => at.format("%Y").to_string(),
        Field::Month => at.format("%m").to_string(),
        Field::Day => at.format("%d").to_string(),
        Field::Hour => at.format("%H").to_string(),
    }
}

fn tokenize(template: &str) -> Result<Vec<Part>, PrefixError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = template.chars().enumerate();
    while let Some((at, ch)) = chars.next() {
        match ch {
            '{' => {
                let mut word = String::new();
                let closed = chars.by_ref().any(|(_, c)| {
                    if c == '}' {
                        return true;
                    }
                    word.push(c);
                    false
                });
                if !closed || word.contains('{') {
                    return Err(PrefixError::UnmatchedBrace { brace: '{', at });
                }
                let field = Field::parse(&word).ok_or(PrefixError::UnknownPlaceholder { word })?;
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(Part::Field(field));
            }
            '}' => return Err(PrefixError::UnmatchedBrace { brace: '}', at }),
            _ => literal.push(ch),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// The characters a prefix may hold besides `/`: S3's "safe characters".
pub(crate) fn is_safe(ch: char) -> bool {
    // `@`: Playwright names screencast frames `page@<id>-<ms>.jpeg`.
    ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.' | '!' | '*' | '\'' | '(' | ')' | '=' | '@')
}

fn check_shape(text: &str, what: &'static str) -> Result<(), PrefixError> {
    for (at, ch) in text.chars().enumerate() {
        if ch.is_control() {
            return Err(PrefixError::ControlCharacter { what, code: u32::from(ch), at });
        }
        if ch != '/' && !is_safe(ch) {
            return Err(PrefixError::UnsafeCharacter { what, ch, at });
        }
    }
    if text.starts_with('/') {
        return Err(PrefixError::Leading { what });
    }
    if text.ends_with('/') {
        return Err(PrefixError::Trailing { what });
    }
    if let Some(segment) = text.split('/').find(|s| s.is_empty() || *s == "." || *s == "..") {
        return Err(PrefixError::BadSegment { what, segment: segment.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn session() -> SessionId {
        SessionId {
            namespace: "team-a".into(),
            name: "demo".into(),
            uid: "0b7c1f7e-3c1d-4a55-9a7e-2f1c9d8e7a10".into(),
        }
    }

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 10, 7, 5, 9).unwrap()
    }

    fn render(template: &str) -> Result<String, PrefixError> {
        Ok(PrefixTemplate::parse(template)?.render(&session(), at())?.as_str().to_owned())
    }

    #[test]
    fn every_placeholder_renders() {
        assert_eq!(render(DEFAULT_PREFIX).unwrap(), "team-a/demo/0b7c1f7e-3c1d-4a55-9a7e-2f1c9d8e7a10");
        assert_eq!(
            render("rec/{year}/{month}/{day}/{hour}/{namespace}-{name}-{uid}").unwrap(),
            "rec/2026/12/10/07/team-a-demo-0b7c1f7e-3c1d-4a55-9a7e-2f1c9d8e7a10"
        );
        assert_eq!(
            render("date={date}/t{time}/{uid}").unwrap(),
            "date=2026-12-10/t070509/0b7c1f7e-3c1d-4a55-9a7e-2f1c9d8e7a10"
        );
    }

    #[test]
    fn unknown_placeholders_are_named_with_the_known_ones() {
        let err = render("{namespace}/{session}/{uid}").unwrap_err();
        assert_eq!(err, PrefixError::UnknownPlaceholder { word: "session".into() });
        let text = err.to_string();
        assert!(text.contains("{session}") && text.contains("{uid}") && text.contains("{date}"), "{text}");
        assert_eq!(render("{}/{uid}").unwrap_err(), PrefixError::UnknownPlaceholder { word: String::new() });
        assert_eq!(render("{UID}").unwrap_err(), PrefixError::UnknownPlaceholder { word: "UID".into() });
    }

    #[test]
    fn braces_must_surround_a_placeholder() {
        assert_eq!(render("a/{uid").unwrap_err(), PrefixError::UnmatchedBrace { brace: '{', at: 2 });
        assert_eq!(render("a}/{uid}").unwrap_err(), PrefixError::UnmatchedBrace { brace: '}', at: 1 });
        assert_eq!(render("{a{uid}").unwrap_err(), PrefixError::UnmatchedBrace { brace: '{', at: 0 });
    }

    #[test]
    fn dot_segments_leading_and_trailing_slashes_and_empty_segments_are_refused() {
        assert_eq!(render("../{uid}").unwrap_err(), PrefixError::BadSegment { what: TEMPLATE, segment: "..".into() });
        assert_eq!(render("a/./{uid}").unwrap_err(), PrefixError::BadSegment { what: TEMPLATE, segment: ".".into() });
        assert_eq!(render("a//{uid}").unwrap_err(), PrefixError::BadSegment { what: TEMPLATE, segment: String::new() });
        assert_eq!(render("/a/{uid}").unwrap_err(), PrefixError::Leading { what: TEMPLATE });
        assert_eq!(render("a/{uid}/").unwrap_err(), PrefixError::Trailing { what: TEMPLATE });
        // `..` inside a segment is a name, not a step up.
        assert_eq!(render("a..b/{uid}").unwrap(), "a..b/0b7c1f7e-3c1d-4a55-9a7e-2f1c9d8e7a10");
    }

    #[test]
    fn control_and_unsafe_characters_are_refused_where_they_are() {
        assert_eq!(
            render("a\n/{uid}").unwrap_err(),
            PrefixError::ControlCharacter { what: TEMPLATE, code: 0x0a, at: 1 }
        );
        assert_eq!(
            render("a\u{7f}{uid}").unwrap_err(),
            PrefixError::ControlCharacter { what: TEMPLATE, code: 0x7f, at: 1 }
        );
        for (template, ch) in [("a b/{uid}", ' '), ("a\\b/{uid}", '\\'), ("é/{uid}", 'é'), ("a?/{uid}", '?')] {
            match render(template).unwrap_err() {
                PrefixError::UnsafeCharacter { ch: got, .. } => assert_eq!(got, ch, "{template}"),
                other => panic!("{template}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_template_without_uid_is_refused() {
        assert_eq!(render("{namespace}/{name}").unwrap_err(), PrefixError::NotUnique);
        assert_eq!(render("fixed").unwrap_err(), PrefixError::NotUnique);
        assert_eq!(render("").unwrap_err(), PrefixError::Empty);
    }

    #[test]
    fn length_is_bounded_in_the_template_and_in_what_it_renders() {
        let long = format!("{}/{{uid}}", "a".repeat(MAX_TEMPLATE_LEN));
        assert!(matches!(render(&long).unwrap_err(), PrefixError::TooLong { .. }));
        let template = format!("{}/{{uid}}", "a".repeat(MAX_TEMPLATE_LEN - 6));
        assert_eq!(render(&template).unwrap().len(), MAX_TEMPLATE_LEN - 6 + 1 + 36);
        let long_name = SessionId { name: "n".repeat(253), ..session() };
        let template = PrefixTemplate::parse("{name}/{name}/{uid}").unwrap();
        assert!(matches!(template.render(&long_name, at()).unwrap_err(), PrefixError::RenderedTooLong { len: 544 }));
    }

    #[test]
    fn values_are_checked_once_rendered() {
        let odd = SessionId { namespace: "a/../b".into(), ..session() };
        let template = PrefixTemplate::parse(DEFAULT_PREFIX).unwrap();
        assert_eq!(
            template.render(&odd, at()).unwrap_err(),
            PrefixError::BadSegment { what: RENDERED, segment: "..".into() }
        );
        let empty = SessionId { name: String::new(), ..session() };
        assert_eq!(
            template.render(&empty, at()).unwrap_err(),
            PrefixError::BadSegment { what: RENDERED, segment: String::new() }
        );
    }
}
