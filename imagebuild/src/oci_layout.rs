//! `--oci-layout DIR`: the built image as an OCI image layout (oci-spec types):
//! `oci-layout`, `index.json`, and `blobs/sha256/<hex>` for the manifest, the
//! config and each (uncompressed) layer, converted from the engine's
//! `docker save` archive (either layout the engine writes, see
//! [`from_docker_archive`]). [`check_layout`] re-hashes every blob.

use crate::untrusted::{self, shown, Origin, UnsafeInput, Violation};
use oci_spec::image::{
    Descriptor, DescriptorBuilder, Digest, ImageIndex, ImageIndexBuilder, ImageManifest, ImageManifestBuilder,
    MediaType, OciLayoutBuilder,
};
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// OCI layout failures.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// Reading or writing files.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The archive or layout is not what it should be.
    #[error("OCI layout: {0}")]
    Invalid(String),
    /// The archive names a path outside itself.
    #[error(transparent)]
    Unsafe(#[from] UnsafeInput),
}

impl crate::failure::Classify for OciError {
    fn class(&self) -> crate::failure::FailureClass {
        match self {
            OciError::Io { .. } => crate::failure::FailureClass::Io,
            OciError::Invalid(_) => crate::failure::FailureClass::Engine,
            OciError::Unsafe(e) => crate::failure::Classify::class(e),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OciError + '_ {
    move |source| OciError::Io { path: path.display().to_string(), source }
}

fn invalid(e: impl std::fmt::Display) -> OciError {
    OciError::Invalid(e.to_string())
}

fn descriptor(
    media_type: MediaType,
    size: u64,
    hex: &str,
    annotations: Option<HashMap<String, String>>,
) -> Result<Descriptor, OciError> {
    let digest = Digest::from_str(&format!("sha256:{hex}")).map_err(invalid)?;
    let b = DescriptorBuilder::default().media_type(media_type).size(size).digest(digest);
    match annotations {
        Some(a) => b.annotations(a).build(),
        None => b.build(),
    }
    .map_err(invalid)
}

/// Streams `reader` into a blob while hashing it; returns (hex, size).
fn stream_blob(dir: &Path, reader: &mut impl Read) -> Result<(String, u64), OciError> {
    let tmp = dir.join("blobs/sha256/.incoming");
    let mut file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buf).map_err(io(&tmp))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(io(&tmp))?;
        size += n as u64;
    }
    let hex = hex::encode(hasher.finalize());
    let path = dir.join("blobs/sha256").join(&hex);
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok((hex, size))
}

/// Most bytes of `manifest.json` read into memory (a real one lists a handful of paths).
const MAX_MANIFEST_JSON: u64 = 1 << 20;
/// Most symbolic links followed from one path `manifest.json` lists.
const MAX_LINK_HOPS: usize = 8;

/// A file of the archive: stored as a blob, or a link to another archive path.
enum Member {
    /// Streamed into `blobs/sha256/<hex>`: (hex, size).
    Blob(String, u64),
    /// A symbolic or hard link to this (normalised) archive path.
    Link(String),
}

