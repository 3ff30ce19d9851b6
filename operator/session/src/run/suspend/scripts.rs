//! The two `run-code` functions, built here as text (pure). Each runs in
//! the daemon with the current tab as `page` and answers one JSON value.
//!
//! Capture reads every page of the context in parallel: the URL from
//! Playwright, scroll and form values from the page. A page's answer is
//! hostile, so it is held to the bounds of `playpen_api::suspend` before it
//! crosses the socket (values over the limit are counted, not sent), and a
//! page that does not answer within its time keeps its URL only.
//!
//! Reopen makes one page per tab (the current page first, then new ones, in
//! order, so the tab order holds), starting each load as soon as its page
//! exists so that loads overlap, restores scroll and values with the
//! elements' own setters and `input`/`change` events (frameworks that track
//! values through the setter notice), and reports each tab.

use std::time::Duration;

use playpen_api::suspend::{
    Tab, MAX_FIELDS_PER_TAB, MAX_KEY_BYTES, MAX_SELECTED, MAX_TABS, MAX_URL_BYTES, MAX_VALUE_BYTES,
};

/// The most bytes of field JSON the capture sends for all tabs together: a
/// hostile page with many long values cannot make the answer unbounded.
pub const CAPTURE_FIELD_BUDGET: usize = 2 * playpen_api::suspend::MAX_DOCUMENT_BYTES;

/// Runs in each page: scroll and the main frame's form values. Controls
/// without an id or name, passwords, hidden and file inputs and buttons are
/// skipped. A value longer than the limit is counted in `omitted.tooLong`.
const READ_PAGE: &str = r#"(L) => {
  const fields = [], omitted = { tooLong: 0, overCount: 0 };
  const skip = ['password', 'hidden', 'file', 'submit', 'button', 'reset', 'image'];
  const str = (v) => (typeof v === 'string' ? v : '');
  for (const el of document.querySelectorAll('input, textarea, select')) {
    const tag = str(el.tagName).toLowerCase();
    const attrType = str(el.getAttribute && el.getAttribute('type')).toLowerCase();
    const type = tag === 'input' ? str(el.type).toLowerCase() : tag;
    if (skip.includes(type) || skip.includes(attrType)) continue;
    const id = str(el.id), name = str(el.getAttribute && el.getAttribute('name'));
    let key;
    if (id) key = { by: 'id', id: id.slice(0, L.key) };
    else if (name) key = { by: 'name', name: name.slice(0, L.key), index: Array.prototype.indexOf.call(document.getElementsByName(name), el) };
    else continue;
    if (fields.length >= L.fields) { omitted.overCount++; continue; }
    let value;
    if (tag === 'select') {
      const selected = Array.from(el.selectedOptions || []).slice(0, L.selected).map((o) => str(o.value));
      if (selected.some((v) => v.length > L.value)) { omitted.tooLong++; continue; }
      value = { kind: 'select', selected };
    } else if (type === 'checkbox' || type === 'radio') {
      value = { kind: 'checked', checked: !!el.checked };
    } else {
      const v = str(el.value);
      if (v.length > L.value) { omitted.tooLong++; continue; }
      value = { kind: tag === 'textarea' ? 'textarea' : 'input', value: v };
    }
    fields.push({ key, value });
  }
  return { scrollX: Number(window.scrollX) || 0, scrollY: Number(window.scrollY) || 0, fields, omitted };
}"#;

/// Runs in the daemon: every page's URL and, within the time, its state;
/// then the field budget over all tabs, in order.
const CAPTURE: &str = r#"async (page) => {
  const L = __LIMITS__;
  const readPage = __READ_PAGE__;
  const all = page.context().pages();
  const pages = all.slice(0, L.tabs);
  const timeout = () => new Promise((resolve) => setTimeout(() => resolve({ timedOut: true }), L.timeoutMs));
  const tabs = await Promise.all(pages.map(async (p) => {
    const url = String(p.url()).slice(0, L.url + 1);
    try {
      const state = await Promise.race([p.evaluate(readPage, L), timeout()]);
      if (state && state.timedOut) return { url, error: 'the page did not answer within ' + L.timeoutMs + ' ms' };
      return { url, state };
    } catch (e) {
      return { url, error: String((e && e.message) || e).split('\n')[0].slice(0, 200) };
    }
  }));
  let budget = L.budget;
  for (const tab of tabs) {
    if (!tab.state || !Array.isArray(tab.state.fields)) continue;
    const kept = [];
    for (const field of tab.state.fields) {
      const bytes = JSON.stringify(field).length;
      if (bytes > budget) { tab.state.omitted.overBudget = (tab.state.omitted.overBudget || 0) + 1; continue; }
      budget -= bytes;
      kept.push(field);
    }
    tab.state.fields = kept;
  }
  return { active: all.indexOf(page), tabCount: all.length, tabs };
}"#;

