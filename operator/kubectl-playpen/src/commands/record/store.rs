//! `record` from the object store: the keys from the export's credentials
//! Secret, read with the user's own rights (never printed); the session's
//! prefix rendered as the exporter renders it (`RecordingExportConfig::of`
//! and the `playpen-export` crate, the exporter's own code); then the
//! manifest and every object it lists, each checked against it, into the
//! target directory with the layout under the prefix kept.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use playpen_api::runtime_config::RecordingExportConfig;
use playpen_api::BrowserSession;
use playpen_export::{
    created_at, destination_of, download_plan, from_secret_data, session_of, Credentials, CredentialsSource,
    ExportError, Manifest, Reader, SegmentKind,
};

use super::stitch_hint;
use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::output::untrusted;
use crate::rbac::{is_forbidden, parse_rbac_message, Attempt};

/// How long `--rotate` waits for the exporter to list the finished segment.
pub const UPLOAD_WAIT: Duration = Duration::from_secs(120);
/// How often the manifest is read meanwhile.
const POLL: Duration = Duration::from_secs(2);

/// What a copy from the store fetched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Objects on disk (the manifest included).
    pub objects: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Of them, already there (same size and digest): not downloaded again.
    pub already: usize,
    /// Video segments among them.
    pub videos: usize,
}

/// Runs `record` from the store.
pub async fn run(
    cluster: &Cluster,
    session: &BrowserSession,
    export: &RecordingExportConfig,
    dir: &Path,
    rotated: Option<u64>,
) -> Result<()> {
    let ns = &export.namespace;
    let secret =
        session.spec.recording.export.as_ref().map(|e| e.s3.credentials_secret.name.clone()).unwrap_or_default();
    let credentials = read_credentials(cluster, ns, &secret).await?;
    let created = session.metadata.creation_timestamp.as_ref().map(|t| t.0.to_string());
    let context =
        format!("reading BrowserSession {ns}/{}'s recordings with the keys of Secret {ns}/{secret}", export.name);
    let reader = reader(export, credentials, created.as_deref(), &context)?;
    if let Some(ms) = rotated {
        println!("waiting for the exporter to upload it (up to {} s)", UPLOAD_WAIT.as_secs());
        wait_for_segment(&reader, ms, UPLOAD_WAIT, POLL, &context).await.map_err(|e| match e {
            Error::Timeout(why) => Error::Timeout(format!(
                "{why}; the exporter's log says why: kubectl logs -n {ns} {} -c exporter",
                session.status.as_ref().and_then(|s| s.pod_name.clone()).unwrap_or_else(|| "<pod>".into())
            )),
            other => other,
        })?;
    }
    fetch_all(&reader, dir, &mut std::io::stdout(), &context).await.map(|_| ())
}

/// Reads the keys from Secret `namespace/name` with the user's own rights.
pub async fn read_credentials(cluster: &Cluster, namespace: &str, name: &str) -> Result<Credentials> {
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
    let secret = api.get(name).await.map_err(|e| secret_error(e, namespace, name))?;
    let data = secret.data.unwrap_or_default();
    from_secret_data(&format!("{namespace}/{name}"), |key| data.get(key).map(|v| v.0.clone())).map_err(|e| {
        Error::Store {
            context: "reading the export's credentials".into(),
            source: Box::new(ExportError::Credentials(e)),
        }
    })
}

