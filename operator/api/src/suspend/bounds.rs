//! The hard bounds of a [`SuspendedState`]: [`sanitise`] brings any
//! document within them, [`check`] tests one, [`parse`] reads stored bytes.

use std::collections::BTreeSet;

use serde::Serialize;

use super::url::reopenable;
use super::*;

/// Something [`sanitise`] left out. It names what and why, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// What was left out (`tab 2`, `tab 0 field #email`, `3 cookies`).
    pub what: String,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} left out: {}", self.what, self.why)
    }
}

/// The first bound a document breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("suspended state out of bounds: {0}")]
pub struct Violation(pub String);

/// Why stored bytes are not a document to resume from.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Larger than any document [`sanitise`] writes.
    #[error("the suspended state is {0} bytes, over the {MAX_DOCUMENT_BYTES} a document may take; it was not written by suspend-state")]
    TooLarge(usize),
    /// Not JSON of the document's shape.
    #[error("the suspended state is not a document of format {FORMAT}: {0}")]
    Shape(#[from] serde_json::Error),
    /// Another format.
    #[error("the suspended state has format {0}; this runtime reads format {FORMAT} only (resume with the runtime version that suspended it)")]
    Format(u32),
}

impl ParseError {
    /// What is wrong, quoting nothing of the document: serde's own messages
    /// quote the offending value, and a garbled document may hold a cookie
    /// where a number belongs. It gives the JSON error's kind and position,
    /// the field a document misses, or what the schema expected there.
    pub fn without_values(&self) -> String {
        match self {
            Self::TooLarge(bytes) => {
                format!("the document is {bytes} bytes, over the {MAX_DOCUMENT_BYTES} it may take")
            }
            Self::Format(_) => format!("the document's format is not {FORMAT}, the only one this runtime reads"),
            Self::Shape(e) => {
                let at = format!("at line {} column {}", e.line(), e.column());
                match schema_words(&e.to_string()) {
                    Some(what) => format!("not a suspended-state document of format {FORMAT}: {what} ({at})"),
                    None => {
                        format!("not a suspended-state document of format {FORMAT} ({:?} error {at})", e.classify())
                    }
                }
            }
        }
    }
}

/// The part of a serde message that comes from the schema, not the input
/// (pure): the name of a missing field, or what was expected. `None` when
/// the message has neither (a syntax error: its kind and position say it).
fn schema_words(message: &str) -> Option<String> {
    let message = message.split(" at line ").next().unwrap_or_default();
    if let Some(rest) = message.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        let ours = !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric());
        return ours.then(|| format!("missing field `{name}`"));
    }
    // `invalid type: string "…", expected u32`: the value comes first, the
    // schema's words after the last `, expected ` (a value holding those
    // words is still before it). Only plain words are kept.
    let expected = &message[message.rfind(", expected ")? + ", expected ".len()..];
    let plain = expected.len() <= 80 && expected.chars().all(|c| c.is_ascii_alphanumeric() || " `,_".contains(c));
    plain.then(|| format!("a value of the wrong type or kind, expected {expected}"))
}

/// Reads stored bytes: size first (before any parsing), then shape and
/// format, then [`sanitise`], so a hand-edited document is held to the
/// same bounds as a captured one.
pub fn parse(bytes: &[u8]) -> Result<(SuspendedState, Vec<Dropped>), ParseError> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(ParseError::TooLarge(bytes.len()));
    }
    let doc: SuspendedState = serde_json::from_slice(bytes)?;
    if doc.format != FORMAT {
        return Err(ParseError::Format(doc.format));
    }
    Ok(sanitise(doc))
}

fn size<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

fn note(dropped: &mut Vec<Dropped>, what: impl Into<String>, why: impl Into<String>) {
    dropped.push(Dropped { what: what.into(), why: why.into() });
}

/// Clamped, and rounded to 1/100 px so that JSON gives back the same number.
fn scroll(value: f64) -> f64 {
    if value.is_finite() {
        (value.clamp(-MAX_SCROLL, MAX_SCROLL) * 100.0).round() / 100.0
    } else {
        0.0
    }
}

/// Why a field is not kept, if it is not.
fn field_fault(field: &Field) -> Option<String> {
    let key = match &field.key {
        FieldKey::Id { id } => id,
        FieldKey::Name { name, .. } => name,
    };
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Some(format!("its id or name is {} bytes (1 to {MAX_KEY_BYTES} are kept)", key.len()));
    }
    let long = |v: &String| v.len() > MAX_VALUE_BYTES;
    match &field.value {
        FieldValue::Input { value } | FieldValue::Textarea { value } if long(value) => {
            Some(format!("its value is {} bytes, over {MAX_VALUE_BYTES}", value.len()))
        }
        FieldValue::Select { selected } if selected.len() > MAX_SELECTED || selected.iter().any(long) => {
            Some(format!("over {MAX_SELECTED} options selected, or an option value over {MAX_VALUE_BYTES} bytes"))
        }
        _ => None,
    }
}

