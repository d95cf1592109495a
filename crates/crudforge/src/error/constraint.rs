//! Constraint failures (unique, foreign key, check, not null, exclusion) as 409 problems that
//! name the constraint's table and, where known, the field, on both backends.
//!
//! PostgreSQL names the table (and for most failures the columns) itself. SQLite names them in
//! the message of unique and not-null failures only; its foreign-key failures say nothing but
//! "FOREIGN KEY constraint failed" (and arrive as an unknown kind when an `ON DELETE RESTRICT`
//! action refused, which SQLite implements as a trigger). [`name_on_sqlite`] completes them
//! from the schema, for the generated handlers, which know the resource's table.

use super::{Error, Problem};
use crate::db::Conn;
use actix_web::http::StatusCode;
use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind as K, Error as D};
use diesel::sql_types::{Bool, Integer, Nullable, Text};

/// SQLite's whole message for every foreign-key failure.
const SQLITE_FOREIGN_KEY: &str = "FOREIGN KEY constraint failed";

/// What kind of constraint refused the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unique,
    /// A delete (or key change) of a row that rows of the constraint's table still reference.
    Referenced,
    /// The written row refers to a row that does not exist.
    Missing,
    /// A foreign key, direction unknown.
    ForeignKey,
    Check,
    NotNull,
    Exclusion,
}

/// A constraint failure, read from a database error.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: Kind,
    table: Option<String>,
    field: Option<String>,
    constraint: Option<String>,
    message: String,
}

/// The one plain column of a PostgreSQL detail such as `Key (title)=(x) already exists.`
/// (`None` for several columns or an expression).
fn key_column(details: Option<&str>) -> Option<String> {
    let rest = details?.strip_prefix("Key (")?;
    let end = rest.find(")=(")?;
    plain(&rest[..end])
}

/// `name` when it is one plain identifier.
fn plain(name: &str) -> Option<String> {
    let name = name.trim().trim_matches('"');
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| name.to_owned())
}

/// The table and (when there is exactly one) column of a SQLite message such as
/// `UNIQUE constraint failed: notes.title, notes.owner`.
fn sqlite_columns(message: &str, prefix: &str) -> (Option<String>, Option<String>) {
    let Some(rest) = message.strip_prefix(prefix) else {
        return (None, None);
    };
    let columns: Vec<&str> = rest.split(',').map(str::trim).collect();
    let Some((table, column)) = columns.first().and_then(|c| c.split_once('.')) else {
        return (None, None);
    };
    let field = if columns.len() == 1 {
        plain(column)
    } else {
        None
    };
    (plain(table), field)
}

impl Failure {
    /// The constraint failure a database error reports, if it is one.
    pub(crate) fn of(kind: K, info: &(dyn DatabaseErrorInformation + Send + Sync)) -> Option<Self> {
        let message = info.message();
        let details = info.details();
        let mut f = Failure {
            kind: Kind::Unique,
            table: info.table_name().and_then(plain),
            field: info.column_name().and_then(plain),
            constraint: info.constraint_name().map(str::to_owned),
            message: message.to_owned(),
        };
        match kind {
            K::UniqueViolation => {
                let (table, field) = sqlite_columns(message, "UNIQUE constraint failed: ");
                f.table = f.table.or(table);
                f.field = f.field.or(field).or_else(|| key_column(details));
            }
            K::ForeignKeyViolation | K::RestrictViolation => {
                f.kind = match details {
                    Some(d) if d.contains("still referenced") => Kind::Referenced,
                    Some(d) if d.contains("not present") => Kind::Missing,
                    _ => Kind::ForeignKey,
                };
                if f.kind == Kind::Missing {
                    f.field = f.field.or_else(|| key_column(details));
                } else if f.kind == Kind::Referenced {
                    // The key named is the referenced table's, not a member of the request.
                    f.field = None;
                }
            }
            K::Unknown if message == SQLITE_FOREIGN_KEY => f.kind = Kind::ForeignKey,
            K::CheckViolation => {
                f.kind = Kind::Check;
                if let Some(name) = message.strip_prefix("CHECK constraint failed: ") {
                    f.constraint = f.constraint.or_else(|| Some(name.trim().to_owned()));
                }
            }
            K::NotNullViolation => {
                f.kind = Kind::NotNull;
                let (table, field) = sqlite_columns(message, "NOT NULL constraint failed: ");
                f.table = f.table.or(table);
                f.field = f.field.or(field);
            }
            K::ExclusionViolation => f.kind = Kind::Exclusion,
            _ => return None,
        }
        Some(f)
    }

