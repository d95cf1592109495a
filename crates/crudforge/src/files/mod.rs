//! File members (the `files` feature): [`File`], what a model's
//! `#[resource(file(...))]` member holds (or a bounded [`FileList`] of them), stored as JSON
//! in its column (id, name, size, type) and returned with the URL that downloads it; the
//! folder the files are kept in (`storage`);
//! the reading of a `multipart/form-data` body into the stored files and the body's JSON
//! (`upload`); the edits of a list in an update (`lists`); the routes that use them
//! (`handlers`), the blueprint's part that mounts them (`part`), their description (`docs`)
//! and the command line's `files gc` (`cli`). The `Api` starts the storage and sweeps orphans
//! through the surface below.

mod backup;
pub(crate) mod cli;
mod docs;
pub(crate) mod handlers;
pub(crate) mod lists;
mod part;
#[cfg(feature = "s3")]
mod s3;
pub(crate) mod storage;
#[cfg(feature = "thumbnails")]
pub(crate) mod thumbs;
pub(crate) mod upload;

use crate::api::{Api, Chore, Mount, Surface};
use crate::config::{Config, ConfigError};
use crate::error::Error;
use crate::state::{ApiState, Extensions};
use futures_util::future::LocalBoxFuture;
pub(crate) use part::add as add_part;

crate::crud::bind_portable!(File, FileList);
use part::FileTable;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;

/// An uploaded file, as a file member holds it: `Option<crudforge::files::File>`.
///
/// The server fills it from a `multipart/form-data` upload: `id` is its own (never the client's
/// file name), `media_type` is recognized from the content, `name` is the client's file name
/// with any folder part and control character removed (shown to users, never a storage path).
/// In an answer it is `{"id", "name", "size", "type", "url"}`, where `url` downloads it under
/// the row's read rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The file's own id: its storage key within the resource, and its `ETag`.
    pub id: uuid::Uuid,
    /// The client's file name, sanitized.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its media type, recognized from its content.
    pub media_type: String,
}

/// The stored form of a [`File`] (and the form a client's JSON would have to take, which the
/// server refuses: only an upload sets a file member).
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    id: uuid::Uuid,
    name: std::borrow::Cow<'a, str>,
    size: u64,
    #[serde(rename = "type")]
    media_type: std::borrow::Cow<'a, str>,
}

impl File {
    /// The stored JSON of the file.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "name": self.name,
            "size": self.size,
            "type": self.media_type,
        })
    }
}

/// A bounded list of uploaded files, as a list member holds it:
/// `Option<crudforge::files::FileList>` with `#[resource(file(..., max_count = N))]`.
///
/// Multipart parts named after the member add files to it (on create, the list; on update,
/// after the files it holds); a `PATCH` with the member set to a list of file ids keeps those
/// files in that order and removes the others, and `null` removes them all. In an answer it is
/// an array of files as [`File`] shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct FileList(pub Vec<File>);

impl std::ops::Deref for FileList {
    type Target = [File];
    fn deref(&self) -> &[File] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a FileList {
    type Item = &'a File;
    type IntoIter = std::slice::Iter<'a, File>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FileList {
    /// The stored JSON of the list.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.0.iter().map(File::to_json).collect())
    }
}

impl Serialize for FileList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.0)
    }
}

impl schemars::JsonSchema for FileList {
    fn schema_name() -> String {
        "FileList".to_owned()
    }

    fn is_referenceable() -> bool {
        false
    }

    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut schema = <Vec<File>>::json_schema(g);
        if let schemars::schema::Schema::Object(o) = &mut schema {
            o.metadata().read_only = true;
        }
        schema
    }
}

impl<'de> Deserialize<'de> for File {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Stored::deserialize(d)?;
        Ok(File {
            id: s.id,
            name: s.name.into_owned(),
            size: s.size,
            media_type: s.media_type.into_owned(),
        })
    }
}

