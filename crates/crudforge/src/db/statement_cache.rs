//! Admission to the prepared-statement cache: bounds the statements a client can make every
//! pooled connection keep.
//!
//! Diesel keeps each statement it is allowed to cache for the life of the connection, and
//! never evicts one. Static queries are a fixed set, but list queries and PATCHes are written
//! per request: each combination of query-parameter filters, sorts, `filter` expression and
//! members present is its own SQL text, so without a bound a client could grow every
//! connection's cache (and, on PostgreSQL, the server's prepared statements) by one statement
//! per request. Such queries therefore carry a [`Shape`]: a fingerprint, keyed at random per
//! process, of their structure (the table, the statement, the tree of comparisons with their
//! fields and operators, the sort keys), not of their values. The process caches at most
//! [`MAX_SHAPES`] shapes of at most [`MAX_CACHED_TERMS`] terms, the first it sees; a query of
//! any other shape runs [`Cached`] with caching off, as a one-off statement that is prepared,
//! run and finalized. That costs a parse and a plan, but no memory that lasts. Every such query
//! is counted in the metric `crudforge_db_uncached_statements_total`.

use crate::condition::{Arg, Cond, Condition, Node, Sort};
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};
use std::collections::HashSet;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher, RandomState};
use std::sync::{LazyLock, PoisonError, RwLock};

/// The fingerprints' keys, drawn at random once per process: a client cannot search for
/// shapes whose fingerprints collide with admitted ones (each such shape would be cached too).
static KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// How many distinct shapes of per-request queries the process lets connections cache.
pub const MAX_SHAPES: usize = 256;

/// The most terms (comparisons and sort keys) a shape may have and still be cached: larger
/// statements are rare, and the largest to keep.
pub(crate) const MAX_CACHED_TERMS: usize = 16;

/// The structure of a query written per request, as a fingerprint: two queries with the same
/// shape have the same SQL text, whatever values they bind.
#[derive(Debug, Clone)]
pub struct Shape {
    hasher: DefaultHasher,
    terms: usize,
}

impl Shape {
    /// The shape of statement `statement` (`"select"`, `"count"`, `"update"`…) on `table`.
    pub fn new(table: &str, statement: &str) -> Shape {
        let mut hasher = KEYS.build_hasher();
        table.hash(&mut hasher);
        statement.hash(&mut hasher);
        Shape { hasher, terms: 0 }
    }

    /// Adds the query's conditions.
    #[must_use]
    pub fn conditions(mut self, node: Node<'_>) -> Shape {
        match node {
            // Hashed as the tree it stands for, so both forms of one condition agree.
            Node::All(conds) => {
                self.mark(b'&', conds.len());
                for c in conds {
                    self.leaf(c);
                }
            }
            Node::Tree(tree) => self.tree(tree),
        }
        self
    }

    /// Adds the query's sort keys.
    #[must_use]
    pub fn sort(mut self, sort: &[Sort]) -> Shape {
        self.mark(b's', sort.len());
        for s in sort {
            s.field.hash(&mut self.hasher);
            s.desc.hash(&mut self.hasher);
        }
        self.terms += sort.len();
        self
    }

    /// Adds a part of the statement that is present or not (a `LIMIT`, a member to set).
    #[must_use]
    pub fn part(mut self, present: bool) -> Shape {
        present.hash(&mut self.hasher);
        self
    }

    /// Whether a query of this shape may enter the connection's statement cache (see the
    /// module's documentation); a refusal is counted in the metrics.
    pub fn admit(self) -> bool {
        let admitted = ADMITTED.admit(self.hasher.finish(), self.terms);
        if !admitted {
            crate::metrics::global().statement_uncached();
        }
        admitted
    }

    fn mark(&mut self, tag: u8, len: usize) {
        tag.hash(&mut self.hasher);
        len.hash(&mut self.hasher);
    }

    fn tree(&mut self, c: &Condition) {
        match c {
            Condition::All(v) => self.group(b'&', v),
            Condition::Any(v) => self.group(b'|', v),
            Condition::Not(inner) => {
                self.mark(b'!', 1);
                self.tree(inner);
            }
            Condition::Is(cond) => self.leaf(cond),
            Condition::Related(r) => {
                self.mark(b'.', 1);
                r.name.hash(&mut self.hasher);
                format!("{:?}", r.reach).hash(&mut self.hasher);
                self.tree(&r.cond);
            }
        }
    }

    fn group(&mut self, tag: u8, members: &[Condition]) {
        self.mark(tag, members.len());
        for c in members {
            self.tree(c);
        }
    }

