//! The table and field of a SQLite foreign-key failure, read from the schema: SQLite's message
//! says only "FOREIGN KEY constraint failed", and the generated write handlers know their
//! table, so this completes the error before `error::constraint` turns it into a 409.

use crate::db::Conn;
use crate::error::Error;

/// The write a constraint failure interrupted, as [`name_on_sqlite`] needs it.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) struct Write<'a> {
    /// The resource's table.
    pub(crate) table: &'a str,
    /// Whether the write deleted a row (otherwise it inserted or updated one).
    pub(crate) delete: bool,
    /// The column the request addressed its row by, and the key as stored (text).
    pub(crate) key: Option<(&'a str, String)>,
}

/// Completes a SQLite foreign-key failure of a generated write with the constraint's table
/// (and, for a row referring to a missing one, the field): a delete names the table whose
/// rows still reference the deleted one (`ON DELETE RESTRICT` or `NO ACTION`), an insert or
/// update names its own table and, when it has a single foreign key, that column. Any other
/// error, and every error on PostgreSQL (which names them itself), is returned unchanged; so
/// is the error when the schema cannot be read.
#[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
pub(crate) async fn name_on_sqlite(conn: &mut Conn, write: Write<'_>, e: Error) -> Error {
    #[cfg(feature = "sqlite")]
    if let Some(c) = conn.as_sqlite() {
        return sqlite::name(c, write, e).await;
    }
    e
}

/// Reading SQLite's schema for what its message leaves out.
#[cfg(feature = "sqlite")]
mod sqlite {
    use super::Write;
    use crate::db::SqliteConn;
    use crate::dialect::{SQLITE_FOREIGN_KEY, SQLITE_FOREIGN_KEYS, SQLITE_PRIMARY_KEY};
    use crate::error::Error;
    use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind as K, Error as D};
    use diesel::sql_types::{Bool, Integer, Nullable, Text};

    /// A database error's information, completed with what the database left out.
    #[derive(Debug)]
    struct Named {
        message: String,
        details: Option<String>,
        table: Option<String>,
        column: Option<String>,
    }

    impl DatabaseErrorInformation for Named {
        fn message(&self) -> &str {
            &self.message
        }
        fn details(&self) -> Option<&str> {
            self.details.as_deref()
        }
        fn hint(&self) -> Option<&str> {
            None
        }
        fn table_name(&self) -> Option<&str> {
            self.table.as_deref()
        }
        fn column_name(&self) -> Option<&str> {
            self.column.as_deref()
        }
        fn constraint_name(&self) -> Option<&str> {
            None
        }
        fn statement_position(&self) -> Option<i32> {
            None
        }
    }

    /// One single-column foreign key, as SQLite's `pragma_foreign_key_list` describes it.
    #[derive(diesel::QueryableByName)]
    struct ForeignKey {
        #[diesel(sql_type = Text)]
        child: String,
        #[diesel(sql_type = Text)]
        col: String,
        #[diesel(sql_type = Text)]
        parent: String,
        /// `None`: the parent's primary key.
        #[diesel(sql_type = Nullable<Text>)]
        target: Option<String>,
        #[diesel(sql_type = Text)]
        on_delete: String,
    }

    #[derive(diesel::QueryableByName)]
    struct Exists {
        #[diesel(sql_type = Bool)]
        found: bool,
    }

    #[derive(diesel::QueryableByName)]
    struct PkColumn {
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Integer)]
        pk: i32,
    }

    fn quoted(name: &str) -> String {
        format!("\"{}\"", name.replace('"', "\"\""))
    }

    /// The table whose rows still reference the row a write removed: the only table with a
    /// restricting foreign key to `write.table`, or else the first such table that holds a row
    /// referring to the addressed key. `None` when neither finds one.
    async fn referencing_table(
        c: &mut SqliteConn,
        keys: &[ForeignKey],
        write: &Write<'_>,
    ) -> Option<String> {
        use diesel_async::RunQueryDsl;
        let referencing: Vec<&ForeignKey> = keys
            .iter()
            .filter(|k| {
                k.parent.eq_ignore_ascii_case(write.table)
                    && matches!(k.on_delete.as_str(), "RESTRICT" | "NO ACTION")
            })
            .collect();
        let mut children: Vec<&str> = referencing.iter().map(|k| k.child.as_str()).collect();
        children.dedup();
        if let [only] = children.as_slice() {
            return Some((*only).to_owned());
        }
        let (key_col, key) = write.key.as_ref()?;
        for k in &referencing {
            let target = match &k.target {
                Some(t) => t.clone(),
                None => match primary_key(c, write.table).await {
                    Some(pk) => pk,
                    None => continue,
                },
            };
            let sql = format!(
                "SELECT EXISTS(SELECT 1 FROM {} WHERE {} IN (SELECT {} FROM {} WHERE {} = ?)) \
             AS found",
                quoted(&k.child),
                quoted(&k.col),
                quoted(&target),
                quoted(write.table),
                quoted(key_col),
            );
            let hit = diesel::sql_query(sql)
                .bind::<Text, _>(key.as_str())
                .get_result::<Exists>(&mut *c)
                .await;
            if hit.is_ok_and(|h| h.found) {
                return Some(k.child.clone());
            }
        }
        None
    }

    /// The single primary-key column of a SQLite table.
    async fn primary_key(c: &mut SqliteConn, table: &str) -> Option<String> {
        use diesel_async::RunQueryDsl;
        let cols = diesel::sql_query(SQLITE_PRIMARY_KEY)
            .bind::<Text, _>(table)
            .load::<PkColumn>(c)
            .await
            .ok()?;
        match cols.as_slice() {
            [only] if only.pk == 1 => Some(only.name.clone()),
            _ => None,
        }
    }

    /// [`name_on_sqlite`](super::name_on_sqlite) on a SQLite connection.
    pub(super) async fn name(c: &mut SqliteConn, write: Write<'_>, e: Error) -> Error {
        let message = match &e {
            Error::Database(D::DatabaseError(K::ForeignKeyViolation | K::Unknown, info))
                if info.message() == SQLITE_FOREIGN_KEY =>
            {
                info.message().to_owned()
            }
            _ => return e,
        };
        use diesel_async::RunQueryDsl;
        let Ok(keys) = diesel::sql_query(SQLITE_FOREIGN_KEYS)
            .load::<ForeignKey>(&mut *c)
            .await
        else {
            return e;
        };
        let own: Vec<&ForeignKey> = keys
            .iter()
            .filter(|k| k.child.eq_ignore_ascii_case(write.table))
            .collect();
        // An insert or update whose own table has foreign keys refers to a missing row; a delete
        // (or an update of a table without any) removes a referenced one.
        let named = if write.delete || own.is_empty() {
            Named {
                message,
                details: Some("is still referenced".to_owned()),
                table: referencing_table(c, &keys, &write).await,
                column: None,
            }
        } else {
            let mut columns: Vec<&str> = own.iter().map(|k| k.col.as_str()).collect();
            columns.dedup();
            Named {
                message,
                details: Some("is not present".to_owned()),
                table: Some(write.table.to_owned()),
                column: match columns.as_slice() {
                    [only] => Some((*only).to_owned()),
                    _ => None,
                },
            }
        };
        Error::Database(D::DatabaseError(K::ForeignKeyViolation, Box::new(named)))
    }
}
