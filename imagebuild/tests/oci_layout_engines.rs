//! Real parts, as root: the system's Docker Engine with `playpen/base:bookworm`
//! (`tests/imagebuild/setup.sh`), whose `docker save` (Debian's docker.io 20.10) writes
//! the layout engines up to 24 write (`<id>.json`, `<id>/layer.tar`); a current Docker
//! Engine built from the Go module proxy (`tests/imagebuild/engine-current.sh`,
//! `PLAYPEN_TEST_DOCKERD`), whose `docker save` writes the layout engines write from 25
//! on: an OCI image layout (`blobs/sha256/<hex>`, `index.json`, `oci-layout`) with a
//! `manifest.json` listing blob paths; and a throwaway containerd (Debian's 1.6) under
//! it, whose `ctr images export` writes that layout too. A missing part fails loudly
//! naming the script that provides it.
//!
//! One test, in phases: a small image (the base plus two layers) built through the
//! crate's engine code and saved (old layout) → converted as `--oci-layout` does and
//! checked → loaded into the current engine with the classic image store and saved
//! (new layout) → converted and checked: the very same OCI manifest → the same with
//! the containerd image store (a fresh install's default from Engine 29 on) → imported
//! into the containerd with `--compress-blobs` and exported (new layout with gzip
//! blobs, as the containerd image store keeps pulled images) → converted and checked:
//! the same config, gzip layers that decompress to the same diff IDs. The engines and
//! the containerd are stopped, and their directories removed, on every exit path.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed fixture is a failed test

use oci_spec::image::{ImageConfiguration, ImageManifest, MediaType};
use playpen_imagebuild::layer::{write_tar, Entry, Tree};
use playpen_imagebuild::oci_layout::{check_layout, from_docker_archive};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::Instant;
use support::containerd::Containerd;
use support::dockerd::{Dockerd, Store};
use support::{base_image, engine, SETUP};

mod support;

const TAG: &str = "playpen/oci-layout-test:engines";
/// The name containerd gives the image `docker save` tagged [`TAG`].
const CONTAINERD_NAME: &str = "docker.io/playpen/oci-layout-test:engines";

/// A `docker save` archive's members: regular files with their bytes' sha256 and
/// size, and everything else by its kind (directories, links); the bytes of the
/// small files at its top (`manifest.json`, `oci-layout`, `index.json`, ...).
struct Archive {
    files: HashMap<String, (String, u64)>,
    others: Vec<(String, tar::EntryType)>,
    top: HashMap<String, Vec<u8>>,
}

/// The most bytes of a top-level member [`Archive`] keeps.
const MAX_TOP_MEMBER: u64 = 1 << 16;

