//! Indexes that resources declare (`#[resource(index(...))]`, and the unique indexes of
//! `#[resource(unique(...))]`): the SQL that creates them, for a migration, and a check of the
//! live database that finds the missing ones.
//!
//! The library never creates an index itself: the schema belongs to migrations. An
//! [`Api`](crate::Api) runs [`missing`] when it starts serving and logs a warning with the
//! `CREATE INDEX` statement of each index the database lacks.

use super::{Database, DbError};
use diesel::sql_types::{Nullable, Text};
use diesel_async::RunQueryDsl as _;

/// An index a resource declares: its table and its columns, in index order, and whether it is
/// unique (a composite unique constraint, `#[resource(unique("a", "b"))]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    /// The table.
    pub table: &'static str,
    /// The columns, most significant first.
    pub columns: &'static [&'static str],
    /// A unique index: no two rows share the same values in all of `columns` (rows with a
    /// NULL in one of them never conflict, on both backends).
    pub unique: bool,
}

/// PostgreSQL truncates longer identifiers (`NAMEDATALEN` - 1 bytes).
const MAX_NAME: usize = 63;

impl IndexSpec {
    /// The index of `columns` on `table`.
    pub const fn new(table: &'static str, columns: &'static [&'static str]) -> IndexSpec {
        IndexSpec {
            table,
            columns,
            unique: false,
        }
    }

    /// The unique index of `columns` on `table`: a composite unique constraint.
    pub const fn new_unique(table: &'static str, columns: &'static [&'static str]) -> IndexSpec {
        IndexSpec {
            table,
            columns,
            unique: true,
        }
    }

    /// `<table>_<column>_<column>_idx`, or `..._key` for a unique index (PostgreSQL's own
    /// suffix for a unique constraint); past PostgreSQL's 63 bytes the middle is cut and a hash
    /// of the full name keeps it unique.
    pub fn name(&self) -> String {
        let suffix = if self.unique { "key" } else { "idx" };
        let full = format!("{}_{}_{suffix}", self.table, self.columns.join("_"));
        if full.len() <= MAX_NAME {
            return full;
        }
        let hash = format!("{:016x}", fnv1a(full.as_bytes()));
        let hash = &hash[..8];
        // Room for `_<hash>_<suffix>`.
        let keep = MAX_NAME - hash.len() - 2 - suffix.len();
        let mut cut = keep;
        while !full.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}_{hash}_{suffix}", &full[..cut])
    }

    /// `CREATE [UNIQUE] INDEX IF NOT EXISTS <name> ON <table> (<columns>)`: the same statement
    /// on SQLite and PostgreSQL, for a migration's `up.sql`.
    pub fn create_sql(&self) -> String {
        let columns = self
            .columns
            .iter()
            .map(|c| ident(c))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "CREATE {}INDEX IF NOT EXISTS {} ON {} ({columns});",
            if self.unique { "UNIQUE " } else { "" },
            ident(&self.name()),
            ident(self.table)
        )
    }

    /// `DROP INDEX IF EXISTS <name>`, for the migration's `down.sql`.
    pub fn drop_sql(&self) -> String {
        format!("DROP INDEX IF EXISTS {};", ident(&self.name()))
    }
}

impl std::fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unique = if self.unique { "UNIQUE " } else { "" };
        write!(f, "{} {unique}({})", self.table, self.columns.join(", "))
    }
}

/// The `CREATE INDEX` statement of each of `specs`, in order, ready to paste into a migration.
pub fn index_sql(specs: &[IndexSpec]) -> Vec<String> {
    specs.iter().map(IndexSpec::create_sql).collect()
}

/// 64-bit FNV-1a: a hash that stays the same across builds and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Words that cannot be column or table names unquoted on one of the backends (the ones a
/// model is likely to use; anything else that is not a plain lower-case name is quoted too).
const RESERVED: &[&str] = &[
    "all",
    "and",
    "as",
    "asc",
    "between",
    "by",
    "case",
    "check",
    "column",
    "constraint",
    "create",
    "default",
    "desc",
    "distinct",
    "drop",
    "else",
    "end",
    "foreign",
    "from",
    "group",
    "having",
    "in",
    "index",
    "is",
    "join",
    "key",
    "like",
    "limit",
    "not",
    "null",
    "offset",
    "on",
    "or",
    "order",
    "primary",
    "references",
    "select",
    "table",
    "then",
    "to",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "when",
    "where",
    "with",
];

