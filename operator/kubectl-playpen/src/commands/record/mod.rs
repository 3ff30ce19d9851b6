//! `kubectl playpen record NAME [-o DIR] [--from auto|pod|store] [--rotate]`:
//! copy a session's recordings out. From the object store when the session
//! exports them (`spec.recording.export`: `store.rs`, the Pod may be gone),
//! from the Pod's recordings directory otherwise (this module). `--rotate`
//! first has the runtime finish the video segment in progress
//! (`rotate.rs`), so the copy holds the video up to now.

pub mod rotate;
pub mod store;

use std::path::{Path, PathBuf};

use playpen_api::layout::RECORDINGS_DIR;
use playpen_api::runtime_config::RecordingExportConfig;

use super::copy::{self, parse_tree, LIST_TREE};
use crate::cli::{RecordArgs, RecordFrom};
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::output::untrusted;
use crate::remote::Target;

/// The default destination: `./<name>-recordings`.
pub fn default_dir(name: &str) -> PathBuf {
    PathBuf::from(format!("{name}-recordings"))
}

/// Where the copy comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The Pod's recordings directory.
    Pod,
    /// The object store.
    Store,
}

/// Where `--from` and the session's export say to copy from (pure).
pub fn source(from: RecordFrom, exports: bool, session: &str) -> Result<Source> {
    match (from, exports) {
        (RecordFrom::Pod, _) | (RecordFrom::Auto, false) => Ok(Source::Pod),
        (RecordFrom::Store, true) | (RecordFrom::Auto, true) => Ok(Source::Store),
        (RecordFrom::Store, false) => Err(Error::Usage(format!(
            "BrowserSession {session} exports no recordings (spec.recording.export is not set, or nothing is \
             recorded): there is no object store to read; copy from its Pod (--from pod)"
        ))),
    }
}

/// What a missing Pod means for a copy from it: without an export, the
/// recordings went with it.
pub fn pod_gone(err: Error, exports: bool) -> Error {
    match err {
        Error::PodMissing { pod, session, namespace } if !exports => Error::Unavailable(format!(
            "the Pod {pod} of BrowserSession {session} is gone (or not created yet), and the session exports no \
             recordings (spec.recording.export): what it recorded was on the Pod's volume only. See kubectl \
             playpen ls -n {namespace}; to keep recordings past the Pod, set spec.recording.export \
             (docs/recordings-export.md)"
        )),
        Error::PodMissing { pod, session, .. } => Error::Unavailable(format!(
            "the Pod {pod} of BrowserSession {session} is gone (or not created yet): its recordings are in the \
             object store; copy them from there (--from store)"
        )),
        other => other,
    }
}

/// A one-line shell command that joins the video segments in `dir`
/// (`pattern` sorts in recording order) into one file (pure).
pub fn stitch_hint(dir: &Path, pattern: &str) -> String {
    format!(
        "to join the video segments into one file: (cd {} && for f in {pattern}; do echo \"file '$f'\"; done > \
         segments.txt && ffmpeg -f concat -safe 0 -i segments.txt -c copy session.webm)",
        shell_quote(&dir.display().to_string())
    )
}

/// `text` quoted for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=+,:@".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Runs `record`.
pub async fn run(cluster: &Cluster, args: RecordArgs) -> Result<()> {
    let (session, target) = super::browser(cluster, &args.name).await?;
    let export = RecordingExportConfig::of(&session);
    let exports = export.is_some();
    let from = source(args.from, exports, &target.session)?;
    let dir = args.output.unwrap_or_else(|| default_dir(&args.name));
    let rotated = match args.rotate {
        true => rotate::ask(&target, from).await.map_err(|e| pod_gone(e, exports))?,
        false => None,
    };
    match (from, export) {
        (Source::Store, Some(export)) => store::run(cluster, &session, &export, &dir, rotated).await,
        _ => from_pod(&target, &dir).await.map_err(|e| pod_gone(e, exports)),
    }
}

/// Copies every file under the Pod's recordings directory into `dir`, keeping the tree.
async fn from_pod(target: &Target<'_>, dir: &Path) -> Result<()> {
    let raw = copy::list(target, LIST_TREE, RECORDINGS_DIR).await?;
    let files = parse_tree(&raw, RECORDINGS_DIR).unwrap_or_default();
    if files.is_empty() {
        println!(
            "no recordings: {RECORDINGS_DIR} in Pod {} of BrowserSession {} holds no files (nothing recorded yet)",
            target.pod, target.session
        );
        return Ok(());
    }
    let mut total = 0;
    for file in &files {
        let remote = format!("{RECORDINGS_DIR}/{}", file.relative.display());
        let local = dir.join(&file.relative);
        let bytes = copy::fetch(target, &remote, &local).await?;
        println!("{} -> {} ({bytes} bytes)", untrusted(&remote, false), untrusted(&local.display().to_string(), false));
        total += bytes;
    }
    println!("{} recording file(s), {total} bytes, in {}", files.len(), dir.display());
    let videos = files.iter().filter(|f| f.relative.to_string_lossy().starts_with("video-")).count();
    if videos > 1 {
        println!("{}", stitch_hint(dir, "video-*.webm"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_directory_is_named_after_the_session() {
        assert_eq!(default_dir("demo"), PathBuf::from("demo-recordings"));
    }

    #[test]
    fn the_store_is_the_source_when_the_session_exports_unless_the_pod_is_asked_for() {
        assert_eq!(source(RecordFrom::Auto, true, "a/b").unwrap(), Source::Store);
        assert_eq!(source(RecordFrom::Auto, false, "a/b").unwrap(), Source::Pod);
        assert_eq!(source(RecordFrom::Pod, true, "a/b").unwrap(), Source::Pod);
        assert_eq!(source(RecordFrom::Store, true, "a/b").unwrap(), Source::Store);
        let err = source(RecordFrom::Store, false, "team-a/demo").unwrap_err().to_string();
        assert!(err.contains("team-a/demo exports no recordings") && err.contains("--from pod"), "{err}");
    }

    #[test]
    fn a_gone_pod_says_where_the_recordings_are_or_that_they_went_with_it() {
        let missing =
            || Error::PodMissing { pod: "demo-browser".into(), session: "ns/demo".into(), namespace: "ns".into() };
        let text = pod_gone(missing(), false).to_string();
        assert!(
            text.contains("is gone")
                && text.contains("exports no recordings")
                && text.contains("spec.recording.export"),
            "{text}"
        );
        let text = pod_gone(missing(), true).to_string();
        assert!(text.contains("--from store"), "{text}");
        let other = pod_gone(Error::Usage("x".into()), false);
        assert_eq!(other.to_string(), "x");
    }

    #[test]
    fn the_stitch_hint_is_one_line_with_the_directory_quoted() {
        let hint = stitch_hint(Path::new("demo-recordings/video"), "*.webm");
        assert!(!hint.contains('\n'));
        assert!(hint.contains("(cd demo-recordings/video && for f in *.webm;"), "{hint}");
        assert!(hint.contains("ffmpeg -f concat -safe 0 -i segments.txt -c copy session.webm"), "{hint}");
        assert_eq!(shell_quote("it's here"), r"'it'\''s here'");
        assert_eq!(shell_quote(""), "''");
    }
}
