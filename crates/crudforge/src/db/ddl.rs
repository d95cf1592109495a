//! Model-first tables: what a `#[resource(model_first)]` struct declares about its table
//! (column types, nullability, defaults, validators as `CHECK`s, unique columns, foreign keys,
//! declared indexes, composite unique constraints) as a [`ModelTable`], and the DDL that creates
//! it on each backend.
//!
//! The derive writes one [`ModelTable`] per model-first resource
//! ([`Resource::MODEL`](crate::Resource::MODEL)); each column carries the same
//! [`FieldInfo`] the schema check reads, so the generated table and the drift check agree by
//! construction. The spelling of each backend's types and functions is `dialect`'s; this module
//! assembles statements. `migrations_gen` writes them into migration folders.

use super::indexes::{ident, IndexSpec};
pub(crate) use crate::dialect::ColumnType;
use crate::dialect::{self, Backend};
use crate::field::FieldInfo;

/// A literal in the DDL: a column default or a bound of a `CHECK`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SqlValue {
    /// A string.
    Text(&'static str),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl SqlValue {
    /// The literal as SQL (strings quoted, quotes doubled; booleans `TRUE`/`FALSE`, which
    /// SQLite reads as 1 and 0).
    pub(crate) fn to_sql(self) -> String {
        match self {
            SqlValue::Text(s) => format!("'{}'", s.replace('\'', "''")),
            SqlValue::Int(n) => n.to_string(),
            SqlValue::Float(f) => {
                let s = f.to_string();
                if s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN") {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            SqlValue::Bool(b) => if b { "TRUE" } else { "FALSE" }.to_owned(),
        }
    }
}

/// What a row removed from the referenced table does to the rows that reference it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnDelete {
    /// The delete is refused while rows reference it (a 409 through the API). The default.
    #[default]
    Restrict,
    /// The referencing rows are deleted too.
    Cascade,
    /// The referencing column becomes NULL (the field is an `Option`).
    SetNull,
}

impl OnDelete {
    /// The SQL words (`RESTRICT`, `CASCADE`, `SET NULL`).
    pub(crate) fn as_sql(self) -> &'static str {
        match self {
            OnDelete::Restrict => "RESTRICT",
            OnDelete::Cascade => "CASCADE",
            OnDelete::SetNull => "SET NULL",
        }
    }
}

/// A foreign key: the column references `table`'s `column`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForeignKey {
    /// The referenced table.
    pub table: &'static str,
    /// The referenced column (`id` unless `references = "table.column"`).
    pub column: &'static str,
    /// What deleting the referenced row does.
    pub on_delete: OnDelete,
}

impl ForeignKey {
    /// A reference to `table`'s `column`, deleting with `on_delete`.
    pub const fn new(table: &'static str, column: &'static str, on_delete: OnDelete) -> Self {
        ForeignKey {
            table,
            column,
            on_delete,
        }
    }
}

/// One column of a model-first table.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ModelColumn {
    /// What the drift check reads: name, kind, nullability, integer range, uniqueness.
    pub field: FieldInfo,
    /// The column type.
    pub ty: ColumnType,
    /// The primary key.
    pub primary_key: bool,
    /// The default, from a literal `#[resource(default = ...)]`.
    pub default: Option<SqlValue>,
    /// `min_len`: at least this many characters.
    pub min_len: Option<u64>,
    /// `max_len`: at most this many characters.
    pub max_len: Option<u64>,
    /// `min`: the smallest value.
    pub min: Option<SqlValue>,
    /// `max`: the largest value.
    pub max: Option<SqlValue>,
    /// `one_of`: the values allowed (empty: any).
    pub one_of: &'static [SqlValue],
    /// `references`: the foreign key.
    pub references: Option<ForeignKey>,
}

impl ModelColumn {
    /// A column for `field`, of type `ty`, with no constraint beyond its nullability.
    pub const fn new(field: FieldInfo, ty: ColumnType) -> Self {
        ModelColumn {
            field,
            ty,
            primary_key: false,
            default: None,
            min_len: None,
            max_len: None,
            min: None,
            max: None,
            one_of: &[],
            references: None,
        }
    }

    /// Marks the primary key.
    #[must_use]
    pub const fn primary_key(mut self) -> Self {
        self.primary_key = true;
        self
    }

    /// Sets the default.
    #[must_use]
    pub const fn default_value(mut self, value: SqlValue) -> Self {
        self.default = Some(value);
        self
    }

    /// Sets the length bounds, in characters.
    #[must_use]
    pub const fn length(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_len = min;
        self.max_len = max;
        self
    }

    /// Sets the value bounds.
    #[must_use]
    pub const fn range(mut self, min: Option<SqlValue>, max: Option<SqlValue>) -> Self {
        self.min = min;
        self.max = max;
        self
    }

    /// Sets the values allowed.
    #[must_use]
    pub const fn one_of(mut self, values: &'static [SqlValue]) -> Self {
        self.one_of = values;
        self
    }

    /// Sets the foreign key.
    #[must_use]
    pub const fn references(mut self, key: ForeignKey) -> Self {
        self.references = Some(key);
        self
    }