/// `name` as an SQL identifier: bare when it is a plain lower-case name, double-quoted
/// otherwise.
pub(crate) fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED.contains(&name);
    if plain {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// One column of one index, as the catalog queries return it.
#[derive(diesel::QueryableByName)]
pub(crate) struct IndexColumn {
    #[diesel(sql_type = Text)]
    pub(crate) index_name: String,
    /// `None` for an expression.
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) column_name: Option<String>,
}

/// Each index's name and key columns in order (`None` for an expression).
pub(crate) type Present = Vec<(String, Vec<Option<String>>)>;

/// The rows of an index catalog query grouped by index: each index's name and key columns in
/// order.
pub(crate) fn group(rows: Vec<IndexColumn>) -> Present {
    let mut out: Vec<(String, Vec<Option<String>>)> = Vec::new();
    for row in rows {
        match out.last_mut() {
            Some((name, columns)) if *name == row.index_name => columns.push(row.column_name),
            _ => out.push((row.index_name, vec![row.column_name])),
        }
    }
    out
}

/// Whether some index of `present` (each one's key columns) starts with `wanted`, in order.
pub(crate) fn served(present: &[(String, Vec<Option<String>>)], wanted: &[&str]) -> bool {
    present.iter().any(|(_, columns)| {
        columns.len() >= wanted.len()
            && wanted
                .iter()
                .zip(columns)
                .all(|(want, have)| have.as_deref() == Some(*want))
    })
}

/// Whether some unique index of `present` (each one's key columns) has exactly the columns of
/// `wanted`, in any order: what makes those columns unique together. A unique index on fewer
/// of them is stricter than the declared constraint and does not count.
pub(crate) fn served_unique(present: &[(String, Vec<Option<String>>)], wanted: &[&str]) -> bool {
    present.iter().any(|(_, columns)| {
        columns.len() == wanted.len()
            && wanted
                .iter()
                .all(|want| columns.iter().any(|have| have.as_deref() == Some(*want)))
    })
}

/// The key columns of each index `table` has, in order (empty when there is no such table).
///
/// # Errors
///
/// The database cannot be reached or the catalog query fails.
pub async fn table_indexes(
    db: &Database,
    table: &str,
) -> Result<Vec<(String, Vec<Option<String>>)>, DbError> {
    load(db, table, crate::dialect::index_columns).await
}

/// The indexes of `table` a catalog query of `sql` lists, grouped.
async fn load(
    db: &Database,
    table: &str,
    sql: fn(crate::dialect::Backend) -> &'static str,
) -> Result<Present, DbError> {
    let mut conn = db.get().await.map_err(|e| DbError::Pool(e.to_string()))?;
    let sql = sql(conn.backend());
    let rows: Vec<IndexColumn> = crate::with_conn!(conn, |c| {
        diesel::sql_query(sql).bind::<Text, _>(table).load(c).await
    })?;
    Ok(group(rows))
}

/// The indexes of `specs` the database lacks. An index is there when some complete index of
/// its table (under any name, unique or not) starts with its columns in the same order: an
/// index on `(a, b, c)` serves one declared on `(a, b)`. A unique index is there when some
/// unique index (or unique constraint, or primary key) of its table has exactly its columns,
/// in any order.
///
/// # Errors
///
/// The database cannot be reached or a catalog query fails.
pub async fn missing(db: &Database, specs: &[IndexSpec]) -> Result<Vec<IndexSpec>, DbError> {
    let mut tables: Vec<&str> = specs.iter().map(|s| s.table).collect();
    tables.sort_unstable();
    tables.dedup();
    let mut missing = Vec::new();
    for table in tables {
        let present = table_indexes(db, table).await?;
        let unique = if specs.iter().any(|s| s.table == table && s.unique) {
            load(db, table, crate::dialect::unique_index_columns).await?
        } else {
            Vec::new()
        };
        for spec in specs.iter().filter(|s| s.table == table) {
            let there = if spec.unique {
                served_unique(&unique, spec.columns)
            } else {
                served(&present, spec.columns)
            };
            if !there && !missing.contains(spec) {
                missing.push(*spec);
            }
        }
    }
    Ok(missing)
}

