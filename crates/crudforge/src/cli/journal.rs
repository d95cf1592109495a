//! What the command line's writes tell the application's mounted blueprints: a row that
//! `create-user`, `grant-role` or `revoke-role` writes to a resource whose blueprint has a part
//! that records writes (a feed) is recorded in the command's own transaction, as the API's own
//! writes are, so that, for example, open streams hear of it once the command commits.

use super::{BoxError, Shared};
use crate::api::Mount;
use crate::config::Config;
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::mount::Touch;
use crate::mount::{Author, Recording};
use std::sync::Arc;
use uuid::Uuid;

/// The table of the library's users, as mounts name it.
pub(crate) const USERS: &str = "users";

/// The table of the library's role grants, as mounts name it.
pub(crate) const USER_ROLES: &str = "user_roles";

/// What happened to a row the command line wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The row was inserted.
    Created,
    /// The row was deleted.
    Deleted,
}

/// The application's mounts, whose parts may record writes.
#[derive(Default)]
pub(crate) struct Journal(Vec<Arc<dyn Mount>>);

impl Journal {
    /// The mounts of the application that record writes: its `Api`, built as `serve` builds
    /// it, says which; none, and no `Api` built, when no surface compiled in records writes.
    ///
    /// # Errors
    ///
    /// The application's `Api` cannot be built (its configuration or mounts are invalid).
    pub(crate) fn of(shared: &Shared, config: &Config, db: &Database) -> Result<Journal, BoxError> {
        if !crate::SURFACES.iter().any(|s| s.records_writes()) {
            return Ok(Journal::default());
        }
        let api = (shared.build)(config.clone(), db.clone())?;
        Ok(Journal(api.mounts().to_vec()))
    }

    /// Records, on `conn` inside the command's transaction, that the row `key` of `table`
    /// was created or deleted, when a mount of `table` records writes; nothing otherwise.
    ///
    /// # Errors
    ///
    /// Database errors (the command's write then rolls back with it).
    pub(crate) async fn record(
        &self,
        conn: &mut Conn,
        table: &str,
        change: Change,
        key: Uuid,
    ) -> Result<(), Error> {
        let touch = match change {
            Change::Created => Touch::Created,
            Change::Deleted => Touch::Deleted,
        };
        let touched = vec![(touch, key.to_string())];
        for m in &self.0 {
            for face in m.faces() {
                if let Some(r) = face
                    .downcast_ref::<Recording>()
                    .filter(|r| r.table == table)
                {
                    (r.record)(table, conn, &touched, &Author::default()).await?;
                }
            }
        }
        Ok(())
    }
}
