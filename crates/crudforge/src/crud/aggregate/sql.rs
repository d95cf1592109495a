//! The SQL of an aggregate and its answer: one statement per request,
//! `SELECT <a JSON array per group> FROM <table> WHERE <the list's condition> GROUP BY <keys>
//! ORDER BY <keys> LIMIT <page + 1> OFFSET <skipped>`, whose condition is written by the
//! resource's own generated code (`Generated::where_sqlite`, `where_pg`), run under
//! `AGGREGATE_TIMEOUT`; then each group's values made what the list would answer for them
//! (booleans, timestamps in the crate's RFC 3339 form, UUIDs).
//!
//! Timestamps are grouped in UTC on both backends: on SQLite, whose stored text is UTC, with
//! `strftime` (a week from its Monday: to the next Sunday, then six days back); on PostgreSQL
//! with `date_trunc` of the value `AT TIME ZONE 'UTC'`, written out with `to_char`, so that the
//! session's time zone cannot change the answer.

use super::{Group, Key, Member, Metric, Spec, Trunc};
use crate::condition::Condition;
use crate::crud::{Kind, Resource};
use crate::db::Conn;
use crate::error::Error;
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::QueryResult;
use serde_json::Value;
use std::time::Duration;

/// How PostgreSQL writes a timestamp (UTC, microseconds, `Z`), read back by chrono.
const PG_TIMESTAMP: &str = "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'";

/// The aggregate statement on backend `DB`.
pub(crate) struct AggregateSql<DB: Backend> {
    /// PostgreSQL's text (else SQLite's).
    pg: bool,
    table: &'static str,
    spec: Spec,
    filter: Option<Box<dyn QueryFragment<DB> + Send>>,
}

impl<DB: Backend> AggregateSql<DB> {
    fn column<'b>(&self, m: Member, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_identifier(self.table)?;
        out.push_sql(".");
        out.push_identifier(m.column)
    }

    /// The expression a group is keyed (and ordered) by.
    fn group_expr<'b>(&self, g: Group, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let Some(trunc) = g.trunc else {
            return self.column(g.member, out);
        };
        if self.pg {
            let unit = match trunc {
                Trunc::Hour => "hour",
                Trunc::Day => "day",
                Trunc::Week => "week",
                Trunc::Month => "month",
            };
            out.push_sql("date_trunc('");
            out.push_sql(unit);
            out.push_sql("', ");
            self.column(g.member, out)?;
            out.push_sql(" AT TIME ZONE 'UTC')");
        } else {
            let format = match trunc {
                Trunc::Hour => "%Y-%m-%dT%H:00:00Z",
                Trunc::Day | Trunc::Week => "%Y-%m-%dT00:00:00Z",
                Trunc::Month => "%Y-%m-01T00:00:00Z",
            };
            out.push_sql("strftime('");
            out.push_sql(format);
            out.push_sql("', ");
            self.column(g.member, out)?;
            if trunc == Trunc::Week {
                out.push_sql(", 'weekday 0', '-6 days'");
            }
            out.push_sql(")");
        }
        Ok(())
    }

    /// The value a group answers with.
    fn group_value<'b>(&self, g: Group, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if !(self.pg && g.member.field.kind == Kind::DateTime) {
            return self.group_expr(g, out);
        }
        out.push_sql("to_char(");
        if g.trunc.is_some() {
            self.group_expr(g, out)?;
        } else {
            self.column(g.member, out)?;
            out.push_sql(" AT TIME ZONE 'UTC'");
        }
        out.push_sql(", ");
        out.push_sql(PG_TIMESTAMP);
        out.push_sql(")");
        Ok(())
    }

    /// The expression of a metric (also what it is ordered by).
    fn metric_expr<'b>(
        &self,
        (m, member): (Metric, Member),
        out: &mut AstPass<'_, 'b, DB>,
    ) -> QueryResult<()> {
        out.push_sql(match m {
            Metric::CountDistinct => "COUNT(DISTINCT ",
            Metric::Sum => "SUM(",
            Metric::Avg => "AVG(",
            Metric::Min => "MIN(",
            Metric::Max => "MAX(",
        });
        self.column(member, out)?;
        out.push_sql(")");
        if self.pg && m == Metric::Avg {
            // `numeric` otherwise, written with every digit.
            out.push_sql("::float8");
        }
        Ok(())
    }

    /// The value a metric answers with.
    fn metric_value<'b>(
        &self,
        metric: (Metric, Member),
        out: &mut AstPass<'_, 'b, DB>,
    ) -> QueryResult<()> {
        if !(self.pg && metric.1.field.kind == Kind::DateTime) {
            return self.metric_expr(metric, out);
        }
        out.push_sql("to_char(");
        self.metric_expr(metric, out)?;
        out.push_sql(" AT TIME ZONE 'UTC', ");
        out.push_sql(PG_TIMESTAMP);
        out.push_sql(")");
        Ok(())
    }

    /// One key of `ORDER BY`: nulls last ascending and first descending, on both backends.
    fn order<'b>(&self, key: Key, desc: bool, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let dir = if desc { " DESC" } else { " ASC" };
        for null in [true, false] {
            if !null {
                out.push_sql(", ");
            }
            out.push_sql("(");
            match key {
                Key::Group(i) => self.group_expr(self.spec.groups[i], out)?,
                Key::Count => out.push_sql("COUNT(*)"),
                Key::Metric(i) => self.metric_expr(self.spec.metrics[i], out)?,
            }
            out.push_sql(if null { ") IS NULL" } else { ")" });
            out.push_sql(dir);
        }
        Ok(())
    }
}

