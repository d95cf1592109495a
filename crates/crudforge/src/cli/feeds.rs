//! What the command line's writes record for the application's feeds (the `realtime`
//! feature): a row that `create-user`, `grant-role` or `revoke-role` writes to a resource whose
//! blueprint offers a feed is recorded in the command's own transaction, as the API's own
//! writes are, so that open streams hear of it once the command commits.

use super::{BoxError, Shared};
use crate::config::Config;
use crate::db::{Conn, Database};
use crate::error::Error;
use uuid::Uuid;

/// The table of the library's users, as feeds name it.
pub(crate) const USERS: &str = "users";

/// The table of the library's role grants, as feeds name it.
pub(crate) const USER_ROLES: &str = "user_roles";

/// What happened to a row the command line wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The row was inserted.
    Created,
    /// The row was deleted.
    Deleted,
}

/// The tables whose blueprints offer a feed in the application's [`Api`](crate::Api).
#[derive(Debug, Default)]
pub(crate) struct Feeds(#[cfg_attr(not(feature = "realtime"), allow(dead_code))] Vec<&'static str>);

impl Feeds {
    /// The feeds of the application: its `Api`, built as `serve` builds it, says which
    /// blueprints offer one. Without the `realtime` feature there are none.
    ///
    /// # Errors
    ///
    /// The application's `Api` cannot be built (its configuration or mounts are invalid).
    pub(crate) fn of(shared: &Shared, config: &Config, db: &Database) -> Result<Feeds, BoxError> {
        #[cfg(feature = "realtime")]
        {
            let api = (shared.build)(config.clone(), db.clone())?;
            Ok(Feeds(api.feed_tables()))
        }
        #[cfg(not(feature = "realtime"))]
        {
            let _ = (shared, config, db);
            Ok(Feeds::default())
        }
    }

    /// Records, on `conn` inside the command's transaction, that the row `key` of `table`
    /// was created or deleted, when `table` has a feed; nothing otherwise.
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
        #[cfg(feature = "realtime")]
        if self.0.contains(&table) {
            use crate::crud::feed::Kind;
            let kind = match change {
                Change::Created => Kind::Created,
                Change::Deleted => Kind::Deleted,
            };
            return crate::crud::feed::record(
                conn,
                table,
                &vec![(kind, key.to_string())],
                crate::crud::feed::Notify::InTransaction,
            )
            .await;
        }
        let _ = (conn, table, change, key);
        Ok(())
    }
}