thread_local! {
    /// The URL prefix of the files of the item being written (`/api/critters/<key>/files/`),
    /// set around each item's serialization ([`UrlBase`]).
    static URL_BASE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Where each resource with file members is mounted: its type, its prefix and the member that
/// addresses its items. Registered when the blueprint is mounted; a resource mounted under a
/// nested prefix (one naming a parent) registers nothing, and its files answer without `url`.
static MOUNTS: std::sync::RwLock<Vec<(std::any::TypeId, String, &'static str)>> =
    std::sync::RwLock::new(Vec::new());

/// Records where the resource `ty` is mounted (the first mount of a resource wins).
pub(crate) fn register_mount(ty: std::any::TypeId, prefix: &str, res_id: &'static str) {
    if prefix.contains('{') {
        return;
    }
    let mut mounts = MOUNTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !mounts.iter().any(|(t, _, _)| *t == ty) {
        mounts.push((ty, prefix.to_owned(), res_id));
    }
}

/// While alive, [`File`]s serialize with `url` under the item's `.../files/`.
pub(crate) struct UrlBase(());

impl UrlBase {
    /// Sets the base for the files of one item of resource `ty` with members `fields`, whose
    /// members' values `key_of` gives as text; `None` when the resource has no file members
    /// (decided before any lock is taken) or is not registered.
    pub(crate) fn for_item(
        ty: std::any::TypeId,
        fields: &[crate::field::FieldInfo],
        key_of: impl FnOnce(&str) -> Option<String>,
    ) -> Option<UrlBase> {
        if !fields.iter().any(|f| f.file.is_some()) {
            return None;
        }
        let (prefix, res_id) = {
            let mounts = MOUNTS
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (_, prefix, res_id) = mounts.iter().find(|(t, _, _)| *t == ty)?;
            (prefix.clone(), *res_id)
        };
        let key = key_of(res_id)?;
        URL_BASE.with(|b| *b.borrow_mut() = Some(format!("{prefix}{key}/files/")));
        Some(UrlBase(()))
    }

    #[cfg(test)]
    fn set(base: String) -> UrlBase {
        URL_BASE.with(|b| *b.borrow_mut() = Some(base));
        UrlBase(())
    }
}

impl Drop for UrlBase {
    fn drop(&mut self) {
        URL_BASE.with(|b| *b.borrow_mut() = None);
    }
}

impl Serialize for File {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let url = URL_BASE.with(|b| b.borrow().as_ref().map(|base| format!("{base}{}", self.id)));
        let mut st = s.serialize_struct("File", 5)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("size", &self.size)?;
        st.serialize_field("type", &self.media_type)?;
        if let Some(url) = url {
            st.serialize_field("url", &url)?;
        }
        st.end()
    }
}

/// The schema of a file member in answers.
#[derive(schemars::JsonSchema)]
#[schemars(rename = "File")]
#[allow(dead_code)]
struct FileSchema {
    /// The file's id (also its `ETag`).
    id: uuid::Uuid,
    /// The uploader's file name, without any folder part.
    name: String,
    /// Its size in bytes.
    size: u64,
    /// Its media type, recognized by the server from the content.
    #[serde(rename = "type")]
    media_type: String,
    /// Where it downloads, under the item's read rules (absent for a resource mounted under
    /// a nested prefix).
    url: Option<String>,
}

impl schemars::JsonSchema for File {
    fn schema_name() -> String {
        "File".to_owned()
    }

    // Inline, so that a member's own description and `nullable` sit beside it rather than
    // beside a `$ref` (where OpenAPI 3.0 ignores them).
    fn is_referenceable() -> bool {
        false
    }

    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut schema = FileSchema::json_schema(g);
        if let schemars::schema::Schema::Object(o) = &mut schema {
            o.metadata().read_only = true;
        }
        schema
    }
}

/// Reading a file (or a list of files) from its JSON column.
macro_rules! file_from_sql {
    ($db:ty, $t:ty) => {
        impl diesel::deserialize::FromSql<crate::sql_types::PortableJson, $db> for $t {
            fn from_sql(
                bytes: <$db as diesel::backend::Backend>::RawValue<'_>,
            ) -> diesel::deserialize::Result<Self> {
                let value = <serde_json::Value as diesel::deserialize::FromSql<
                    crate::sql_types::PortableJson,
                    $db,
                >>::from_sql(bytes)?;
                Ok(serde_json::from_value(value)?)
            }
        }
    };
}