impl<DB: Backend> QueryFragment<DB> for AggregateSql<DB> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.unsafe_to_cache_prepared();
        out.push_sql(if self.pg {
            "SELECT json_build_array("
        } else {
            "SELECT json_array("
        });
        for g in &self.spec.groups {
            self.group_value(*g, &mut out)?;
            out.push_sql(", ");
        }
        out.push_sql("COUNT(*)");
        for m in &self.spec.metrics {
            out.push_sql(", ");
            self.metric_value(*m, &mut out)?;
        }
        out.push_sql(if self.pg { ")::text FROM " } else { ") FROM " });
        out.push_identifier(self.table)?;
        if let Some(filter) = &self.filter {
            out.push_sql(" WHERE (");
            filter.walk_ast(out.reborrow())?;
            out.push_sql(")");
        }
        if !self.spec.groups.is_empty() {
            out.push_sql(" GROUP BY ");
            for (i, g) in self.spec.groups.iter().enumerate() {
                if i > 0 {
                    out.push_sql(", ");
                }
                self.group_expr(*g, &mut out)?;
            }
            // The request's keys first, then every group key, so pages never overlap.
            let mut keys = self.spec.sort.clone();
            for i in 0..self.spec.groups.len() {
                if !keys.iter().any(|(k, _)| *k == Key::Group(i)) {
                    keys.push((Key::Group(i), false));
                }
            }
            out.push_sql(" ORDER BY ");
            for (i, (key, desc)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_sql(", ");
                }
                self.order(key, desc, &mut out)?;
            }
        }
        // One group more than the page tells whether another page follows.
        let offset = i64::from(self.spec.page.saturating_sub(1)) * i64::from(self.spec.page_size);
        out.push_sql(&format!(
            " LIMIT {} OFFSET {offset}",
            i64::from(self.spec.page_size) + 1
        ));
        Ok(())
    }
}

impl<DB: Backend> QueryId for AggregateSql<DB> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB: Backend> Query for AggregateSql<DB> {
    type SqlType = diesel::sql_types::Text;
}

impl<DB: Backend, C> diesel::RunQueryDsl<C> for AggregateSql<DB> {}

/// The 503 of an aggregate stopped at `AGGREGATE_TIMEOUT`; other errors stay.
fn timed_out(e: diesel::result::Error, limit: Duration) -> Error {
    match &e {
        diesel::result::Error::DatabaseError(_, info)
            if crate::dialect::is_statement_timeout(info.message()) =>
        {
            Error::Busy {
                detail: "The aggregate took longer than the service allows (AGGREGATE_TIMEOUT); \
                         narrow it with filters or fewer groups."
                    .into(),
                retry_after: limit.as_secs().max(1),
            }
        }
        _ => Error::Database(e),
    }
}

