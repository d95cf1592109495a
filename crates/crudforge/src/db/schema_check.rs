//! Schema drift: what the live database lacks or holds differently from what the mounted
//! resources expect (tables, columns, nullability, column types, declared indexes and
//! composite unique constraints).
//!
//! Each mounted resource describes its table as a [`TableSpec`] (its name and
//! [`Resource::FIELDS`](crate::Resource::FIELDS)); `compare` reads each table's columns from
//! the catalog once (the query is `dialect::table_columns`; what type fits which kind is
//! `dialect::column_fits`), checks the declared indexes with [`indexes::missing`], and
//! returns every difference as a [`SchemaDrift`]. [`Api::check_schema`](crate::Api::check_schema)
//! runs it for an application; `SCHEMA_CHECK` says what a starting server does with the
//! result. The check reads the catalog only: the schema belongs to migrations.

use super::indexes::{self, IndexSpec};
use super::{Database, DbError};
use crate::field::{FieldInfo, Kind};
use diesel::sql_types::{Bool, Text};
use diesel_async::RunQueryDsl as _;
use std::fmt;

/// The table a mounted resource reads and writes, and the fields it expects there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableSpec {
    /// The table.
    pub table: &'static str,
    /// The stored fields, each a column of the same name.
    pub fields: &'static [FieldInfo],
    /// The searchable members (`#[resource(search(...))]`), whose full-text index the table
    /// needs; empty: none.
    pub search: &'static [&'static str],
}

impl TableSpec {
    /// The table `table` with the columns `fields` (a resource's
    /// [`TABLE`](crate::Resource::TABLE) and [`FIELDS`](crate::Resource::FIELDS)).
    pub(crate) const fn new(table: &'static str, fields: &'static [FieldInfo]) -> TableSpec {
        TableSpec {
            table,
            fields,
            search: &[],
        }
    }

    /// The same table, searchable in `members`.
    pub(crate) const fn searchable(mut self, members: &'static [&'static str]) -> TableSpec {
        self.search = members;
        self
    }
}

/// One difference between the live database and a mounted resource. Its `Display` is one
/// line, `table.column: what differs` (`table: missing` for a table,
/// `table(a, b): index missing` for an index).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaDrift {
    /// The table does not exist.
    #[non_exhaustive]
    MissingTable {
        /// The table.
        table: &'static str,
    },
    /// The table has no column for a field.
    #[non_exhaustive]
    MissingColumn {
        /// The table.
        table: &'static str,
        /// The field's column.
        column: &'static str,
    },
    /// The column allows NULL, but the field is not an `Option`: reading a row with a NULL
    /// there fails.
    #[non_exhaustive]
    Nullable {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
    },
    /// The column is NOT NULL, but the field is an `Option`: writing `null` there fails.
    #[non_exhaustive]
    NotNull {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
    },
    /// The column's type does not fit the field's kind: it cannot hold its values, or
    /// (PostgreSQL) Diesel cannot read them from it.
    #[non_exhaustive]
    Type {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// What the field holds.
        kind: Kind,
        /// The column's type, as the database's catalog spells it (on SQLite the declared
        /// type, possibly empty).
        found: String,
        /// The types (PostgreSQL) or type affinities (SQLite) that would fit.
        expected: &'static str,
    },
    /// A declared index (`#[resource(index(...))]`) is missing; no index of the table starts
    /// with its columns in its order. For a composite unique constraint
    /// (`#[resource(unique(...))]`, [`IndexSpec::unique`]): no unique index of the table has
    /// exactly its columns (`table(a, b): unique index missing`).
    #[non_exhaustive]
    MissingIndex {
        /// The index: [`IndexSpec::create_sql`] is the statement that adds it.
        index: IndexSpec,
    },
    /// The full-text index of a searchable resource (`#[resource(search(...))]`) is missing,
    /// or (SQLite) indexes other members: `make-migrations` writes the statements that make
    /// it.
    #[non_exhaustive]
    MissingSearch {
        /// The table.
        table: &'static str,
        /// The searchable members.
        members: &'static [&'static str],
    },
}