    /// The column's name.
    pub(crate) fn name(&self) -> &'static str {
        self.field.name
    }

    /// The type as `backend` declares it (`VARCHAR(N)` on PostgreSQL for a `max_len`).
    pub(crate) fn sql_type(&self, backend: Backend) -> String {
        dialect::column_type(backend, self.ty, self.max_len)
    }

    /// The conditions of the column's `CHECK`, joined with `AND` (`None` without validators):
    /// length bounds, value bounds, the allowed values. Patterns are not among them: a Rust
    /// regular expression is not PostgreSQL's dialect, and SQLite has none.
    pub(crate) fn check(&self, backend: Backend) -> Option<String> {
        let col = ident(self.name());
        let len = dialect::length_function(backend);
        let mut parts = Vec::new();
        if let Some(n) = self.min_len.filter(|n| *n > 0) {
            parts.push(format!("{len}({col}) >= {n}"));
        }
        if let Some(n) = self.max_len {
            if dialect::max_len_needs_check(backend) {
                parts.push(format!("{len}({col}) <= {n}"));
            }
        }
        if let Some(v) = self.min {
            parts.push(format!("{col} >= {}", v.to_sql()));
        }
        if let Some(v) = self.max {
            parts.push(format!("{col} <= {}", v.to_sql()));
        }
        if !self.one_of.is_empty() {
            let values: Vec<String> = self.one_of.iter().map(|v| v.to_sql()).collect();
            parts.push(format!("{col} IN ({})", values.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join(" AND "))
    }

    /// The column's definition in a `CREATE TABLE`, or after `ADD COLUMN` (then `inline_unique`
    /// is false: SQLite cannot add a `UNIQUE` column, so the generator adds a unique index).
    pub(crate) fn definition(&self, backend: Backend, inline_unique: bool) -> String {
        let mut out = format!("{} {}", ident(self.name()), self.sql_type(backend));
        if self.primary_key {
            out.push_str(" PRIMARY KEY");
        } else if !self.field.nullable {
            out.push_str(" NOT NULL");
        }
        if inline_unique && self.field.unique && !self.primary_key {
            out.push_str(" UNIQUE");
        }
        if let Some(v) = self.default {
            out.push_str(" DEFAULT ");
            out.push_str(&v.to_sql());
        }
        if let Some(check) = self.check(backend) {
            out.push_str(&format!(" CHECK ({check})"));
        }
        if let Some(fk) = self.references {
            out.push_str(&format!(
                " REFERENCES {} ({}) ON DELETE {}",
                ident(fk.table),
                ident(fk.column),
                fk.on_delete.as_sql()
            ));
        }
        out
    }

    /// The unique index that backs a `#[resource(unique)]` column added to an existing table:
    /// `<table>_<column>_key`, PostgreSQL's own name for an inline `UNIQUE`.
    pub(crate) fn unique_index_sql(&self, table: &str) -> String {
        format!(
            "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({});",
            ident(&format!("{table}_{}_key", self.name())),
            ident(table),
            ident(self.name())
        )
    }
}

/// The table of a model-first resource, as its struct declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ModelTable {
    /// The table's SQL name.
    pub table: &'static str,
    /// Every column, in field order (fields the API skips included: they are loaded).
    pub columns: &'static [ModelColumn],
    /// The declared indexes (`#[resource(index(...))]`), columns in index order.
    pub indexes: &'static [&'static [&'static str]],
    /// The composite unique constraints (`#[resource(unique(...))]`), each a unique index of
    /// its columns.
    pub uniques: &'static [&'static [&'static str]],
}

impl ModelTable {
    /// The table `table` with `columns` and the declared `indexes`.
    pub const fn new(
        table: &'static str,
        columns: &'static [ModelColumn],
        indexes: &'static [&'static [&'static str]],
    ) -> Self {
        ModelTable {
            table,
            columns,
            indexes,
            uniques: &[],
        }
    }

    /// Sets the composite unique constraints, each its columns.
    #[must_use]
    pub const fn uniques(mut self, uniques: &'static [&'static [&'static str]]) -> Self {
        self.uniques = uniques;
        self
    }

    /// The column `name`.
    pub fn column(&self, name: &str) -> Option<&'static ModelColumn> {
        self.columns.iter().find(|c| c.name() == name)
    }

    /// The declared indexes, each with its name and statements.
    pub(crate) fn index_specs(&self) -> Vec<IndexSpec> {
        self.indexes
            .iter()
            .map(|columns| IndexSpec::new(self.table, columns))
            .collect()
    }

    /// The composite unique constraints, each as the unique index that enforces it
    /// (`<table>_<a>_<b>_key`).
    pub fn unique_specs(&self) -> Vec<IndexSpec> {
        self.uniques
            .iter()
            .map(|columns| IndexSpec::new_unique(self.table, columns))
            .collect()
    }

    /// The tables this one references (its foreign keys), each once, itself left out.
    pub(crate) fn referenced_tables(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for fk in self.columns.iter().filter_map(|c| c.references) {
            if fk.table != self.table && !out.contains(&fk.table) {
                out.push(fk.table);
            }
        }
        out
    }

    /// `CREATE TABLE <table> (...);` on `backend`, one column a line.
    pub fn create_table_sql(&self, backend: Backend) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("    {}", c.definition(backend, true)))
            .collect();
        format!(
            "CREATE TABLE {} (\n{}\n);",
            ident(self.table),
            columns.join(",\n")
        )
    }

    /// The table, its declared indexes and the unique indexes of its composite unique
    /// constraints: every statement that creates it on `backend`. A composite unique
    /// constraint is a `CREATE UNIQUE INDEX`, not a `UNIQUE (...)` in the `CREATE TABLE`: the
    /// same statement then adds it to an existing table (SQLite has no `ADD CONSTRAINT`), and
    /// `down.sql` drops it by its name.
    pub fn create_sql(&self, backend: Backend) -> Vec<String> {
        let mut out = vec![self.create_table_sql(backend)];
        out.extend(self.index_specs().iter().map(IndexSpec::create_sql));
        out.extend(self.unique_specs().iter().map(IndexSpec::create_sql));
        out
    }

    /// `DROP TABLE <table>;`.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn drop_sql(&self) -> String {
        format!("DROP TABLE {};", ident(self.table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Kind;

    const COLUMNS: &[ModelColumn] = &[
        ModelColumn::new(FieldInfo::new("id", Kind::Uuid).unique(), ColumnType::Uuid).primary_key(),
        ModelColumn::new(FieldInfo::new("title", Kind::Text), ColumnType::Text)
            .length(Some(1), Some(200)),
        ModelColumn::new(
            FieldInfo::new("year", Kind::Integer).nullable(),
            ColumnType::Integer,
        )
        .range(Some(SqlValue::Int(1450)), Some(SqlValue::Int(2100))),
        ModelColumn::new(FieldInfo::new("shelf", Kind::Text), ColumnType::Text)
            .default_value(SqlValue::Text("new's"))
            .one_of(&[SqlValue::Text("new's"), SqlValue::Text("old")]),
        ModelColumn::new(
            FieldInfo::new("isbn", Kind::Text).unique(),
            ColumnType::Text,
        ),
        ModelColumn::new(FieldInfo::new("author_id", Kind::Uuid), ColumnType::Uuid)
            .references(ForeignKey::new("authors", "id", OnDelete::Restrict)),
    ];
    const BOOKS: ModelTable = ModelTable::new("books", COLUMNS, &[&["author_id", "title"]])
        .uniques(&[&["author_id", "shelf"]]);

    #[test]
    fn each_backend_gets_its_types_and_checks() {
        assert_eq!(
            BOOKS.create_table_sql(Backend::Sqlite),
            "CREATE TABLE books (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL CHECK (length(title) >= 1 AND length(title) <= 200),
    year INTEGER CHECK (year >= 1450 AND year <= 2100),
    shelf TEXT NOT NULL DEFAULT 'new''s' CHECK (shelf IN ('new''s', 'old')),
    isbn TEXT NOT NULL UNIQUE,
    author_id TEXT NOT NULL REFERENCES authors (id) ON DELETE RESTRICT
);"
        );
        assert_eq!(
            BOOKS.create_table_sql(Backend::Postgres),
            "CREATE TABLE books (
    id UUID PRIMARY KEY,
    title VARCHAR(200) NOT NULL CHECK (char_length(title) >= 1),
    year INTEGER CHECK (year >= 1450 AND year <= 2100),
    shelf TEXT NOT NULL DEFAULT 'new''s' CHECK (shelf IN ('new''s', 'old')),
    isbn TEXT NOT NULL UNIQUE,
    author_id UUID NOT NULL REFERENCES authors (id) ON DELETE RESTRICT
);"
        );
        let all = BOOKS.create_sql(Backend::Sqlite);
        assert_eq!(
            all[1],
            "CREATE INDEX IF NOT EXISTS books_author_id_title_idx ON books (author_id, title);"
        );
        assert_eq!(
            all[2],
            "CREATE UNIQUE INDEX IF NOT EXISTS books_author_id_shelf_key ON books (author_id, shelf);"
        );
        assert_eq!(all.len(), 3);
        assert_eq!(BOOKS.referenced_tables(), vec!["authors"]);
        assert_eq!(
            COLUMNS[4].definition(Backend::Sqlite, false),
            "isbn TEXT NOT NULL"
        );
        assert_eq!(
            COLUMNS[4].unique_index_sql("books"),
            "CREATE UNIQUE INDEX IF NOT EXISTS books_isbn_key ON books (isbn);"
        );
    }

    #[test]
    fn literals_are_sql() {
        assert_eq!(SqlValue::Float(2.0).to_sql(), "2.0");
        assert_eq!(SqlValue::Float(-0.5).to_sql(), "-0.5");
        assert_eq!(SqlValue::Int(-3).to_sql(), "-3");
        assert_eq!(SqlValue::Bool(false).to_sql(), "FALSE");
    }
}
