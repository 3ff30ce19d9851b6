//! The Node/CLI layer: a deterministic tar (sorted entries, uid/gid 0, fixed
//! modes, mtimes from SOURCE_DATE_EPOCH) holding the verified `node`, the npm
//! packages laid out as npm would (`node_modules/@playwright/cli`,
//! `node_modules/playwright`, `node_modules/playwright-core`, `.bin` links,
//! `package.json`, `package-lock.json`), the `playwright-cli` wrapper pinning
//! that `node`, the launch defaults and the session runtime.

use crate::image_layout as il;
use crate::untrusted::{self, Origin, UnsafeInput, Violation};
use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::Read;

/// One entry of the layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory (mode 0755).
    Dir,
    /// A file with its mode.
    File {
        /// Contents.
        data: Vec<u8>,
        /// 0o644 or 0o755.
        mode: u32,
    },
    /// A symbolic link.
    Symlink(String),
}

/// Paths (relative, no leading `/`) to entries; a BTreeMap keeps them sorted.
pub type Tree = BTreeMap<String, Entry>;

/// Inputs of the layer, all already verified against the lock.
#[derive(Debug, Clone)]
pub struct LayerInput<'a> {
    /// The Node tarball.
    pub node_tarball: &'a [u8],
    /// Path of `node` inside it.
    pub node_bin_path: &'a str,
    /// `(name, version, resolved, integrity, tarball)` of each npm package.
    pub packages: Vec<NpmPackage<'a>>,
    /// The launch defaults JSON.
    pub launch_defaults: &'a serde_json::Value,
    /// The session runtime binary.
    pub session_runtime: Option<&'a [u8]>,
    /// Bounds on each package tarball.
    pub limits: TarLimits,
}

/// One verified npm package.
#[derive(Debug, Clone)]
pub struct NpmPackage<'a> {
    /// Name.
    pub name: &'a str,
    /// Version.
    pub version: &'a str,
    /// Tarball URL (for package-lock.json).
    pub resolved: &'a str,
    /// Integrity (for package-lock.json).
    pub integrity: String,
    /// The .tgz bytes.
    pub tarball: &'a [u8],
}

/// Bounds on one tarball, checked from its headers before any data is read, so a
/// hostile tarball (a gzip bomb, millions of empty entries) fails fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TarLimits {
    /// Most entries (a Node dist tarball has about 5,000; @playwright/cli's closure under 1,000 each).
    pub max_entries: usize,
    /// Most bytes the entries declare in total (Node's binary is about 120 MB).
    pub max_unpacked_bytes: u64,
}

impl TarLimits {
    /// The limits `build` and `lock` use.
    pub const DEFAULT: TarLimits = TarLimits { max_entries: 20_000, max_unpacked_bytes: 512 * 1024 * 1024 };
}

