//! The full-text index of a searchable resource (`#[resource(search("name", "species"))]`):
//! what it is called and the statements that create and drop it on each backend.
//!
//! - **SQLite**: an FTS5 table `<table>__search` over the table's rows (external content:
//!   it keeps the index, the table keeps the text), one column per searchable member, the
//!   `unicode61` tokenizer with diacritics kept (as PostgreSQL's `simple` configuration keeps
//!   them), and three triggers that keep it in step with every insert, update and delete,
//!   whatever path writes the row. It follows rows by their `rowid`.
//! - **PostgreSQL**: a stored generated column `crudforge_search` (a `tsvector` of the members
//!   under the `simple` configuration, the first member weighted `A`, the next `B`, and so on)
//!   with a GIN index. PostgreSQL computes it on every write. Every run of ASCII characters
//!   other than letters and digits becomes a space first, so that words are what they are on
//!   SQLite and in `q` (PostgreSQL's parser alone would keep `3.14`, host names and e-mail
//!   addresses whole).
//!
//! The library never creates the index itself: `make-migrations` writes these statements
//! into a migration, and the schema check reports an index that is missing.

use super::indexes::ident;
use crate::dialect::Backend;

/// The most members one index holds: PostgreSQL tells members apart by a lexeme's weight, of
/// which there are four.
pub(crate) const MAX_MEMBERS: usize = 4;

/// The weights of the members, in order (PostgreSQL's `setweight`).
pub(crate) const WEIGHTS: [char; MAX_MEMBERS] = ['A', 'B', 'C', 'D'];

/// What a member's match counts for in the ranking, in member order, on both backends: 1,
/// 0.4, 0.2 and 0.1 (PostgreSQL's default weights of `A` to `D`, given to SQLite's `bm25` too).
pub(crate) const RANK_WEIGHTS: [&str; MAX_MEMBERS] = ["1.0", "0.4", "0.2", "0.1"];

/// The PostgreSQL column that holds a row's search vector.
pub(crate) const COLUMN: &str = "crudforge_search";

/// What PostgreSQL's vectors read as a separator before its parser sees the text: every run of
/// ASCII characters other than letters and digits (a class that no locale changes; other
/// characters are the database's parser's to judge, by its locale).
pub(crate) const SEPARATORS: &str = r"[\x01-\x2F\x3A-\x40\x5B-\x60\x7B-\x7F]+";

/// The text search configuration of PostgreSQL's vectors and queries.
pub(crate) const CONFIG: &str = "simple";

/// One table's full-text index: the table and the members it indexes, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SearchIndex {
    /// The table's name in SQL.
    pub(crate) table: &'static str,
    /// The searchable members (text columns), first the one that weighs most.
    pub(crate) members: &'static [&'static str],
}

impl SearchIndex {
    /// SQLite's FTS5 table of the index: `<table>__search`.
    pub(crate) fn fts_table(table: &str) -> String {
        format!("{table}__search")
    }

    /// The name of PostgreSQL's GIN index on [`COLUMN`].
    pub(crate) fn gin_index(table: &str) -> String {
        format!("{table}_{COLUMN}_idx")
    }