/// Runs in each page after its load: values, then scroll.
const RESTORE_PAGE: &str = r#"(t) => {
  let restored = 0, missing = 0;
  const set = (proto, el, prop, v) => {
    const d = Object.getOwnPropertyDescriptor(proto, prop);
    if (d && d.set) d.set.call(el, v); else el[prop] = v;
  };
  for (const f of t.fields) {
    try {
      const el = f.key.by === 'id' ? document.getElementById(f.key.id) : document.getElementsByName(f.key.name)[f.key.index];
      const tag = el && el.tagName ? String(el.tagName).toLowerCase() : '';
      const password = tag === 'input' && (String(el.type).toLowerCase() === 'password' || String(el.getAttribute('type') || '').toLowerCase() === 'password');
      const v = f.value;
      if (password) { missing++; continue; }
      if (v.kind === 'checked' && tag === 'input') set(HTMLInputElement.prototype, el, 'checked', v.checked);
      else if (v.kind === 'input' && tag === 'input') set(HTMLInputElement.prototype, el, 'value', v.value);
      else if (v.kind === 'textarea' && tag === 'textarea') set(HTMLTextAreaElement.prototype, el, 'value', v.value);
      else if (v.kind === 'select' && tag === 'select') { for (const o of el.options) o.selected = v.selected.includes(o.value); }
      else { missing++; continue; }
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      restored++;
    } catch (e) { missing++; }
  }
  window.scrollTo(t.scrollX, t.scrollY);
  return { restored, missing };
}"#;

/// Runs in the daemon: one page per tab (existing pages first, by
/// position), every load at once; a failed load is reported, not thrown.
const REOPEN: &str = r#"async (page) => {
  const tabs = __TABS__;
  const L = __LIMITS__;
  const restorePage = __RESTORE_PAGE__;
  const ctx = page.context();
  const existing = ctx.pages();
  const first = (e) => String((e && e.message) || e).split('\n')[0].slice(0, 200);
  const load = async (p, t) => {
    try {
      await p.goto(t.url, { waitUntil: 'load', timeout: L.loadMs });
    } catch (e) {
      return { loaded: false, error: first(e) };
    }
    try {
      return { loaded: true, ...(await p.evaluate(restorePage, t)) };
    } catch (e) {
      return { loaded: true, restored: 0, missing: t.fields.length, error: first(e) };
    }
  };
  // Pages are made one after another (their order is the tabs' order);
  // each load starts as soon as its page exists.
  const loads = [];
  for (let i = 0; i < tabs.length; i++) loads.push(load(i < existing.length ? existing[i] : await ctx.newPage(), tabs[i]));
  return await Promise.all(loads);
}"#;

/// The capture function, each page given `page_timeout` to answer.
pub fn capture(page_timeout: Duration) -> String {
    let limits = serde_json::json!({
        "tabs": MAX_TABS + 1,
        "url": MAX_URL_BYTES,
        "fields": MAX_FIELDS_PER_TAB,
        "key": MAX_KEY_BYTES,
        "value": MAX_VALUE_BYTES,
        "selected": MAX_SELECTED + 1,
        "timeoutMs": page_timeout.as_millis() as u64,
        "budget": CAPTURE_FIELD_BUDGET,
    });
    CAPTURE.replace("__LIMITS__", &limits.to_string()).replace("__READ_PAGE__", READ_PAGE)
}

/// The reopen function for `tabs`, each load given `load_timeout`.
pub fn reopen(tabs: &[Tab], load_timeout: Duration) -> String {
    let limits = serde_json::json!({ "loadMs": load_timeout.as_millis() as u64 });
    // JSON is a JavaScript expression (ES2019 admits U+2028/9 in strings).
    let tabs = serde_json::to_string(tabs).unwrap_or_else(|_| "[]".into());
    // Replaced last, so text inside the tabs is never taken for a placeholder.
    REOPEN
        .replace("__LIMITS__", &limits.to_string())
        .replace("__RESTORE_PAGE__", RESTORE_PAGE)
        .replacen("__TABS__", &tabs, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use playpen_api::suspend::{Field, FieldKey, FieldValue};

    #[test]
    fn the_capture_carries_the_bounds_and_no_placeholder() {
        let code = capture(Duration::from_millis(1500));
        assert!(code.starts_with("async (page) => {"));
        assert!(!code.contains("__"), "{code}");
        assert!(code.contains(&format!("\"value\":{MAX_VALUE_BYTES}")) && code.contains("\"timeoutMs\":1500"));
        assert!(code.contains("'password'"), "passwords are skipped");
    }

    #[test]
    fn the_reopen_embeds_the_tabs_as_data_even_when_they_look_like_code() {
        let tab = Tab {
            url: "http://127.0.0.1/__LIMITS__".into(),
            scroll_x: 0.0,
            scroll_y: 12.5,
            fields: vec![Field {
                key: FieldKey::Id { id: "x".into() },
                value: FieldValue::Input { value: "'); process.exit(1); ('\u{2028}__RESTORE_PAGE__".into() },
            }],
        };
        let code = reopen(std::slice::from_ref(&tab), Duration::from_secs(30));
        let tabs_json = serde_json::to_string(&[tab]).unwrap();
        assert!(code.contains(&format!("const tabs = {tabs_json};")), "{code}");
        assert!(code.contains("\"loadMs\":30000"));
        assert!(!code.contains("__TABS__") && code.contains("const L = {\"loadMs\""), "{code}");
        assert!(code.contains("__LIMITS__") && code.contains("__RESTORE_PAGE__"), "the data is left as it was");
    }
}
