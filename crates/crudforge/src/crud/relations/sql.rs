//! The SQL of conditions and sorts across a relation: correlated subqueries whose related
//! condition (the client's filter and the related resource's read scope) is written by the
//! related resource's own generated queries.

use crate::condition::{Condition, Link, Node, Reach, Related, Sort, WhereFn};
use crate::error::Error;
use diesel::backend::Backend;
use diesel::expression::ValidGrouping;
use diesel::expression::{is_aggregate, AppearsOnTable, Expression, SelectableExpression};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Bool, Nullable};
use diesel::QueryResult;

/// A backend a link has the SQL of.
pub trait LinkSql: Backend + Sized {
    /// Which backend this is.
    const DIALECT: crate::dialect::Backend;
    /// The link's related condition on this backend.
    fn pick(link: &Link) -> WhereFn<Self>;
}

#[cfg(feature = "sqlite")]
impl LinkSql for diesel::sqlite::Sqlite {
    const DIALECT: crate::dialect::Backend = crate::dialect::Backend::Sqlite;
    fn pick(link: &Link) -> WhereFn<Self> {
        link.sqlite
    }
}

#[cfg(feature = "postgres")]
impl LinkSql for diesel::pg::Pg {
    const DIALECT: crate::dialect::Backend = crate::dialect::Backend::Postgres;
    fn pick(link: &Link) -> WhereFn<Self> {
        link.pg
    }
}

/// What a [`RelSql`] writes.
enum Shape {
    /// `(outer.outer_key IS NOT NULL AND outer.outer_key IN (SELECT t.key FROM t WHERE
    /// t.key IS NOT NULL AND (cond)))`: the related keys the condition selects, so that the
    /// planner may read them first, through an index of the condition's columns, and then the
    /// outer rows through an index of `outer_key`, instead of testing every outer row. Both
    /// `IS NOT NULL` keep it two-valued, as `EXISTS` is, also under `not`.
    Exists,
    /// `(SELECT t.column FROM t WHERE t.key = outer.outer_key AND (cond))`, or its `IS NULL`.
    Value { column: &'static str, is_null: bool },
    /// `t.key IN (SELECT k FROM (SELECT t.key AS k, ROW_NUMBER() OVER (PARTITION BY
    /// t.outer_key ORDER BY t.created_at, t.key) AS n FROM t WHERE cond) WHERE n <= limit)`.
    FirstPerKey(u32),
    /// No row (a node that was never linked).
    Never,
}

/// A correlated subquery across a relation, usable as a filter or sort expression of any
/// table.
pub struct RelSql<DB: Backend> {
    shape: Shape,
    outer_table: &'static str,
    link: Option<Link>,
    inner: Option<Box<dyn QueryFragment<DB> + Send>>,
}

impl<DB: Backend> std::fmt::Debug for RelSql<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelSql")
            .field("outer_table", &self.outer_table)
            .field("link", &self.link)
            .finish_non_exhaustive()
    }
}

/// The filter expression of `r` in a query of `outer_table`; `None` when it matches every
/// row (a sort's scope carrier).
///
/// # Errors
///
/// The related condition does not apply to the related resource (a 400).
pub fn related_sql<DB: LinkSql>(
    r: &Related,
    outer_table: &'static str,
) -> Result<Option<RelSql<DB>>, Error> {
    let Some(link) = r.link else {
        return Ok(Some(RelSql {
            shape: Shape::Never,
            outer_table,
            link: None,
            inner: None,
        }));
    };
    let shape = match r.reach {
        Reach::Order => return Ok(None),
        Reach::Exists => Shape::Exists,
        Reach::FirstPerKey(n) => Shape::FirstPerKey(n),
    };
    Ok(Some(RelSql {
        shape,
        outer_table,
        link: Some(link),
        inner: DB::pick(&link)(&r.cond)?,
    }))
}

/// The sort expressions of the related sort key `sort` (`habitat.name`) in a query of
/// `outer_table`: whether the value is null (so both backends put nulls last), then the value.
/// The related rows it looks at are those of the scope the handler put in `conds` (a
/// [`Reach::Order`] node of the relation); without one, the sort is refused.
///
/// # Errors
///
/// A 400 naming `sort`.
pub fn related_order<DB: LinkSql>(
    conds: Node<'_>,
    sort: &Sort,
    outer_table: &'static str,
) -> Result<(RelSql<DB>, RelSql<DB>), Error> {
    let refuse = || Error::bad_param("sort", format!("cannot sort by `{}`", sort.field));
    let (rel, column) = sort.field.split_once('.').ok_or_else(refuse)?;
    let Node::Tree(tree) = conds else {
        return Err(refuse());
    };
    let r = find_order(tree, rel).ok_or_else(refuse)?;
    let link = r.link.ok_or_else(refuse)?;
    // The column is a field of the related resource, checked by the parser; it is also a
    // static name from that resource's field list (see `condition::intern`).
    let column: &'static str = crate::condition::intern(column);
    let make = |is_null| -> Result<RelSql<DB>, Error> {
        Ok(RelSql {
            shape: Shape::Value { column, is_null },
            outer_table,
            link: Some(link),
            inner: DB::pick(&link)(&r.cond)?,
        })
    };
    Ok((make(true)?, make(false)?))
}

/// The [`Reach::Order`] node of relation `rel` among the top-level members of `c`.
fn find_order<'a>(c: &'a Condition, rel: &str) -> Option<&'a Related> {
    match c {
        Condition::Related(r) if r.reach == Reach::Order && r.name == rel => Some(r),
        Condition::All(v) => v.iter().find_map(|c| find_order(c, rel)),
        _ => None,
    }
}

