//! The SQL of a search condition and of the ranking, usable as a filter or sort expression of
//! any searchable table (generated queries reach them through `crudforge::__private`).
//!
//! - SQLite, filter: `t.rowid IN (SELECT rowid FROM t__search WHERE t__search MATCH ?)`;
//!   rank: `coalesce((WITH __rank AS MATERIALIZED (SELECT rowid AS k, bm25(t__search, 1.0,
//!   0.4, ...) AS s FROM t__search WHERE t__search MATCH ?) SELECT s FROM __rank WHERE k =
//!   t.rowid), 0)`, lower is better (a row the ranked condition does not match, one matched on
//!   its owner's members only, ranks last). The scores are made once per statement: scoring
//!   each row with its own `MATCH ... AND rowid = ?` costs a full-text query per row (69 ms
//!   against 7 ms for 1,000 matches among 1,000,000 rows; `docs/performance.md`).
//! - PostgreSQL, filter: `t.crudforge_search @@ to_tsquery('simple', $1)`; rank:
//!   `-ts_rank(t.crudforge_search, to_tsquery('simple', $1))`, so that ascending is best first
//!   on both.

use crate::condition::{Cond, Node};
use crate::crud::relations::sql::LinkSql;
use crate::crud::search::{first, texts};
use crate::db::search::{SearchIndex, COLUMN, CONFIG, RANK_WEIGHTS};
use crate::dialect::Backend as Dialect;
use crate::error::Error;
use diesel::expression::ValidGrouping;
use diesel::expression::{is_aggregate, AppearsOnTable, Expression, SelectableExpression};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Bool, Nullable, Text};
use diesel::QueryResult;

/// What a [`SearchSql`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The rows that match.
    Filter,
    /// A row's rank, ascending best first.
    Rank,
}

/// A search condition's SQL on backend `DB`, as a filter or as the ranking.
pub struct SearchSql<DB> {
    shape: Shape,
    table: &'static str,
    /// The match text of `DB`.
    text: String,
    /// The number of the index's members (the weights `bm25` takes).
    members: usize,
    backend: std::marker::PhantomData<DB>,
}

impl<DB> std::fmt::Debug for SearchSql<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchSql")
            .field("shape", &self.shape)
            .field("table", &self.table)
            .field("text", &self.text)
            .finish_non_exhaustive()
    }
}

/// The filter of the search condition `c` in a query of `table`.
///
/// # Errors
///
/// `c` is not a search condition (an internal error: only the search's own condition makes
/// them).
pub fn search_filter<DB: LinkSql>(c: &Cond, table: &'static str) -> Result<SearchSql<DB>, Error> {
    make(c, table, Shape::Filter)
}

/// The ranking of a query of `table` whose conditions `conds` hold a search: the rank of its
/// first search condition.
///
/// # Errors
///
/// A 400 naming `sort` when `conds` hold no search.
pub fn search_rank<DB: LinkSql>(
    conds: Node<'_>,
    table: &'static str,
) -> Result<SearchSql<DB>, Error> {
    let found = match conds {
        Node::Tree(t) => first(t),
        Node::All(list) => list.iter().find(|c| texts(c).is_some()),
    };
    let c = found
        .ok_or_else(|| Error::bad_param("sort", "a list is ranked only with `q`, a search"))?;
    make(c, table, Shape::Rank)
}

fn make<DB: LinkSql>(c: &Cond, table: &'static str, shape: Shape) -> Result<SearchSql<DB>, Error> {
    let (sqlite, pg, members) =
        texts(c).ok_or_else(|| Error::Internal("not a search condition".into()))?;
    let text = match DB::DIALECT {
        Dialect::Sqlite => sqlite,
        Dialect::Postgres => pg,
    };
    Ok(SearchSql {
        shape,
        table,
        text: text.to_owned(),
        members,
        backend: std::marker::PhantomData,
    })
}

impl<DB: LinkSql> QueryFragment<DB> for SearchSql<DB>
where
    String: diesel::serialize::ToSql<Text, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.unsafe_to_cache_prepared();
        match (DB::DIALECT, self.shape) {
            (Dialect::Sqlite, shape) => {
                let fts = SearchIndex::fts_table(self.table);
                let from_where = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_sql(" FROM ");
                    out.push_identifier(&fts)?;
                    out.push_sql(" WHERE ");
                    out.push_identifier(&fts)?;
                    out.push_sql(" MATCH ");
                    out.push_bind_param::<Text, String>(&self.text)
                };
                let outer_rowid = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_identifier(self.table)?;
                    out.push_sql(".rowid");
                    Ok(())
                };
                if shape == Shape::Filter {
                    outer_rowid(&mut out)?;
                    out.push_sql(" IN (SELECT rowid");
                    from_where(&mut out)?;
                    out.push_sql(")");
                } else {
                    // The matches' scores, computed once for the statement (`MATERIALIZED`:
                    // not correlated, so made once and looked up by an automatic index),
                    // rather than one full-text query per row.
                    out.push_sql(
                        "coalesce((WITH \"__rank\" AS MATERIALIZED (SELECT rowid AS \"k\", bm25(",
                    );
                    out.push_identifier(&fts)?;
                    for w in RANK_WEIGHTS.iter().take(self.members) {
                        out.push_sql(", ");
                        out.push_sql(w);
                    }
                    out.push_sql(") AS \"s\"");
                    from_where(&mut out)?;
                    out.push_sql(") SELECT \"s\" FROM \"__rank\" WHERE \"k\" = ");
                    outer_rowid(&mut out)?;
                    out.push_sql("), 0)");
                }
            }
            (Dialect::Postgres, shape) => {
                let query = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_sql("to_tsquery('");
                    out.push_sql(CONFIG);
                    out.push_sql("'::regconfig, ");
                    out.push_bind_param::<Text, String>(&self.text)?;
                    out.push_sql(")");
                    Ok(())
                };
                let column = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_identifier(self.table)?;
                    out.push_sql(".");
                    out.push_identifier(COLUMN)
                };
                if shape == Shape::Filter {
                    column(&mut out)?;
                    out.push_sql(" @@ ");
                    query(&mut out)?;
                } else {
                    out.push_sql("-ts_rank(");
                    column(&mut out)?;
                    out.push_sql(", ");
                    query(&mut out)?;
                    out.push_sql(")");
                }
            }
        }
        Ok(())
    }
}

impl<DB> QueryId for SearchSql<DB> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB> Expression for SearchSql<DB> {
    // A rank is only ordered, never read: one SQL type serves the filter and the rank.
    type SqlType = Nullable<Bool>;
}

impl<DB, QS> AppearsOnTable<QS> for SearchSql<DB> {}

impl<DB, QS> SelectableExpression<QS> for SearchSql<DB> {}

impl<DB> ValidGrouping<()> for SearchSql<DB> {
    type IsAggregate = is_aggregate::No;
}