/// Converts a `docker save` archive (file) into an OCI layout in `dir`; returns
/// the manifest's digest. `reference` becomes `org.opencontainers.image.ref.name`.
///
/// The archive's `manifest.json` names the config and the layers by their paths in
/// the archive, and those paths are followed whatever they are: Docker Engine up to
/// 24 writes `<id>.json` and `<id>/layer.tar`, from 25 on an OCI layout whose
/// `manifest.json` lists `blobs/sha256/<hex>`. Every path is checked by the hostile
/// input rules ([`untrusted::relative_path`], [`untrusted::link_target_within`]):
/// relative, no `..` leaving the archive, no absolute path. Layers keep their
/// compression (gzip or zstd blobs from a containerd image store get the matching
/// media type); files the manifest does not reach are not left in the layout.
pub fn from_docker_archive(archive: &Path, reference: &str, dir: &Path) -> Result<String, OciError> {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).map_err(io(&blobs))?;
    let before = blob_names(&blobs)?;
    let origin = || Origin::EngineArchive(archive.display().to_string());
    let refused = |field: &str, value: &str, v: Violation| OciError::from(UnsafeInput::new(origin(), field, value, v));
    let file = std::fs::File::open(archive).map_err(io(archive))?;
    let mut tar = tar::Archive::new(file);
    let mut members: HashMap<String, Member> = HashMap::new();
    // Every blob written from the archive (a name repeated in the archive writes
    // two; members with the same bytes, such as each layer's `VERSION` file in
    // the old layout, write one).
    let mut stored: HashSet<String> = HashSet::new();
    for entry in tar.entries().map_err(io(archive))? {
        let mut entry = entry.map_err(io(archive))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_symlink() || kind.is_hard_link()) {
            continue;
        }
        let raw = entry.path().map_err(io(archive))?.to_string_lossy().into_owned();
        let name = untrusted::relative_path(&raw).map_err(|v| refused("entry name", &raw, v))?;
        let member = if kind.is_file() {
            let (hex, size) = stream_blob(dir, &mut entry)?;
            stored.insert(hex.clone());
            Member::Blob(hex, size)
        } else {
            let target = entry
                .link_name()
                .map_err(io(archive))?
                .ok_or_else(|| invalid(format!("link {name} in the archive has no target")))?
                .to_string_lossy()
                .into_owned();
            // A symbolic link is relative to its directory, a hard link to the archive's root.
            let to = if kind.is_symlink() {
                untrusted::link_target_within(&name, &target)
            } else {
                untrusted::relative_path(&target)
            };
            Member::Link(to.map_err(|v| refused(&format!("target of {name}"), &target, v))?)
        };
        members.insert(name, member);
    }
    let find = |field: &str, path: &str| -> Result<(String, u64), OciError> {
        let mut name = untrusted::relative_path(path).map_err(|v| refused(field, path, v))?;
        for _ in 0..=MAX_LINK_HOPS {
            match members.get(&name) {
                Some(Member::Blob(hex, size)) => return Ok((hex.clone(), *size)),
                Some(Member::Link(to)) => name = to.clone(),
                None => return Err(invalid(format!("{field} names {}, which is not in the archive", shown(path)))),
            }
        }
        Err(invalid(format!("{field} {}: more than {MAX_LINK_HOPS} links to follow", shown(path))))
    };

    let (manifest_hex, manifest_size) =
        find("manifest.json", "manifest.json").map_err(|_| invalid("no manifest.json in the archive"))?;
    if manifest_size > MAX_MANIFEST_JSON {
        return Err(invalid(format!("manifest.json is {manifest_size} bytes, over {MAX_MANIFEST_JSON}")));
    }
    let manifest_path = blobs.join(&manifest_hex);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).map_err(io(&manifest_path))?).map_err(invalid)?;
    let first = manifest.get(0).ok_or_else(|| invalid("empty manifest.json"))?;
    let config_name = first["Config"].as_str().ok_or_else(|| invalid("manifest.json has no Config"))?;
    let (config_hex, config_size) = find("Config", config_name)?;
    let config_desc = descriptor(MediaType::ImageConfig, config_size, &config_hex, None)?;
    let mut kept = vec![config_hex];
    let mut layer_descs = Vec::new();
    for (i, layer) in
        first["Layers"].as_array().ok_or_else(|| invalid("manifest.json has no Layers"))?.iter().enumerate()
    {
        let name = layer.as_str().ok_or_else(|| invalid(format!("manifest.json Layers[{i}] is not a path")))?;
        let (hex, size) = find(&format!("Layers[{i}]"), name)?;
        layer_descs.push(descriptor(layer_media_type(&blobs.join(&hex))?, size, &hex, None)?);
        kept.push(hex);
    }
    let image_manifest: ImageManifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(config_desc)
        .layers(layer_descs)
        .build()
        .map_err(invalid)?;
    let manifest_bytes = image_manifest.to_string().map_err(invalid)?.into_bytes();
    let hex = hex::encode(Sha256::digest(&manifest_bytes));
    let path = blobs.join(&hex);
    std::fs::write(&path, &manifest_bytes).map_err(io(&path))?;
    kept.push(hex.clone());
    // What the archive held besides the image (its own manifest.json, index.json,
    // the engine's OCI manifest): not part of this layout unless it was there before.
    for unused in stored.iter().filter(|h| !kept.contains(h) && !before.contains(*h)) {
        let path = blobs.join(unused);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&path)(e)),
            _ => {}
        }
    }
    let annotations = HashMap::from([("org.opencontainers.image.ref.name".to_owned(), reference.to_owned())]);
    let index: ImageIndex = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![descriptor(MediaType::ImageManifest, manifest_bytes.len() as u64, &hex, Some(annotations))?])
        .build()
        .map_err(invalid)?;
    let index_path = dir.join("index.json");
    index.to_file_pretty(&index_path).map_err(invalid)?;
    let layout = OciLayoutBuilder::default().image_layout_version("1.0.0").build().map_err(invalid)?;
    layout.to_file(dir.join("oci-layout")).map_err(invalid)?;
    Ok(format!("sha256:{hex}"))
}