    fn leaf(&mut self, c: &Cond) {
        self.mark(b'=', 1);
        c.field.hash(&mut self.hasher);
        c.op.hash(&mut self.hasher);
        // What of a value can change the SQL text: its kind, whether a null test is `IS NULL`
        // or `IS NOT NULL`, and how many placeholders a list takes.
        std::mem::discriminant(&c.arg).hash(&mut self.hasher);
        match &c.arg {
            Arg::Bool(b) => b.hash(&mut self.hasher),
            Arg::List(items) => items.len().hash(&mut self.hasher),
            _ => {}
        }
        self.terms += 1;
    }
}

/// The shapes admitted so far, up to a number.
#[derive(Debug)]
pub(crate) struct Admission {
    admitted: RwLock<HashSet<u64>>,
    capacity: usize,
    max_terms: usize,
}

static ADMITTED: LazyLock<Admission> =
    LazyLock::new(|| Admission::new(MAX_SHAPES, MAX_CACHED_TERMS));

impl Admission {
    /// Admits at most `capacity` shapes of at most `max_terms` terms.
    pub(crate) fn new(capacity: usize, max_terms: usize) -> Admission {
        Admission {
            admitted: RwLock::default(),
            capacity,
            max_terms,
        }
    }

    /// Whether the shape with fingerprint `shape` and `terms` terms is (now) admitted: it was
    /// before, or it is small enough and there is room for it.
    pub(crate) fn admit(&self, shape: u64, terms: usize) -> bool {
        if terms > self.max_terms {
            return false;
        }
        // A panic elsewhere cannot leave the set half-written: inserting is its only change.
        {
            let set = self.admitted.read().unwrap_or_else(PoisonError::into_inner);
            if set.contains(&shape) {
                return true;
            }
            // Once full, a refusal needs only the shared lock.
            if set.len() >= self.capacity {
                return false;
            }
        }
        let mut set = self
            .admitted
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if set.len() < self.capacity {
            set.insert(shape);
            return true;
        }
        set.contains(&shape)
    }

    /// How many shapes are admitted.
    #[cfg(all(test, feature = "sqlite"))]
    pub(crate) fn len(&self) -> usize {
        self.admitted
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no shape is admitted yet.
    #[cfg(all(test, feature = "sqlite"))]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A query that enters the statement cache only when `keep` is true (and every part of it is
/// safe to cache); otherwise it runs as a one-off statement.
#[derive(Debug, Clone, Copy)]
pub struct Cached<Q> {
    query: Q,
    keep: bool,
}

impl<Q> Cached<Q> {
    /// `query`, cached only if `keep` (usually [`Shape::admit`]).
    pub fn new(query: Q, keep: bool) -> Self {
        Cached { query, keep }
    }
}

impl<Q: QueryFragment<DB>, DB: Backend> QueryFragment<DB> for Cached<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if !self.keep {
            out.unsafe_to_cache_prepared();
        }
        self.query.walk_ast(out.reborrow())
    }
}

/// No static id: the cache finds the statement by its SQL text (and bind types).
impl<Q> QueryId for Cached<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, C> RunQueryDsl<C> for Cached<Q> {}

#[cfg(test)]
#[cfg(feature = "sqlite")]
mod tests {
    use super::*;
    use crate::condition::Op;
    use diesel::connection::{Connection, InstrumentationEvent, SimpleConnection};
    use diesel::sqlite::SqliteConnection;
    use diesel::{ExpressionMethods, QueryDsl};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn cond(field: &'static str, op: Op, arg: Arg) -> Cond {
        Cond {
            field,
            op,
            arg,
            param: field.to_owned(),
        }
    }

    fn fingerprint(shape: Shape) -> u64 {
        shape.hasher.finish()
    }

    fn of(conds: &Condition, sort: &[Sort]) -> u64 {
        fingerprint(
            Shape::new("pets", "select")
                .conditions(Node::Tree(conds))
                .sort(sort)
                .part(true),
        )
    }