    /// The statements that create the index (and, on SQLite, fill it from the rows present),
    /// each ending with `;`.
    // The migration generator writes them, and it reads its scratch schema with SQLite.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn create_sql(&self, backend: Backend) -> Vec<String> {
        Self::create(self.table, self.members, backend)
    }

    /// [`create_sql`](Self::create_sql) of the index of `members` on `table`.
    pub(crate) fn create(table_name: &str, members: &[&str], backend: Backend) -> Vec<String> {
        let table = ident(table_name);
        let members: Vec<String> = members.iter().map(|m| ident(m)).collect();
        match backend {
            Backend::Sqlite => {
                let fts = ident(&Self::fts_table(table_name));
                let trigger = |what: &str| ident(&format!("{table_name}__search_{what}"));
                let cols = members.join(", ");
                let values = |row: &str| {
                    members
                        .iter()
                        .map(|m| format!("{row}.{m}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let add = format!(
                    "INSERT INTO {fts}(rowid, {cols}) VALUES (new.rowid, {});",
                    values("new")
                );
                let remove = format!(
                    "INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.rowid, {});",
                    values("old")
                );
                vec![
                    format!(
                        "CREATE VIRTUAL TABLE {fts} USING fts5({cols}, content={}, content_rowid='rowid', tokenize='unicode61 remove_diacritics 0');",
                        sql_string(table_name)
                    ),
                    format!(
                        "CREATE TRIGGER {} AFTER INSERT ON {table} BEGIN\n  {add}\nEND;",
                        trigger("insert")
                    ),
                    format!(
                        "CREATE TRIGGER {} AFTER DELETE ON {table} BEGIN\n  {remove}\nEND;",
                        trigger("delete")
                    ),
                    format!(
                        "CREATE TRIGGER {} AFTER UPDATE OF {cols} ON {table} BEGIN\n  {remove}\n  {add}\nEND;",
                        trigger("update")
                    ),
                    format!("INSERT INTO {fts}({fts}) VALUES ('rebuild');"),
                ]
            }
            Backend::Postgres => {
                let vector = members
                    .iter()
                    .zip(WEIGHTS)
                    .map(|(m, w)| {
                        format!(
                            "setweight(to_tsvector('{CONFIG}'::regconfig, regexp_replace(coalesce({m}, ''), '{SEPARATORS}', ' ', 'g')), '{w}')"
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" || ");
                vec![
                    format!(
                        "ALTER TABLE {table} ADD COLUMN {COLUMN} tsvector GENERATED ALWAYS AS ({vector}) STORED;"
                    ),
                    format!(
                        "CREATE INDEX {} ON {table} USING GIN ({COLUMN});",
                        ident(&Self::gin_index(table_name))
                    ),
                ]
            }
        }
    }

    /// The statements that remove the index of `table` (the members do not matter).
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn drop_sql(table: &str, backend: Backend) -> Vec<String> {
        match backend {
            Backend::Sqlite => {
                let mut out: Vec<String> = ["insert", "delete", "update"]
                    .iter()
                    .map(|what| {
                        format!(
                            "DROP TRIGGER IF EXISTS {};",
                            ident(&format!("{table}__search_{what}"))
                        )
                    })
                    .collect();
                out.push(format!(
                    "DROP TABLE IF EXISTS {};",
                    ident(&Self::fts_table(table))
                ));
                out
            }
            Backend::Postgres => vec![
                format!("DROP INDEX IF EXISTS {};", ident(&Self::gin_index(table))),
                format!(
                    "ALTER TABLE {} DROP COLUMN IF EXISTS {COLUMN};",
                    ident(table)
                ),
            ],
        }
    }
}

/// `s` as an SQL string literal.
fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRITTERS: SearchIndex = SearchIndex {
        table: "critters",
        members: &["name", "species"],
    };

    #[test]
    fn sqlite_gets_an_fts5_table_kept_in_step_by_triggers() {
        let sql = CRITTERS.create_sql(Backend::Sqlite);
        assert_eq!(sql.len(), 5);
        assert!(sql[0].starts_with(
            "CREATE VIRTUAL TABLE critters__search USING fts5(name, species, content='critters'"
        ));
        assert!(sql[1].contains("AFTER INSERT ON critters"));
        assert!(sql[1].contains("VALUES (new.rowid, new.name, new.species)"));
        assert!(sql[2].contains("'delete', old.rowid, old.name, old.species"));
        assert!(sql[3].contains("AFTER UPDATE OF name, species ON critters"));
        assert_eq!(
            sql[4],
            "INSERT INTO critters__search(critters__search) VALUES ('rebuild');"
        );
    }

    #[test]
    fn postgresql_gets_a_weighted_generated_vector_and_a_gin_index() {
        let sql = CRITTERS.create_sql(Backend::Postgres);
        assert_eq!(
            sql[0],
            "ALTER TABLE critters ADD COLUMN crudforge_search tsvector GENERATED ALWAYS AS \
             (setweight(to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, ''), \
             '[\\x01-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7F]+', ' ', 'g')), 'A') || \
             setweight(to_tsvector('simple'::regconfig, regexp_replace(coalesce(species, ''), \
             '[\\x01-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7F]+', ' ', 'g')), 'B')) STORED;"
        );
        assert_eq!(
            sql[1],
            "CREATE INDEX critters_crudforge_search_idx ON critters USING GIN (crudforge_search);"
        );
        assert_eq!(
            SearchIndex::drop_sql("critters", Backend::Postgres)[1],
            "ALTER TABLE critters DROP COLUMN IF EXISTS crudforge_search;"
        );
    }
}
