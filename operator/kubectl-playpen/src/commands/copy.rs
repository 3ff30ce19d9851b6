//! Copying files out of the browser container with nothing but a POSIX shell
//! and coreutils (the image guarantees no tar): list with `stat`, one
//! NUL-terminated record per regular file, then `cat` each file into a local one.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::remote::Target;

/// Printed instead of records when the directory does not exist.
pub const NO_DIR: &str = "NO-DIR";

/// Lists the regular files (not symlinks) directly in `$1`:
/// `<mtime> <size> <name>\0` each.
pub const LIST_TOP_LEVEL: &str = r#"cd -- "$1" 2>/dev/null || { printf 'NO-DIR\0'; exit 0; }
for f in * .[!.]* ..?*; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then stat --printf='%Y %s %n\0' -- "$f"; fi
done
exit 0"#;

/// Lists the regular files (not symlinks) under `$1`, recursively:
/// `<size> <path>\0` each.
pub const LIST_TREE: &str = r#"[ -d "$1" ] || { printf 'NO-DIR\0'; exit 0; }
walk() {
  for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    if [ -L "$f" ]; then :
    elif [ -d "$f" ]; then walk "$f"
    elif [ -f "$f" ]; then stat --printf='%s %n\0' -- "$f"
    fi
  done
}
walk "$1"
exit 0"#;

/// A file in a top-level listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Size in bytes.
    pub size: u64,
    /// Its name in the directory.
    pub name: String,
}

/// A listing: `None` when the directory does not exist.
pub type Listing<T> = Option<Vec<T>>;

fn records(raw: &[u8]) -> Option<Vec<String>> {
    let records: Vec<String> =
        raw.split(|b| *b == 0).filter(|r| !r.is_empty()).map(|r| String::from_utf8_lossy(r).into_owned()).collect();
    if records.first().map(String::as_str) == Some(NO_DIR) {
        return None;
    }
    Some(records)
}

/// Is `name` a plain file name (no separators, not `.` or `..`)?
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\u{FFFD}')
}

/// Parses [`LIST_TOP_LEVEL`]'s output; malformed records are skipped.
pub fn parse_top_level(raw: &[u8]) -> Listing<Entry> {
    let records = records(raw)?;
    Some(
        records
            .iter()
            .filter_map(|r| {
                let (mtime, rest) = r.split_once(' ')?;
                let (size, name) = rest.split_once(' ')?;
                let entry = Entry { mtime: mtime.parse().ok()?, size: size.parse().ok()?, name: name.to_owned() };
                plain_name(&entry.name).then_some(entry)
            })
            .collect(),
    )
}

/// Is `name` a snapshot (`.yml`/`.yaml`)?
pub fn is_snapshot(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".yml") || lower.ends_with(".yaml")
}

/// The file `snapshot` copies: the newest snapshot (`.yml`/`.yaml`) when
/// there is one, else the newest regular file; newest by modification time,
/// ties broken by the greater name (the CLI's names carry a timestamp).
pub fn newest(entries: &[Entry]) -> Option<&Entry> {
    let newest_of = |snapshots_only: bool| {
        entries
            .iter()
            .filter(|e| !snapshots_only || is_snapshot(&e.name))
            .max_by(|a, b| (a.mtime, &a.name).cmp(&(b.mtime, &b.name)))
    };
    newest_of(true).or_else(|| newest_of(false))
}

/// A file under a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Its path below the listed directory (relative, no `..`).
    pub relative: PathBuf,
    /// Size in bytes.
    pub size: u64,
}

/// Parses [`LIST_TREE`]'s output for directory `root`. Paths outside `root`
/// or with `.`/`..` components (a hostile container could print anything)
/// are skipped, so every relative path stays inside the destination.
pub fn parse_tree(raw: &[u8], root: &str) -> Listing<TreeFile> {
    let records = records(raw)?;
    let prefix = format!("{}/", root.trim_end_matches('/'));
    Some(
        records
            .iter()
            .filter_map(|r| {
                let (size, path) = r.split_once(' ')?;
                let relative = safe_relative(path.strip_prefix(&prefix)?)?;
                Some(TreeFile { relative, size: size.parse().ok()? })
            })
            .collect(),
    )
}

