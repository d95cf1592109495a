//! Member rules ([`Expr::update_members`](crate::perms::Expr::update_members),
//! [`Expr::create_members`](crate::perms::Expr::create_members)) judged for one write: which
//! of the members it sends the caller may send. An update's rules become conditions of its own
//! statement (judged on the stored row); a create's are judged on the row as created, in the
//! write's transaction. A refusal names the members.

use crate::condition::{Cond, Condition, Op};
use crate::crud::relations::rules;
use crate::crud::request::Caller;
use crate::crud::rules::expr::Folded;
use crate::crud::rules::sent::sent_arg;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use actix_web::HttpRequest;
use serde_json::{Map, Value};

/// What the member rules ask of one write: a condition per rule its body touches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Members {
    checks: Vec<Check>,
}

/// One member rule a write touches: the members it sent and what the row must satisfy.
#[derive(Debug, Clone)]
struct Check {
    names: Vec<&'static str>,
    cond: Condition,
}

impl Members {
    /// What the member rules of `R` ask of an update (`create`: a create) by `who` sending
    /// `sent`. Nothing for administrators and public operations; a rule that no row can
    /// satisfy refuses the write at once.
    ///
    /// # Errors
    ///
    /// 401 (anonymous) or 403 naming the members a rule refuses whatever the row.
    pub(crate) fn judge<R: Resource>(
        rules_of: &dyn crate::perms::Rules<R>,
        req: &HttpRequest,
        who: &Caller,
        sent: &Map<String, Value>,
        create: bool,
    ) -> Result<Members, Error> {
        let Caller::User(user) = who else {
            return Ok(Members::default());
        };
        let Some(expr) = rules_of.as_expr() else {
            return Ok(Members::default());
        };
        let compiled = expr.compiled::<R>();
        let Ok(compiled) = &*compiled else {
            // The mount refuses rules that do not compile.
            return Err(Error::Internal("the rules do not compile".into()));
        };
        let user = user.as_ref();
        let mut checks = Vec::new();
        for m in compiled.members.iter().filter(|m| m.create == create) {
            let names: Vec<&'static str> = m
                .fields
                .iter()
                .filter(|f| sent.contains_key(f.name))
                .map(|f| f.name)
                .collect();
            if names.is_empty() {
                continue;
            }
            // An update may send a member back unchanged whatever the rule says.
            let unchanged = if create {
                None
            } else {
                unchanged(&m.fields, sent)
            };
            let cond = match (m.rule.fold_sent(user, Some(sent)), unchanged) {
                (Folded::True, _) => continue,
                (Folded::False, None) => return Err(refusal::<R>(user.is_none(), &names, create)),
                (Folded::False, Some(same)) => same,
                (Folded::Rows(c), same) => {
                    let c = rules::link::<R>(req, c, user, 0);
                    match same {
                        Some(same) => Condition::Any(vec![c, same]),
                        None => c,
                    }
                }
            };
            checks.push(Check { names, cond });
        }
        Ok(Members { checks })
    }

    /// Whether no rule asks anything of the write.
    pub(crate) fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// `conds` narrowed to the rows whose members the write may change.
    pub(crate) fn narrow(&self, conds: Condition) -> Condition {
        self.checks
            .iter()
            .fold(conds, |c, check| c.and(check.cond.clone()))
    }

    /// Why an update of the row `addressed` finds (the caller's scope in it) matched no row,
    /// when the member rules are why: 403 (401 anonymous) naming the members refused. `None`
    /// when the row itself is out of reach or every rule holds.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub(crate) async fn refused<R: Resource>(
        &self,
        conn: &mut Conn,
        addressed: &Condition,
        anonymous: bool,
    ) -> Result<Option<Error>, Error> {
        if self.checks.is_empty() || R::count(conn, addressed).await? == 0 {
            return Ok(None);
        }
        let mut names = Vec::new();
        for check in &self.checks {
            let held = addressed.clone().and(check.cond.clone());
            if R::count(conn, &held).await? == 0 {
                names.extend(check.names.iter().copied());
            }
        }
        Ok((!names.is_empty()).then(|| refusal::<R>(anonymous, &names, false)))
    }

    /// After a create: refuses `row` when a member rule the create touched does not hold on
    /// it (403, 401 anonymous, naming the members).
    ///
    /// # Errors
    ///
    /// The refusal; database errors.
    pub(crate) async fn check_created<R: Resource>(
        &self,
        conn: &mut Conn,
        anonymous: bool,
        row: &R,
    ) -> Result<(), Error> {
        if self.checks.is_empty() {
            return Ok(());
        }
        let this = Condition::from(super::after::by_id(row)?);
        let mut names = Vec::new();
        for check in &self.checks {
            if R::count(conn, &this.clone().and(check.cond.clone())).await? == 0 {
                names.extend(check.names.iter().copied());
            }
        }
        if names.is_empty() {
            Ok(())
        } else {
            Err(refusal::<R>(anonymous, &names, true))
        }
    }
}

/// That every member of `fields` the write sends keeps its stored value; `None` when one of
/// them cannot be compared (a JSON member, a value of the wrong type).
fn unchanged(
    fields: &[&'static crate::field::FieldInfo],
    sent: &Map<String, Value>,
) -> Option<Condition> {
    let mut same = Vec::new();
    for f in fields {
        let Some(v) = sent.get(f.name) else {
            continue;
        };
        if !f.filterable || f.kind == crate::field::Kind::Json {
            return None;
        }
        let cond = if v.is_null() {
            Cond {
                field: f.name,
                op: Op::IsNull,
                arg: crate::condition::Arg::Bool(true),
                param: f.name.to_owned(),
            }
        } else {
            Cond::eq(f.name, sent_arg(f.kind, v)?)
        };
        same.push(Condition::Is(cond));
    }
    Some(Condition::All(same))
}

/// 401 (anonymous) or 403 naming the members a rule refused.
fn refusal<R: Resource>(anonymous: bool, names: &[&str], create: bool) -> Error {
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let verb = if create { "set" } else { "change" };
    let why = format!(
        "You may not {verb} {list} of this {}; nothing was written.",
        R::NAME
    );
    if anonymous {
        Error::Unauthorized(why.into())
    } else {
        Error::Forbidden(why.into())
    }
}
