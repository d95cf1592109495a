//! The condition nodes only generated code builds and walks: a condition across a relation
//! ([`Related`], [`Reach`], [`Link`]), the borrowed view generated queries walk ([`Node`]) and
//! the query builder they implement ([`Builder`]). Public only through `crudforge::__private`.

use super::{Arg, Cond, Condition, Op};
use crate::error::Error;

/// A condition across a declared relation: the related rows' own condition, and what the
/// node asks of them ([`Reach`]). The list parameters produce it unlinked; the handler links
/// it (the tables and keys) and ANDs the related resource's read scope into `cond`, so no
/// relation reaches rows the caller could not read. A node that was never linked matches no
/// row.
#[derive(Debug, Clone, PartialEq)]
#[doc(hidden)]
pub struct Related {
    /// The relation's name, as clients write it (`habitat`).
    pub name: &'static str,
    /// What the node asks.
    pub reach: Reach,
    /// The related rows' condition.
    pub cond: Box<Condition>,
    /// The tables and keys, once the handler has linked the node.
    pub link: Option<Link>,
}

/// What a [`Related`] node asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum Reach {
    /// The rows with a related row that matches (`EXISTS`).
    Exists,
    /// Every row: the node only carries the related rows a sort by a related field may look
    /// at (their read scope).
    Order,
    /// The first `n` rows of each value of the link's outer key, in the default order
    /// (`created_at`, then id): the bound of a has-many expansion.
    FirstPerKey(u32),
}

/// The SQL of a related resource's condition on one backend, from its generated queries.
#[doc(hidden)]
pub type WhereFn<DB> =
    fn(
        &Condition,
    ) -> Result<Option<Box<dyn diesel::query_builder::QueryFragment<DB> + Send>>, Error>;

/// How a [`Related`] node's rows link to the outer rows: `outer.outer_key = table.key`.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub struct Link {
    /// The outer table's column.
    pub outer_key: &'static str,
    /// The related table's name in SQL.
    pub table: &'static str,
    /// The related table's column.
    pub key: &'static str,
    /// The related condition's SQL on SQLite.
    #[cfg(feature = "sqlite")]
    pub sqlite: WhereFn<diesel::sqlite::Sqlite>,
    /// The related condition's SQL on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub pg: WhereFn<diesel::pg::Pg>,
}

