//! The code's shape, checked: no module of any crate reaches back to itself
//! through `crate::`/`super::` paths (a circle of imports is a piece two
//! modules share that belongs in a third). A parent and its own submodules
//! may name each other (that is how Rust nests); comments and `#[cfg(test)]`
//! tails are not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every crate's source root, from the workspace root.
const CRATES: &[&str] = &[
    "imagebuild/src",
    "operator/api/src",
    "operator/export/src",
    "operator/controller/src",
    "operator/session/src",
    "operator/kubectl-playpen/src",
    "tests/src",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `a::b` for `<root>/a/b.rs` or `<root>/a/b/mod.rs`; `` for lib/main.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).expect("file under root").with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file that can import: no comments, no test module.
fn code(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or_default();
    // Up to a `//` (a line or trailing comment; a URL in a string loses its tail, never an import).
    before_tests.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Module paths after each occurrence of `prefix` (`crate::a::b::Item` → `a::b::Item`).
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .filter(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            rest[..end].trim_end_matches(':')
        })
        .collect()
}

/// The longest module named by `segments` (the rest are items).
fn longest_module(segments: &[&str], modules: &BTreeSet<String>) -> Option<String> {
    (1..=segments.len()).rev().map(|n| segments[..n].join("::")).find(|m| modules.contains(m))
}

fn nested(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::")) || a.is_empty() || b.is_empty()
}

/// Module → modules it names, within one crate.
fn imports(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(root, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(root, file);
        let code = code(&std::fs::read_to_string(file).expect("readable source"));
        let parent: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let parent = &parent[..parent.len().saturating_sub(1)];
        let mut named = BTreeSet::new();
        for path in paths_after(&code, "crate::") {
            let segments: Vec<&str> = path.split("::").collect();
            named.extend(longest_module(&segments, &modules));
        }
        for path in paths_after(&code, "super::") {
            let segments: Vec<&str> = parent.iter().copied().chain(path.split("::")).collect();
            named.extend(longest_module(&segments, &modules));
        }
        named.retain(|other| !nested(&module, other));
        graph.insert(module, named);
    }
    graph
}

/// A circle through `start`, if one exists (depth-first search).
fn circle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                return Some(path.iter().cloned().chain([start.to_owned()]).collect());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), path.iter().cloned().chain([next.clone()]).collect()));
            }
        }
    }
    None
}

#[test]
fn no_module_imports_its_way_back_to_itself() {
    let mut circles = Vec::new();
    for krate in CRATES {
        let graph = imports(&workspace().join(krate));
        assert!(!graph.is_empty(), "{krate}: no modules found");
        if let Some(circle) = graph.keys().find_map(|m| circle_from(&graph, m)) {
            circles.push(format!("{krate}: {}", circle.join(" → ")));
        }
    }
    assert!(circles.is_empty(), "import circles (move what both need to a module of its own):\n{}", circles.join("\n"));
}

#[test]
fn a_circle_is_found_and_nesting_is_not_one() {
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(circle_from(&graph, "a").unwrap(), ["a", "b", "c", "a"]);
    assert!(nested("run::cdp", "run") && nested("run", "run::cdp::launch") && !nested("run", "runner"));
    let code = code("use crate::run::cdp::Launch; // crate::error\nlet x = my_crate::y;\n#[cfg(test)]\nuse crate::z;");
    assert_eq!(paths_after(&code, "crate::"), ["run::cdp::Launch"]);
}