impl SchemaDrift {
    /// The table the difference is in.
    pub fn table(&self) -> &'static str {
        match self {
            SchemaDrift::MissingTable { table }
            | SchemaDrift::MissingColumn { table, .. }
            | SchemaDrift::Nullable { table, .. }
            | SchemaDrift::NotNull { table, .. }
            | SchemaDrift::Type { table, .. }
            | SchemaDrift::MissingSearch { table, .. } => table,
            SchemaDrift::MissingIndex { index } => index.table,
        }
    }
}

impl fmt::Display for SchemaDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaDrift::MissingTable { table } => write!(f, "{table}: missing"),
            SchemaDrift::MissingColumn { table, column } => {
                write!(f, "{table}.{column}: missing")
            }
            SchemaDrift::Nullable { table, column } => write!(
                f,
                "{table}.{column}: nullable, but the field is not an Option"
            ),
            SchemaDrift::NotNull { table, column } => {
                write!(f, "{table}.{column}: NOT NULL, but the field is an Option")
            }
            SchemaDrift::Type {
                table,
                column,
                found,
                expected,
                ..
            } => {
                let found = if found.is_empty() {
                    "(none)"
                } else {
                    found.as_str()
                };
                write!(f, "{table}.{column}: type {found}, expected {expected}")
            }
            SchemaDrift::MissingIndex { index } => write!(
                f,
                "{}({}): {}index missing",
                index.table,
                index.columns.join(", "),
                if index.unique { "unique " } else { "" }
            ),
            SchemaDrift::MissingSearch { table, members } => write!(
                f,
                "{table}: search index over ({}) missing (make-migrations writes it)",
                members.join(", ")
            ),
        }
    }
}

/// Why a server refuses to start (`SCHEMA_CHECK=strict`), from
/// [`Api::apply_schema_check`](crate::Api::apply_schema_check).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The database differs from the mounted resources; every difference, in order.
    #[error(
        "the database schema differs from the mounted resources (SCHEMA_CHECK=strict): {}",
        join(.0)
    )]
    Drift(Vec<SchemaDrift>),
    /// The comparison could not run, so the schema is not known to agree.
    #[error("cannot check the database schema (SCHEMA_CHECK=strict): {0}")]
    Db(#[from] DbError),
}