/// What a failed read of the credentials Secret becomes: a denial names the
/// Secret, the verb and the way around it.
pub fn secret_error(err: kube::Error, namespace: &str, name: &str) -> Error {
    if let kube::Error::Api(status) = &err {
        if is_forbidden(status) {
            let who = parse_rbac_message(&status.message)
                .and_then(|(user, _)| user)
                .map_or_else(|| "you".to_owned(), |u| format!("user \"{u}\""));
            return Error::Refused(format!(
                "{who} may not \"get\" the Secret {namespace}/{name}, which holds the keys to the session's \
                 recordings in the object store (spec.recording.export.s3.credentialsSecret). Ask for a Role \
                 granting get on secrets, resourceNames [{name}], in \"{namespace}\" (check: kubectl auth can-i get \
                 secrets/{name} -n {namespace}), or copy from the Pod while it runs: --from pod"
            ));
        }
        if status.is_not_found() {
            return Error::Unavailable(format!(
                "the export's credentials Secret {namespace}/{name} does not exist: create it with the keys \
                 accessKeyId and secretAccessKey (docs/recordings-export.md)"
            ));
        }
    }
    let attempt = Attempt {
        verb: "get".into(),
        group: String::new(),
        resource: "secrets".into(),
        subresource: None,
        namespace: Some(namespace.to_owned()),
    };
    forbidden::kube_error(err, &attempt, format!("get Secret {namespace}/{name}"))
}

/// The reader of `export` with `credentials`, its prefix rendered with the
/// session's creation (`created`, RFC 3339) as the exporter renders it.
pub fn reader(
    export: &RecordingExportConfig,
    credentials: Credentials,
    created: Option<&str>,
    context: &str,
) -> Result<Reader> {
    let store = |source: ExportError| Error::Store { context: context.to_owned(), source: Box::new(source) };
    let created = created_at(created).ok_or_else(|| {
        Error::Unavailable(format!(
            "BrowserSession {}/{} has no creation time to render its prefix with",
            export.namespace, export.name
        ))
    })?;
    let destination = destination_of(export, CredentialsSource::Given(credentials))
        .validate()
        .map_err(|e| store(ExportError::Destination(e)))?;
    Reader::new(&destination, &session_of(export), created).map_err(store)
}

/// Whether `manifest` lists the video segment that started at `ms` (pure).
pub fn lists_segment(manifest: &Manifest, ms: u64) -> bool {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    manifest.segments.iter().any(|s| s.kind == SegmentKind::Video && s.start.timestamp_millis() == ms)
}

/// Waits up to `within` until the manifest lists the video segment that
/// started at `ms`.
pub async fn wait_for_segment(reader: &Reader, ms: u64, within: Duration, poll: Duration, context: &str) -> Result<()> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let manifest = reader
            .manifest()
            .await
            .map_err(|source| Error::Store { context: context.to_owned(), source: Box::new(source) })?;
        if manifest.as_ref().is_some_and(|(m, _)| lists_segment(m, ms)) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "the manifest at {} does not list the finished segment video-{ms}.webm after {} s",
                reader.location(),
                within.as_secs()
            )));
        }
        tokio::time::sleep(poll).await;
    }
}

