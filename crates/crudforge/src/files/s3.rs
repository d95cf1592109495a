//! S3-compatible object storage for files (the `s3` feature), through `object_store`: objects
//! `<prefix>/<table>/<id>` in one bucket, written as multipart uploads (at most two parts of
//! 5 MiB in flight, so an upload's memory is bounded), read by ranges, listed for the sweep.
//! Nothing is made public: every download goes through the API.

use super::{io_error, safe_table, StoredFile};
use crate::error::Error;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStore as _, ObjectStoreExt as _, WriteMultipart};
use std::sync::Arc;

/// Parts of 5 MiB (S3's smallest but the last) uploaded at once, at most.
const PARTS_IN_FLIGHT: usize = 2;

/// A bucket and the prefix of the objects in it.
#[derive(Debug, Clone)]
pub(crate) struct S3 {
    store: Arc<AmazonS3>,
    prefix: String,
}

/// A multipart upload in progress.
pub(crate) struct S3Writing {
    upload: WriteMultipart,
}

fn s3_error(what: &str, e: &object_store::Error) -> Error {
    io_error(what, e)
}

impl S3 {
    /// The bucket `url` names (`s3://bucket[/prefix]?endpoint=URL&region=NAME`), with the
    /// configured credentials.
    pub(crate) fn from_config(url: &str, config: &crate::config::Config) -> Result<S3, String> {
        let bad = |why: &str| {
            format!("FILES_STORAGE: {why} (expected s3://bucket[/prefix]?endpoint=URL&region=NAME)")
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("not an s3:// URL"))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket"));
        }
        let params: Vec<(String, String)> =
            serde_urlencoded::from_str(query).map_err(|_| bad("a malformed query"))?;
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region("us-east-1");
        for (k, v) in params {
            builder = match k.as_str() {
                "endpoint" => {
                    let http = v.starts_with("http://");
                    builder
                        .with_endpoint(v)
                        .with_allow_http(http)
                        .with_virtual_hosted_style_request(false)
                }
                "region" => builder.with_region(v),
                other => return Err(bad(&format!("unknown parameter `{other}`"))),
            };
        }
        let ops = &config.ops;
        if let Some(id) = &ops.files_s3_access_key_id {
            builder = builder.with_access_key_id(id);
        }
        if let Some(secret) = &ops.files_s3_secret_access_key {
            let secret = std::str::from_utf8(secret.expose())
                .map_err(|_| "FILES_S3_SECRET_ACCESS_KEY: not UTF-8".to_owned())?;
            builder = builder.with_secret_access_key(secret);
        }
        let store = builder.build().map_err(|e| format!("FILES_STORAGE: {e}"))?;
        Ok(S3 {
            store: Arc::new(store),
            prefix: prefix.trim_matches('/').to_owned(),
        })
    }

    /// The object of file `id` of `table`.
    fn path(&self, table: &str, id: uuid::Uuid) -> Path {
        let table = safe_table(table);
        let id = id.hyphenated();
        if self.prefix.is_empty() {
            Path::from(format!("{table}/{id}"))
        } else {
            Path::from(format!("{}/{table}/{id}", self.prefix))
        }
    }

    /// Starts the upload of file `id` of `table`.
    pub(crate) async fn create(&self, table: &str, id: uuid::Uuid) -> Result<S3Writing, Error> {
        let upload = self
            .store
            .put_multipart(&self.path(table, id))
            .await
            .map_err(|e| s3_error("starting an upload", &e))?;
        Ok(S3Writing {
            upload: WriteMultipart::new(upload),
        })
    }

    /// Removes file `id` of `table`; a missing object is not an error.
    pub(crate) async fn remove(&self, table: &str, id: uuid::Uuid) -> Result<(), Error> {
        use futures_util::StreamExt as _;
        // Its thumbnails first: a file is gone only once nothing of it is left.
        let thumbs = Path::from(format!("{}.thumbs", self.path(table, id)));
        let mut listed = self.store.list(Some(&thumbs));
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| s3_error("listing thumbnails", &e))?;
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(s3_error("removing a thumbnail", &e)),
            }
        }
        match self.store.delete(&self.path(table, id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_error("removing an object", &e)),
        }
    }

    /// The object of the thumbnail of file `id` of `table` in box `(w, h)`.
    fn thumb_path(&self, table: &str, id: uuid::Uuid, (w, h): (u32, u32)) -> Path {
        Path::from(format!("{}.thumbs/{w}x{h}", self.path(table, id)))
    }

    /// The thumbnail of file `id` in box `(w, h)`, when it was made before.
    pub(crate) async fn thumb(
        &self,
        table: &str,
        id: uuid::Uuid,
        size: (u32, u32),
    ) -> Result<Option<Vec<u8>>, Error> {
        match self.store.get(&self.thumb_path(table, id, size)).await {
            Ok(got) => Ok(Some(
                got.bytes()
                    .await
                    .map_err(|e| s3_error("reading a thumbnail", &e))?
                    .to_vec(),
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(s3_error("reading a thumbnail", &e)),
        }
    }

    /// Keeps the thumbnail `bytes` of file `id` in box `(w, h)`.
    pub(crate) async fn keep_thumb(
        &self,
        table: &str,
        id: uuid::Uuid,
        size: (u32, u32),
        bytes: Vec<u8>,
    ) -> Result<(), Error> {
        self.store
            .put(&self.thumb_path(table, id, size), bytes.into())
            .await
            .map(|_| ())
            .map_err(|e| s3_error("storing a thumbnail", &e))
    }

    /// `len` bytes of file `id` of `table` from `start`.
    pub(crate) async fn read(
        &self,
        table: &str,
        id: uuid::Uuid,
        start: u64,
        len: usize,
    ) -> Result<Vec<u8>, Error> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let bytes = self
            .store
            .get_range(&self.path(table, id), start..start + len as u64)
            .await
            .map_err(|e| s3_error("reading an object", &e))?;
        Ok(bytes.to_vec())
    }

    /// Every object under the prefix that is a stored file.
    pub(crate) async fn list(&self) -> Result<Vec<StoredFile>, Error> {
        use futures_util::StreamExt as _;
        let prefix = (!self.prefix.is_empty()).then(|| Path::from(self.prefix.as_str()));
        let mut objects = self.store.list(prefix.as_ref());
        let now = chrono::Utc::now();
        let mut out = Vec::new();
        while let Some(meta) = objects.next().await {
            let meta = meta.map_err(|e| s3_error("listing objects", &e))?;
            let parts: Vec<&str> = meta.location.as_ref().rsplitn(3, '/').collect();
            let (Some(id), Some(table)) = (parts.first(), parts.get(1)) else {
                continue;
            };
            let Ok(id) = uuid::Uuid::parse_str(id) else {
                continue;
            };
            out.push(StoredFile {
                table: (*table).to_owned(),
                id,
                size: meta.size,
                age: (now - meta.last_modified).to_std().unwrap_or_default(),
            });
        }
        Ok(out)
    }
}

impl S3Writing {
    /// Appends `chunk`, waiting while too many parts are in flight.
    pub(crate) async fn write(&mut self, chunk: Vec<u8>) -> Result<(), Error> {
        self.upload
            .wait_for_capacity(PARTS_IN_FLIGHT)
            .await
            .map_err(|e| s3_error("uploading", &e))?;
        self.upload.write(&chunk);
        Ok(())
    }

    /// Completes the upload.
    pub(crate) async fn finish(self) -> Result<(), Error> {
        self.upload
            .finish()
            .await
            .map(|_| ())
            .map_err(|e| s3_error("completing an upload", &e))
    }
}
