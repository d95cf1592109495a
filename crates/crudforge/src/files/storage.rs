//! Where uploaded files are kept: a folder inside the data folder (`files/`, 0700; each file
//! 0600), one subfolder per table, each file named by its own id. No name a client sent ever
//! becomes part of a path. Writes go to a temporary name in the same folder and are renamed
//! into place when complete, so a reader never sees half a file.

use crate::error::Error;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

/// The local store of an API's files.
#[derive(Debug, Clone)]
pub(crate) struct Storage {
    root: PathBuf,
}

/// A file being written: its temporary path until [`Writing::finish`] renames it.
pub(crate) struct Writing {
    file: Option<std::fs::File>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl Drop for Writing {
    fn drop(&mut self) {
        // Not finished (refused, failed or dropped mid-upload): nothing is left behind.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn io_error(what: &str, e: &std::io::Error) -> Error {
    Error::Internal(format!("file storage: {what}: {e}"))
}

/// Runs `f` on the blocking pool (file system calls stay off the request threads).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    actix_web::web::block(f)
        .await
        .map_err(|e| Error::Internal(format!("file storage: {e}")))?
}

impl Storage {
    /// The store under `data_dir/files`.
    pub(crate) fn local(data_dir: &Path) -> Storage {
        Storage {
            root: data_dir.join("files"),
        }
    }

    /// The folder of `table`'s files.
    fn folder(&self, table: &str) -> PathBuf {
        // Table names are the application's own identifiers; anything else is kept out of
        // paths all the same.
        let safe: String = table
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        self.root.join(safe)
    }

    /// The path of file `id` of `table`.
    fn path(&self, table: &str, id: uuid::Uuid) -> PathBuf {
        self.folder(table).join(id.hyphenated().to_string())
    }

    /// Starts writing file `id` of `table`.
    pub(crate) async fn create(&self, table: &str, id: uuid::Uuid) -> Result<Writing, Error> {
        let folder = self.folder(table);
        let dest = self.path(table, id);
        let tmp = folder.join(format!(".upload-{}", id.hyphenated()));
        blocking(move || {
            crate::owner_only::create_dir(&folder).map_err(|e| io_error("creating a folder", &e))?;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let file = options
                .open(&tmp)
                .map_err(|e| io_error("creating a file", &e))?;
            Ok(Writing {
                file: Some(file),
                tmp,
                dest,
            })
        })
        .await
    }

    /// Removes file `id` of `table`; a missing file is not an error.
    pub(crate) async fn remove(&self, table: &str, id: uuid::Uuid) -> Result<(), Error> {
        let path = self.path(table, id);
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error("removing a file", &e)),
        })
        .await
    }

    /// Removes each of `files` (table, id), logging what fails: cleanup never fails a request.
    pub(crate) async fn remove_all(&self, files: &[(&'static str, uuid::Uuid)]) {
        for (table, id) in files {
            if let Err(e) = self.remove(table, *id).await {
                tracing::warn!(table, %id, error = %e, "could not remove a stored file");
            }
        }
    }

    /// Reads `len` bytes of file `id` of `table` from `start`.
    pub(crate) async fn read(
        &self,
        table: &str,
        id: uuid::Uuid,
        start: u64,
        len: usize,
    ) -> Result<Vec<u8>, Error> {
        let path = self.path(table, id);
        blocking(move || {
            let mut f = std::fs::File::open(&path).map_err(|e| io_error("opening a file", &e))?;
            f.seek(std::io::SeekFrom::Start(start))
                .map_err(|e| io_error("reading a file", &e))?;
            let mut buf = Vec::with_capacity(len);
            f.take(len as u64)
                .read_to_end(&mut buf)
                .map_err(|e| io_error("reading a file", &e))?;
            Ok(buf)
        })
        .await
    }

    /// Every stored file, for the orphan sweep: its table folder, id, size and age.
    /// Unfinished uploads (`.upload-*`) older than `stale` are removed on the way.
    pub(crate) async fn list(
        &self,
        stale: std::time::Duration,
    ) -> Result<Vec<Stored>, Error> {
        let root = self.root.clone();
        blocking(move || {
            let mut out = Vec::new();
            let tables = match std::fs::read_dir(&root) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
                Err(e) => return Err(io_error("listing files", &e)),
            };
            let now = std::time::SystemTime::now();
            for table in tables.flatten() {
                let name = table.file_name().to_string_lossy().into_owned();
                let Ok(files) = std::fs::read_dir(table.path()) else {
                    continue;
                };
                for f in files.flatten() {
                    let Ok(meta) = f.metadata() else { continue };
                    let age = meta
                        .modified()
                        .ok()
                        .and_then(|m| now.duration_since(m).ok())
                        .unwrap_or_default();
                    let file_name = f.file_name().to_string_lossy().into_owned();
                    if file_name.starts_with(".upload-") {
                        if age > stale {
                            let _ = std::fs::remove_file(f.path());
                        }
                        continue;
                    }
                    if let Ok(id) = uuid::Uuid::parse_str(&file_name) {
                        out.push(Stored {
                            table: name.clone(),
                            id,
                            size: meta.len(),
                            age,
                        });
                    }
                }
            }
            Ok(out)
        })
        .await
    }
}

/// One stored file, as [`Storage::list`] finds it.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// Its table's folder.
    pub(crate) table: String,
    /// Its id.
    pub(crate) id: uuid::Uuid,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// How long ago it was written.
    pub(crate) age: std::time::Duration,
}

impl Writing {
    /// Appends `chunk`.
    pub(crate) async fn write(&mut self, chunk: Vec<u8>) -> Result<(), Error> {
        let Some(mut file) = self.file.take() else {
            return Err(Error::Internal("file storage: write after the end".into()));
        };
        let file = blocking(move || {
            file.write_all(&chunk)
                .map_err(|e| io_error("writing a file", &e))?;
            Ok(file)
        })
        .await?;
        self.file = Some(file);
        Ok(())
    }

    /// Flushes the file to disk and renames it into place.
    pub(crate) async fn finish(mut self) -> Result<(), Error> {
        let Some(file) = self.file.take() else {
            return Err(Error::Internal("file storage: finished twice".into()));
        };
        let (tmp, dest) = (self.tmp.clone(), self.dest.clone());
        blocking(move || {
            let done = file
                .sync_all()
                .and_then(|()| std::fs::rename(&tmp, &dest));
            if let Err(e) = done {
                let _ = std::fs::remove_file(&tmp);
                return Err(io_error("storing a file", &e));
            }
            Ok(())
        })
        .await
    }
}