/// The differences on one line, separated by `; `.
fn join(drifts: &[SchemaDrift]) -> String {
    drifts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One column of a table, as `dialect::table_columns` returns it.
/// Also what the migration generator (`migrations_gen`) reads from its scratch database.
#[derive(diesel::QueryableByName)]
pub(crate) struct Column {
    #[diesel(sql_type = Text)]
    pub(crate) column_name: String,
    #[diesel(sql_type = Text)]
    pub(crate) column_type: String,
    #[diesel(sql_type = Bool)]
    pub(crate) not_null: bool,
}

/// The columns of `table` in order; empty when there is no such table.
async fn table_columns(db: &Database, table: &str) -> Result<Vec<Column>, DbError> {
    let mut conn = db.get().await.map_err(|e| DbError::Pool(e.to_string()))?;
    let sql = crate::dialect::table_columns(conn.backend());
    let rows: Vec<Column> = crate::with_conn!(conn, |c| {
        diesel::sql_query(sql).bind::<Text, _>(table).load(c).await
    })?;
    Ok(rows)
}

/// Every difference between the database and `tables` and `specs`: per table (in the order
/// of `tables`, each table read once however many resources use it) a missing table, or its
/// missing columns, wrong nullabilities and types in field order, then its missing indexes.
/// The indexes of a missing table are not listed on their own. Each difference appears once.
///
/// # Errors
///
/// The database cannot be reached or a catalog query fails.
pub(crate) async fn compare(
    db: &Database,
    tables: &[TableSpec],
    specs: &[IndexSpec],
) -> Result<Vec<SchemaDrift>, DbError> {
    let backend = db.backend();
    let mut names: Vec<&'static str> = tables.iter().map(|t| t.table).collect();
    names.extend(specs.iter().map(|s| s.table));
    let mut seen: Vec<&'static str> = Vec::new();
    let mut out: Vec<SchemaDrift> = Vec::new();
    for table in names {
        if table.is_empty() || seen.contains(&table) {
            continue;
        }
        seen.push(table);
        let columns = table_columns(db, table).await?;
        let mut found = Vec::new();
        if columns.is_empty() {
            found.push(SchemaDrift::MissingTable { table });
        } else {
            for field in tables
                .iter()
                .filter(|t| t.table == table)
                .flat_map(|t| t.fields)
            {
                found.extend(field_drift(backend, table, field, &columns));
            }
            if let Some(members) = tables
                .iter()
                .find(|t| t.table == table && !t.search.is_empty())
                .map(|t| t.search)
            {
                if !search_present(db, table, members, &columns).await? {
                    found.push(SchemaDrift::MissingSearch { table, members });
                }
            }
            let declared: Vec<IndexSpec> =
                specs.iter().filter(|s| s.table == table).copied().collect();
            for index in indexes::missing(db, &declared).await? {
                found.push(SchemaDrift::MissingIndex { index });
            }
        }
        for drift in found {
            if !out.contains(&drift) {
                out.push(drift);
            }
        }
    }
    Ok(out)
}

/// Whether `table` (whose `columns` were read) has the full-text index of `members`: on
/// SQLite its FTS5 table with exactly those columns, on PostgreSQL the search column.
async fn search_present(
    db: &Database,
    table: &str,
    members: &[&str],
    columns: &[Column],
) -> Result<bool, DbError> {
    use super::search::{SearchIndex, COLUMN};
    Ok(match db.backend() {
        crate::dialect::Backend::Sqlite => {
            let fts = table_columns(db, &SearchIndex::fts_table(table)).await?;
            fts.iter()
                .map(|c| c.column_name.as_str())
                .eq(members.iter().copied())
        }
        crate::dialect::Backend::Postgres => columns.iter().any(|c| c.column_name == COLUMN),
    })
}

/// The differences between one field and its column among `columns` (also the migration
/// generator's test of a column it would otherwise leave alone).
pub(crate) fn field_drift(
    backend: crate::dialect::Backend,
    table: &'static str,
    field: &FieldInfo,
    columns: &[Column],
) -> Vec<SchemaDrift> {
    let column = field.name;
    let Some(col) = columns.iter().find(|c| c.column_name == column) else {
        return vec![SchemaDrift::MissingColumn { table, column }];
    };
    let mut out = Vec::new();
    match (field.nullable, col.not_null) {
        (false, false) => out.push(SchemaDrift::Nullable { table, column }),
        (true, true) => out.push(SchemaDrift::NotNull { table, column }),
        _ => {}
    }
    if let Err(expected) =
        crate::dialect::column_fits(backend, field.kind, field.int_range, &col.column_type)
    {
        out.push(SchemaDrift::Type {
            table,
            column,
            kind: field.kind,
            found: col.column_type.clone(),
            expected,
        });
    }
    out
}

/// Logs a warning (target `crudforge::schema`) for each of `drifts`, its line as the message;
/// a missing index also gives the `CREATE INDEX` statement that adds it.
pub(crate) fn warn(drifts: &[SchemaDrift]) {
    for drift in drifts {
        match drift {
            SchemaDrift::MissingIndex { index } => tracing::warn!(
                target: "crudforge::schema",
                index = %index.name(),
                sql = %index.create_sql(),
                "schema drift: {drift} (add it to a migration)"
            ),
            _ => tracing::warn!(target: "crudforge::schema", "schema drift: {drift}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{column_fits, Backend};

    #[test]
    fn each_difference_is_one_line_naming_table_and_column() {
        let lines = [
            SchemaDrift::MissingTable { table: "critters" },
            SchemaDrift::MissingColumn {
                table: "critters",
                column: "name",
            },
            SchemaDrift::Nullable {
                table: "critters",
                column: "name",
            },
            SchemaDrift::NotNull {
                table: "critters",
                column: "nickname",
            },
            SchemaDrift::Type {
                table: "critters",
                column: "cuteness_level",
                kind: Kind::Integer,
                found: "text".into(),
                expected: "integer",
            },
            SchemaDrift::MissingIndex {
                index: IndexSpec::new("critters", &["species", "cuteness_level"]),
            },
            SchemaDrift::MissingIndex {
                index: IndexSpec::new_unique("tickets", &["event_id", "seat"]),
            },
        ]
        .map(|d| d.to_string());
        assert_eq!(
            lines,
            [
                "critters: missing",
                "critters.name: missing",
                "critters.name: nullable, but the field is not an Option",
                "critters.nickname: NOT NULL, but the field is an Option",
                "critters.cuteness_level: type text, expected integer",
                "critters(species, cuteness_level): index missing",
                "tickets(event_id, seat): unique index missing",
            ]
        );
        let e = SchemaError::Drift(vec![
            SchemaDrift::MissingTable { table: "a" },
            SchemaDrift::MissingTable { table: "b" },
        ]);
        assert!(e.to_string().ends_with(": a: missing; b: missing"), "{e}");
    }

    #[test]
    fn postgres_types_fit_the_type_diesel_reads() {
        let pg = |kind, range, ty| column_fits(Backend::Postgres, kind, range, ty).is_ok();
        let i16r = Some((i64::from(i16::MIN), i64::from(i16::MAX)));
        let i32r = Some((i64::from(i32::MIN), i64::from(i32::MAX)));
        assert!(pg(Kind::Integer, i16r, "smallint"));
        assert!(!pg(Kind::Integer, i16r, "integer"));
        assert!(pg(Kind::Integer, i32r, "integer"));
        assert!(!pg(Kind::Integer, i32r, "bigint"));
        assert!(pg(Kind::Integer, None, "bigint"));
        assert!(!pg(Kind::Integer, None, "integer"));
        assert!(pg(Kind::Text, None, "character varying"));
        assert!(pg(Kind::Text, None, "text"));
        assert!(!pg(Kind::Text, None, "uuid"));
        assert!(pg(Kind::Uuid, None, "uuid"));
        assert!(!pg(Kind::Uuid, None, "text"));
        assert!(pg(Kind::DateTime, None, "timestamp with time zone"));
        assert!(!pg(Kind::DateTime, None, "timestamp without time zone"));
        assert!(pg(Kind::Json, None, "jsonb"));
        assert!(pg(Kind::Float, None, "double precision"));
        assert!(pg(Kind::Bool, None, "boolean"));
        assert!(!pg(Kind::Bool, None, "integer"));
        assert!(pg(Kind::Date, None, "date"));
        assert!(pg(Kind::Other, None, "tsvector"));
    }

    #[test]
    fn sqlite_types_fit_by_affinity_leniently() {
        let lite = |kind, ty| column_fits(Backend::Sqlite, kind, None, ty).is_ok();
        for ty in ["TEXT", "VARCHAR(100)", "", "BLOB"] {
            assert!(lite(Kind::Text, ty), "{ty}");
            assert!(lite(Kind::Uuid, ty), "{ty}");
            assert!(lite(Kind::DateTime, ty), "{ty}");
        }
        for ty in ["UUID", "DATETIME", "TIMESTAMP", "DATE", "JSON"] {
            assert!(lite(Kind::Uuid, ty) && lite(Kind::DateTime, ty), "{ty}");
            assert!(
                !lite(Kind::Text, ty),
                "{ty}: NUMERIC affinity turns '42' into 42"
            );
        }
        assert!(!lite(Kind::Text, "INTEGER"));
        assert!(!lite(Kind::Uuid, "INTEGER"));
        for ty in ["INTEGER", "BIGINT", "BOOLEAN", "NUMERIC", ""] {
            assert!(lite(Kind::Integer, ty) && lite(Kind::Bool, ty), "{ty}");
        }
        assert!(!lite(Kind::Integer, "TEXT"));
        assert!(!lite(Kind::Integer, "REAL"));
        assert!(!lite(Kind::Bool, "VARCHAR(5)"));
        assert!(lite(Kind::Float, "DOUBLE"));
        assert!(lite(Kind::Float, "REAL"));
        assert!(lite(Kind::Float, "INTEGER"));
        assert!(!lite(Kind::Float, "TEXT"));
        // "INT" wins over "CHAR": SQLite's rules apply in order.
        assert!(!lite(Kind::Text, "CHARINT"));
    }
}