/// Writing a file (or a list of files) to its column: on SQLite the stored JSON as text, on
/// PostgreSQL `jsonb`'s binary form (version 1, then text).
macro_rules! file_to_sql {
    ($t:ty) => {
        #[cfg(feature = "sqlite")]
        impl diesel::serialize::ToSql<crate::sql_types::PortableJson, diesel::sqlite::Sqlite>
            for $t
        {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::sqlite::Sqlite>,
            ) -> diesel::serialize::Result {
                out.set_value(serde_json::to_string(&self.to_json())?);
                Ok(diesel::serialize::IsNull::No)
            }
        }

        #[cfg(feature = "postgres")]
        impl diesel::serialize::ToSql<crate::sql_types::PortableJson, diesel::pg::Pg> for $t {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::pg::Pg>,
            ) -> diesel::serialize::Result {
                use std::io::Write as _;
                out.write_all(&[1])?;
                serde_json::to_writer(out, &self.to_json())?;
                Ok(diesel::serialize::IsNull::No)
            }
        }
    };
}

#[cfg(feature = "sqlite")]
file_from_sql!(diesel::sqlite::Sqlite, File);
#[cfg(feature = "postgres")]
file_from_sql!(diesel::pg::Pg, File);
#[cfg(feature = "sqlite")]
file_from_sql!(diesel::sqlite::Sqlite, FileList);
#[cfg(feature = "postgres")]
file_from_sql!(diesel::pg::Pg, FileList);
file_to_sql!(File);
file_to_sql!(FileList);

// A file (or a list) binds to its column as `Portable(file)`, like the other portable values.
mod bind {
    use super::{File, FileList};
    use crate::sql_types::{portable, Portable, PortableJson};
    use diesel::expression::AsExpression;
    use diesel::internal::derives::as_expression::Bound;
    use diesel::sql_types::Nullable;

    portable!(File => PortableJson);
    portable!(FileList => PortableJson);

    #[cfg(feature = "sqlite")]
    mod sqlite {
        use super::{File, FileList, Portable, PortableJson};
        use crate::sql_types::portable_to_sql;
        use diesel::serialize::{self, IsNull, Output, ToSql};
        use diesel::sql_types::Nullable;
        use diesel::sqlite::Sqlite;
        portable_to_sql!(Sqlite: File => PortableJson, FileList => PortableJson);
    }

    #[cfg(feature = "postgres")]
    mod pg {
        use super::{File, FileList, Portable, PortableJson};
        use crate::sql_types::portable_to_sql;
        use diesel::pg::Pg;
        use diesel::serialize::{self, IsNull, Output, ToSql};
        use diesel::sql_types::Nullable;
        portable_to_sql!(Pg: File => PortableJson, FileList => PortableJson);
    }
}

/// The files a member's value holds (stored or rendered JSON): one file, a list, or none.
pub(crate) fn files_in(value: &serde_json::Value) -> Vec<File> {
    match value {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect(),
        serde_json::Value::Object(_) => serde_json::from_value(value.clone()).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// A storage error as a 500 (its text is logged, and shown only in debug mode).
pub(crate) fn io_error(what: &str, e: &dyn std::fmt::Display) -> crate::error::Error {
    crate::error::Error::Internal(format!("file storage: {what}: {e}"))
}

/// `table` as it may appear in a path: letters, digits and `_` (table names are the
/// application's own identifiers; anything else is kept out of paths all the same).
pub(crate) fn safe_table(table: &str) -> String {
    table
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// One stored file, as `storage::Storage::list` finds it.
#[derive(Debug, Clone)]
pub(crate) struct StoredFile {
    /// Its table's folder.
    pub(crate) table: String,
    /// Its id.
    pub(crate) id: uuid::Uuid,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// How long ago it was written.
    pub(crate) age: std::time::Duration,
}

/// The file members' side of the whole API: the storage, and the purged rows' files.
pub(crate) struct Files;

impl Surface for Files {
    /// With `SQLITE_BACKUP_INTERVAL`, a backup of an SQLite database into the storage.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let every = api.config().ops.sqlite_backup_interval;
        if every > 0 {
            out.push(Chore {
                name: "backup_sqlite",
                every: std::time::Duration::from_secs(every),
                run: |api| Box::pin(backup::backup(api)),
            });
        }
    }

    fn start(&self, config: &Config, ext: &mut Extensions) -> Result<(), ConfigError> {
        let storage = storage::Storage::from_config(config).map_err(|detail| {
            tracing::error!(target: "crudforge::files", "{detail}");
            ConfigError::Invalid {
                key: "FILES_STORAGE",
                expected: "s3://bucket[/prefix]?endpoint=URL&region=NAME (s3 needs the `s3` feature), or unset",
                value: config.ops.files_storage.clone().unwrap_or_default(),
            }
        })?;
        ext.insert(storage);
        Ok(())
    }

    /// The purged rows' files go with them: those held before the purge and no longer after.
    fn around_purge<'a>(
        &self,
        api: &'a Api,
        mount: &'a dyn Mount,
        purge: LocalBoxFuture<'a, Result<u64, Error>>,
    ) -> LocalBoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let st = api.state();
            let held = held_by(mount, st).await?;
            let n = purge.await?;
            if let (true, Some((table, before_ids))) = (n > 0, held) {
                let after: std::collections::HashSet<uuid::Uuid> = held_by(mount, st)
                    .await?
                    .map(|(_, ids)| ids.into_iter().collect())
                    .unwrap_or_default();
                let gone: Vec<(&'static str, uuid::Uuid)> = before_ids
                    .into_iter()
                    .filter(|id| !after.contains(id))
                    .map(|id| (table, id))
                    .collect();
                storage_of(st)?.remove_all(&gone).await;
            }
            Ok(n)
        })
    }
}