/// Failures laying out the layer.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// A name, path, link or size from a tarball or the lock is refused.
    #[error(transparent)]
    Unsafe(#[from] UnsafeInput),
    /// A tarball is not a readable gzip tar, or lacks a file the layer needs.
    #[error("{what}: {detail}")]
    Archive {
        /// Which tarball.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// Two tarball entries make one path both a file and a directory.
    #[error("{what}: {path} is both a file and a directory; do not build with it: run `playpen-imagebuild lock` again and check `registry.npm`")]
    Conflict {
        /// Which tarball.
        what: String,
        /// The path in the layer.
        path: String,
    },
    /// Writing the tar failed.
    #[error("writing the layer: {0}")]
    Write(#[source] std::io::Error),
}

impl crate::failure::Classify for LayerError {
    fn class(&self) -> crate::failure::FailureClass {
        use crate::failure::FailureClass as F;
        match self {
            LayerError::Unsafe(_) | LayerError::Conflict { .. } => F::UnsafeInput,
            LayerError::Archive { .. } => F::InvalidSpec,
            LayerError::Write(_) => F::Io,
        }
    }
}

/// Calls `f` with each entry's UTF-8 path until it returns `false`, refusing the
/// tarball when it exceeds `limits` or names a path that is not UTF-8.
fn gz_entries<F>(tgz: &[u8], what: &str, limits: TarLimits, mut f: F) -> Result<(), LayerError>
where
    F: FnMut(&str, &mut tar::Entry<'_, GzDecoder<&[u8]>>) -> Result<bool, LayerError>,
{
    let archive_error = |detail: String| LayerError::Archive { what: what.to_owned(), detail };
    let unsafe_input = |field: &str, value: &str, violation| {
        LayerError::Unsafe(UnsafeInput::new(Origin::Tarball(what.to_owned()), field, value, violation))
    };
    let mut archive = tar::Archive::new(GzDecoder::new(tgz));
    let (mut count, mut bytes) = (0usize, 0u64);
    for entry in archive.entries().map_err(|e| archive_error(format!("not a gzip tar: {e}")))? {
        let mut entry = entry.map_err(|e| archive_error(format!("corrupt tar: {e}")))?;
        count += 1;
        if count > limits.max_entries {
            let max = limits.max_entries;
            return Err(unsafe_input("entry count", &count.to_string(), Violation::TooManyEntries { max }));
        }
        bytes = bytes.saturating_add(entry.size());
        if bytes > limits.max_unpacked_bytes {
            let max = limits.max_unpacked_bytes;
            return Err(unsafe_input("unpacked size", &bytes.to_string(), Violation::TooLarge { max }));
        }
        let raw = entry.path_bytes().into_owned();
        let path = String::from_utf8(raw)
            .map_err(|e| unsafe_input("entry name", &String::from_utf8_lossy(e.as_bytes()), Violation::NotUtf8))?;
        if !f(&path, &mut entry)? {
            break;
        }
    }
    Ok(())
}

/// The bytes of `path` inside a .tar.gz (`what` names the tarball in errors).
pub fn extract_file(tgz: &[u8], what: &str, path: &str) -> Result<Vec<u8>, LayerError> {
    let mut found = None;
    gz_entries(tgz, what, TarLimits::DEFAULT, |p, e| {
        if p.trim_start_matches("./") == path {
            let mut buf = Vec::new();
            e.read_to_end(&mut buf)
                .map_err(|err| LayerError::Archive { what: what.to_owned(), detail: format!("{path}: {err}") })?;
            found = Some(buf);
            return Ok(false);
        }
        Ok(true)
    })?;
    found.ok_or_else(|| LayerError::Archive { what: what.to_owned(), detail: format!("{path} is not in the archive") })
}

/// The `*/bin/node` path inside a Node tarball.
pub fn find_node_binary_path(tgz: &[u8], what: &str) -> Result<String, LayerError> {
    let mut found = None;
    gz_entries(tgz, what, TarLimits::DEFAULT, |p, _| {
        let p = p.trim_start_matches("./");
        let parts: Vec<&str> = p.split('/').collect();
        if parts.len() == 3 && parts[1] == "bin" && parts[2] == "node" {
            found = Some(
                untrusted::relative_path(p)
                    .map_err(|v| UnsafeInput::new(Origin::Tarball(what.to_owned()), "node binary path", p, v))?,
            );
            return Ok(false);
        }
        Ok(true)
    })?;
    found.ok_or_else(|| LayerError::Archive {
        what: what.to_owned(),
        detail: "no <dir>/bin/node in the Node tarball".into(),
    })
}

/// Adds `path`'s missing parent directories; refuses a parent that is already a file or link.
fn add_parents(tree: &mut Tree, path: &str) -> Result<(), String> {
    let mut end = 0;
    while let Some(slash) = path[end..].find('/') {
        end += slash;
        let parent = &path[..end];
        match tree.entry(parent.to_owned()).or_insert(Entry::Dir) {
            Entry::Dir => {}
            _ => return Err(parent.to_owned()),
        }
        end += 1;
    }
    Ok(())
}

/// Puts `entry` at `path` (a file or link replaces a file or link, as tar extraction
/// does); `Err(path)` when that would make one path both a file and a directory.
fn put(tree: &mut Tree, path: &str, entry: Entry) -> Result<(), String> {
    add_parents(tree, path)?;
    if matches!(tree.get(path), Some(Entry::Dir)) && entry != Entry::Dir {
        return Err(path.to_owned());
    }
    tree.insert(path.to_owned(), entry);
    Ok(())
}

/// Single-quotes a string for sh.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The `playwright-cli` wrapper: pins the verified interpreter and the CLI's
/// entry point. With the session runtime in the image it hands over to
/// `playpen-session cli` (the bare-`snapshot` rule and the fast path live
/// there), pinning the same interpreter and package through the environment.
pub fn wrapper_script(cli_entry: &str, with_session_runtime: bool) -> String {
    let header = format!(
        "#!{}\n# Generated by playpen-imagebuild: runs {} with the verified Node, never the PATH's.\n",
        il::SHELL,
        il::CLI_PACKAGE
    );
    if !with_session_runtime {
        return format!("{header}exec {} {} \"$@\"\n", sh_quote(il::NODE_BIN), sh_quote(cli_entry));
    }
    let (node, package) = (il::env::NODE, il::env::CLI_PACKAGE);
    format!(
        "{header}{node}={}\n{package}={}\nexport {node} {package}\nexec {} cli \"$@\"\n",
        sh_quote(il::NODE_BIN),
        sh_quote(il::CLI_PACKAGE_DIR),
        sh_quote(il::SESSION_RUNTIME_BIN)
    )
}

/// The `bin` map of a package.json (`"bin": "x.js"` names the package's own command).
fn bin_map(package_json: &serde_json::Value, name: &str) -> BTreeMap<String, String> {
    let short = name.rsplit('/').next().unwrap_or(name).to_owned();
    match package_json.get("bin") {
        Some(serde_json::Value::String(s)) => BTreeMap::from([(short, s.clone())]),
        Some(serde_json::Value::Object(m)) => {
            m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect()
        }
        _ => BTreeMap::new(),
    }
}

/// Where a package tarball's entry goes: `Some(relative path)` for a regular file,
/// `None` for what npm skips (directories, links that stay inside the package);
/// a refusal for a path or link that leaves the package, or a device file.
fn package_entry_path(
    path: &str,
    header: &tar::Header,
    link: Option<&str>,
) -> Result<Option<String>, (&'static str, Violation)> {
    let kind = header.entry_type();
    // npm strips the first component (usually `package/`).
    let rel = path.split_once('/').map_or("", |(_, rel)| rel);
    let special = if kind.is_character_special() {
        Some("character device")
    } else if kind.is_block_special() {
        Some("block device")
    } else if kind.is_fifo() {
        Some("FIFO")
    } else {
        None
    };
    if let Some(kind) = special {
        return Err(("entry", Violation::SpecialFile { kind }));
    }
    if kind.is_dir() {
        if rel.trim_matches('/').is_empty() {
            return Ok(None);
        }
        return untrusted::relative_path(rel).map(|_| None).map_err(|v| ("entry", v));
    }
    let rel = untrusted::relative_path(rel).map_err(|v| ("entry", v))?;
    if kind.is_symlink() {
        // npm drops links; one pointing out of the package is a sign of a hostile tarball.
        untrusted::link_target_within(&rel, link.unwrap_or_default()).map_err(|v| ("symlink", v))?;
        return Ok(None);
    }
    if kind.is_hard_link() {
        // A hard link names another entry of the archive (first component included),
        // so it stays inside when it is a relative path below some package directory.
        let target = link.unwrap_or_default();
        if !untrusted::relative_path(target).is_ok_and(|t| t.contains('/')) {
            return Err(("hard link", Violation::LinkOutside { target: untrusted::shown(target) }));
        }
        return Ok(None);
    }
    Ok(kind.is_file().then_some(rel))
}

/// A file/directory clash in `what`.
fn conflict(what: &str) -> impl Fn(String) -> LayerError + '_ {
    move |path| LayerError::Conflict { what: what.to_owned(), path }
}

/// One npm package's files as npm lays them out, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageTree {
    /// Regular files, relative to the package's directory.
    pub files: Tree,
    /// Its package.json (`Null` when absent or not JSON).
    pub manifest: serde_json::Value,
    /// `.bin` command → target relative to the package's directory, both checked.
    pub bins: BTreeMap<String, String>,
}

/// Reads one package tarball the way npm installs it (first component stripped, links
/// and directories skipped) and refuses anything hostile: a name or version that is not
/// npm's, an entry or `bin` that leaves the package, a device file, a tarball over `limits`.
/// `lock` and `build` call it before anything is laid out.
pub fn package_tree(pkg: &NpmPackage<'_>, limits: TarLimits) -> Result<PackageTree, LayerError> {
    // Checked again here (the lock and the registry's answers already were): this is a
    // public pure function, and the name becomes a directory.
    let named =
        |field: &str, value: &str, v| UnsafeInput::new(Origin::Tarball(untrusted::shown(pkg.name)), field, value, v);
    untrusted::npm_package_name(pkg.name).map_err(|v| named("name", pkg.name, v))?;
    untrusted::exact_version(pkg.version).map_err(|v| named("version", pkg.version, v))?;
    let what = format!("{}@{}", pkg.name, pkg.version);
    let refuse = |field: String, value: &str, v| UnsafeInput::new(Origin::Tarball(what.clone()), field, value, v);
    let mut files = Tree::new();
    let mut manifest = serde_json::Value::Null;
    gz_entries(pkg.tarball, &what, limits, |p, e| {
        let link = e.link_name_bytes().map(|l| String::from_utf8_lossy(&l).into_owned());
        let Some(rel) =
            package_entry_path(p, e.header(), link.as_deref()).map_err(|(field, v)| refuse(field.into(), p, v))?
        else {
            return Ok(true);
        };
        let mode = e.header().mode().unwrap_or(0o644);
        let mut data = Vec::new();
        e.read_to_end(&mut data).map_err(|err| LayerError::Archive { what: what.clone(), detail: err.to_string() })?;
        if rel == "package.json" {
            manifest = serde_json::from_slice(&data).unwrap_or(serde_json::Value::Null);
        }
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        put(&mut files, &rel, Entry::File { data, mode }).map_err(conflict(&what))?;
        Ok(true)
    })?;
    let mut bins = BTreeMap::new();
    for (cmd, target) in bin_map(&manifest, pkg.name) {
        untrusted::file_name(&cmd).map_err(|v| refuse("package.json bin name".into(), &cmd, v))?;
        let target =
            untrusted::relative_path(&target).map_err(|v| refuse(format!("package.json bin {cmd}"), &target, v))?;
        bins.insert(cmd, target);
    }
    Ok(PackageTree { files, manifest, bins })
}

/// Lays out the layer's tree (pure). Every name from the lock or a tarball is checked
/// first; nothing lands outside `opt/playpen`, `usr/local/bin` and `etc/playpen`.
pub fn layer_tree(input: &LayerInput<'_>) -> Result<Tree, LayerError> {
    let mut tree = Tree::new();
    let node_what = "the Node tarball";
    let node_bin = untrusted::relative_path(input.node_bin_path)
        .map_err(|v| UnsafeInput::new(Origin::Tarball(node_what.into()), "binPath", input.node_bin_path, v))?;
    let node = extract_file(input.node_tarball, node_what, &node_bin)?;
    put(&mut tree, il::NODE_BIN.trim_start_matches('/'), Entry::File { data: node, mode: 0o755 })
        .map_err(conflict(node_what))?;

    let prefix = il::CLI_PREFIX.trim_start_matches('/');
    let mut lock_packages = serde_json::Map::new();
    let mut root_deps = serde_json::Map::new();
    let mut cli_entry = None;
    for pkg in &input.packages {
        let PackageTree { files, manifest, bins: bin } = package_tree(pkg, input.limits)?;
        let what = format!("{}@{}", pkg.name, pkg.version);
        let base = format!("{prefix}/node_modules/{}", pkg.name);
        for (rel, entry) in files {
            if entry != Entry::Dir {
                put(&mut tree, &format!("{base}/{rel}"), entry).map_err(conflict(&what))?;
            }
        }
        for (cmd, target) in &bin {
            put(
                &mut tree,
                &format!("{prefix}/node_modules/.bin/{cmd}"),
                Entry::Symlink(format!("../{}/{target}", pkg.name)),
            )
            .map_err(conflict(&what))?;
            if pkg.name == il::CLI_PACKAGE && cmd == "playwright-cli" {
                cli_entry = Some(format!("{}/node_modules/{}/{target}", il::CLI_PREFIX, pkg.name));
            }
            if let Some(Entry::File { mode, .. }) = tree.get_mut(&format!("{base}/{target}")) {
                *mode = 0o755;
            }
        }
        let mut entry =
            serde_json::json!({"version": pkg.version, "resolved": pkg.resolved, "integrity": pkg.integrity});
        if let (Some(deps), Some(obj)) = (manifest.get("dependencies"), entry.as_object_mut()) {
            obj.insert("dependencies".into(), deps.clone());
        }
        if !bin.is_empty() {
            if let Some(obj) = entry.as_object_mut() {
                obj.insert("bin".into(), serde_json::json!(bin));
            }
        }
        lock_packages.insert(format!("node_modules/{}", pkg.name), entry);
        if pkg.name == il::CLI_PACKAGE {
            root_deps.insert(pkg.name.to_owned(), pkg.version.into());
        }
    }
    let cli_entry = cli_entry.ok_or_else(|| LayerError::Archive {
        what: il::CLI_PACKAGE.into(),
        detail: "declares no `playwright-cli` bin".into(),
    })?;
    let root = serde_json::json!({"name": "playpen-cli", "private": true, "dependencies": root_deps});
    let mut all = serde_json::Map::new();
    all.insert(String::new(), root.clone());
    all.extend(lock_packages);
    let lockfile = serde_json::json!({"name": "playpen-cli", "lockfileVersion": 3, "requires": true, "packages": all});
    let mut own = vec![
        (format!("{prefix}/package.json"), pretty(&root), 0o644),
        (format!("{prefix}/package-lock.json"), pretty(&lockfile), 0o644),
        (il::CLI_WRAPPER.into(), wrapper_script(&cli_entry, input.session_runtime.is_some()).into_bytes(), 0o755),
        (il::LAUNCH_DEFAULTS.into(), pretty(input.launch_defaults), 0o644),
    ];
    if let Some(bin) = input.session_runtime {
        own.push((il::SESSION_RUNTIME_BIN.into(), bin.to_vec(), 0o755));
    }
    for (path, data, mode) in own {
        put(&mut tree, path.trim_start_matches('/'), Entry::File { data, mode }).map_err(conflict("the layer"))?;
    }
    Ok(tree)
}

fn pretty(v: &serde_json::Value) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s.into_bytes()
}

