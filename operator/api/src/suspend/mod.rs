//! A suspended session's state on the State path (docs/suspend-resume.md):
//! Playwright's storage state (cookies, localStorage) and each open tab's
//! URL, scroll position and main-frame form values. The runtime writes it
//! at suspend and reads it back at resume; the operator stores it.
//!
//! Everything in it came from pages, so it is hostile input: [`sanitise`]
//! brings any document within hard bounds (dropping what does not fit and
//! saying what it dropped, never quoting a value), and [`check`] says
//! whether a document is within them.

mod bounds;
mod url;

use serde::{Deserialize, Serialize};

pub use bounds::{check, parse, sanitise, Dropped, ParseError, Violation};
pub use url::{reopenable, UrlRefused};

/// The runtime's subcommand that captures a session's state into a file
/// (`playpen-session suspend-state --out FILE`, exec'd in the browser container).
pub const SUSPEND_SUBCOMMAND: &str = "suspend-state";
/// The runtime's subcommand that loads one (`playpen-session resume-state --from FILE`).
pub const RESUME_SUBCOMMAND: &str = "resume-state";

/// The document's format; a reader refuses any other.
pub const FORMAT: u32 = 1;
/// The most bytes a document takes serialized (compact JSON): what a
/// Secret holds comfortably (the State store of docs/suspend-resume.md).
pub const MAX_DOCUMENT_BYTES: usize = 512 * 1024;
/// The most tabs kept (the first ones, in order).
pub const MAX_TABS: usize = 32;
/// The longest URL kept, in bytes (a `data:` URL longer than this is dropped).
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// The most form fields kept per tab (the first ones, in document order).
pub const MAX_FIELDS_PER_TAB: usize = 200;
/// The longest field value kept, in bytes; a longer one is dropped, not cut
/// (a cut value restored into a form could be submitted as if whole).
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// The longest field id or name kept, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// The most selected options kept per `<select multiple>`.
pub const MAX_SELECTED: usize = 64;
/// The largest scroll offset kept, in CSS pixels (either sign: right-to-left pages scroll negative).
pub const MAX_SCROLL: f64 = 10_000_000.0;
/// The most cookies kept.
pub const MAX_COOKIES: usize = 1000;
/// The largest cookie kept, serialized (browsers cap name plus value at 4096 bytes).
pub const MAX_COOKIE_BYTES: usize = 8 * 1024;
/// The most origins with localStorage kept.
pub const MAX_ORIGINS: usize = 100;
/// The largest localStorage entry kept, serialized.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;
/// The longest origin kept, in bytes.
pub const MAX_ORIGIN_BYTES: usize = 2048;

/// A suspended session's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspendedState {
    /// [`FORMAT`].
    pub format: u32,
    /// When it was captured, Unix milliseconds.
    pub captured_at_ms: u64,
    /// Cookies and localStorage, as Playwright's `storageState()` gives them.
    pub storage: StorageState,
    /// The open tabs, in the browser's order.
    pub tabs: Vec<Tab>,
    /// The index in `tabs` of the tab that was in front (0 with no tabs).
    pub active: usize,
}

/// Playwright's storage state. Cookies stay opaque JSON objects so that a
/// field Playwright adds (a partition key) survives the round trip.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageState {
    /// Cookies (`{name, value, domain, path, expires, httpOnly, secure, sameSite}`).
    pub cookies: Vec<serde_json::Value>,
    /// localStorage per origin.
    pub origins: Vec<OriginStorage>,
}

/// One origin's localStorage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginStorage {
    /// `scheme://host[:port]`.
    pub origin: String,
    /// Its entries (`{name, value}`).
    pub local_storage: Vec<serde_json::Value>,
}

/// One open tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tab {
    /// Its URL (reopened with GET).
    pub url: String,
    /// Horizontal scroll, CSS pixels.
    pub scroll_x: f64,
    /// Vertical scroll, CSS pixels.
    pub scroll_y: f64,
    /// Form values of the main frame.
    pub fields: Vec<Field>,
}

/// One form control's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// How the control is found again.
    pub key: FieldKey,
    /// What it held.
    pub value: FieldValue,
}

/// How a control is found again in the reloaded page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "camelCase")]
pub enum FieldKey {
    /// `document.getElementById(id)`.
    Id {
        /// The id.
        id: String,
    },
    /// The `index`th of `document.getElementsByName(name)` (radio groups share a name).
    Name {
        /// The name.
        name: String,
        /// Its position among the controls of that name.
        index: u32,
    },
}

/// A control's value, by kind. There is no password kind: a
/// `type=password` input is never captured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FieldValue {
    /// An `<input>` holding text (text, email, number, date, …).
    Input {
        /// Its value.
        value: String,
    },
    /// A `<textarea>`.
    Textarea {
        /// Its value.
        value: String,
    },
    /// A checkbox or radio button.
    Checked {
        /// Whether it is checked.
        checked: bool,
    },
    /// A `<select>`: the values of its selected options.
    Select {
        /// The selected options' values.
        selected: Vec<String>,
    },
}

impl FieldKey {
    /// The id or name, for reports (page-chosen, never a value).
    pub fn label(&self) -> String {
        match self {
            FieldKey::Id { id } => format!("#{}", crate::text::truncate(id, 64)),
            FieldKey::Name { name, index } => format!("[name={}]#{index}", crate::text::truncate(name, 64)),
        }
    }
}

impl SuspendedState {
    /// An empty document captured at `captured_at_ms`.
    pub fn new(captured_at_ms: u64) -> Self {
        Self { format: FORMAT, captured_at_ms, storage: StorageState::default(), tabs: vec![], active: 0 }
    }

    /// Its serialized form (compact JSON), what is stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain data with string keys cannot fail; an empty
        // document (which `check` refuses) would show it did.
        serde_json::to_vec(self).unwrap_or_default()
    }
}
