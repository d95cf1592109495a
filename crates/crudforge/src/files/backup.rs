//! A consistent copy of an SQLite database into the files' storage (local or S3), as one of
//! the API's chores (`SQLITE_BACKUP_INTERVAL`): `VACUUM INTO` writes a snapshot to a
//! temporary file in the data folder (readers and writers go on meanwhile), which is then
//! stored under `crudforge_backups/<id>` and removed; the oldest backups past
//! `SQLITE_BACKUP_KEEP` are removed after each new one.

use super::storage::Storage;
use crate::api::Api;
use crate::dialect::Backend;
use crate::error::Error;
use crate::with_conn;
use diesel_async::SimpleAsyncConnection;
use std::io::Read as _;

/// The storage folder of the backups (no resource's table has this name).
pub(crate) const FOLDER: &str = "crudforge_backups";

/// The size of the pieces a backup is stored in.
const CHUNK: usize = 1 << 20;

/// Makes one backup of the API's SQLite database and keeps the newest `SQLITE_BACKUP_KEEP`;
/// how many backups were removed. Nothing on PostgreSQL (its own tools back it up).
///
/// # Errors
///
/// Database or storage errors.
pub(crate) async fn backup(api: &Api) -> Result<u64, Error> {
    let st = api.state();
    let storage = super::storage_of(st)?.clone();
    let mut conn = st.db.get().await?;
    if conn.backend() != Backend::Sqlite {
        return Ok(0);
    }
    let id = uuid::Uuid::new_v4();
    let dir = &st.config.db.data_dir;
    crate::owner_only::create_dir(dir).map_err(|e| super::io_error("creating a folder", &e))?;
    let tmp = dir.join(format!(".backup-{id}.sqlite3"));
    let _ = std::fs::remove_file(&tmp);
    // A path in an SQL string literal: its quotes doubled.
    let into = tmp.display().to_string().replace('\'', "''");
    let made = with_conn!(conn, |c| c
        .batch_execute(&format!("VACUUM INTO '{into}'"))
        .await);
    drop(conn);
    let stored = match made {
        Ok(()) => store(&storage, id, &tmp).await,
        Err(e) => Err(Error::from(e)),
    };
    let _ = std::fs::remove_file(&tmp);
    stored?;
    prune(&storage, st.config.ops.sqlite_backup_keep).await
}

/// Stores the file at `path` as backup `id`, read on the blocking pool a piece at a time.
async fn store(storage: &Storage, id: uuid::Uuid, path: &std::path::Path) -> Result<(), Error> {
    let mut file =
        std::fs::File::open(path).map_err(|e| super::io_error("reading a backup", &e))?;
    let mut writing = storage.create(FOLDER, id).await?;
    loop {
        let (back, chunk) = actix_web::web::block(move || {
            let mut chunk = vec![0_u8; CHUNK];
            let n = file.read(&mut chunk).map(|n| {
                chunk.truncate(n);
                chunk
            });
            (file, n)
        })
        .await
        .map_err(|e| Error::Internal(format!("reading a backup: {e}")))?;
        file = back;
        let chunk = chunk.map_err(|e| super::io_error("reading a backup", &e))?;
        if chunk.is_empty() {
            break;
        }
        writing.write(chunk).await?;
    }
    writing.finish().await
}

/// Removes the oldest backups past the newest `keep`; how many.
async fn prune(storage: &Storage, keep: u32) -> Result<u64, Error> {
    let mut backups: Vec<_> = storage
        // Other folders' unfinished uploads are left to their own sweep (a day old here).
        .list(std::time::Duration::from_secs(86_400))
        .await?
        .into_iter()
        .filter(|f| f.table == FOLDER)
        .collect();
    backups.sort_by_key(|f| f.age);
    let mut removed = 0;
    for old in backups.iter().skip(keep as usize) {
        storage.remove(FOLDER, old.id).await?;
        removed += 1;
    }
    Ok(removed)
}
