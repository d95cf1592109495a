//! The migration directory on disk: each backend's folders, the version a new folder gets,
//! and the manifest (`migrations.lock`) that `embed_migrations!` includes.

use super::{BACKENDS, MANIFEST};
use crate::dialect::Backend;
use std::path::Path;

/// The folder of `backend`'s migrations under the migration directory.
pub(super) fn backend_dir(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// The migration folders of `<dir>/<backend>`, sorted (a folder counts when it has `up.sql`).
fn folders(dir: &Path, backend: Backend) -> Result<Vec<String>, std::io::Error> {
    let path = dir.join(backend_dir(backend));
    if !path.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if entry.path().join("up.sql").is_file() {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// The leading digits of a folder name, as a number.
fn version_of(folder: &str) -> Option<u64> {
    let digits: String = folder
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The version of a new migration: now (`YYYYMMDDHHMMSS`, UTC), or one more than the newest
/// existing version when that is not earlier, so the new folder always sorts last.
pub(super) fn next_version(dir: &Path) -> Result<u64, std::io::Error> {
    let now: u64 = chrono::Utc::now()
        .format("%Y%m%d%H%M%S")
        .to_string()
        .parse()
        .unwrap_or(0);
    let mut newest = 0;
    for backend in BACKENDS {
        for folder in folders(dir, backend)? {
            newest = newest.max(version_of(&folder).unwrap_or(0));
        }
    }
    Ok(if now > newest { now } else { newest + 1 })
}

/// The manifest's text: every migration folder, one a line.
fn manifest_text(dir: &Path) -> Result<String, std::io::Error> {
    let mut out = String::from(
        "# The migration folders crudforge::embed_migrations! embeds, rewritten by make-migrations.\n\
         # The macro includes this file, so the build notices when it changes: after adding a\n\
         # folder by hand, run make-migrations (or add its line here).\n",
    );
    for backend in BACKENDS {
        for folder in folders(dir, backend)? {
            out.push_str(&format!("{}/{folder}\n", backend_dir(backend)));
        }
    }
    Ok(out)
}

/// Rewrites `<dir>/`[`MANIFEST`] when the folders changed.
pub(super) fn write_manifest(dir: &Path) -> Result<(), std::io::Error> {
    let text = manifest_text(dir)?;
    let path = dir.join(MANIFEST);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::create_dir_all(dir)?;
        std::fs::write(path, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_after_the_newest() {
        assert_eq!(
            version_of("20260101000000_reference"),
            Some(20_260_101_000_000)
        );
        assert_eq!(version_of("2024-01-02-030405_x"), Some(20_240_102_030_405));
        assert_eq!(version_of("x"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sqlite/99990101000000_later")).unwrap();
        std::fs::write(dir.path().join("sqlite/99990101000000_later/up.sql"), "").unwrap();
        assert_eq!(next_version(dir.path()).unwrap(), 99_990_101_000_001);
    }
}
