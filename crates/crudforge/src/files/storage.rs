//! Where uploaded files are kept: by default a folder inside the data folder (`files/`, 0700;
//! each file 0600), one subfolder per table, each file named by its own id; with the `s3`
//! feature and `FILES_STORAGE=s3://...`, objects `<prefix>/<table>/<id>` in an S3-compatible
//! bucket (through `object_store`). No name a client sent ever becomes part of a path. Local
//! writes go to a temporary name and are renamed into place when complete; S3 writes are
//! multipart uploads completed at the end; so a reader never sees half a file.

use super::{io_error, safe_table, StoredFile};
use crate::error::Error;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

/// The store of an API's files.
#[derive(Debug, Clone)]
pub(crate) enum Storage {
    /// A folder on this machine.
    Local {
        /// The folder (`<data dir>/files`).
        root: PathBuf,
    },
    /// An S3-compatible bucket.
    #[cfg(feature = "s3")]
    S3(super::s3::S3),
}

/// A file being written.
pub(crate) enum Writing {
    /// To a local temporary file, renamed into place by [`Writing::finish`].
    Local(LocalWriting),
    /// A multipart upload, completed by [`Writing::finish`].
    #[cfg(feature = "s3")]
    S3(super::s3::S3Writing),
}

/// A local file being written: its temporary path until it is renamed.
pub(crate) struct LocalWriting {
    file: Option<std::fs::File>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl Drop for LocalWriting {
    fn drop(&mut self) {
        // Not finished (refused, failed or dropped mid-upload): nothing is left behind.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
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
    /// The store `config` names: `FILES_STORAGE`, or `files/` in the data folder.
    ///
    /// # Errors
    ///
    /// A `FILES_STORAGE` that is not a storage URL, or names S3 without the `s3` feature.
    pub(crate) fn from_config(config: &crate::config::Config) -> Result<Storage, String> {
        match config.ops.files_storage.as_deref().map(str::trim) {
            None | Some("") => Ok(Storage::Local {
                root: config.db.data_dir.join("files"),
            }),
            #[cfg(feature = "s3")]
            Some(url) if url.starts_with("s3://") => super::s3::S3::from_config(url, config).map(Storage::S3),
            #[cfg(not(feature = "s3"))]
            Some(url) if url.starts_with("s3://") => Err(
                "FILES_STORAGE: s3:// storage needs crudforge's `s3` feature".to_owned(),
            ),
            Some(_) => Err("FILES_STORAGE: expected s3://bucket[/prefix]?endpoint=URL&region=NAME, or unset for the data folder".to_owned()),
        }
    }

    /// The folder of `table`'s files under `root`.
    fn folder(root: &Path, table: &str) -> PathBuf {
        root.join(safe_table(table))
    }

    /// The path of file `id` of `table` under `root`.
    fn path(root: &Path, table: &str, id: uuid::Uuid) -> PathBuf {
        Self::folder(root, table).join(id.hyphenated().to_string())
    }

    /// Starts writing file `id` of `table`.
    pub(crate) async fn create(&self, table: &str, id: uuid::Uuid) -> Result<Writing, Error> {
        let root = match self {
            Storage::Local { root } => root,
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.create(table, id).await.map(Writing::S3),
        };
        let folder = Self::folder(root, table);
        let dest = Self::path(root, table, id);
        let tmp = folder.join(format!(".upload-{}", id.hyphenated()));
        blocking(move || {
            crate::owner_only::create_dir(&folder)
                .map_err(|e| io_error("creating a folder", &e))?;
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
            Ok(Writing::Local(LocalWriting {
                file: Some(file),
                tmp,
                dest,
            }))
        })
        .await
    }

    /// Removes file `id` of `table`; a missing file is not an error.
    pub(crate) async fn remove(&self, table: &str, id: uuid::Uuid) -> Result<(), Error> {
        let root = match self {
            Storage::Local { root } => root,
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.remove(table, id).await,
        };
        let path = Self::path(root, table, id);
        let thumbs = Self::thumbs_dir(root, table, id);
        blocking(move || {
            // Its thumbnails first: a file is gone only once nothing of it is left.
            match std::fs::remove_dir_all(&thumbs) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("removing thumbnails", &e)),
            }
            match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io_error("removing a file", &e)),
            }
        })
        .await
    }

    /// The folder of file `id`'s thumbnails (`<id>.thumbs/`).
    fn thumbs_dir(root: &Path, table: &str, id: uuid::Uuid) -> PathBuf {
        Self::folder(root, table).join(format!("{}.thumbs", id.hyphenated()))
    }

    /// The thumbnail of file `id` of `table` in box `(w, h)`, when it was made before.
    #[cfg_attr(not(feature = "thumbnails"), allow(dead_code))]
    pub(crate) async fn thumb(
        &self,
        table: &str,
        id: uuid::Uuid,
        (w, h): (u32, u32),
    ) -> Result<Option<Vec<u8>>, Error> {
        let root = match self {
            Storage::Local { root } => root,
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.thumb(table, id, (w, h)).await,
        };
        let path = Self::thumbs_dir(root, table, id).join(format!("{w}x{h}"));
        blocking(move || match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("reading a thumbnail", &e)),
        })
        .await
    }

    /// Keeps the thumbnail `bytes` of file `id` of `table` in box `(w, h)`.
    #[cfg_attr(not(feature = "thumbnails"), allow(dead_code))]
    pub(crate) async fn keep_thumb(
        &self,
        table: &str,
        id: uuid::Uuid,
        (w, h): (u32, u32),
        bytes: Vec<u8>,
    ) -> Result<(), Error> {
        let root = match self {
            Storage::Local { root } => root,
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.keep_thumb(table, id, (w, h), bytes).await,
        };
        let dir = Self::thumbs_dir(root, table, id);
        blocking(move || {
            crate::owner_only::create_dir(&dir).map_err(|e| io_error("creating a folder", &e))?;
            let tmp = dir.join(format!(".{}", uuid::Uuid::new_v4().simple()));
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let written = options
                .open(&tmp)
                .and_then(|mut f| f.write_all(&bytes))
                .and_then(|()| std::fs::rename(&tmp, dir.join(format!("{w}x{h}"))));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                return Err(io_error("storing a thumbnail", &e));
            }
            Ok(())
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
        let root = match self {
            Storage::Local { root } => root,
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.read(table, id, start, len).await,
        };
        let path = Self::path(root, table, id);
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
    pub(crate) async fn list(&self, stale: std::time::Duration) -> Result<Vec<StoredFile>, Error> {
        let root = match self {
            Storage::Local { root } => root.clone(),
            #[cfg(feature = "s3")]
            Storage::S3(s3) => return s3.list().await,
        };
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
                        out.push(StoredFile {
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

impl Writing {
    /// Appends `chunk`.
    pub(crate) async fn write(&mut self, chunk: Vec<u8>) -> Result<(), Error> {
        match self {
            Writing::Local(w) => w.write(chunk).await,
            #[cfg(feature = "s3")]
            Writing::S3(w) => w.write(chunk).await,
        }
    }

    /// Completes the file: from now on it can be read.
    pub(crate) async fn finish(self) -> Result<(), Error> {
        match self {
            Writing::Local(w) => w.finish().await,
            #[cfg(feature = "s3")]
            Writing::S3(w) => w.finish().await,
        }
    }
}

impl LocalWriting {
    /// Appends `chunk`.
    async fn write(&mut self, chunk: Vec<u8>) -> Result<(), Error> {
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
    async fn finish(mut self) -> Result<(), Error> {
        let Some(file) = self.file.take() else {
            return Err(Error::Internal("file storage: finished twice".into()));
        };
        let (tmp, dest) = (self.tmp.clone(), self.dest.clone());
        blocking(move || {
            let done = file.sync_all().and_then(|()| std::fs::rename(&tmp, &dest));
            if let Err(e) = done {
                let _ = std::fs::remove_file(&tmp);
                return Err(io_error("storing a file", &e));
            }
            Ok(())
        })
        .await
    }
}