/// Writes a tree as a tar: sorted, uid/gid 0, no user names, mtime `mtime`.
pub fn write_tar(tree: &Tree, mtime: u64) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    for (path, entry) in tree {
        let mut h = tar::Header::new_gnu();
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        match entry {
            Entry::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                builder.append_data(&mut h, format!("{path}/"), std::io::empty())?;
            }
            Entry::File { data, mode } => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(*mode);
                h.set_size(data.len() as u64);
                builder.append_data(&mut h, path, data.as_slice())?;
            }
            Entry::Symlink(target) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                builder.append_link(&mut h, path, target)?;
            }
        }
    }
    builder.into_inner()
}

/// SOURCE_DATE_EPOCH when set and numeric, else 0.
pub fn source_date_epoch() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod testdata {
    use flate2::write::GzEncoder;

    /// A .tgz with the given files under `package/`-style paths.
    pub fn tgz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, data, mode) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(*mode);
            h.set_mtime(1_700_000_000);
            h.set_entry_type(tar::EntryType::Regular);
            // Raw name bytes, so tests can make the hostile paths `tar` itself refuses to write.
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    /// Fake Node and the three npm packages, shaped like the real ones.
    pub fn fake_artifacts() -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
        let node = tgz(&[("package/bin/node", b"\x7fELF fake node", 0o755), ("package/package.json", b"{}", 0o644)]);
        let cli = tgz(&[
            ("package/package.json", br#"{"name":"@playwright/cli","version":"0.1.22","bin":{"playwright-cli":"playwright-cli.js"},"dependencies":{"playwright":"1.58.0-alpha"}}"#, 0o644),
            ("package/playwright-cli.js", b"#!/usr/bin/env node\nrequire('playwright/lib/cli')\n", 0o644),
        ]);
        let pw = tgz(&[
            ("package/package.json", br#"{"name":"playwright","version":"1.58.0-alpha","bin":{"playwright":"cli.js"},"dependencies":{"playwright-core":"1.58.0-alpha"}}"#, 0o644),
            ("package/cli.js", b"//", 0o644),
        ]);
        let core = tgz(&[
            ("package/package.json", br#"{"name":"playwright-core","version":"1.58.0-alpha"}"#, 0o644),
            (
                "package/browsers.json",
                br#"{"browsers":[{"name":"chromium","revision":"1247","browserVersion":"147.0.0.0"}]}"#,
                0o644,
            ),
        ]);
        (node, cli, pw, core)
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::*;
    use super::*;

    fn input<'a>(
        a: &'a (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
        order: &[usize],
        defaults: &'a serde_json::Value,
    ) -> LayerInput<'a> {
        let all = [
            NpmPackage {
                name: "@playwright/cli",
                version: "0.1.22",
                resolved: "u1",
                integrity: "i1".into(),
                tarball: &a.1,
            },
            NpmPackage {
                name: "playwright",
                version: "1.58.0-alpha",
                resolved: "u2",
                integrity: "i2".into(),
                tarball: &a.2,
            },
            NpmPackage {
                name: "playwright-core",
                version: "1.58.0-alpha",
                resolved: "u3",
                integrity: "i3".into(),
                tarball: &a.3,
            },
        ];
        LayerInput {
            node_tarball: &a.0,
            node_bin_path: "package/bin/node",
            packages: order.iter().map(|i| all[*i].clone()).collect(),
            launch_defaults: defaults,
            session_runtime: Some(b"session"),
            limits: TarLimits::DEFAULT,
        }
    }

    #[test]
    fn layout_is_what_npm_would_make() {
        let a = fake_artifacts();
        let defaults = serde_json::json!({"browser": {"browserName": "chromium"}});
        let tree = layer_tree(&input(&a, &[0, 1, 2], &defaults)).unwrap();
        for path in [
            "opt/playpen/node/bin/node",
            "opt/playpen/cli/node_modules/@playwright/cli/package.json",
            "opt/playpen/cli/node_modules/playwright/cli.js",
            "opt/playpen/cli/node_modules/playwright-core/browsers.json",
            "opt/playpen/cli/package.json",
            "opt/playpen/cli/package-lock.json",
            "usr/local/bin/playwright-cli",
            "usr/local/bin/playpen-session",
            "etc/playpen/launch-defaults.json",
        ] {
            assert!(tree.contains_key(path), "{path} missing: {:?}", tree.keys().collect::<Vec<_>>());
        }
        assert_eq!(
            tree["opt/playpen/cli/node_modules/.bin/playwright-cli"],
            Entry::Symlink("../@playwright/cli/playwright-cli.js".into())
        );
        assert!(matches!(
            tree["opt/playpen/cli/node_modules/@playwright/cli/playwright-cli.js"],
            Entry::File { mode: 0o755, .. }
        ));
        let Entry::File { data, .. } = &tree["usr/local/bin/playwright-cli"] else { panic!() };
        let script = String::from_utf8_lossy(data);
        assert!(script.contains(&format!("{}='{}'\n", il::env::NODE, il::NODE_BIN)), "{script}");
        assert!(script.contains(&format!("{}='{}'\n", il::env::CLI_PACKAGE, il::CLI_PACKAGE_DIR)), "{script}");
        assert!(script.ends_with(&format!("exec '{}' cli \"$@\"\n", il::SESSION_RUNTIME_BIN)), "{script}");
        let Entry::File { data, .. } = &tree["opt/playpen/cli/package-lock.json"] else { panic!() };
        let lock: serde_json::Value = serde_json::from_slice(data).unwrap();
        assert_eq!(lock["packages"]["node_modules/playwright"]["dependencies"]["playwright-core"], "1.58.0-alpha");
    }

    #[test]
    fn two_builds_give_the_same_bytes_whatever_the_input_order() {
        let a = fake_artifacts();
        let defaults = serde_json::json!({});
        let one = write_tar(&layer_tree(&input(&a, &[0, 1, 2], &defaults)).unwrap(), 0).unwrap();
        let two = write_tar(&layer_tree(&input(&a, &[2, 0, 1], &defaults)).unwrap(), 0).unwrap();
        assert_eq!(crate::digest::Integrity::sha256_of(&one), crate::digest::Integrity::sha256_of(&two));
        let later = write_tar(&layer_tree(&input(&a, &[0, 1, 2], &defaults)).unwrap(), 1_700_000_000).unwrap();
        assert_ne!(one, later, "mtimes come from SOURCE_DATE_EPOCH");
    }

    #[test]
    fn tar_entries_are_sorted_root_owned_and_dated() {
        let a = fake_artifacts();
        let defaults = serde_json::json!({});
        let bytes = write_tar(&layer_tree(&input(&a, &[0, 1, 2], &defaults)).unwrap(), 42).unwrap();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let mut paths = Vec::new();
        for e in archive.entries().unwrap() {
            let e = e.unwrap();
            assert_eq!((e.header().uid().unwrap(), e.header().gid().unwrap(), e.header().mtime().unwrap()), (0, 0, 42));
            paths.push(e.path().unwrap().to_string_lossy().trim_end_matches('/').to_owned());
        }
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
        assert!(paths.contains(&"opt".to_owned()) && paths.contains(&"usr/local/bin".to_owned()));
    }

    #[test]
    fn unsafe_tarball_paths_are_refused() {
        let evil = tgz(&[("package/../../etc/passwd", b"x", 0o644)]);
        let a = fake_artifacts();
        let defaults = serde_json::json!({});
        let mut inp = input(&a, &[0, 1, 2], &defaults);
        inp.packages[1].tarball = &evil;
        let err = layer_tree(&inp).unwrap_err();
        assert_eq!(crate::failure::Classify::class(&err).exit_code(), 24, "{err}");
        assert!(err.to_string().contains("the tarball of playwright@1.58.0-alpha: `entry`"), "{err}");
        assert!(err.to_string().contains("`..`"), "{err}");
    }

    #[test]
    fn tarball_limits_hold_at_their_boundaries() {
        let tgz = tgz(&[("package/package.json", b"{}", 0o644), ("package/a.js", b"12345678", 0o644)]);
        let pkg = NpmPackage {
            name: "p",
            version: "1.0.0",
            resolved: "https://r/p.tgz",
            integrity: String::new(),
            tarball: &tgz,
        };
        let within =
            |max_entries, max_unpacked_bytes| package_tree(&pkg, TarLimits { max_entries, max_unpacked_bytes });
        assert!(within(2, 10).is_ok(), "2 entries and 10 bytes are within 2 and 10");
        let err = within(1, 10).unwrap_err();
        assert!(err.to_string().contains("`entry count` \"2\" is over the limit of 1 entries"), "{err}");
        let err = within(2, 9).unwrap_err();
        assert!(err.to_string().contains("`unpacked size` \"10\" is over the limit of 9 bytes"), "{err}");
        assert_eq!(crate::failure::Classify::class(&err).exit_code(), 24);
    }

    #[test]
    fn node_binary_is_found_in_dist_and_npm_layouts() {
        let dist =
            tgz(&[("node-v22.12.0-linux-x64/bin/node", b"n", 0o755), ("node-v22.12.0-linux-x64/bin/npm", b"x", 0o755)]);
        assert_eq!(find_node_binary_path(&dist, "n").unwrap(), "node-v22.12.0-linux-x64/bin/node");
        assert_eq!(find_node_binary_path(&fake_artifacts().0, "n").unwrap(), "package/bin/node");
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(sh_quote("/a b/it's"), "'/a b/it'\\''s'");
    }
}