fn cookie_fault(cookie: &serde_json::Value) -> Option<String> {
    if !cookie.is_object() {
        return Some("not a JSON object".into());
    }
    let bytes = size(cookie);
    (bytes > MAX_COOKIE_BYTES).then(|| format!("{bytes} bytes, over {MAX_COOKIE_BYTES}"))
}

fn origin_fault(origin: &OriginStorage) -> Option<String> {
    let web = origin.origin.starts_with("http://") || origin.origin.starts_with("https://");
    (!web || origin.origin.len() > MAX_ORIGIN_BYTES || reopenable(&origin.origin).is_err())
        .then(|| format!("its origin is not an http(s) origin of at most {MAX_ORIGIN_BYTES} bytes"))
}

fn entry_fault(entry: &serde_json::Value) -> Option<String> {
    if !entry.is_object() {
        return Some("not a JSON object".into());
    }
    let bytes = size(entry);
    (bytes > MAX_ENTRY_BYTES).then(|| format!("{bytes} bytes, over {MAX_ENTRY_BYTES}"))
}

/// Brings `doc` within every bound: items over their own bound are left
/// out, counts are cut to their limits (the first ones kept), and if the
/// whole is still over [`MAX_DOCUMENT_BYTES`] the largest items go, in
/// this order: form fields, localStorage entries, cookies, tabs other than
/// the active one. Logins (cookies) outlive form values.
pub fn sanitise(mut doc: SuspendedState) -> (SuspendedState, Vec<Dropped>) {
    let mut dropped = vec![];
    doc.format = FORMAT;
    sanitise_tabs(&mut doc, &mut dropped);
    sanitise_storage(&mut doc.storage, &mut dropped);
    fit(&mut doc, &mut dropped);
    (doc, dropped)
}

fn sanitise_tabs(doc: &mut SuspendedState, dropped: &mut Vec<Dropped>) {
    let tabs = std::mem::take(&mut doc.tabs);
    let active = doc.active;
    let mut new_active = None;
    for (index, mut tab) in tabs.into_iter().enumerate() {
        if doc.tabs.len() == MAX_TABS {
            note(dropped, format!("tab {index}"), format!("only the first {MAX_TABS} tabs are kept"));
            continue;
        }
        if let Err(why) = reopenable(&tab.url) {
            note(dropped, format!("tab {index}"), why.to_string());
            continue;
        }
        tab.scroll_x = scroll(tab.scroll_x);
        tab.scroll_y = scroll(tab.scroll_y);
        let fields = std::mem::take(&mut tab.fields);
        for field in fields {
            let what = || format!("tab {index} field {}", field.key.label());
            if tab.fields.len() == MAX_FIELDS_PER_TAB {
                note(dropped, what(), format!("only the first {MAX_FIELDS_PER_TAB} fields of a tab are kept"));
            } else if let Some(why) = field_fault(&field) {
                note(dropped, what(), why);
            } else {
                tab.fields.push(field);
            }
        }
        if index == active {
            new_active = Some(doc.tabs.len());
        }
        doc.tabs.push(tab);
    }
    doc.active = new_active.unwrap_or(0);
    if new_active.is_none() && !doc.tabs.is_empty() {
        note(dropped, format!("the active tab ({active})"), "it was not kept; the first tab is brought to front");
    }
}

fn sanitise_storage(storage: &mut StorageState, dropped: &mut Vec<Dropped>) {
    let cookies = std::mem::take(&mut storage.cookies);
    for (index, cookie) in cookies.into_iter().enumerate() {
        if storage.cookies.len() == MAX_COOKIES {
            note(dropped, format!("cookie {index}"), format!("only the first {MAX_COOKIES} cookies are kept"));
        } else if let Some(why) = cookie_fault(&cookie) {
            note(dropped, format!("cookie {index}"), why);
        } else {
            storage.cookies.push(cookie);
        }
    }
    let origins = std::mem::take(&mut storage.origins);
    for (index, mut origin) in origins.into_iter().enumerate() {
        if storage.origins.len() == MAX_ORIGINS {
            note(dropped, format!("localStorage origin {index}"), format!("only the first {MAX_ORIGINS} are kept"));
            continue;
        }
        if let Some(why) = origin_fault(&origin) {
            note(dropped, format!("localStorage origin {index}"), why);
            continue;
        }
        let entries = std::mem::take(&mut origin.local_storage);
        for (entry_index, entry) in entries.into_iter().enumerate() {
            match entry_fault(&entry) {
                Some(why) => note(dropped, format!("localStorage origin {index} entry {entry_index}"), why),
                None => origin.local_storage.push(entry),
            }
        }
        storage.origins.push(origin);
    }
}

/// The positions to drop, largest first, until `total` is within bounds;
/// each drop counts its size and a separating comma.
fn largest_until_fits<K: Ord + Copy>(mut items: Vec<(usize, K)>, total: &mut usize) -> BTreeSet<K> {
    items.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out = BTreeSet::new();
    for (bytes, key) in items {
        if *total <= MAX_DOCUMENT_BYTES {
            break;
        }
        *total = total.saturating_sub(bytes + 1);
        out.insert(key);
    }
    out
}

