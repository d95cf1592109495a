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

/// The columns of the table bound as the one parameter, one row each in column order
/// (`column_name`, `column_type` as the catalog spells it, `not_null`); no row when there is
/// no such table.
pub(crate) fn table_columns(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => SQLITE_TABLE_COLUMNS,
        Backend::Postgres => POSTGRES_TABLE_COLUMNS,
    }
}

/// [`table_columns`] on SQLite: the declared type as written (`VARCHAR(100)`, or empty). A
/// primary-key column counts as NOT NULL: SQLite lets a non-integer key hold NULL only as a
/// compatibility quirk, and every row a resource writes has its key.
const SQLITE_TABLE_COLUMNS: &str = "\
SELECT name AS column_name, type AS column_type, (\"notnull\" <> 0 OR pk > 0) AS not_null \
FROM pragma_table_info(?) \
ORDER BY cid";

/// [`table_columns`] on PostgreSQL: the type without modifiers (`character varying`, not
/// `character varying(100)`), a domain as its base type; NOT NULL on the column or its
/// domain.
const POSTGRES_TABLE_COLUMNS: &str = "\
SELECT a.attname::text AS column_name, \
       format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, NULL) \
         AS column_type, \
       (a.attnotnull OR t.typnotnull) AS not_null \
FROM pg_attribute a \
JOIN pg_type t ON t.oid = a.atttypid \
WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped \
ORDER BY a.attnum";

// ---- Column types ----

/// Whether a column of type `column_type` (as [`table_columns`] reports it) holds a field of
/// `kind`; `Err` with the types that would, for a message. `int_range` is the range of a
/// narrow integer field (`i16`, `i32`), `None` for `i64`. [`Kind::Other`] fits anything: the
/// runtime cannot know what it needs.
///
/// PostgreSQL: the type Diesel reads the field from, exactly where Diesel checks the width of
/// what it receives (`smallint`, `integer` and `bigint` for `i16`, `i32` and `i64`); the
/// portable types are `uuid`, `timestamp with time zone` and `jsonb` (or `json`); text may be
/// `text`, `character varying`, `character` or `citext`, a float `real` or `double precision`.
///
/// SQLite stores any value in any column, so only the column's type affinity counts (SQLite's
/// rules, section 3.1 of "Datatypes In SQLite"), and leniently: a column fails only when its
/// affinity would convert what the field stores, or compare it wrongly. Text (and the kinds
/// stored as text: UUIDs, timestamps, dates, JSON) wants TEXT affinity or none (`BLOB`, no
/// type); the kinds stored as text whose values never look like numbers also take NUMERIC
/// (`UUID`, `DATETIME`, `DATE`, `JSON` land there). Integers and booleans want INTEGER,
/// NUMERIC or none; floats also REAL. A TEXT column for a number is refused: SQLite would
/// store the number as text, and `10` would sort before `9`.
pub(crate) fn column_fits(
    backend: Backend,
    kind: crudforge_core::Kind,
    int_range: Option<(i64, i64)>,
    column_type: &str,
) -> Result<(), &'static str> {
    match backend {
        Backend::Sqlite => sqlite_fits(kind, sqlite_affinity(column_type)),
        Backend::Postgres => postgres_fits(kind, int_range, column_type),
    }
}

/// SQLite's type affinity of a declared column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Affinity {
    Integer,
    Text,
    /// `BLOB` or no declared type: values are stored as given.
    Blob,
    Real,
    Numeric,
}

/// The affinity SQLite gives a column declared `declared`, by its rules, in their order.
fn sqlite_affinity(declared: &str) -> Affinity {
    let t = declared.to_ascii_uppercase();
    if t.contains("INT") {
        Affinity::Integer
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        Affinity::Text
    } else if t.contains("BLOB") || t.trim().is_empty() {
        Affinity::Blob
    } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
        Affinity::Real
    } else {
        Affinity::Numeric
    }
}

fn sqlite_fits(kind: crudforge_core::Kind, affinity: Affinity) -> Result<(), &'static str> {
    use crudforge_core::Kind;
    use Affinity::{Blob, Integer, Numeric, Real, Text};
    let (fits, expected): (&[Affinity], &'static str) = match kind {
        Kind::Text => (&[Text, Blob], "TEXT affinity"),
        Kind::Uuid | Kind::DateTime | Kind::Date | Kind::Json => {
            (&[Text, Blob, Numeric], "TEXT or NUMERIC affinity")
        }
        Kind::Integer | Kind::Bool => (&[Integer, Numeric, Blob], "INTEGER or NUMERIC affinity"),
        Kind::Float => (
            &[Real, Integer, Numeric, Blob],
            "REAL, INTEGER or NUMERIC affinity",
        ),
        Kind::Other => return Ok(()),
    };
    if fits.contains(&affinity) {
        Ok(())
    } else {
        Err(expected)
    }
}