/// `path` as a relative path of plain names, or `None`.
pub fn safe_relative(path: &str) -> Option<PathBuf> {
    if path.split('/').any(|part| !plain_name(part)) {
        return None;
    }
    let relative = PathBuf::from(path);
    relative.components().all(|c| matches!(c, Component::Normal(_))).then_some(relative)
}

/// Where `snapshot -o` writes `name`: into `output` when it is a directory
/// (or ends in `/`), to `output` itself otherwise, into `.` without it.
pub fn destination(output: Option<&Path>, name: &str, is_dir: impl Fn(&Path) -> bool) -> PathBuf {
    match output {
        None => PathBuf::from(name),
        Some(out) if is_dir(out) || out.as_os_str().to_string_lossy().ends_with('/') => out.join(name),
        Some(out) => out.to_path_buf(),
    }
}

/// Runs `script` with `dir` as `$1` in the target's container.
pub async fn list(target: &Target<'_>, script: &str, dir: &str) -> Result<Vec<u8>> {
    let command: Vec<String> = ["sh", "-c", script, "sh", dir].iter().map(|s| (*s).to_owned()).collect();
    target.capture(&command).await
}

/// Copies `remote` into `local` (parents created); the bytes copied.
/// A partial file is removed when the copy fails.
pub async fn fetch(target: &Target<'_>, remote: &str, local: &Path) -> Result<u64> {
    if let Some(parent) = local.parent().filter(|p| !p.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(parent).await.map_err(Error::io(format!("creating {}", parent.display())))?;
    }
    let mut file = tokio::fs::File::create(local).await.map_err(Error::io(format!("creating {}", local.display())))?;
    let mut err = Vec::new();
    let command: Vec<String> = ["cat", "--", remote].iter().map(|s| (*s).to_owned()).collect();
    let result = target.exec_into(&command, &mut file, &mut err).await;
    let failed = match result {
        Ok(0) => None,
        Ok(code) => Some(Error::Remote(format!(
            "cat {remote} in Pod {} exited {code}: {}",
            target.pod,
            String::from_utf8_lossy(&err).trim()
        ))),
        Err(e) => Some(e),
    };
    if let Some(e) = failed {
        drop(file);
        let _ = tokio::fs::remove_file(local).await;
        return Err(e);
    }
    file.sync_all().await.map_err(Error::io(format!("writing {}", local.display())))?;
    let written = file.metadata().await.map_err(Error::io(format!("reading {}", local.display())))?.len();
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(records: &[&str]) -> Vec<u8> {
        records.iter().flat_map(|r| r.bytes().chain([0])).collect()
    }

    fn entry(mtime: i64, name: &str) -> Entry {
        Entry { mtime, size: 1, name: name.to_owned() }
    }

    #[test]
    fn top_level_records_parse_and_junk_is_skipped() {
        let raw = listing(&[
            "1700000000 120 page-2026-01-01T00-00-01-000Z.yml",
            "1700000005 9 name with spaces.log",
            "1700000006 3 line\nbreak.yml",
            "garbage",
            "x 1 bad-mtime.yml",
            "1 y bad-size.yml",
            "1700000007 4 ..",
            "1700000008 4 a/b",
        ]);
        let entries = parse_top_level(&raw).unwrap();
        assert_eq!(
            entries,
            [
                Entry { mtime: 1_700_000_000, size: 120, name: "page-2026-01-01T00-00-01-000Z.yml".into() },
                Entry { mtime: 1_700_000_005, size: 9, name: "name with spaces.log".into() },
                Entry { mtime: 1_700_000_006, size: 3, name: "line\nbreak.yml".into() },
            ]
        );
    }

    #[test]
    fn a_missing_directory_and_an_empty_one_differ() {
        assert_eq!(parse_top_level(&listing(&[NO_DIR])), None);
        assert_eq!(parse_top_level(b""), Some(vec![]));
        assert_eq!(parse_tree(&listing(&[NO_DIR]), "/r"), None);
        assert_eq!(parse_tree(b"", "/r"), Some(vec![]));
    }

    #[test]
    fn newest_prefers_snapshots_then_time_then_name() {
        assert_eq!(newest(&[]), None);
        let files = [entry(100, "page-a.yml"), entry(300, "console.log"), entry(200, "page-b.yml")];
        assert_eq!(newest(&files).unwrap().name, "page-b.yml", "a newer log does not win over a snapshot");
        let files = [entry(100, "shot.png"), entry(300, "console.log")];
        assert_eq!(newest(&files).unwrap().name, "console.log", "no snapshot: the newest file");
        let files = [entry(200, "page-2026-01-01T00-00-02.yml"), entry(200, "page-2026-01-01T00-00-01.yml")];
        assert_eq!(newest(&files).unwrap().name, "page-2026-01-01T00-00-02.yml", "a tie goes to the greater name");
        let files = [entry(5, "a.YAML"), entry(4, "b.yaml")];
        assert_eq!(newest(&files).unwrap().name, "a.YAML");
    }

    #[test]
    fn tree_paths_stay_inside_the_root() {
        let raw = listing(&[
            "10 /rec/a.webm",
            "20 /rec/day 1/b.webm",
            "30 /rec/../etc/passwd",
            "40 /elsewhere/c.webm",
            "50 /rec/./d.webm",
            "60 /rec//e.webm",
            "x /rec/f.webm",
            "70 /rec/.hidden/g.webm",
        ]);
        let files = parse_tree(&raw, "/rec/").unwrap();
        assert_eq!(
            files,
            [
                TreeFile { relative: "a.webm".into(), size: 10 },
                TreeFile { relative: "day 1/b.webm".into(), size: 20 },
                TreeFile { relative: ".hidden/g.webm".into(), size: 70 },
            ]
        );
    }

    #[test]
    fn relative_paths_are_plain_names_only() {
        assert_eq!(safe_relative("a/b.webm"), Some(PathBuf::from("a/b.webm")));
        for bad in ["", "/a", "a/", "a//b", "..", "a/../b", "./a", "a/."] {
            assert_eq!(safe_relative(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn destination_is_a_dir_a_file_or_here() {
        let dirs = |p: &Path| p == Path::new("out");
        assert_eq!(destination(None, "s.yml", dirs), PathBuf::from("s.yml"));
        assert_eq!(destination(Some(Path::new("out")), "s.yml", dirs), PathBuf::from("out/s.yml"));
        assert_eq!(destination(Some(Path::new("new/")), "s.yml", dirs), PathBuf::from("new/s.yml"));
        assert_eq!(destination(Some(Path::new("page.yml")), "s.yml", dirs), PathBuf::from("page.yml"));
    }

    #[test]
    fn scripts_are_posix_and_take_the_directory_as_an_argument() {
        for script in [LIST_TOP_LEVEL, LIST_TREE] {
            assert!(script.contains("\"$1\""));
            assert!(!script.contains("find ") && !script.contains("tar "), "coreutils and sh only");
        }
    }

    /// The scripts against this machine's sh and coreutils stat.
    #[test]
    fn scripts_list_a_real_directory() {
        let dir = std::env::temp_dir().join(format!("kubectl-playpen-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        std::fs::write(dir.join("page 1.yml"), "tree").unwrap();
        std::fs::write(dir.join(".dot"), "x").unwrap();
        std::fs::write(dir.join("sub/deeper/r.webm"), "video").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link.yml")).unwrap();
        let run = |script: &str, arg: &Path| {
            std::process::Command::new("sh").args(["-c", script, "sh"]).arg(arg).output().unwrap().stdout
        };
        let mut top = parse_top_level(&run(LIST_TOP_LEVEL, &dir)).unwrap();
        top.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<_> = top.iter().map(|e| (e.name.as_str(), e.size)).collect();
        assert_eq!(names, [(".dot", 1), ("page 1.yml", 4)]);
        let root = dir.to_string_lossy().into_owned();
        let mut tree = parse_tree(&run(LIST_TREE, &dir), &root).unwrap();
        tree.sort_by(|a, b| a.relative.cmp(&b.relative));
        let paths: Vec<_> = tree.iter().map(|f| (f.relative.to_string_lossy().into_owned(), f.size)).collect();
        assert_eq!(paths, [(".dot".to_owned(), 1), ("page 1.yml".to_owned(), 4), ("sub/deeper/r.webm".to_owned(), 5)]);
        assert_eq!(parse_top_level(&run(LIST_TOP_LEVEL, &dir.join("missing"))), None);
        assert_eq!(parse_tree(&run(LIST_TREE, &dir.join("missing")), "/x"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
