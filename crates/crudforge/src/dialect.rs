//! What differs between SQLite and PostgreSQL, in one place: which backend a database is, the
//! SQL text each needs where the two differ (transactions, catalog queries, SQLite's own
//! schema queries), and how to read each one's error messages (statement timeouts,
//! constraint failures). The modules that talk to a database (`db/`, `error/constraint`,
//! `users::store`) take these from here; the derive's `expand/backend.rs` is the counterpart
//! for generated code. It sits on the lowest floor, beside `error`, so both the error layer
//! and the database layer can read it.

/// Which database engine a [`Database`](crate::Database) talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite, embedded.
    Sqlite,
    /// PostgreSQL (or a compatible engine).
    Postgres,
}

// ---- Transactions ----

/// The statement that begins a write transaction. SQLite takes its write lock at once
/// (`BEGIN IMMEDIATE`), so two writers never both read and then fail to upgrade; SQLite's
/// writers are serialized anyway, so `serialized` changes nothing there. PostgreSQL begins
/// at its default isolation, or at `REPEATABLE READ` for `serialized` (a concurrent write of
/// the same rows then fails the later transaction instead of being lost).
pub(crate) fn begin_write(backend: Backend, serialized: bool) -> &'static str {
    match (backend, serialized) {
        (Backend::Sqlite, _) => "BEGIN IMMEDIATE",
        (Backend::Postgres, false) => "BEGIN",
        (Backend::Postgres, true) => "BEGIN ISOLATION LEVEL REPEATABLE READ",
    }
}

// ---- Catalog queries ----

/// The key columns of each non-partial index of the table bound as the one parameter, one
/// row per column (`index_name`, `column_name`; `NULL` for an expression), in index and
/// column order.
pub(crate) fn index_columns(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => SQLITE_INDEX_COLUMNS,
        Backend::Postgres => POSTGRES_INDEX_COLUMNS,
    }
}

/// [`index_columns`] on SQLite.
const SQLITE_INDEX_COLUMNS: &str = "\
SELECT il.name AS index_name, ii.name AS column_name \
FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii \
WHERE il.partial = 0 \
ORDER BY il.name, ii.seqno";

/// [`index_columns`] on PostgreSQL: valid, non-partial indexes, key columns only (not
/// `INCLUDE`).
const POSTGRES_INDEX_COLUMNS: &str = "\
SELECT ic.relname::text AS index_name, a.attname::text AS column_name \
FROM pg_index ix \
JOIN pg_class ic ON ic.oid = ix.indexrelid \
CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum \
WHERE ix.indrelid = to_regclass(quote_ident($1)) AND ix.indisvalid AND ix.indpred IS NULL \
  AND k.ord <= ix.indnkeyatts \
ORDER BY ic.relname, k.ord";

// ---- SQLite's schema, for what its messages leave out ----

/// The single-column foreign keys of every table (composite keys left out).
pub(crate) const SQLITE_FOREIGN_KEYS: &str = "\
SELECT m.name AS child, p.\"from\" AS col, p.\"table\" AS parent, p.\"to\" AS target, \
       p.on_delete AS on_delete \
FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS p \
WHERE m.type = 'table' \
  AND (SELECT count(*) FROM pragma_foreign_key_list(m.name) AS q WHERE q.id = p.id) = 1 \
ORDER BY m.name, p.id";

/// The primary-key columns of the SQLite table bound as the one parameter (`name`, `pk`: its
/// position in the key).
pub(crate) const SQLITE_PRIMARY_KEY: &str =
    "SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0";

// ---- Error messages ----

/// Whether a database error message is a statement stopped at `DB_STATEMENT_TIMEOUT`:
/// PostgreSQL cancels it (SQLSTATE 57014), SQLite's progress handler interrupts it
/// (`db::deadline`).
pub(crate) fn is_statement_timeout(message: &str) -> bool {
    message.contains("canceling statement due to statement timeout") || message == "interrupted"
}

/// SQLite's whole message for every foreign-key failure (it names neither table nor column;
/// `db::constraint` completes it from the schema).
pub(crate) const SQLITE_FOREIGN_KEY: &str = "FOREIGN KEY constraint failed";

/// The one plain column of a PostgreSQL detail such as `Key (title)=(x) already exists.`
/// (`None` for several columns or an expression).
pub(crate) fn postgres_key_column(details: Option<&str>) -> Option<String> {
    let rest = details?.strip_prefix("Key (")?;
    let end = rest.find(")=(")?;
    plain(&rest[..end])
}

/// `name` when it is one plain identifier.
pub(crate) fn plain(name: &str) -> Option<String> {
    let name = name.trim().trim_matches('"');
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| name.to_owned())
}

/// The table and (when there is exactly one) column of a SQLite message such as
/// `UNIQUE constraint failed: notes.title, notes.owner`.
pub(crate) fn sqlite_columns(message: &str, prefix: &str) -> (Option<String>, Option<String>) {
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
            postgres_key_column(Some("Key (title)=(a) already exists.")),
            Some("title".into())
        );
        assert_eq!(
            postgres_key_column(Some("Key (a, b)=(1, 2) already exists.")),
            None
        );
        assert_eq!(
            postgres_key_column(Some("Key (lower(email))=(x) already exists.")),
            None
        );
    }
}