/// Runs the aggregate of `spec` over the rows of `R` matching `conds`, stopped after `limit`:
/// each group's values, in the order of the answer's keys (the groups, `count`, the metrics).
///
/// # Errors
///
/// A condition that does not apply (400), the 503 of a statement past `limit`, or the
/// database's error.
pub(crate) async fn run<R: Resource>(
    conn: &mut Conn,
    spec: &Spec,
    conds: &Condition,
    limit: Duration,
) -> Result<Vec<Vec<Value>>, Error> {
    let table = R::sql_table();
    let texts: Vec<String> = crate::__by_backend!(*conn, |c| sqlite => {
        let q = AggregateSql::<diesel::sqlite::Sqlite> {
            pg: false,
            table,
            spec: spec.clone(),
            filter: R::where_sqlite(conds)?,
        };
        c.spawn_blocking(move |inner| {
            crate::db::deadline::with_deadline(Some(limit), || {
                diesel::RunQueryDsl::load::<String>(q, inner)
            })
        })
        .await
        .map_err(|e| timed_out(e, limit))?
    }, postgres => {
        let q = AggregateSql::<diesel::pg::Pg> {
            pg: true,
            table,
            spec: spec.clone(),
            filter: R::where_pg(conds)?,
        };
        run_pg(c, q, limit).await?
    });
    texts
        .iter()
        .map(|t| {
            serde_json::from_str::<Vec<Value>>(t)
                .map_err(|e| Error::Internal(format!("reading an aggregate's group: {e}")))
        })
        .collect()
}

/// Runs `q` in a read-only transaction of its own whose `statement_timeout` is `limit`.
#[cfg(feature = "postgres")]
async fn run_pg(
    c: &mut crate::db::PgConn,
    q: AggregateSql<diesel::pg::Pg>,
    limit: Duration,
) -> Result<Vec<String>, Error> {
    use diesel_async::{AnsiTransactionManager, SimpleAsyncConnection, TransactionManager};
    AnsiTransactionManager::begin_transaction_sql(c, "BEGIN READ ONLY").await?;
    let ran = async {
        c.batch_execute(&format!(
            "SET LOCAL statement_timeout = {}",
            limit.as_millis().max(1)
        ))
        .await?;
        diesel_async::RunQueryDsl::load::<String>(q, c).await
    }
    .await;
    match ran {
        Ok(rows) => {
            AnsiTransactionManager::commit_transaction(c).await?;
            Ok(rows)
        }
        Err(e) => {
            if let Err(r) = AnsiTransactionManager::rollback_transaction(c).await {
                tracing::warn!(error = %r, "rollback failed");
            }
            Err(timed_out(e, limit))
        }
    }
}

/// The answer: the page's groups, each an object of its keys, and whether more follow.
///
/// # Errors
///
/// 500 when a group does not have the values its statement writes.
pub(crate) fn answer(spec: &Spec, mut rows: Vec<Vec<Value>>) -> Result<Vec<u8>, Error> {
    let has_more = rows.len() > spec.page_size as usize;
    rows.truncate(spec.page_size as usize);
    let mut out = Vec::with_capacity(64 + rows.len() * 64);
    out.extend_from_slice(b"{\"groups\":[");
    for (n, row) in rows.into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let expected = spec.groups.len() + 1 + spec.metrics.len();
        if row.len() != expected {
            return Err(Error::Internal(format!(
                "an aggregate's group has {} values, not {expected}",
                row.len()
            )));
        }
        let mut values = row.into_iter();
        let mut first = true;
        let mut member = |out: &mut Vec<u8>, key: &str, v: Value| -> Result<(), Error> {
            if !first {
                out.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut *out, key).map_err(|e| Error::Internal(e.to_string()))?;
            out.push(b':');
            serde_json::to_writer(&mut *out, &v).map_err(|e| Error::Internal(e.to_string()))
        };
        out.push(b'{');
        for g in &spec.groups {
            let v = values.next().unwrap_or(Value::Null);
            member(
                &mut out,
                g.member.field.name,
                value_of(g.member.field.kind, v),
            )?;
        }
        member(&mut out, "count", values.next().unwrap_or(Value::Null))?;
        for (i, (m, field)) in spec.metrics.iter().enumerate() {
            let v = values.next().unwrap_or(Value::Null);
            let v = match m {
                Metric::Min | Metric::Max | Metric::Sum => value_of(field.field.kind, v),
                // PostgreSQL writes a whole average without its fraction.
                Metric::Avg => value_of(Kind::Float, v),
                Metric::CountDistinct => v,
            };
            member(&mut out, &spec.metric_key(i), v)?;
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],");
    let tail = serde_json::json!({
        "page": spec.page,
        "page_size": spec.page_size,
        "has_more": has_more,
    });
    let tail = serde_json::to_vec(&tail).map_err(|e| Error::Internal(e.to_string()))?;
    // `{"page":...}` without its opening brace.
    out.extend_from_slice(tail.get(1..).unwrap_or_default());
    Ok(out)
}