/// Downloads the manifest and every object it lists into `dir`, saying
/// what it fetched on `out`.
pub async fn fetch_all(reader: &Reader, dir: &Path, out: &mut dyn Write, context: &str) -> Result<Summary> {
    let store = |source: ExportError| Error::Store { context: context.to_owned(), source: Box::new(source) };
    let say = |out: &mut dyn Write, line: String| writeln!(out, "{line}").map_err(Error::io("writing to the terminal"));
    let Some((mut manifest, mut raw)) = reader.manifest().await.map_err(store)? else {
        return Err(Error::Unavailable(format!(
            "nothing in the object store yet at {}: the exporter uploads each video segment once it is finished \
             (--rotate finishes the one in progress)",
            reader.location()
        )));
    };
    let (wanted, refused) = download_plan(reader.layout(), &manifest);
    for key in refused {
        eprintln!("skipped {}: the manifest lists it outside the session's prefix", untrusted(key.as_str(), false));
    }
    let mut summary = Summary::default();
    for item in &wanted {
        let fetched = match reader.fetch(item, dir).await {
            // A live trace uploaded again since the manifest was read: read it again, once.
            Err(ExportError::Mismatch { .. }) => {
                let Some((again, bytes)) = reader.manifest().await.map_err(store)? else { continue };
                let (now, _) = download_plan(reader.layout(), &again);
                let Some(item) = now.iter().find(|w| w.key == item.key) else { continue };
                (manifest, raw) = (again, bytes);
                reader.fetch(item, dir).await.map_err(store)?
            }
            other => other.map_err(store)?,
        };
        let local = untrusted(&dir.join(&item.relative).display().to_string(), false);
        let note = if fetched.already { ", already here" } else { "" };
        say(out, format!("{} -> {local} ({} bytes{note})", untrusted(&reader.url(&item.key), false), fetched.bytes))?;
        summary.objects += 1;
        summary.bytes += fetched.bytes;
        summary.already += usize::from(fetched.already);
        summary.videos += usize::from(item.kind == Some(SegmentKind::Video));
    }
    let manifest_file = dir.join("manifest.json");
    std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    std::fs::write(&manifest_file, &raw).map_err(Error::io(format!("writing {}", manifest_file.display())))?;
    summary.objects += 1;
    summary.bytes += raw.len() as u64;
    let manifest_url = reader.url(&reader.layout().manifest());
    say(out, format!("{manifest_url} -> {} ({} bytes)", manifest_file.display(), raw.len()))?;
    let marks = if manifest.interruptions.is_empty() {
        String::new()
    } else {
        format!(", {} interrupted marker(s): a crash cut a recording short", manifest.interruptions.len())
    };
    say(
        out,
        format!(
            "{} object(s), {} bytes ({} already here), {} video segment(s){marks}, from {} in {}",
            summary.objects,
            summary.bytes,
            summary.already,
            summary.videos,
            reader.location(),
            dir.display()
        ),
    )?;
    if summary.videos > 1 {
        say(out, stitch_hint(&dir.join("video"), "*.webm"))?;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            Status { code, reason: reason.into(), message: message.into(), ..Status::failure("", "") }.boxed(),
        )
    }

    #[test]
    fn a_denied_secret_names_the_secret_the_verb_and_the_way_around() {
        let err = secret_error(
            status(
                403,
                "Forbidden",
                "secrets \"rec-s3\" is forbidden: User \"alice\" cannot get resource \"secrets\" in API group \"\" in \
                 the namespace \"team-a\"",
            ),
            "team-a",
            "rec-s3",
        )
        .to_string();
        for part in [
            "user \"alice\" may not \"get\" the Secret team-a/rec-s3",
            "kubectl auth can-i get secrets/rec-s3 -n team-a",
            "--from pod",
        ] {
            assert!(err.contains(part), "{part}: {err}");
        }
        let err = secret_error(status(404, "NotFound", "secrets \"rec-s3\" not found"), "team-a", "rec-s3").to_string();
        assert!(err.contains("Secret team-a/rec-s3 does not exist") && err.contains("secretAccessKey"), "{err}");
    }

    #[test]
    fn the_manifest_lists_a_segment_by_its_start() {
        use playpen_export::{Layout, PrefixTemplate, Segment, SessionId, SessionInfo};
        let id = SessionId { namespace: "ns".into(), name: "demo".into(), uid: "u".into() };
        let created = created_at(Some("2026-12-10T07:00:00Z")).unwrap();
        let layout = Layout::new(PrefixTemplate::parse("{uid}").unwrap().render(&id, created).unwrap());
        let mut manifest = Manifest::new(SessionInfo::from(&id), created);
        let start = created_at(Some("2026-12-10T07:00:05.123Z")).unwrap();
        manifest.record(
            Segment {
                key: layout.video(1).unwrap(),
                kind: SegmentKind::Video,
                start,
                end: start,
                bytes: 1,
                sha256: String::new(),
            },
            start,
        );
        let ms = u64::try_from(start.timestamp_millis()).unwrap();
        assert!(lists_segment(&manifest, ms));
        assert!(!lists_segment(&manifest, ms + 1));
    }
}