/// The blob names already in `blobs`.
fn blob_names(blobs: &Path) -> Result<HashSet<String>, OciError> {
    let mut names = HashSet::new();
    for entry in std::fs::read_dir(blobs).map_err(io(blobs))? {
        names.insert(entry.map_err(io(blobs))?.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// A layer's media type from its first bytes: `docker save` from the classic
/// store writes plain tars, from a containerd image store the blobs as pulled.
fn layer_media_type(path: &Path) -> Result<MediaType, OciError> {
    let mut head = [0u8; 4];
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let n = file.read(&mut head).map_err(io(path))?;
    Ok(match &head[..n] {
        [0x1f, 0x8b, ..] => MediaType::ImageLayerGzip,
        [0x28, 0xb5, 0x2f, 0xfd] => MediaType::ImageLayerZstd,
        _ => MediaType::ImageLayer,
    })
}

/// Checks a layout: every blob's sha256 is its name, and every descriptor
/// reachable from index.json names an existing blob of the stated size.
/// Returns the number of blobs checked.
pub fn check_layout(dir: &Path) -> Result<usize, OciError> {
    let blobs = dir.join("blobs/sha256");
    let mut count = 0;
    for entry in std::fs::read_dir(&blobs).map_err(io(&blobs))? {
        let path: PathBuf = entry.map_err(io(&blobs))?.path();
        let mut file = std::fs::File::open(&path).map_err(io(&path))?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher).map_err(io(&path))?;
        let hex = hex::encode(hasher.finalize());
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if hex != name {
            return Err(invalid(format!("blob {name} has digest {hex}")));
        }
        count += 1;
    }
    let index = ImageIndex::from_file(dir.join("index.json")).map_err(invalid)?;
    let check = |d: &Descriptor| -> Result<PathBuf, OciError> {
        let hex = d.digest().digest();
        let path = blobs.join(hex);
        let len = std::fs::metadata(&path).map_err(io(&path))?.len();
        if len != d.size() {
            return Err(invalid(format!("blob {hex} is {len} bytes, its descriptor says {}", d.size())));
        }
        Ok(path)
    };
    for m in index.manifests() {
        let manifest = ImageManifest::from_file(check(m)?).map_err(invalid)?;
        check(manifest.config())?;
        for l in manifest.layers() {
            check(l)?;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Classify as _;

    /// One member of a test archive.
    enum M<'a> {
        Dir,
        File(&'a [u8]),
        Symlink(&'a str),
    }

    fn archive(dir: &Path, members: &[(&str, M<'_>)]) -> PathBuf {
        let mut b = tar::Builder::new(Vec::new());
        for (name, m) in members {
            let mut h = tar::Header::new_gnu();
            h.set_mtime(0);
            match m {
                M::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                    b.append_data(&mut h, name, std::io::empty()).unwrap();
                }
                M::File(data) => {
                    h.set_mode(0o444);
                    h.set_size(data.len() as u64);
                    b.append_data(&mut h, name, *data).unwrap();
                }
                M::Symlink(target) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_mode(0o777);
                    h.set_size(0);
                    b.append_link(&mut h, name, target).unwrap();
                }
            }
        }
        let path = dir.join("save.tar");
        std::fs::write(&path, b.into_inner().unwrap()).unwrap();
        path
    }

    /// A real (tiny) layer: a tar holding `etc/<name>`.
    fn layer(name: &str, text: &[u8]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(text.len() as u64);
        h.set_mtime(0);
        b.append_data(&mut h, format!("etc/{name}"), text).unwrap();
        b.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn config(diff_ids: &[&[u8]]) -> Vec<u8> {
        let ids: Vec<String> = diff_ids.iter().map(|l| format!("\"sha256:{}\"", sha(l))).collect();
        format!(
            r#"{{"architecture":"amd64","os":"linux","rootfs":{{"type":"layers","diff_ids":[{}]}}}}"#,
            ids.join(",")
        )
        .into_bytes()
    }

    fn written_manifest(out: &Path, digest: &str) -> ImageManifest {
        let hex = digest.strip_prefix("sha256:").unwrap();
        ImageManifest::from_file(out.join("blobs/sha256").join(hex)).unwrap()
    }

    /// The layout Docker Engine up to 24 writes: `<id>.json`, `<id>/layer.tar`.
    #[test]
    fn a_docker_20_archive_becomes_a_checked_oci_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let layer_a = layer("a", b"layer a contents");
        let config = config(&[&layer_a]);
        let id = sha(&config);
        let manifest = format!(r#"[{{"Config":"{id}.json","RepoTags":["x:1"],"Layers":["l1/layer.tar"]}}]"#);
        let archive = archive(
            tmp.path(),
            &[
                ("l1/", M::Dir),
                ("l1/VERSION", M::File(b"1.0")),
                ("l1/json", M::File(b"{}")),
                ("l1/layer.tar", M::File(&layer_a)),
                (&format!("{id}.json"), M::File(&config)),
                ("manifest.json", M::File(manifest.as_bytes())),
                ("repositories", M::File(br#"{"x":{"1":"l1"}}"#)),
            ],
        );
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "playpen/browser:1", &out).unwrap();
        assert!(digest.starts_with("sha256:"));
        assert_eq!(check_layout(&out).unwrap(), 3, "manifest, config, one layer; nothing else kept");
        let m = written_manifest(&out, &digest);
        assert_eq!(m.config().digest().digest(), id);
        assert_eq!(m.layers()[0].digest().digest(), sha(&layer_a));
        assert_eq!(m.layers()[0].media_type(), &MediaType::ImageLayer);
        let index = std::fs::read_to_string(out.join("index.json")).unwrap();
        assert!(index.contains("playpen/browser:1") && index.contains(&digest));
        assert!(std::fs::read_to_string(out.join("oci-layout")).unwrap().contains("1.0.0"));
        // A tampered blob is found.
        std::fs::write(out.join("blobs/sha256").join(sha(&layer_a)), b"tampered").unwrap();
        assert!(check_layout(&out).unwrap_err().to_string().contains("has digest"));
    }

    /// Every layer directory of the old layout holds the same `VERSION` and
    /// `json` bytes: one blob, removed once (a second removal failed a real
    /// two-layer image with "No such file or directory").
    #[test]
    fn members_with_the_same_bytes_in_a_docker_20_archive_are_one_blob() {
        let tmp = tempfile::tempdir().unwrap();
        let (layer_a, layer_b) = (layer("a", b"a"), layer("b", b"b"));
        let config = config(&[&layer_a, &layer_b]);
        let id = sha(&config);
        let manifest =
            format!(r#"[{{"Config":"{id}.json","RepoTags":["x:1"],"Layers":["l1/layer.tar","l2/layer.tar"]}}]"#);
        let archive = archive(
            tmp.path(),
            &[
                ("l1/VERSION", M::File(b"1.0")),
                ("l1/json", M::File(b"{}")),
                ("l1/layer.tar", M::File(&layer_a)),
                ("l2/VERSION", M::File(b"1.0")),
                ("l2/json", M::File(b"{}")),
                ("l2/layer.tar", M::File(&layer_b)),
                (&format!("{id}.json"), M::File(&config)),
                ("manifest.json", M::File(manifest.as_bytes())),
            ],
        );
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "x:1", &out).unwrap();
        assert_eq!(check_layout(&out).unwrap(), 4, "manifest, config, two layers");
        assert_eq!(written_manifest(&out, &digest).layers().len(), 2);
    }

    /// The layout Docker Engine 25 and later writes (`docker save` is an OCI image
    /// layout plus the legacy `manifest.json` listing `blobs/sha256/<hex>` paths):
    /// `blobs/`, `blobs/sha256/<hex>` for the engine's OCI manifest, the config and
    /// each layer, then `index.json`, `manifest.json`, `oci-layout`, `repositories`.
    /// The second layer is gzip, as a containerd image store saves pulled layers.
    #[test]
    fn a_docker_25_oci_archive_becomes_a_checked_oci_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = layer("a", b"first layer");
        let second = layer("b", b"second layer");
        let compressed = gzip(&second);
        let config = config(&[&plain, &second]);
        let (plain_hex, gz_hex, config_hex) = (sha(&plain), sha(&compressed), sha(&config));
        let engine_manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:{config_hex}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:{plain_hex}","size":{}}},{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:{gz_hex}","size":{}}}]}}"#,
            config.len(),
            plain.len(),
            compressed.len()
        );
        let engine_manifest_hex = sha(engine_manifest.as_bytes());
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{engine_manifest_hex}","size":{},"annotations":{{"io.containerd.image.name":"docker.io/playpen/browser:1","org.opencontainers.image.ref.name":"1"}}}}]}}"#,
            engine_manifest.len()
        );
        let manifest = format!(
            r#"[{{"Config":"blobs/sha256/{config_hex}","RepoTags":["playpen/browser:1"],"Layers":["blobs/sha256/{plain_hex}","blobs/sha256/{gz_hex}"]}}]"#
        );
        let archive = archive(
            tmp.path(),
            &[
                ("blobs/", M::Dir),
                ("blobs/sha256/", M::Dir),
                (&format!("blobs/sha256/{engine_manifest_hex}"), M::File(engine_manifest.as_bytes())),
                (&format!("blobs/sha256/{config_hex}"), M::File(&config)),
                (&format!("blobs/sha256/{plain_hex}"), M::File(&plain)),
                (&format!("blobs/sha256/{gz_hex}"), M::File(&compressed)),
                ("index.json", M::File(index.as_bytes())),
                ("manifest.json", M::File(manifest.as_bytes())),
                ("oci-layout", M::File(br#"{"imageLayoutVersion":"1.0.0"}"#)),
                ("repositories", M::File(br#"{"playpen/browser":{"1":"x"}}"#)),
            ],
        );
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "playpen/browser:1", &out).unwrap();
        assert_eq!(check_layout(&out).unwrap(), 4, "manifest, config, two layers; not the engine's own manifest");
        let m = written_manifest(&out, &digest);
        assert_eq!(m.config().digest().digest(), config_hex);
        assert_eq!(m.config().size(), config.len() as u64);
        let layers: Vec<(&str, &MediaType)> =
            m.layers().iter().map(|l| (l.digest().digest(), l.media_type())).collect();
        assert_eq!(
            layers,
            [(plain_hex.as_str(), &MediaType::ImageLayer), (gz_hex.as_str(), &MediaType::ImageLayerGzip)]
        );
        assert_eq!(std::fs::read(out.join("blobs/sha256").join(&gz_hex)).unwrap(), compressed);
        // Only the image's blobs are kept: not the archive's index.json, manifest.json or
        // oci-layout (the engine's own OCI manifest only if it is byte-identical to ours).
        let mut kept: Vec<String> = std::fs::read_dir(out.join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        kept.sort();
        let mut expected = vec![digest.strip_prefix("sha256:").unwrap().to_owned(), config_hex, plain_hex, gz_hex];
        expected.sort();
        assert_eq!(kept, expected);
        assert!(!kept.contains(&sha(index.as_bytes())) && !kept.contains(&sha(manifest.as_bytes())));
    }

    /// `manifest.json` may list a path that is a link to the blob (legacy
    /// `<id>/layer.tar` next to `blobs/`): the link is followed inside the archive.
    #[test]
    fn links_inside_the_archive_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = layer("a", b"linked layer");
        let config = config(&[&plain]);
        let (plain_hex, config_hex) = (sha(&plain), sha(&config));
        let blob = format!("blobs/sha256/{plain_hex}");
        let manifest = format!(r#"[{{"Config":"blobs/sha256/{config_hex}","Layers":["l1/layer.tar"]}}]"#);
        let archive = archive(
            tmp.path(),
            &[
                (&blob, M::File(&plain)),
                (&format!("blobs/sha256/{config_hex}"), M::File(&config)),
                ("l1/layer.tar", M::Symlink(&format!("../{blob}"))),
                ("manifest.json", M::File(manifest.as_bytes())),
            ],
        );
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "x:1", &out).unwrap();
        assert_eq!(check_layout(&out).unwrap(), 3);
        assert_eq!(written_manifest(&out, &digest).layers()[0].digest().digest(), plain_hex);
    }

    /// A name repeated in the archive means its last member (as tar extraction does);
    /// the earlier member's blob is not left behind.
    #[test]
    fn a_repeated_name_keeps_only_the_last_member() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (layer("a", b"old"), layer("a", b"new"));
        let config = config(&[&new]);
        let manifest = br#"[{"Config":"c.json","Layers":["l/layer.tar"]}]"#;
        let archive = archive(
            tmp.path(),
            &[
                ("l/layer.tar", M::File(&old)),
                ("l/layer.tar", M::File(&new)),
                ("c.json", M::File(&config)),
                ("manifest.json", M::File(manifest)),
            ],
        );
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "x:1", &out).unwrap();
        assert_eq!(check_layout(&out).unwrap(), 3);
        assert_eq!(written_manifest(&out, &digest).layers()[0].digest().digest(), sha(&new));
        assert!(!out.join("blobs/sha256").join(sha(&old)).exists());
    }

    fn convert(members: &[(&str, M<'_>)]) -> Result<String, OciError> {
        let tmp = tempfile::tempdir().unwrap();
        let archive = archive(tmp.path(), members);
        from_docker_archive(&archive, "x:1", &tmp.path().join("oci"))
    }

    #[test]
    fn paths_leaving_the_archive_are_refused() {
        let config = config(&[]);
        for (config_path, layer_path) in [
            ("c.json", "../../etc/passwd"),
            ("c.json", "/etc/passwd"),
            ("/c.json", "l/layer.tar"),
            ("a/../../c.json", "l/layer.tar"),
            ("c.json", "l/layer.tar\nRUN id"),
        ] {
            let manifest = format!(
                r#"[{{"Config":{},"Layers":[{}]}}]"#,
                serde_json::json!(config_path),
                serde_json::json!(layer_path)
            );
            let err = convert(&[
                ("c.json", M::File(&config)),
                ("l/layer.tar", M::File(b"layer")),
                ("manifest.json", M::File(manifest.as_bytes())),
            ])
            .unwrap_err();
            assert!(matches!(err, OciError::Unsafe(_)), "{config_path} {layer_path}: {err}");
            assert_eq!(err.class().exit_code(), 24, "{err}");
            assert!(err.to_string().contains("image archive"), "{err}");
        }
    }

    #[test]
    fn links_leaving_the_archive_are_refused() {
        let manifest = br#"[{"Config":"c.json","Layers":["l/layer.tar"]}]"#;
        for target in ["../../etc/passwd", "/etc/passwd"] {
            let err = convert(&[
                ("c.json", M::File(b"{}")),
                ("l/layer.tar", M::Symlink(target)),
                ("manifest.json", M::File(manifest)),
            ])
            .unwrap_err();
            assert!(matches!(err, OciError::Unsafe(_)), "{target}: {err}");
            assert!(err.to_string().contains("target of l/layer.tar"), "{err}");
        }
    }

    #[test]
    fn missing_looping_and_malformed_paths_are_invalid() {
        let missing = br#"[{"Config":"c.json","Layers":["gone/layer.tar"]}]"#;
        let err = convert(&[("c.json", M::File(b"{}")), ("manifest.json", M::File(missing))]).unwrap_err();
        assert!(err.to_string().contains("Layers[0] names \"gone/layer.tar\", which is not in the archive"), "{err}");
        let looping = br#"[{"Config":"a","Layers":[]}]"#;
        let err = convert(&[("a", M::Symlink("b")), ("b", M::Symlink("a")), ("manifest.json", M::File(looping))])
            .unwrap_err();
        assert!(err.to_string().contains("links to follow"), "{err}");
        let not_a_path = br#"[{"Config":"c.json","Layers":[7]}]"#;
        let err = convert(&[("c.json", M::File(b"{}")), ("manifest.json", M::File(not_a_path))]).unwrap_err();
        assert!(err.to_string().contains("Layers[0] is not a path"), "{err}");
        let err = convert(&[("c.json", M::File(b"{}"))]).unwrap_err();
        assert!(err.to_string().contains("no manifest.json"), "{err}");
    }
}