/// The name the related table goes by in a subquery across a relation from a table to itself
/// (`parent`), so that the subquery tells the related row from the outer one.
const ALIAS: &str = "__rel";

impl<DB: Backend> RelSql<DB> {
    /// Whether the relation leads from a table to itself: then the related table is aliased
    /// ([`ALIAS`]) and its condition, written with the table's own name, selects the related
    /// keys in an inner subquery of its own (`__rel.key IN (SELECT t.key FROM t WHERE cond)`).
    fn to_itself(&self, link: &Link) -> bool {
        link.table == self.outer_table
    }

    /// The name the related table goes by in the subquery.
    fn related_name(&self, link: &Link) -> &'static str {
        if self.to_itself(link) {
            ALIAS
        } else {
            link.table
        }
    }

    fn linked_where<'b>(&'b self, link: &Link, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let related = self.related_name(link);
        out.push_sql(" FROM ");
        out.push_identifier(link.table)?;
        if self.to_itself(link) {
            out.push_sql(" AS ");
            out.push_identifier(ALIAS)?;
        }
        out.push_sql(" WHERE ");
        out.push_identifier(related)?;
        out.push_sql(".");
        out.push_identifier(link.key)?;
        out.push_sql(" = ");
        out.push_identifier(self.outer_table)?;
        out.push_sql(".");
        out.push_identifier(link.outer_key)?;
        if let Some(inner) = &self.inner {
            if self.to_itself(link) {
                // The inner subquery's own `FROM t` is what the condition's `t.` names.
                out.push_sql(" AND ");
                out.push_identifier(ALIAS)?;
                out.push_sql(".");
                out.push_identifier(link.key)?;
                out.push_sql(" IN (SELECT ");
                out.push_identifier(link.table)?;
                out.push_sql(".");
                out.push_identifier(link.key)?;
                out.push_sql(" FROM ");
                out.push_identifier(link.table)?;
                out.push_sql(" WHERE ");
                inner.walk_ast(out.reborrow())?;
                out.push_sql(")");
            } else {
                out.push_sql(" AND (");
                inner.walk_ast(out.reborrow())?;
                out.push_sql(")");
            }
        }
        Ok(())
    }
}

impl<DB: Backend> QueryFragment<DB> for RelSql<DB> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.unsafe_to_cache_prepared();
        let Some(link) = &self.link else {
            out.push_sql("1 = 0");
            return Ok(());
        };
        match self.shape {
            Shape::Never => out.push_sql("1 = 0"),
            Shape::Exists => {
                // Not correlated: inside the subquery, `t` is its own `FROM t`, also for a
                // relation from a table to itself.
                let outer_key = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_identifier(self.outer_table)?;
                    out.push_sql(".");
                    out.push_identifier(link.outer_key)
                };
                let key = |out: &mut AstPass<'_, 'b, DB>| -> QueryResult<()> {
                    out.push_identifier(link.table)?;
                    out.push_sql(".");
                    out.push_identifier(link.key)
                };
                out.push_sql("(");
                outer_key(&mut out)?;
                out.push_sql(" IS NOT NULL AND ");
                outer_key(&mut out)?;
                out.push_sql(" IN (SELECT ");
                key(&mut out)?;
                out.push_sql(" FROM ");
                out.push_identifier(link.table)?;
                out.push_sql(" WHERE ");
                key(&mut out)?;
                out.push_sql(" IS NOT NULL");
                if let Some(inner) = &self.inner {
                    out.push_sql(" AND (");
                    inner.walk_ast(out.reborrow())?;
                    out.push_sql(")");
                }
                out.push_sql("))");
            }
            Shape::Value { column, is_null } => {
                out.push_sql("(SELECT ");
                out.push_identifier(self.related_name(link))?;
                out.push_sql(".");
                out.push_identifier(column)?;
                self.linked_where(link, &mut out)?;
                out.push_sql(if is_null { ") IS NULL" } else { ")" });
            }
            Shape::FirstPerKey(limit) => {
                // The outer table is the related one: its rows among the first `limit` of
                // their key's value, by the default order.
                let t = link.table;
                out.push_identifier(t)?;
                out.push_sql(".");
                out.push_identifier(link.key)?;
                out.push_sql(" IN (SELECT \"__k\" FROM (SELECT ");
                out.push_identifier(t)?;
                out.push_sql(".");
                out.push_identifier(link.key)?;
                out.push_sql(" AS \"__k\", ROW_NUMBER() OVER (PARTITION BY ");
                out.push_identifier(t)?;
                out.push_sql(".");
                out.push_identifier(link.outer_key)?;
                out.push_sql(" ORDER BY ");
                out.push_identifier(t)?;
                out.push_sql(".\"created_at\", ");
                out.push_identifier(t)?;
                out.push_sql(".");
                out.push_identifier(link.key)?;
                out.push_sql(") AS \"__n\" FROM ");
                out.push_identifier(t)?;
                if let Some(inner) = &self.inner {
                    out.push_sql(" WHERE ");
                    inner.walk_ast(out.reborrow())?;
                }
                out.push_sql(") AS \"__top\" WHERE \"__n\" <= ");
                out.push_sql(&limit.to_string());
                out.push_sql(")");
            }
        }
        Ok(())
    }
}

impl<DB: Backend> QueryId for RelSql<DB> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB: Backend> Expression for RelSql<DB> {
    // Sort values are only ordered, never read, whatever the related column's type.
    type SqlType = Nullable<Bool>;
}

impl<DB: Backend, QS> AppearsOnTable<QS> for RelSql<DB> {}

impl<DB: Backend, QS> SelectableExpression<QS> for RelSql<DB> {}

impl<DB: Backend> ValidGrouping<()> for RelSql<DB> {
    type IsAggregate = is_aggregate::No;
}