/// A member's value as the list answers it: SQLite's 0 and 1 as booleans, timestamps in the
/// crate's RFC 3339 form, UUIDs hyphenated in lower case.
fn value_of(kind: Kind, v: Value) -> Value {
    match (kind, v) {
        // PostgreSQL writes a whole float without its fraction: always a float here.
        (Kind::Float, Value::Number(n)) => n.as_f64().map_or(Value::Number(n), Value::from),
        (Kind::Bool, Value::Number(n)) => Value::Bool(n.as_i64().is_some_and(|n| n != 0)),
        (Kind::DateTime, Value::String(s)) => chrono::DateTime::parse_from_rfc3339(&s)
            .ok()
            .and_then(|t| {
                crate::timestamp::serialize(&t.to_utc(), serde_json::value::Serializer).ok()
            })
            .unwrap_or(Value::String(s)),
        (Kind::Uuid, Value::String(s)) => match uuid::Uuid::parse_str(&s) {
            Ok(u) => Value::String(u.hyphenated().to_string()),
            Err(_) => Value::String(s),
        },
        (_, v) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_out_as_the_list_writes_them() {
        assert_eq!(
            value_of(Kind::Bool, serde_json::json!(1)),
            Value::Bool(true)
        );
        assert_eq!(
            value_of(Kind::Bool, serde_json::json!(0)),
            Value::Bool(false)
        );
        assert_eq!(value_of(Kind::Bool, Value::Bool(true)), Value::Bool(true));
        assert_eq!(
            value_of(
                Kind::DateTime,
                serde_json::json!("2026-03-02T10:00:00.000000Z")
            ),
            serde_json::json!("2026-03-02T10:00:00Z")
        );
        assert_eq!(
            value_of(
                Kind::DateTime,
                serde_json::json!("2026-03-02T10:00:00.250000Z")
            ),
            serde_json::json!("2026-03-02T10:00:00.250Z")
        );
        assert_eq!(
            value_of(
                Kind::Uuid,
                serde_json::json!("67E55044-10B1-426F-9247-BB680E5FE0C8")
            ),
            serde_json::json!("67e55044-10b1-426f-9247-bb680e5fe0c8")
        );
        assert_eq!(value_of(Kind::Integer, Value::Null), Value::Null);
        assert_eq!(
            value_of(Kind::Float, serde_json::json!(5)),
            serde_json::json!(5.0)
        );
        assert_eq!(
            value_of(Kind::Integer, serde_json::json!(5)),
            serde_json::json!(5)
        );
    }

    #[test]
    fn a_statement_stopped_at_its_deadline_is_a_503_naming_the_setting() {
        use diesel::result::{DatabaseErrorKind, Error as D};
        let limit = Duration::from_secs(10);
        for message in [
            "interrupted",
            "canceling statement due to statement timeout",
        ] {
            let e = timed_out(
                D::DatabaseError(DatabaseErrorKind::Unknown, Box::new(message.to_owned())),
                limit,
            );
            let p = e.problem();
            assert_eq!(p.status, 503, "{message}");
            assert!(p.detail.contains("AGGREGATE_TIMEOUT"), "{}", p.detail);
        }
        let other = timed_out(D::NotFound, limit);
        assert!(matches!(other, Error::Database(D::NotFound)));
    }
}
