//! Files only their owner may read: the data folder (0700), the SQLite database and the
//! generated signing key (0600), created with those modes before anything writes to them, and
//! the check that finds an existing one that others may read.
//!
//! SQLite creates a database's `-wal` and `-shm` files with the mode of the database file, so
//! a database file created 0600 keeps its companions private too. Elsewhere than Unix, modes do
//! not exist and these functions only create.

use std::fs;
use std::io;
use std::path::Path;

/// Creates `dir` and any missing parents, each new one readable by its owner alone (0700).
/// Folders that exist already keep their mode.
///
/// # Errors
///
/// The folder cannot be created.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Creates the empty file `path` readable and writable by its owner alone (0600), unless it
/// exists (then it is left as it is).
///
/// # Errors
///
/// The file cannot be created.
// Only the SQLite file needs it (tested whatever the features).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn create_file(path: &Path) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The permission bits of `path` when they give its group or other users any access (`None`
/// for a private file, a missing one, or one that cannot be read).
// Only the SQLite file needs it (tested whatever the features).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn loose_mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_folders_and_files_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("app.db");
        create_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(loose_mode(&file), None);
    }

    #[test]
    fn an_existing_file_is_left_alone_and_judged() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("app.db");
        fs::write(&file, b"data").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        create_file(&file).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"data", "not truncated");
        assert_eq!(loose_mode(&file), Some(0o644));
        assert_eq!(loose_mode(&tmp.path().join("missing")), None);
    }
}
