//! `--oci-layout DIR`: the built image as an OCI image layout (oci-spec types):
//! `oci-layout`, `index.json`, and `blobs/sha256/<hex>` for the manifest, the
//! config and each (uncompressed) layer, converted from the engine's
//! `docker save` archive. [`check_layout`] re-hashes every blob.

use oci_spec::image::{
    Descriptor, DescriptorBuilder, Digest, ImageIndex, ImageIndexBuilder, ImageManifest, ImageManifestBuilder,
    MediaType, OciLayoutBuilder,
};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
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
}

impl crate::failure::Classify for OciError {
    fn class(&self) -> crate::failure::FailureClass {
        match self {
            OciError::Io { .. } => crate::failure::FailureClass::Io,
            OciError::Invalid(_) => crate::failure::FailureClass::Engine,
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OciError + '_ {
    move |source| OciError::Io { path: path.display().to_string(), source }
}

fn invalid(e: impl std::fmt::Display) -> OciError {
    OciError::Invalid(e.to_string())
}

/// Writes `bytes` as a blob; returns its descriptor.
fn put_blob(dir: &Path, media_type: MediaType, bytes: &[u8]) -> Result<Descriptor, OciError> {
    let hex = hex::encode(Sha256::digest(bytes));
    let path = dir.join("blobs/sha256").join(&hex);
    std::fs::write(&path, bytes).map_err(io(&path))?;
    descriptor(media_type, bytes.len() as u64, &hex, None)
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

/// Converts a `docker save` archive (file) into an OCI layout in `dir`; returns
/// the manifest's digest. `reference` becomes `org.opencontainers.image.ref.name`.
pub fn from_docker_archive(archive: &Path, reference: &str, dir: &Path) -> Result<String, OciError> {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).map_err(io(&blobs))?;
    let file = std::fs::File::open(archive).map_err(io(archive))?;
    let mut tar = tar::Archive::new(file);
    let mut layers: HashMap<String, (String, u64)> = HashMap::new();
    let mut small: HashMap<String, Vec<u8>> = HashMap::new();
    for entry in tar.entries().map_err(io(archive))? {
        let mut entry = entry.map_err(io(archive))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().map_err(io(archive))?.to_string_lossy().into_owned();
        if name.ends_with(".tar") {
            layers.insert(name, stream_blob(dir, &mut entry)?);
        } else if name.ends_with(".json") {
            let mut buf = Vec::new();
            entry.read_to_end(&mut buf).map_err(io(archive))?;
            small.insert(name, buf);
        }
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(small.get("manifest.json").ok_or_else(|| invalid("no manifest.json in the archive"))?)
            .map_err(invalid)?;
    let first = manifest.get(0).ok_or_else(|| invalid("empty manifest.json"))?;
    let config_name = first["Config"].as_str().ok_or_else(|| invalid("manifest.json has no Config"))?;
    let config = small.get(config_name).ok_or_else(|| invalid(format!("{config_name} is missing")))?;
    let config_desc = put_blob(dir, MediaType::ImageConfig, config)?;
    let mut layer_descs = Vec::new();
    for layer in first["Layers"].as_array().ok_or_else(|| invalid("manifest.json has no Layers"))? {
        let name = layer.as_str().unwrap_or_default();
        let (hex, size) = layers.get(name).ok_or_else(|| invalid(format!("layer {name} is missing")))?;
        layer_descs.push(descriptor(MediaType::ImageLayer, *size, hex, None)?);
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

    fn docker_archive(dir: &Path) -> PathBuf {
        let layer_a = b"layer a contents".to_vec();
        let config = br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
        let manifest = br#"[{"Config":"abc.json","RepoTags":["x:1"],"Layers":["l1/layer.tar"]}]"#.to_vec();
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in [("l1/layer.tar", &layer_a), ("abc.json", &config), ("manifest.json", &manifest)] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, data.as_slice()).unwrap();
        }
        let path = dir.join("save.tar");
        std::fs::write(&path, b.into_inner().unwrap()).unwrap();
        path
    }

    #[test]
    fn a_docker_archive_becomes_a_checked_oci_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = docker_archive(tmp.path());
        let out = tmp.path().join("oci");
        let digest = from_docker_archive(&archive, "playpen/browser:1", &out).unwrap();
        assert!(digest.starts_with("sha256:"));
        assert_eq!(check_layout(&out).unwrap(), 3, "manifest, config, one layer");
        let index = std::fs::read_to_string(out.join("index.json")).unwrap();
        assert!(index.contains("playpen/browser:1") && index.contains(&digest));
        assert!(std::fs::read_to_string(out.join("oci-layout")).unwrap().contains("1.0.0"));
        // A tampered blob is found.
        let layer = Sha256::digest(b"layer a contents");
        std::fs::write(out.join("blobs/sha256").join(hex::encode(layer)), b"tampered").unwrap();
        assert!(check_layout(&out).unwrap_err().to_string().contains("has digest"));
    }
}