    #[test]
    fn a_shape_is_the_structure_not_the_values() {
        let a = Condition::from(vec![
            cond("name", Op::Eq, Arg::Text("a".into())),
            cond("age", Op::Gt, Arg::Int(1)),
        ]);
        let same = Condition::from(vec![
            cond("name", Op::Eq, Arg::Text("something else".into())),
            cond("age", Op::Gt, Arg::Int(99)),
        ]);
        assert_eq!(of(&a, &[]), of(&same, &[]));
        // Both forms of the same comparisons agree.
        let flat = [
            cond("name", Op::Eq, Arg::Text("a".into())),
            cond("age", Op::Gt, Arg::Int(1)),
        ];
        assert_eq!(
            fingerprint(
                Shape::new("pets", "select")
                    .conditions(Node::All(&flat))
                    .sort(&[])
                    .part(true)
            ),
            of(&a, &[])
        );

        let others = [
            Condition::from(vec![
                cond("name", Op::Eq, Arg::Text("a".into())),
                cond("age", Op::Gte, Arg::Int(1)),
            ]),
            Condition::from(vec![
                cond("nick", Op::Eq, Arg::Text("a".into())),
                cond("age", Op::Gt, Arg::Int(1)),
            ]),
            Condition::Any(vec![
                cond("name", Op::Eq, Arg::Text("a".into())).into(),
                cond("age", Op::Gt, Arg::Int(1)).into(),
            ]),
            Condition::Not(Box::new(a.clone())),
            Condition::from(vec![cond("name", Op::Eq, Arg::Text("a".into()))]),
            Condition::from(vec![cond("nick", Op::IsNull, Arg::Bool(true))]),
            Condition::from(vec![cond("nick", Op::IsNull, Arg::Bool(false))]),
            Condition::from(vec![cond("age", Op::In, Arg::List(vec![Arg::Int(1)]))]),
            Condition::from(vec![cond(
                "age",
                Op::In,
                Arg::List(vec![Arg::Int(1), Arg::Int(2)]),
            )]),
        ];
        let mut seen: HashSet<u64> = HashSet::from([of(&a, &[])]);
        for c in &others {
            assert!(seen.insert(of(c, &[])), "{c:?} collides");
        }
        let by_name = [Sort {
            field: "name",
            desc: false,
        }];
        let by_name_desc = [Sort {
            field: "name",
            desc: true,
        }];
        assert!(seen.insert(of(&a, &by_name)));
        assert!(seen.insert(of(&a, &by_name_desc)));
        let other_table = Shape::new("owners", "select")
            .conditions(Node::Tree(&a))
            .sort(&[])
            .part(true);
        assert!(seen.insert(fingerprint(other_table)));
        let count = Shape::new("pets", "count").conditions(Node::Tree(&a));
        assert!(seen.insert(fingerprint(count)));
        let no_limit = Shape::new("pets", "select")
            .conditions(Node::Tree(&a))
            .sort(&[])
            .part(false);
        assert!(seen.insert(fingerprint(no_limit)));
    }

    #[test]
    fn admission_stops_at_its_capacity_and_keeps_what_it_admitted() {
        let admission = Admission::new(3, 4);
        assert!(admission.is_empty());
        assert!(admission.admit(1, 1));
        assert!(admission.admit(2, 4));
        assert!(admission.admit(3, 0));
        assert!(!admission.admit(4, 1), "over capacity");
        assert!(admission.admit(2, 4), "admitted before");
        assert_eq!(admission.len(), 3);
        let wide = Admission::new(10, 4);
        assert!(!wide.admit(5, 5), "too many terms");
        assert!(wide.is_empty());
    }

    diesel::table! {
        pets (id) {
            id -> Integer,
            age -> Integer,
        }
    }

    #[test]
    fn only_kept_queries_enter_the_cache_and_both_kinds_answer() {
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        c.batch_execute(
            "CREATE TABLE pets (id INTEGER PRIMARY KEY, age INTEGER NOT NULL);
             INSERT INTO pets VALUES (1, 1), (2, 2), (3, 3);",
        )
        .unwrap();
        let entered = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&entered);
        c.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { .. } = event {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        let older = |keep: bool, age: i32, c: &mut SqliteConnection| -> Vec<i32> {
            let q = pets::table
                .select(pets::id)
                .filter(pets::age.gt(age))
                .order(pets::id)
                .into_boxed();
            Cached::new(q, keep).load(c).unwrap()
        };
        assert_eq!(older(false, 1, &mut c), vec![2, 3]);
        assert_eq!(older(false, 2, &mut c), vec![3]);
        assert_eq!(entered.load(Ordering::SeqCst), 0, "one-off statements");
        assert_eq!(older(true, 0, &mut c), vec![1, 2, 3]);
        assert_eq!(older(true, 2, &mut c), vec![3]);
        assert_eq!(entered.load(Ordering::SeqCst), 1, "one statement, reused");
        // A part unsafe to cache keeps the statement out even when kept.
        let q = pets::table
            .select(pets::id)
            .filter(pets::id.eq_any(vec![1, 3]))
            .order(pets::id)
            .into_boxed();
        assert_eq!(
            Cached::new(q, true).load::<i32>(&mut c).unwrap(),
            vec![1, 3]
        );
        assert_eq!(entered.load(Ordering::SeqCst), 1);
    }
}