fn fit(doc: &mut SuspendedState, dropped: &mut Vec<Dropped>) {
    let why = || format!("the state is over {MAX_DOCUMENT_BYTES} bytes; the largest items go first");
    // The estimate may be off by a comma per array; a second round settles it.
    while size(doc) > MAX_DOCUMENT_BYTES {
        let mut total = size(doc);
        let fields = doc
            .tabs
            .iter()
            .enumerate()
            .flat_map(|(t, tab)| tab.fields.iter().enumerate().map(move |(f, field)| (size(field), (t, f))));
        let gone = largest_until_fits(fields.collect(), &mut total);
        for (t, tab) in doc.tabs.iter_mut().enumerate() {
            let mut f = 0;
            tab.fields.retain(|_| (!gone.contains(&(t, f)), f += 1).0);
        }
        let entries = doc.storage.origins.iter().enumerate().flat_map(|(o, origin)| {
            origin.local_storage.iter().enumerate().map(move |(e, entry)| (size(entry), (o, e)))
        });
        let gone_entries = largest_until_fits(entries.collect(), &mut total);
        for (o, origin) in doc.storage.origins.iter_mut().enumerate() {
            let mut e = 0;
            origin.local_storage.retain(|_| (!gone_entries.contains(&(o, e)), e += 1).0);
        }
        let cookies = doc.storage.cookies.iter().enumerate().map(|(c, cookie)| (size(cookie), c));
        let gone_cookies = largest_until_fits(cookies.collect(), &mut total);
        let mut c = 0;
        doc.storage.cookies.retain(|_| (!gone_cookies.contains(&c), c += 1).0);
        let active = doc.active;
        let tabs = doc.tabs.iter().enumerate().filter(|(t, _)| *t != active).map(|(t, tab)| (size(tab), t));
        let gone_tabs = largest_until_fits(tabs.collect(), &mut total);
        let mut t = 0;
        doc.tabs.retain(|_| (!gone_tabs.contains(&t), t += 1).0);
        doc.active -= gone_tabs.iter().filter(|t| **t < active).count();
        for (count, kind) in [
            (gone.len(), "form fields"),
            (gone_entries.len(), "localStorage entries"),
            (gone_cookies.len(), "cookies"),
            (gone_tabs.len(), "tabs"),
        ] {
            if count > 0 {
                note(dropped, format!("{count} {kind}"), why());
            }
        }
        if gone.len() + gone_entries.len() + gone_cookies.len() + gone_tabs.len() == 0 {
            // Nothing left to drop by size: only possible with oversized
            // origin names, which the per-item bounds already refuse.
            doc.storage = StorageState::default();
            note(dropped, "the storage state", why());
            break;
        }
    }
}

/// Whether `doc` is within every bound; the first bound it breaks.
pub fn check(doc: &SuspendedState) -> Result<(), Violation> {
    let fail = |what: String| Err(Violation(what));
    if doc.format != FORMAT {
        return fail(format!("format {} is not {FORMAT}", doc.format));
    }
    let bytes = size(doc);
    if bytes > MAX_DOCUMENT_BYTES {
        return fail(format!("{bytes} bytes, over {MAX_DOCUMENT_BYTES}"));
    }
    if doc.tabs.len() > MAX_TABS {
        return fail(format!("{} tabs, over {MAX_TABS}", doc.tabs.len()));
    }
    if doc.active >= doc.tabs.len().max(1) {
        return fail(format!("active tab {} of {}", doc.active, doc.tabs.len()));
    }
    for (index, tab) in doc.tabs.iter().enumerate() {
        if let Err(why) = reopenable(&tab.url) {
            return fail(format!("tab {index}: {why}"));
        }
        if scroll(tab.scroll_x) != tab.scroll_x || scroll(tab.scroll_y) != tab.scroll_y {
            return fail(format!("tab {index}: scroll out of range"));
        }
        if tab.fields.len() > MAX_FIELDS_PER_TAB {
            return fail(format!("tab {index}: {} fields, over {MAX_FIELDS_PER_TAB}", tab.fields.len()));
        }
        if let Some(why) = tab.fields.iter().find_map(field_fault) {
            return fail(format!("tab {index}: a field: {why}"));
        }
    }
    let storage = &doc.storage;
    if storage.cookies.len() > MAX_COOKIES || storage.origins.len() > MAX_ORIGINS {
        return fail(format!("{} cookies, {} origins", storage.cookies.len(), storage.origins.len()));
    }
    if let Some(why) = storage.cookies.iter().find_map(cookie_fault) {
        return fail(format!("a cookie: {why}"));
    }
    if let Some(why) = storage.origins.iter().find_map(origin_fault) {
        return fail(format!("a localStorage origin: {why}"));
    }
    if let Some(why) = storage.origins.iter().flat_map(|o| &o.local_storage).find_map(entry_fault) {
        return fail(format!("a localStorage entry: {why}"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "bounds_tests.rs"]
mod tests;