/// The storage of the API serving a request.
///
/// # Errors
///
/// 500 when the API was built without it (cannot happen: the surface starts it).
pub(crate) fn storage_of(st: &ApiState) -> Result<&storage::Storage, Error> {
    st.ext
        .get::<storage::Storage>()
        .ok_or_else(|| Error::Internal("the files' storage is not started".into()))
}

/// The table of a mount with file members and the ids of the files its rows hold; `None` for
/// a mount without them.
async fn held_by(
    mount: &dyn Mount,
    st: &ApiState,
) -> Result<Option<(&'static str, Vec<uuid::Uuid>)>, Error> {
    for face in mount.faces() {
        if let Some(t) = face.downcast_ref::<FileTable>() {
            let ids = (t.referenced)(&mut st.db.get().await?).await?;
            return Ok(Some((t.table, ids)));
        }
    }
    Ok(None)
}

impl Api {
    /// Makes a backup of the API's SQLite database into the files' storage now (what
    /// `SQLITE_BACKUP_INTERVAL` does periodically), and removes the oldest past
    /// `SQLITE_BACKUP_KEEP`: how many it removed. Nothing on PostgreSQL.
    ///
    /// # Errors
    ///
    /// Database or storage errors.
    pub async fn backup_sqlite(&self) -> Result<u64, Error> {
        backup::backup(self).await
    }

    /// Removes (or, with `dry_run`, only lists) the stored files no row of a mounted resource
    /// holds and older than `older_than` (the files feature): files left by a crash between an
    /// upload and its row, or by rows removed outside the API. A younger file may belong to an upload whose row
    /// is being written, so it is left alone. Gives what was (or would be) removed.
    ///
    /// # Errors
    ///
    /// Database or storage errors (a file that cannot be removed is logged and left).
    pub(crate) async fn sweep_files(
        &self,
        older_than: std::time::Duration,
        dry_run: bool,
    ) -> Result<Vec<crate::files::StoredFile>, Error> {
        let mut held: std::collections::HashMap<&str, std::collections::HashSet<uuid::Uuid>> =
            std::collections::HashMap::new();
        let st = self.state();
        for m in self.mounts() {
            if let Some((table, ids)) = held_by(m.as_ref(), st).await? {
                held.entry(table).or_default().extend(ids);
            }
        }
        let storage = storage_of(st)?;
        let mut orphans = Vec::new();
        for f in storage.list(older_than).await? {
            let kept = held
                .get(f.table.as_str())
                .is_some_and(|ids| ids.contains(&f.id));
            // A folder of a table no mounted resource names is left alone: its files may be
            // another application's on the same data folder.
            if kept || !held.contains_key(f.table.as_str()) || f.age < older_than {
                continue;
            }
            if !dry_run {
                storage.remove(&f.table, f.id).await?;
            }
            orphans.push(f);
        }
        Ok(orphans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_round_trips_and_answers_carry_the_url() {
        let f = File {
            id: uuid::Uuid::nil(),
            name: "cat.png".into(),
            size: 3,
            media_type: "image/png".into(),
        };
        let back: File = serde_json::from_value(f.to_json()).unwrap();
        assert_eq!(back, f);
        let plain = serde_json::to_value(&f).unwrap();
        assert!(plain.get("url").is_none());
        let _base = UrlBase::set("/api/cats/1/files/".into());
        let answer = serde_json::to_value(&f).unwrap();
        assert_eq!(
            answer["url"],
            "/api/cats/1/files/00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(answer["type"], "image/png");
    }
}