    /// The 409 problem: `conflict_error`, `table` and `field` when known, the database's
    /// message as `debug`.
    pub(crate) fn problem(self) -> Problem {
        let at = |t: &Option<String>| t.as_ref().map(|t| format!(" in `{t}`")).unwrap_or_default();
        let detail = match self.kind {
            Kind::Unique => match &self.field {
                Some(f) => format!(
                    "A record with the same `{f}` already exists{}.",
                    at(&self.table)
                ),
                None => format!(
                    "A record with the same unique value already exists{}.",
                    at(&self.table)
                ),
            },
            Kind::Referenced => match &self.table {
                Some(t) => format!(
                    "The record is still referenced from `{t}`; delete those references first. \
                     Nothing was changed."
                ),
                None => "The record is still referenced by other records; delete those \
                         references first. Nothing was changed."
                    .to_owned(),
            },
            Kind::Missing => {
                match (&self.table, &self.field) {
                    (Some(t), Some(f)) => {
                        format!("`{f}` refers to a record that does not exist (a foreign key of `{t}`).")
                    }
                    _ => format!(
                        "The change refers to a record that does not exist{}.",
                        self.table
                            .as_ref()
                            .map(|t| format!(" (a foreign key of `{t}`)"))
                            .unwrap_or_default()
                    ),
                }
            }
            Kind::ForeignKey => format!(
                "The change refers to a record that does not exist, or removes one that is still \
                 referenced{}.",
                self.table
                    .as_ref()
                    .map(|t| format!(" (a foreign key of `{t}`)"))
                    .unwrap_or_default()
            ),
            Kind::Check => format!(
                "The change breaks the check constraint{}{}.",
                self.constraint
                    .as_ref()
                    .map(|c| format!(" `{c}`"))
                    .unwrap_or_default(),
                self.table
                    .as_ref()
                    .map(|t| format!(" of `{t}`"))
                    .unwrap_or_default()
            ),
            Kind::NotNull => match &self.field {
                Some(f) => format!("`{f}` may not be null{}.", at(&self.table)),
                None => format!("A required value is missing{}.", at(&self.table)),
            },
            Kind::Exclusion => format!(
                "The change conflicts with an existing record{}.",
                at(&self.table)
            ),
        };
        let mut p = Problem::new(StatusCode::CONFLICT, "conflict_error", detail);
        p.table = self.table;
        p.field = self.field;
        p.debug = Some(self.message);
        p
    }
}

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

/// The write a constraint failure interrupted, as [`name_on_sqlite`] needs it.
#[derive(Debug, Clone)]
pub(crate) struct Write<'a> {
    /// The resource's table.
    pub(crate) table: &'a str,
    /// Whether the write deleted a row (otherwise it inserted or updated one).
    pub(crate) delete: bool,
    /// The column the request addressed its row by, and the key as stored (text).
    pub(crate) key: Option<(&'a str, String)>,
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

/// The single-column foreign keys of every table (composite keys left out).
const SQLITE_FOREIGN_KEYS: &str = "\
SELECT m.name AS child, p.\"from\" AS col, p.\"table\" AS parent, p.\"to\" AS target, \
       p.on_delete AS on_delete \
FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS p \
WHERE m.type = 'table' \
  AND (SELECT count(*) FROM pragma_foreign_key_list(m.name) AS q WHERE q.id = p.id) = 1 \
ORDER BY m.name, p.id";

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Completes a SQLite foreign-key failure of a generated write with the constraint's table
/// (and, for a row referring to a missing one, the field): a delete names the table whose
/// rows still reference the deleted one (`ON DELETE RESTRICT` or `NO ACTION`), an insert or
/// update names its own table and, when it has a single foreign key, that column. Any other
/// error, and every error on PostgreSQL (which names them itself), is returned unchanged; so
/// is the error when the schema cannot be read.
pub(crate) async fn name_on_sqlite(conn: &mut Conn, write: Write<'_>, e: Error) -> Error {
    let Conn::Sqlite(c) = conn else {
        return e;
    };
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
        .load::<ForeignKey>(&mut **c)
        .await
    else {
        return e;
    };
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let own: Vec<&ForeignKey> = keys
        .iter()
        .filter(|k| same(&k.child, write.table))
        .collect();
    // An insert or update whose own table has foreign keys refers to a missing row; a delete
    // (or an update of a table without any) removes a referenced one.
    let named = if write.delete || own.is_empty() {
        let referencing: Vec<&ForeignKey> = keys
            .iter()
            .filter(|k| {
                same(&k.parent, write.table)
                    && matches!(k.on_delete.as_str(), "RESTRICT" | "NO ACTION")
            })
            .collect();
        let mut found = None;
        let mut children: Vec<&str> = referencing.iter().map(|k| k.child.as_str()).collect();
        children.dedup();
        if let [only] = children.as_slice() {
            found = Some((*only).to_owned());
        } else if let Some((key_col, key)) = &write.key {
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
                    .get_result::<Exists>(&mut **c)
                    .await;
                if hit.is_ok_and(|h| h.found) {
                    found = Some(k.child.clone());
                    break;
                }
            }
        }
        Named {
            message,
            details: Some("is still referenced".to_owned()),
            table: found,
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

/// The single primary-key column of a SQLite table.
async fn primary_key(c: &mut crate::db::SqliteConn, table: &str) -> Option<String> {
    use diesel_async::RunQueryDsl;
    let cols = diesel::sql_query("SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0")
        .bind::<Text, _>(table)
        .load::<PkColumn>(c)
        .await
        .ok()?;
    match cols.as_slice() {
        [only] if only.pk == 1 => Some(only.name.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sqlite_and_postgres_messages() {
        assert_eq!(
            sqlite_columns(
                "UNIQUE constraint failed: notes.title",
                "UNIQUE constraint failed: "
            ),
            (Some("notes".into()), Some("title".into()))
        );
        assert_eq!(
            sqlite_columns(
                "UNIQUE constraint failed: notes.title, notes.owner",
                "UNIQUE constraint failed: "
            ),
            (Some("notes".into()), None)
        );
        assert_eq!(
            sqlite_columns(
                "UNIQUE constraint failed: index 'x'",
                "UNIQUE constraint failed: "
            ),
            (None, None)
        );
        assert_eq!(
            key_column(Some("Key (title)=(a) already exists.")),
            Some("title".into())
        );
        assert_eq!(key_column(Some("Key (a, b)=(1, 2) already exists.")), None);
        assert_eq!(
            key_column(Some("Key (lower(email))=(x) already exists.")),
            None
        );
    }
}
