//! `UPDATE … RETURNING` statements that the connection's prepared-statement cache keeps.
//!
//! Diesel never caches an `UPDATE`: a changeset of optional members writes a different `SET`
//! list for each combination of members present, so its statement marks itself unsafe to
//! cache, and every PATCH had its statement parsed and planned again (a tenth of a PATCH's CPU
//! on SQLite). Found by its SQL text, which names the members set, such a statement is as safe
//! to cache as any other with a bounded number of shapes: at most one per combination of
//! writable members. [`Update`] writes the same SQL without that mark, so the cache keeps it
//! unless another part (a `WHERE` condition with an `IN` list of varying length) is itself
//! unsafe to cache.

use diesel::backend::Backend;
use diesel::expression::Expression;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::Error;
use diesel::{QueryResult, RunQueryDsl, Table};

/// `UPDATE table SET values WHERE filter RETURNING returning`.
#[derive(Debug, Clone, Copy)]
pub struct Update<F, V, W, R> {
    /// The table's `FROM` clause: its quoted name.
    from: F,
    values: V,
    filter: W,
    returning: R,
}

impl<F, V, W, R> Update<F, V, W, R> {
    /// The statement that sets `values` (a changeset, from
    /// [`AsChangeset::as_changeset`](diesel::AsChangeset::as_changeset)) on the rows of
    /// `table` that match `filter`, and returns `returning` of each.
    pub fn new<T: Table<FromClause = F>>(table: T, values: V, filter: W, returning: R) -> Self {
        Update {
            from: table.from_clause(),
            values,
            filter,
            returning,
        }
    }
}

impl<F, V, W, R, DB> QueryFragment<DB> for Update<F, V, W, R>
where
    DB: Backend,
    F: QueryFragment<DB>,
    V: QueryFragment<DB>,
    W: QueryFragment<DB>,
    R: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if self.values.is_noop(out.backend())? {
            return Err(Error::QueryBuilderError(
                "an UPDATE needs at least one column to set".into(),
            ));
        }
        out.push_sql("UPDATE ");
        self.from.walk_ast(out.reborrow())?;
        out.push_sql(" SET ");
        self.values.walk_ast(out.reborrow())?;
        out.push_sql(" WHERE ");
        self.filter.walk_ast(out.reborrow())?;
        out.push_sql(" RETURNING ");
        self.returning.walk_ast(out.reborrow())
    }
}

/// No static id: the cache finds the statement by its SQL text (and bind types).
impl<F, V, W, R> QueryId for Update<F, V, W, R> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<F, V, W, R: Expression> Query for Update<F, V, W, R> {
    type SqlType = R::SqlType;
}

impl<F, V, W, R, C> RunQueryDsl<C> for Update<F, V, W, R> {}

#[cfg(test)]
#[cfg(feature = "sqlite")]
mod tests {
    use super::*;
    use diesel::connection::{Connection, InstrumentationEvent, SimpleConnection};
    use diesel::sqlite::{Sqlite, SqliteConnection};
    use diesel::{AsChangeset, ExpressionMethods, QueryDsl};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    diesel::table! {
        pets (id) {
            id -> Integer,
            name -> Text,
            age -> Integer,
        }
    }

    /// How many statements enter `conn`'s cache while `run` runs.
    fn entering_cache(conn: &mut SqliteConnection, run: impl Fn(&mut SqliteConnection)) -> usize {
        let n = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&n);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { .. } = event {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        run(conn);
        n.load(Ordering::SeqCst)
    }

    fn conn() -> SqliteConnection {
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        c.batch_execute(
            "CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL);
             INSERT INTO pets VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);",
        )
        .unwrap();
        c
    }

    type Boxed =
        Box<dyn diesel::BoxableExpression<pets::table, Sqlite, SqlType = diesel::sql_types::Bool>>;

    fn set(
        c: &mut SqliteConnection,
        filter: Boxed,
        name: Option<&str>,
        age: Option<i32>,
    ) -> Vec<(i32, String, i32)> {
        let values = (
            name.map(|n| pets::name.eq(n.to_owned())),
            age.map(|a| pets::age.eq(a)),
        );
        Update::new(
            pets::table,
            values.as_changeset(),
            filter,
            (pets::id, pets::name, pets::age),
        )
        .load(c)
        .unwrap()
    }

    #[test]
    fn updates_are_cached_by_their_sql_and_write_what_they_say() {
        let mut c = conn();
        // Four updates of two shapes: two statements enter the cache.
        let cached = entering_cache(&mut c, |c| {
            assert_eq!(
                set(c, Box::new(pets::id.eq(1)), Some("x"), None),
                vec![(1, "x".into(), 1)]
            );
            assert_eq!(
                set(c, Box::new(pets::id.eq(2)), Some("y"), None),
                vec![(2, "y".into(), 2)]
            );
            assert_eq!(
                set(c, Box::new(pets::id.eq(3)), Some("z"), Some(9)),
                vec![(3, "z".into(), 9)]
            );
            assert_eq!(set(c, Box::new(pets::id.eq(9)), Some("z"), Some(9)), vec![]);
        });
        assert_eq!(cached, 2);
        let rows: Vec<(i32, String, i32)> = pets::table.order(pets::id).load(&mut c).unwrap();
        assert_eq!(
            rows,
            vec![(1, "x".into(), 1), (2, "y".into(), 2), (3, "z".into(), 9)]
        );
        // Diesel's own UPDATE is never cached.
        let plain = entering_cache(&mut c, |c| {
            diesel::update(pets::table.filter(pets::id.eq(1)))
                .set(pets::name.eq("w"))
                .execute(c)
                .unwrap();
        });
        assert_eq!(plain, 0);
    }

    #[test]
    fn a_condition_unsafe_to_cache_keeps_the_statement_out() {
        let mut c = conn();
        let cached = entering_cache(&mut c, |c| {
            for ids in [vec![1], vec![1, 2], vec![1, 2, 3]] {
                let n = ids.len();
                assert_eq!(
                    set(c, Box::new(pets::id.eq_any(ids)), None, Some(0)).len(),
                    n
                );
            }
        });
        assert_eq!(cached, 0);
    }

    #[test]
    fn an_empty_changeset_is_an_error() {
        let mut c = conn();
        let q = Update::new(
            pets::table,
            (None::<diesel::dsl::Eq<pets::name, String>>,).as_changeset(),
            pets::id.eq(1),
            pets::id,
        );
        assert!(q.load::<i32>(&mut c).is_err());
    }
}