fn postgres_fits(
    kind: crudforge_core::Kind,
    int_range: Option<(i64, i64)>,
    column_type: &str,
) -> Result<(), &'static str> {
    use crudforge_core::Kind;
    let (fits, expected): (&[&str], &'static str) = match kind {
        Kind::Text => (
            &["text", "character varying", "character", "citext"],
            "text or character varying",
        ),
        Kind::Integer => match int_range {
            Some((min, _)) if min >= i64::from(i16::MIN) => (&["smallint"], "smallint"),
            Some((min, _)) if min >= i64::from(i32::MIN) => (&["integer"], "integer"),
            _ => (&["bigint"], "bigint"),
        },
        Kind::Float => (&["real", "double precision"], "real or double precision"),
        Kind::Bool => (&["boolean"], "boolean"),
        Kind::Uuid => (&["uuid"], "uuid"),
        Kind::DateTime => (&["timestamp with time zone"], "timestamp with time zone"),
        Kind::Date => (&["date"], "date"),
        Kind::Json => (&["jsonb", "json"], "jsonb"),
        Kind::Other => return Ok(()),
    };
    if fits.contains(&column_type) {
        Ok(())
    } else {
        Err(expected)
    }
}

// ---- Model-first DDL ----

/// The column type of a model-first field (`#[resource(model_first)]`), named after the Rust
/// type it stores; [`ModelColumn`](crate::migrations::ModelColumn) spells it for each backend. Public as
/// `crudforge::migrations::ColumnType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
    /// `String`.
    Text,
    /// `i16`.
    SmallInt,
    /// `i32`.
    Integer,
    /// `i64`.
    BigInt,
    /// `f32`.
    Real,
    /// `f64`.
    Double,
    /// `bool`.
    Bool,
    /// `uuid::Uuid` (`PortableUuid`).
    Uuid,
    /// `chrono::DateTime<Utc>` (`PortableTimestamp`).
    Timestamp,
    /// `serde_json::Value` (`PortableJson`).
    Json,
    /// `chrono::NaiveDate`.
    Date,
}

/// The column type `ty` is declared with on `backend`; `max_len` makes PostgreSQL's text a
/// `varchar(N)` (SQLite has no length in its types: [`length_function`] bounds it in a
/// `CHECK`). The SQLite spellings are the ones [`column_fits`] accepts for the field's kind,
/// with the affinity that stores its values as they are: text for the kinds kept as text.
pub(crate) fn column_type(backend: Backend, ty: ColumnType, max_len: Option<u64>) -> String {
    let name = match (backend, ty) {
        (Backend::Postgres, ColumnType::Text) => {
            return match max_len {
                Some(n) => format!("VARCHAR({n})"),
                None => "TEXT".to_owned(),
            };
        }
        (
            Backend::Sqlite,
            ColumnType::Text
            | ColumnType::Uuid
            | ColumnType::Timestamp
            | ColumnType::Json
            | ColumnType::Date,
        ) => "TEXT",
        (_, ColumnType::SmallInt) => "SMALLINT",
        (_, ColumnType::Integer) => "INTEGER",
        (_, ColumnType::BigInt) => "BIGINT",
        (_, ColumnType::Real) => "REAL",
        (Backend::Sqlite, ColumnType::Double) => "DOUBLE",
        (Backend::Postgres, ColumnType::Double) => "DOUBLE PRECISION",
        (_, ColumnType::Bool) => "BOOLEAN",
        (Backend::Postgres, ColumnType::Uuid) => "UUID",
        (Backend::Postgres, ColumnType::Timestamp) => "TIMESTAMPTZ",
        (Backend::Postgres, ColumnType::Json) => "JSONB",
        (Backend::Postgres, ColumnType::Date) => "DATE",
    };
    name.to_owned()
}

/// The function that counts the characters of a text: `length` on SQLite (characters of a
/// text value), `char_length` on PostgreSQL.
pub(crate) fn length_function(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "length",
        Backend::Postgres => "char_length",
    }
}

/// Whether `max_len` needs a `CHECK` on `backend` (SQLite); PostgreSQL's `varchar(N)` holds it.
pub(crate) fn max_len_needs_check(backend: Backend) -> bool {
    backend == Backend::Sqlite
}