impl Archive {
    fn read(path: &Path) -> Archive {
        let mut files = HashMap::new();
        let mut others = Vec::new();
        let mut top = HashMap::new();
        let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            let kind = entry.header().entry_type();
            if !kind.is_file() {
                others.push((name, kind));
                continue;
            }
            let size = entry.header().size().unwrap();
            if !name.contains('/') && size <= MAX_TOP_MEMBER {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                files.insert(name.clone(), (hex::encode(Sha256::digest(&bytes)), size));
                top.insert(name, bytes);
                continue;
            }
            let mut hasher = Sha256::new();
            std::io::copy(&mut entry, &mut hasher).unwrap();
            files.insert(name, (hex::encode(hasher.finalize()), size));
        }
        assert!(top.contains_key("manifest.json"), "{}: no manifest.json", path.display());
        Archive { files, others, top }
    }

    /// A top-level member as JSON.
    fn json(&self, name: &str) -> serde_json::Value {
        serde_json::from_slice(&self.top[name]).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `manifest.json`'s `Config` and `Layers` paths.
    fn listed(&self) -> (String, Vec<String>) {
        let manifest_json = self.json("manifest.json");
        let first = &manifest_json[0];
        let config = first["Config"].as_str().unwrap().to_owned();
        let layers = first["Layers"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_owned()).collect();
        (config, layers)
    }

    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.files.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// `blobs/sha256/<64 hex digits>`.
fn is_blob_path(name: &str) -> bool {
    name.strip_prefix("blobs/sha256/").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The layout engines up to 24 write: `<id>.json`, `<id>/layer.tar` (with `VERSION`
/// and `json` beside it), and nothing of an OCI layout.
fn assert_old_layout(a: &Archive, what: &str) {
    let (config, layers) = a.listed();
    let old = config.ends_with(".json")
        && !config.contains('/')
        && layers.iter().all(|l| l.ends_with("/layer.tar"))
        && !a.files.contains_key("oci-layout")
        && !a.files.keys().any(|n| n.starts_with("blobs/"));
    assert!(
        old,
        "{what} is not in the layout Docker Engine up to 24 writes (this test reads it from the engine's \
         `docker save`; `{SETUP}` installs Debian's docker.io 20.10): Config {config}, Layers {layers:?}, \
         members {:?}",
        a.names()
    );
    for path in layers.iter().chain([&config]) {
        assert!(a.files.contains_key(path), "{what}: manifest.json lists {path}, which is not a file in it");
    }
}

/// The layout Docker Engine writes from 25 on: an OCI image layout whose
/// `manifest.json` lists `blobs/sha256/<hex>` paths, and no `<id>/layer.tar`.
fn assert_new_layout(a: &Archive, what: &str) {
    for name in ["oci-layout", "index.json", "manifest.json"] {
        assert!(a.files.contains_key(name), "{what} has no {name}: {:?}", a.names());
    }
    let stray: Vec<&str> = a
        .names()
        .into_iter()
        .filter(|n| !is_blob_path(n) && !["oci-layout", "index.json", "manifest.json", "repositories"].contains(n))
        .collect();
    assert!(stray.is_empty(), "{what} holds members outside blobs/sha256/: {stray:?}");
    assert!(!a.files.keys().any(|n| n.ends_with("/layer.tar")), "{what} has <id>/layer.tar members");
    let links: Vec<_> = a.others.iter().filter(|(_, k)| !k.is_dir()).collect();
    assert!(links.is_empty(), "{what} holds links or special files: {links:?}");
    let (config, layers) = a.listed();
    for path in layers.iter().chain([&config]) {
        assert!(is_blob_path(path), "{what}: manifest.json lists {path}, not a blobs/sha256/ path");
        let (hex, _) = a.files.get(path).unwrap_or_else(|| panic!("{what}: manifest.json lists {path}, not in it"));
        assert_eq!(path.strip_prefix("blobs/sha256/"), Some(hex.as_str()), "{what}: {path} is not its digest");
    }
    assert_eq!(a.json("oci-layout")["imageLayoutVersion"], "1.0.0", "{what}: oci-layout");
    let index = a.json("index.json");
    let manifests = index["manifests"].as_array().unwrap_or_else(|| panic!("{what}: index.json lists no manifests"));
    assert!(!manifests.is_empty(), "{what}: index.json lists no manifests");
    for m in manifests {
        let digest = m["digest"].as_str().unwrap();
        let path = format!("blobs/sha256/{}", digest.strip_prefix("sha256:").unwrap());
        assert!(a.files.contains_key(&path), "{what}: index.json names {digest}, which is not in it");
    }
}

/// The converted manifest and config of a layout `from_docker_archive` wrote.
fn written(dir: &Path, digest: &str) -> (ImageManifest, ImageConfiguration) {
    let blob = |hex: &str| dir.join("blobs/sha256").join(hex);
    let manifest = ImageManifest::from_file(blob(digest.strip_prefix("sha256:").unwrap())).unwrap();
    let config = ImageConfiguration::from_file(blob(manifest.config().digest().digest())).unwrap();
    (manifest, config)
}

/// Converts an archive as `build --oci-layout DIR` does and checks the layout; returns
/// the manifest digest. Only the manifest, the config and one blob per layer are kept.
fn convert(archive: &Path, dir: &Path, what: &str) -> String {
    let started = Instant::now();
    let digest = from_docker_archive(archive, TAG, dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let blobs = check_layout(dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (manifest, _) = written(dir, &digest);
    assert_eq!(blobs, manifest.layers().len() + 2, "{what}: one blob per layer, the config and the manifest");
    eprintln!("{what}: OCI layout {digest}, {blobs} blobs, checked in {:.1}s", started.elapsed().as_secs_f64());
    digest
}

fn sha256_of_gunzipped(path: &Path) -> String {
    let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
    let mut hasher = Sha256::new();
    std::io::copy(&mut gz, &mut hasher).unwrap();
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

/// The checks every new-layout archive of the image passes: the layout, the config
/// and layer paths (`blobs/sha256/<image ID>`, `blobs/sha256/<diff ID>` for
/// uncompressed layers), and the conversion: the very manifest the old layout gives.
fn check_new_uncompressed(archive: &Path, what: &str, image_id: &str, diff_ids: &[String], old_digest: &str) {
    let a = Archive::read(archive);
    assert_new_layout(&a, what);
    let (config, layers) = a.listed();
    assert_eq!(config, format!("blobs/sha256/{}", image_id.strip_prefix("sha256:").unwrap()), "{what}: Config");
    let named: Vec<String> =
        layers.iter().map(|p| format!("sha256:{}", p.strip_prefix("blobs/sha256/").unwrap())).collect();
    assert_eq!(named, diff_ids, "{what}: uncompressed layers are named by their diff IDs");
    let digest = convert(archive, &archive.with_extension("oci"), what);
    assert_eq!(digest, old_digest, "{what}: both layouts of one image give the same OCI manifest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_and_new_docker_save_layouts_become_the_same_checked_oci_layout() {
    let engine = engine().await;
    // Checked first: a missing part fails before anything is built.
    support::dockerd::binary();
    let containerd = Containerd::start();
    let dir = containerd.scratch();
    let total = Instant::now();

    // The image: the base, a RUN layer and an ADD of a layer tar made the way the
    // builder makes its own (sorted, fixed owner and mtime).
    let mut tree = Tree::new();
    tree.insert("opt/playpen-oci-test".into(), Entry::Dir);
    tree.insert(
        "opt/playpen-oci-test/hello.txt".into(),
        Entry::File { data: b"hello, layout\n".to_vec(), mode: 0o644 },
    );
    tree.insert(
        "opt/playpen-oci-test/run.sh".into(),
        Entry::File { data: b"#!/bin/sh\necho hi\n".to_vec(), mode: 0o755 },
    );
    let layer = write_tar(&tree, 1_700_000_000).unwrap();
    let dockerfile = format!(
        "FROM {}\nRUN printf 'old and new layouts\\n' > /etc/playpen-oci-test\nADD {} /\n",
        base_image(),
        playpen_imagebuild::image_layout::LAYER_TAR
    );
    let context = playpen_imagebuild::build::context_tar(&dockerfile, &layer, None, 0).unwrap();
    // Before the build: an interrupted earlier run may have left the tag on the very
    // image this build gives, and removing the last tag removes the image.
    let _ = engine.remove_image(TAG).await;
    let image_id = engine.build(context, false, |l| eprintln!("build: {l}")).await.unwrap();
    engine.tag(&image_id, TAG).await.unwrap();
    let diff_ids = engine.image_layers(TAG).await.unwrap();
    assert!(diff_ids.len() >= 3, "the base's layer(s), RUN, ADD: {diff_ids:?}");

    // 1. The old layout, from the system's engine.
    let old = dir.join("old.tar");
    engine.save_to_file(TAG, &old).await.unwrap();
    let _ = engine.remove_image(TAG).await;
    let old_archive = Archive::read(&old);
    assert_old_layout(&old_archive, &format!("docker save (Docker Engine, API {})", engine.api_version()));
    let old_oci = dir.join("old.oci");
    let old_digest = convert(&old, &old_oci, "old layout (Docker Engine 20.10)");
    let (old_manifest, old_config) = written(&old_oci, &old_digest);
    assert_eq!(format!("sha256:{}", old_manifest.config().digest().digest()), image_id, "the config is the image");
    assert_eq!(old_config.rootfs().diff_ids(), &diff_ids, "the config's diff IDs are the engine's");
    let old_layers: Vec<String> =
        old_manifest.layers().iter().map(|l| format!("sha256:{}", l.digest().digest())).collect();
    assert_eq!(old_layers, diff_ids, "the engine saves uncompressed layers: each layer's digest is its diff ID");
    assert!(old_manifest.layers().iter().all(|l| l.media_type() == &MediaType::ImageLayer));

    // 2. and 3. The new layout, from a current Docker Engine with either image store:
    //    `docker load` of the old archive, `docker save`.
    for store in [Store::Classic, Store::Containerd] {
        let started = Instant::now();
        let saved = dir.join(format!("current-{}.tar", store.name()));
        let api = {
            let current = Dockerd::start(&containerd, store).await;
            current.load(&old).await;
            current.save(TAG, &saved).await;
            current.api_version.clone()
        };
        eprintln!("current engine ({} store): load + save {:.1}s", store.name(), started.elapsed().as_secs_f64());
        let what = format!("docker save (current Docker Engine, API {api}, {} image store)", store.name());
        check_new_uncompressed(&saved, &what, &image_id, &diff_ids, &old_digest);
        std::fs::remove_file(&saved).unwrap();
    }

    // 4. The new layout with gzip blobs: imported into the containerd without unpacking
    //    (nothing is mounted), compressed on import, exported with manifest.json.
    let started = Instant::now();
    containerd.ctr("gzip", &["images", "import", "--no-unpack", "--compress-blobs", old.to_str().unwrap()]);
    let listed = containerd.ctr("gzip", &["images", "ls", "-q"]);
    assert!(listed.lines().any(|l| l == CONTAINERD_NAME), "containerd named the import: {listed}");
    let gz = dir.join("ctr-gzip.tar");
    containerd.ctr("gzip", &["images", "export", gz.to_str().unwrap(), CONTAINERD_NAME]);
    eprintln!("containerd import --compress-blobs + export: {:.1}s", started.elapsed().as_secs_f64());
    std::fs::remove_file(&old).unwrap();
    let gz_archive = Archive::read(&gz);
    assert_new_layout(&gz_archive, "ctr images export (gzip blobs)");
    let gz_oci = dir.join("ctr-gzip.oci");
    let gz_digest = convert(&gz, &gz_oci, "new layout, gzip blobs (ctr images export)");
    std::fs::remove_file(&gz).unwrap();
    let (gz_manifest, gz_config) = written(&gz_oci, &gz_digest);
    assert_eq!(gz_manifest.config(), old_manifest.config(), "the same config blob");
    assert_eq!(gz_config.rootfs().diff_ids(), &diff_ids);
    assert_ne!(gz_digest, old_digest, "compressed layers are other blobs, so another manifest");
    assert_eq!(gz_manifest.layers().len(), diff_ids.len());
    let started = Instant::now();
    for (layer, diff_id) in gz_manifest.layers().iter().zip(&diff_ids) {
        assert_eq!(layer.media_type(), &MediaType::ImageLayerGzip, "{layer:?}");
        assert_ne!(&format!("sha256:{}", layer.digest().digest()), diff_id, "a gzip blob is not its diff ID");
        let path = gz_oci.join("blobs/sha256").join(layer.digest().digest());
        assert_eq!(&sha256_of_gunzipped(&path), diff_id, "{path:?} decompresses to its diff ID");
    }
    eprintln!("gzip layers decompressed to their diff IDs: {:.1}s", started.elapsed().as_secs_f64());

    eprintln!(
        "both layouts: manifest {old_digest} (Docker Engine 20.10; current engine, classic and containerd \
         stores), {gz_digest} (gzip blobs), {} layers, {:.1}s",
        diff_ids.len(),
        total.elapsed().as_secs_f64()
    );
    drop(containerd);
}
