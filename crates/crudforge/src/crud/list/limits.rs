//! Caps on what a list request may carry: the number of filters and the number of values of
//! one `__in` filter (past the database's bind-parameter limit a query would fail), each
//! answered with a 400 naming the cap.

use crate::condition::{Arg, Cond, Condition};
use crate::config::Config;
use crate::crud::query::ListQuery;
use crate::error::Error;

/// The caps of list requests (`MAX_FILTERS`, `MAX_IN_VALUES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListCaps {
    /// Most filters in one request.
    pub(crate) max_filters: usize,
    /// Most values in one `__in` filter.
    pub(crate) max_in_values: usize,
}

impl ListCaps {
    /// The caps a configuration sets (`MAX_FILTERS`, `MAX_IN_VALUES`).
    pub(crate) fn of(config: &Config) -> Self {
        ListCaps {
            max_filters: config.list.max_filters as usize,
            max_in_values: config.list.max_in_values as usize,
        }
    }

    /// Checks a parsed list query against the caps.
    ///
    /// # Errors
    ///
    /// 400 naming `MAX_FILTERS` (parameter `query`) or `MAX_IN_VALUES` (the `__in` parameter).
    pub(crate) fn check(&self, q: &ListQuery) -> Result<(), Error> {
        // The comparisons of a `filter` expression count as filters too.
        let mut leaves: Vec<&Cond> = q.conds.iter().collect();
        if let Some(tree) = &q.filter {
            collect(tree, &mut leaves);
        }
        if leaves.len() > self.max_filters {
            return Err(Error::bad_param(
                "query",
                format!(
                    "{} filters given; at most {} are accepted (MAX_FILTERS)",
                    leaves.len(),
                    self.max_filters
                ),
            ));
        }
        for c in leaves {
            if let Arg::List(values) = &c.arg {
                if values.len() > self.max_in_values {
                    return Err(Error::bad_param(
                        &c.param,
                        format!(
                            "{} values given; at most {} are accepted (MAX_IN_VALUES)",
                            values.len(),
                            self.max_in_values
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The comparisons of a condition tree.
fn collect<'a>(c: &'a Condition, out: &mut Vec<&'a Cond>) {
    match c {
        Condition::Is(c) => out.push(c),
        Condition::All(v) | Condition::Any(v) => v.iter().for_each(|c| collect(c, out)),
        Condition::Not(c) => collect(c, out),
        Condition::Related(r) => collect(&r.cond, out),
    }
}

#[cfg(test)]
mod tests {
    use crate::condition::{Arg, Cond, Op};
    use crate::crud::ListCaps;
    use crate::crud::ListQuery;

    #[test]
    fn caps() {
        let caps = ListCaps {
            max_filters: 2,
            max_in_values: 3,
        };
        let list = |n: usize| Cond {
            field: "x",
            op: Op::In,
            arg: Arg::List((0..n as i64).map(Arg::Int).collect()),
            param: "x__in".into(),
        };
        let q = |conds| ListQuery {
            page: 1,
            page_size: 25,
            sort: vec![],
            conds,
            filter: None,
            cursor: None,
            count: Default::default(),
            fields: None,
            search: None,
        };
        assert!(caps.check(&q(vec![list(3), list(1)])).is_ok());
        let e = caps.check(&q(vec![list(4)])).unwrap_err();
        assert!(e.problem().detail.contains("MAX_IN_VALUES"));
        let e = caps.check(&q(vec![list(1), list(1), list(1)])).unwrap_err();
        assert!(e.problem().detail.contains("MAX_FILTERS"));
    }
}