/// What changing a column's type or nullability takes on `backend`, for a migration's to-do:
/// PostgreSQL alters the column in place; SQLite cannot, so the table is rebuilt (its new
/// `CREATE TABLE` is `create_table`).
pub(crate) fn alter_column(
    backend: Backend,
    table: &str,
    column: &str,
    postgres_change: &str,
    create_table: &str,
) -> String {
    match backend {
        Backend::Postgres => {
            format!("ALTER TABLE {table} ALTER COLUMN {column} {postgres_change};")
        }
        Backend::Sqlite => format!(
            "-- SQLite cannot alter {table}.{column} in place: rebuild the table.\n\
             PRAGMA foreign_keys = OFF;\n\
             {}\n\
             INSERT INTO {table}_new SELECT * FROM {table};\n\
             DROP TABLE {table};\n\
             ALTER TABLE {table}_new RENAME TO {table};\n\
             PRAGMA foreign_keys = ON;",
            create_table.replacen(
                &format!("CREATE TABLE {table} "),
                &format!("CREATE TABLE {table}_new "),
                1
            )
        ),
    }
}

/// The key columns of each unique index (unique constraints and the primary key included) of
/// the table bound as the one parameter, as [`index_columns`] lists them: what tells the schema
/// check whether a composite unique constraint (`#[resource(unique("a", "b"))]`) is there.
pub(crate) fn unique_index_columns(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => SQLITE_UNIQUE_INDEX_COLUMNS,
        Backend::Postgres => POSTGRES_UNIQUE_INDEX_COLUMNS,
    }
}

/// [`unique_index_columns`] on PostgreSQL.
const POSTGRES_UNIQUE_INDEX_COLUMNS: &str = "\
SELECT ic.relname::text AS index_name, a.attname::text AS column_name \
FROM pg_index ix \
JOIN pg_class ic ON ic.oid = ix.indexrelid \
CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum \
WHERE ix.indrelid = to_regclass(quote_ident($1)) AND ix.indisvalid AND ix.indisunique \
  AND ix.indpred IS NULL AND k.ord <= ix.indnkeyatts \
ORDER BY ic.relname, k.ord";

/// Each unique index of the SQLite table bound as the one parameter, one row per key column
/// (`index_name`, `column_name`), in index and column order: what tells the migration
/// generator whether a `#[resource(unique)]` column already has its index.
pub(crate) const SQLITE_UNIQUE_INDEX_COLUMNS: &str = "\
SELECT il.name AS index_name, ii.name AS column_name \
FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii \
WHERE il.\"unique\" = 1 AND il.partial = 0 \
ORDER BY il.name, ii.seqno";

// ---- SQLite's schema, for what its messages leave out ----

/// The single-column foreign keys of every table (composite keys left out).
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_FOREIGN_KEYS: &str = "\
SELECT m.name AS child, p.\"from\" AS col, p.\"table\" AS parent, p.\"to\" AS target, \
       p.on_delete AS on_delete \
FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS p \
WHERE m.type = 'table' \
  AND (SELECT count(*) FROM pragma_foreign_key_list(m.name) AS q WHERE q.id = p.id) = 1 \
ORDER BY m.name, p.id";

/// The primary-key columns of the SQLite table bound as the one parameter (`name`, `pk`: its
/// position in the key).
#[cfg(feature = "sqlite")]
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

/// Every column of a unique failure, in key order: SQLite's message
/// (`UNIQUE constraint failed: tickets.event_id, tickets.seat`) or PostgreSQL's detail
/// (`Key (event_id, seat)=(..., 3) already exists.`). Empty when the message names none, or
/// when one of them is not a plain column (an expression index).
pub(crate) fn unique_columns(message: &str, details: Option<&str>) -> Vec<String> {
    let list = if let Some(rest) = message.strip_prefix("UNIQUE constraint failed: ") {
        rest.split(',')
            .map(|c| c.trim().split_once('.').and_then(|(_, col)| plain(col)))
            .collect::<Option<Vec<String>>>()
    } else {
        details
            .and_then(|d| d.strip_prefix("Key ("))
            .and_then(|rest| rest.find(")=(").map(|end| &rest[..end]))
            .and_then(|cols| cols.split(',').map(plain).collect())
    };
    list.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_column_of_a_unique_failure() {
        let lite = |m: &str| unique_columns(m, None);
        assert_eq!(
            lite("UNIQUE constraint failed: tickets.event_id, tickets.seat"),
            ["event_id", "seat"]
        );
        assert_eq!(lite("UNIQUE constraint failed: notes.title"), ["title"]);
        assert!(lite("UNIQUE constraint failed: index 'x'").is_empty());
        let pg = |d: &str| unique_columns("duplicate key value", Some(d));
        assert_eq!(
            pg("Key (event_id, seat)=(5f0c, 3) already exists."),
            ["event_id", "seat"]
        );
        assert_eq!(
            pg("Key (\"order\", seat)=(1, 2) already exists."),
            ["order", "seat"]
        );
        assert!(pg("Key (lower(email))=(x) already exists.").is_empty());
        assert!(pg("Key (a, lower(b))=(1, x) already exists.").is_empty());
        assert!(unique_columns("duplicate key value", None).is_empty());
    }

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