impl Related {
    /// An unlinked node of the related condition `cond` on relation `name`, as the list
    /// parameters' parsers write it (`habitat.name=Savanna`).
    pub(crate) fn pending(name: &'static str, cond: Condition) -> Condition {
        Condition::Related(Related {
            name,
            reach: Reach::Exists,
            cond: Box::new(cond),
            link: None,
        })
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("outer_key", &self.outer_key)
            .field("table", &self.table)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Link {
    fn eq(&self, other: &Self) -> bool {
        (self.outer_key, self.table, self.key) == (other.outer_key, other.table, other.key)
    }
}

/// A borrowed view of conditions, as generated queries walk them.
#[derive(Debug, Clone, Copy)]
#[doc(hidden)]
pub enum Node<'a> {
    /// Comparisons combined with AND.
    All(&'a [Cond]),
    /// A tree.
    Tree(&'a Condition),
}

impl Node<'_> {
    /// Whether every row the conditions match has `field` NULL: their top-level conjunction
    /// holds `field IS NULL` (as a soft-delete resource's live rows do for `deleted_at`).
    /// PostgreSQL's planner does not count such a test as an equality when it matches an
    /// index's order to the `ORDER BY`, so generated queries add the column to the order.
    #[doc(hidden)]
    #[must_use]
    pub fn pins_null(self, field: &str) -> bool {
        fn is_null(c: &Cond, field: &str) -> bool {
            c.field == field && c.op == Op::IsNull && c.arg == Arg::Bool(true)
        }
        fn tree(t: &Condition, field: &str) -> bool {
            match t {
                Condition::Is(c) => is_null(c, field),
                Condition::All(list) => list.iter().any(|c| tree(c, field)),
                _ => false,
            }
        }
        match self {
            Node::All(list) => list.iter().any(|c| is_null(c, field)),
            Node::Tree(t) => tree(t, field),
        }
    }
}

/// How a query builder combines expressions of type `E`; generated queries implement it for
/// their backend's boxed expression, and [`Builder::build`] walks a condition with it. Only
/// generated code implements it (through `crudforge::__private`).
#[doc(hidden)]
pub trait Builder {
    /// The SQL expression.
    type Expr;
    /// The expression of one comparison.
    ///
    /// # Errors
    ///
    /// The comparison does not apply to its field (a 400 naming the parameter).
    fn leaf(&self, c: &Cond) -> Result<Self::Expr, Error>;
    /// `a AND b`.
    fn and(&self, a: Self::Expr, b: Self::Expr) -> Self::Expr;
    /// `a OR b`.
    fn or(&self, a: Self::Expr, b: Self::Expr) -> Self::Expr;
    /// `NOT a`.
    fn not(&self, a: Self::Expr) -> Self::Expr;
    /// An expression no row matches.
    fn never(&self) -> Self::Expr;

    /// The expression of a condition across a relation; `None` when it matches every row.
    /// Refused unless the builder supports relations (the derive's does).
    ///
    /// # Errors
    ///
    /// A 400 naming the relation.
    fn related(&self, r: &Related) -> Result<Option<Self::Expr>, Error> {
        Err(Error::bad_param(
            r.name,
            "conditions across a relation are not supported here",
        ))
    }

    /// The expression of `conds`; `None` when they match every row.
    ///
    /// # Errors
    ///
    /// A comparison does not apply to its field.
    fn build(&self, conds: Node<'_>) -> Result<Option<Self::Expr>, Error> {
        match conds {
            Node::All(list) => {
                let mut acc = None;
                for c in list {
                    let e = self.leaf(c)?;
                    acc = Some(match acc {
                        None => e,
                        Some(a) => self.and(a, e),
                    });
                }
                Ok(acc)
            }
            Node::Tree(t) => self.tree(t),
        }
    }

    /// The expression of a tree; `None` when it matches every row.
    ///
    /// # Errors
    ///
    /// A comparison does not apply to its field.
    fn tree(&self, t: &Condition) -> Result<Option<Self::Expr>, Error> {
        Ok(match t {
            Condition::Is(c) => Some(self.leaf(c)?),
            Condition::All(list) => {
                let mut acc = None;
                for c in list {
                    if let Some(e) = self.tree(c)? {
                        acc = Some(match acc {
                            None => e,
                            Some(a) => self.and(a, e),
                        });
                    }
                }
                acc
            }
            Condition::Any(list) => {
                let mut acc = None;
                for c in list {
                    // One branch that matches everything makes the whole OR match everything.
                    let Some(e) = self.tree(c)? else {
                        return Ok(None);
                    };
                    acc = Some(match acc {
                        None => e,
                        Some(a) => self.or(a, e),
                    });
                }
                Some(acc.unwrap_or_else(|| self.never()))
            }
            Condition::Not(inner) => match self.tree(inner)? {
                Some(e) => Some(self.not(e)),
                None => Some(self.never()),
            },
            Condition::Related(r) => self.related(r)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null(field: &'static str, yes: bool) -> Cond {
        Cond {
            field,
            op: Op::IsNull,
            arg: Arg::Bool(yes),
            param: format!("{field}__isnull"),
        }
    }

    #[test]
    fn only_a_conjunction_pins_a_column_to_null() {
        let live = null("deleted_at", true);
        let other = Cond::eq("species", Arg::Text("cat".into()));
        assert!(Node::All(&[other.clone(), live.clone()]).pins_null("deleted_at"));
        assert!(!Node::All(std::slice::from_ref(&other)).pins_null("deleted_at"));
        assert!(!Node::All(&[null("deleted_at", false)]).pins_null("deleted_at"));
        assert!(!Node::All(std::slice::from_ref(&live)).pins_null("vet_notes"));
        let nested = Condition::All(vec![
            Condition::Is(other.clone()),
            Condition::All(vec![Condition::Is(live.clone())]),
        ]);
        assert!(Node::Tree(&nested).pins_null("deleted_at"));
        // In one branch of an OR, or negated, it pins nothing.
        let either = Condition::Any(vec![Condition::Is(live.clone()), Condition::Is(other)]);
        assert!(!Node::Tree(&either).pins_null("deleted_at"));
        let not = Condition::Not(Box::new(Condition::Is(live)));
        assert!(!Node::Tree(&not).pins_null("deleted_at"));
    }
}
