//! Named filters: conditions a resource declares once (`#[resource(scope(overdue = "due_date <
//! now and returned_at is null"))]`) and clients ask for by name (`?scope=overdue`). Each is
//! written in the `filter` expression grammar, checked against the resource's fields when its
//! blueprint is mounted, and evaluated again at every request, so `now` and `today` are the
//! server's clock at that request. The handler ANDs them with the rules' scope and the
//! client's other filters.

use crate::condition::Condition;
use crate::crud::query::filter_expr::{parse_filter_expr, ExprLimits};
use crate::crud::query::Params;
use crate::crud::Resource;
use crate::error::Error;

/// The name of the list parameter.
pub(crate) const PARAM: &str = "scope";

/// A declared expression is the resource's own: checked with generous limits.
const DECLARED: ExprLimits = ExprLimits {
    max_length: 100_000,
    max_depth: 64,
};

/// Checks every named filter `R` declares: a name is used once and its expression parses
/// against `R`'s filterable fields. What a mount refuses to start with.
///
/// # Errors
///
/// Why a declaration is wrong, naming the resource and the filter.
pub(crate) fn check_declared<R: Resource>() -> Result<(), String> {
    for (i, (name, expr)) in R::SCOPES.iter().enumerate() {
        if R::SCOPES[..i].iter().any(|(n, _)| n == name) {
            return Err(format!(
                "{}: the named filter `{name}` is declared twice",
                R::NAME
            ));
        }
        parse_filter_expr(R::FIELDS, expr, DECLARED).map_err(|e| {
            format!(
                "{}: the named filter `{name}` (`{expr}`) is not a valid filter expression: {}",
                R::NAME,
                e.problem().detail
            )
        })?;
    }
    Ok(())
}

/// The named filters the query parameters ask for (`scope=a,b`, or the parameter repeated),
/// ANDed, with `now` and `today` read from the clock now; `None` when they ask for none.
///
/// # Errors
///
/// A 400 naming `scope` and the unknown name (with the names `R` declares).
pub(crate) fn requested<R: Resource>(params: &Params) -> Result<Option<Condition>, Error> {
    let mut out: Option<Condition> = None;
    if let Some(value) = params.get(PARAM) {
        for name in value.split(',').map(str::trim) {
            let Some((_, expr)) = R::SCOPES.iter().find(|(n, _)| *n == name) else {
                let known: Vec<String> = R::SCOPES.iter().map(|(n, _)| format!("`{n}`")).collect();
                return Err(Error::bad_param(
                    PARAM,
                    format!(
                        "unknown named filter `{name}`; {} declares {}",
                        R::NAME,
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            };
            // Checked when the blueprint was mounted; parsed again for today's clock.
            let c = parse_filter_expr(R::FIELDS, expr, DECLARED)?;
            out = Some(match out {
                Some(prev) => prev.and(Condition::All(vec![c])),
                None => Condition::All(vec![c]),
            });
        }
    }
    Ok(out)
}