/// Runs [`missing`] and logs a warning (target `crudforge::indexes`) for each index the
/// database lacks, naming it and giving the statement that creates it. Returns them.
///
/// # Errors
///
/// The database cannot be reached or a catalog query fails.
pub(crate) async fn warn_missing(
    db: &Database,
    specs: &[IndexSpec],
) -> Result<Vec<IndexSpec>, DbError> {
    let missing = missing(db, specs).await?;
    for spec in &missing {
        tracing::warn!(
            target: "crudforge::indexes",
            index = %spec.name(),
            table = spec.table,
            columns = %spec.columns.join(", "),
            sql = %spec.create_sql(),
            "a declared index is missing from the database; add it to a migration"
        );
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::{ident, index_sql, served_unique, IndexSpec, MAX_NAME};

    #[test]
    fn statements_name_the_table_and_columns() {
        let spec = IndexSpec::new("critters", &["species", "cuteness_level"]);
        assert_eq!(spec.name(), "critters_species_cuteness_level_idx");
        assert_eq!(
            spec.create_sql(),
            "CREATE INDEX IF NOT EXISTS critters_species_cuteness_level_idx ON critters (species, cuteness_level);"
        );
        assert_eq!(
            spec.drop_sql(),
            "DROP INDEX IF EXISTS critters_species_cuteness_level_idx;"
        );
        assert_eq!(index_sql(&[spec, spec]).len(), 2);
        assert_eq!(spec.to_string(), "critters (species, cuteness_level)");
    }

    #[test]
    fn unique_indexes_are_named_like_postgres_constraints() {
        let spec = IndexSpec::new_unique("tickets", &["event_id", "seat"]);
        assert_eq!(spec.name(), "tickets_event_id_seat_key");
        assert_eq!(
            spec.create_sql(),
            "CREATE UNIQUE INDEX IF NOT EXISTS tickets_event_id_seat_key ON tickets (event_id, seat);"
        );
        assert_eq!(
            spec.drop_sql(),
            "DROP INDEX IF EXISTS tickets_event_id_seat_key;"
        );
        assert_eq!(spec.to_string(), "tickets UNIQUE (event_id, seat)");
        assert_ne!(spec, IndexSpec::new("tickets", &["event_id", "seat"]));
        let long = IndexSpec::new_unique(
            "a_rather_long_table_name_for_things",
            &["first_long_column_name", "second_long_column_name"],
        );
        assert!(long.name().len() <= MAX_NAME && long.name().ends_with("_key"));
    }

    #[test]
    fn a_unique_index_is_there_only_on_exactly_its_columns() {
        let present = |cols: &[&str]| {
            vec![(
                "i".to_owned(),
                cols.iter().map(|c| Some((*c).to_owned())).collect(),
            )]
        };
        let wanted = ["event_id", "seat"];
        assert!(served_unique(&present(&["event_id", "seat"]), &wanted));
        assert!(served_unique(&present(&["seat", "event_id"]), &wanted));
        assert!(!served_unique(&present(&["seat"]), &wanted));
        assert!(!served_unique(
            &present(&["event_id", "seat", "row"]),
            &wanted
        ));
        assert!(!served_unique(&[], &wanted));
    }

    #[test]
    fn awkward_names_are_quoted() {
        assert_eq!(ident("order"), "\"order\"");
        assert_eq!(ident("Weird\"Name"), "\"Weird\"\"Name\"");
        assert_eq!(ident("_x1"), "_x1");
        assert_eq!(ident("1x"), "\"1x\"");
        let spec = IndexSpec::new("orders", &["user", "created_at"]);
        assert_eq!(
            spec.create_sql(),
            "CREATE INDEX IF NOT EXISTS orders_user_created_at_idx ON orders (\"user\", created_at);"
        );
    }

    #[test]
    fn long_names_fit_postgres_and_stay_distinct() {
        let a = IndexSpec::new(
            "a_rather_long_table_name_for_things",
            &["first_long_column_name", "second_long_column_name"],
        );
        let b = IndexSpec::new(
            "a_rather_long_table_name_for_things",
            &["first_long_column_name", "second_long_column_named"],
        );
        assert!(a.name().len() <= MAX_NAME, "{}", a.name());
        assert!(a.name().ends_with("_idx"));
        assert_ne!(a.name(), b.name());
        assert_eq!(a.name(), a.name(), "stable");
    }
}
