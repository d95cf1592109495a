//! Permission rules written as expressions ([`Expr`]): each expression parsed once per
//! resource against its fields and relations into a template, which each request fills with
//! its caller (`@me`, `@role`, ...) and folds into the [`Access`] the rules' users expect.

use super::sent::{sent_arg, sent_holds, Sent};
use crate::auth::CurrentUser;
use crate::condition::{Arg, Cond, Condition, Op, Related};
use crate::crud::query::filter_expr::{
    parse_member_rule, parse_rule, CallerTerm, ExprLimits, Tree,
};
use crate::crud::{FieldInfo, Resource};
use crate::error::Error;
use crate::perms::{Access, Expr, Rules};
use serde_json::{Map, Value};
use std::any::TypeId;
use std::sync::Arc;

/// A rule's template: the parsed expression, its caller terms still open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rule {
    All(Vec<Rule>),
    Any(Vec<Rule>),
    Not(Box<Rule>),
    Is(Cond),
    Related(&'static str, Box<Rule>),
    Caller(CallerTerm),
}

impl Tree for Rule {
    fn all(v: Vec<Self>) -> Self {
        Rule::All(v)
    }
    fn any(v: Vec<Self>) -> Self {
        Rule::Any(v)
    }
    fn not(c: Self) -> Self {
        Rule::Not(Box::new(c))
    }
    fn is(c: Cond) -> Self {
        Rule::Is(c)
    }
    fn related(rel: &'static str, c: Self) -> Self {
        Rule::Related(rel, Box::new(c))
    }
    fn caller(t: CallerTerm) -> Option<Self> {
        Some(Rule::Caller(t))
    }
}

/// A rule filled with a caller: true or false for every row, or a condition on the rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Folded {
    True,
    False,
    Rows(Condition),
}

impl Rule {
    /// The rule for `user` (`None`: anonymous), its constant parts folded away.
    pub(crate) fn fold(&self, user: Option<&CurrentUser>) -> Folded {
        self.fold_sent(user, None)
    }

    /// The rule for `user` and the members a write sends (`sent`, for a member rule's
    /// `@new.member`), its constant parts folded away.
    pub(crate) fn fold_sent(&self, user: Option<&CurrentUser>, sent: Sent<'_>) -> Folded {
        match self {
            Rule::Is(c) => Folded::Rows(Condition::Is(c.clone())),
            Rule::Caller(t) => term(t, user, sent),
            Rule::All(v) => {
                let mut out = Vec::with_capacity(v.len());
                for r in v {
                    match r.fold_sent(user, sent) {
                        Folded::False => return Folded::False,
                        Folded::True => {}
                        Folded::Rows(c) => out.push(c),
                    }
                }
                match out.len() {
                    0 => Folded::True,
                    1 => Folded::Rows(out.remove(0)),
                    _ => Folded::Rows(Condition::All(out)),
                }
            }
            Rule::Any(v) => {
                let mut out = Vec::with_capacity(v.len());
                for r in v {
                    match r.fold_sent(user, sent) {
                        Folded::True => return Folded::True,
                        Folded::False => {}
                        Folded::Rows(c) => out.push(c),
                    }
                }
                match out.len() {
                    0 => Folded::False,
                    1 => Folded::Rows(out.remove(0)),
                    _ => Folded::Rows(Condition::Any(out)),
                }
            }
            Rule::Not(inner) => match inner.fold_sent(user, sent) {
                Folded::True => Folded::False,
                Folded::False => Folded::True,
                Folded::Rows(c) => Folded::Rows(Condition::Not(Box::new(c))),
            },
            Rule::Related(name, inner) => match inner.fold_sent(user, sent) {
                // No related row can match.
                Folded::False => Folded::False,
                // A related row the caller may read.
                Folded::True => Folded::Rows(Related::pending(name, Condition::always())),
                Folded::Rows(c) => Folded::Rows(Related::pending(name, c)),
            },
        }
    }

    /// Adds the roles the rule names (`@role = 'X'`, `@domains('X')`) to `out`, once each.
    pub(crate) fn roles(&self, out: &mut Vec<String>) {
        match self {
            Rule::All(v) | Rule::Any(v) => v.iter().for_each(|r| r.roles(out)),
            Rule::Not(r) | Rule::Related(_, r) => r.roles(out),
            Rule::Caller(
                CallerTerm::Role(names)
                | CallerTerm::Domains {
                    roles: Some(names), ..
                },
            ) => {
                for n in names {
                    if !out.contains(n) {
                        out.push(n.clone());
                    }
                }
            }
            Rule::Is(_) | Rule::Caller(_) => {}
        }
    }

    /// The rule for `user` as an [`Access`]: a rule false for every row refuses the caller.
    pub(crate) fn access(&self, user: Option<&CurrentUser>) -> Access {
        match self.fold(user) {
            Folded::True => Access::All,
            Folded::Rows(c) => Access::Rows(c),
            Folded::False if user.is_none() => Access::Unauthenticated,
            Folded::False => Access::Forbidden,
        }
    }
}

/// A caller term for `user` and the members a write sends.
fn term(t: &CallerTerm, user: Option<&CurrentUser>, sent: Sent<'_>) -> Folded {
    let truth = |b: bool| if b { Folded::True } else { Folded::False };
    match (t, user) {
        (CallerTerm::Const(b), _) => truth(*b),
        (
            CallerTerm::Sent {
                field,
                kind,
                op,
                arg,
            },
            _,
        ) => match sent.and_then(|m| m.get(*field)) {
            // Left out: the stored value stays, and the rule compares it.
            None => Folded::Rows(Condition::Is(Cond {
                field,
                op: *op,
                arg: arg.clone(),
                param: (*field).to_owned(),
            })),
            Some(v) => truth(sent_holds(*kind, v, *op, arg)),
        },
        (CallerTerm::Against { field, kind, op }, _) => {
            match sent.and_then(|m| m.get(*field)) {
                // Left out: the member compared with itself.
                None => truth(matches!(op, Op::Eq | Op::Gte | Op::Lte)),
                Some(v) => match sent_arg(*kind, v) {
                    Some(arg) => Folded::Rows(Condition::Is(Cond {
                        field,
                        op: *op,
                        arg,
                        param: (*field).to_owned(),
                    })),
                    // A comparison with null holds for no row, as in SQL.
                    None => Folded::False,
                },
            }
        }
        (
            CallerTerm::Clock {
                field,
                kind,
                op,
                word,
            },
            _,
        ) => match crate::crud::query::clock::value_of(word, *kind) {
            Some(arg) => Folded::Rows(Condition::Is(Cond {
                field,
                op: *op,
                arg,
                param: crate::crud::query::clock::param_of(word),
            })),
            None => Folded::False,
        },
        (CallerTerm::SignedIn, u) => truth(u.is_some()),
        (CallerTerm::Admin, u) => truth(u.is_some_and(CurrentUser::is_admin)),
        (CallerTerm::SecondFactor, u) => truth(u.is_some_and(|u| u.second_factor)),
        (CallerTerm::Role(names), u) => {
            truth(u.is_some_and(|u| names.iter().any(|n| u.has_role(n, None))))
        }
        (CallerTerm::Me { .. } | CallerTerm::Domains { .. }, None) => Folded::False,
        (CallerTerm::Me { field, eq }, Some(u)) => Folded::Rows(Condition::Is(Cond {
            field,
            op: if *eq { Op::Eq } else { Op::Ne },
            arg: Arg::Uuid(u.id),
            param: (*field).to_owned(),
        })),
        (
            CallerTerm::Domains {
                field,
                nullable,
                roles,
            },
            Some(u),
        ) => {
            let grants = u
                .roles
                .iter()
                .filter(|g| roles.as_ref().is_none_or(|r| r.contains(&g.role)));
            let mut domains: Vec<Arg> = Vec::new();
            for g in grants {
                match g.domain_id {
                    Some(d) if !domains.contains(&Arg::Uuid(d)) => domains.push(Arg::Uuid(d)),
                    Some(_) => {}
                    // A named role granted without a domain holds in every domain: every row
                    // with one (a null domain is in no list).
                    None if roles.is_some() && !nullable => return Folded::True,
                    None if roles.is_some() => {
                        return Folded::Rows(Condition::Is(Cond {
                            field,
                            op: Op::IsNull,
                            arg: Arg::Bool(false),
                            param: (*field).to_owned(),
                        }))
                    }
                    // Plain `@domains` lists the domains named by grants.
                    None => {}
                }
            }
            if domains.is_empty() {
                return Folded::False;
            }
            Folded::Rows(Condition::Is(Cond {
                field,
                op: Op::In,
                arg: Arg::List(domains),
                param: (*field).to_owned(),
            }))
        }
    }
}

/// The expressions of an [`Expr`], compiled for one resource (`None`: the kind's default).
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    read: Option<Rule>,
    update: Option<Rule>,
    delete: Option<Rule>,
    create: Option<Rule>,
    /// The member rules.
    pub(crate) members: Vec<Member>,
}

/// A member rule compiled for one resource.
#[derive(Debug)]
pub(crate) struct Member {
    /// A create rule, or an update rule.
    pub(crate) create: bool,
    /// The members it governs.
    pub(crate) fields: Vec<&'static FieldInfo>,
    /// The rule.
    pub(crate) rule: Rule,
}

/// The relations a dotted path crosses from `R` (`critter.habitat.keeper_id`), the last one's
/// fields and the member.
fn resolve<R: Resource>(path: &str) -> Option<(Vec<&'static str>, &'static [FieldInfo], String)> {
    let (rels, member) = path.rsplit_once('.')?;
    let mut relations = R::RELATIONS;
    let mut names = Vec::new();
    let mut fields = R::FIELDS;
    for name in rels.split('.') {
        let r = relations.iter().find(|r| r.name == name)?;
        let t = (r.target)();
        names.push(r.name);
        relations = t.relations;
        fields = t.fields;
    }
    Some((names, fields, member.to_owned()))
}

/// Compiles one expression for `R`, or says what is wrong with it.
pub(crate) fn compile<R: Resource>(kind: &str, src: &str) -> Result<Rule, String> {
    parse_rule::<Rule>(R::FIELDS, &resolve::<R>, src, ExprLimits::default())
        .map_err(|e| problem::<R>(kind, src, e))
}

/// What is wrong with the `kind` rule `src` of `R`, as the mount says it.
fn problem<R: Resource>(kind: &str, src: &str, e: Error) -> String {
    let detail = match e {
        Error::BadRequest { detail, .. } => detail.to_string(),
        other => other.to_string(),
    };
    let detail = detail
        .strip_prefix(&format!(
            "Invalid `{}`: ",
            crate::crud::query::filter_expr::PARAM
        ))
        .unwrap_or(&detail)
        .to_owned();
    format!(
        "the `{kind}` rule of {} ({src:?}), {detail}\nhelp: a rule compares {}'s filterable \
         fields, or a related resource's through declared relations (`relation.field = @me`), \
         with values, `now` and the caller's values ({})",
        R::NAME,
        R::NAME,
        crudforge_core::expr::caller_values_list()
    )
}

/// Compiles one member rule for `R`, or says what is wrong with it.
fn compile_member<R: Resource>(m: &crate::perms::MemberRule) -> Result<Member, String> {
    let kind = m.kind();
    let mut fields = Vec::with_capacity(m.members.len());
    if m.members.is_empty() {
        return Err(format!(
            "the `{kind}` rule of {} names no member\nhelp: name the members it governs",
            R::NAME
        ));
    }
    for name in &m.members {
        let field = R::FIELDS
            .iter()
            .find(|f| f.name == name.as_str() && f.name != R::ID_FIELD)
            .ok_or_else(|| {
                format!(
                    "the `{kind}` rule of {}: `{name}` is not a member a write may send\nhelp: \
                     the members are {}",
                    R::NAME,
                    R::FIELDS
                        .iter()
                        .filter(|f| f.name != R::ID_FIELD)
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        fields.push(field);
    }
    let rule = parse_member_rule::<Rule>(R::FIELDS, &resolve::<R>, &m.expr, ExprLimits::default())
        .map_err(|e| problem::<R>(&kind, &m.expr, e))?;
    Ok(Member {
        create: m.create,
        fields,
        rule,
    })
}

/// An [`Expr`] compiled for one resource, or what is wrong with it.
type Kept = Result<Compiled, Vec<String>>;

impl Expr {
    /// The compiled expressions for `R`: kept from the first use, compiled anew when this
    /// `Expr` serves another type too.
    pub(crate) fn compiled<R: Resource>(&self) -> Arc<Kept> {
        let make = || -> Kept {
            let mut problems = Vec::new();
            let mut one = |kind: &str, src: &Option<String>| match src.as_deref() {
                None => None,
                Some(s) => compile::<R>(kind, s).map_err(|e| problems.push(e)).ok(),
            };
            let mut c = Compiled {
                read: one("read", &self.read),
                update: one("update", &self.update),
                delete: one("delete", &self.delete),
                create: one("create", &self.create),
                members: Vec::new(),
            };
            for m in &self.members {
                match compile_member::<R>(m) {
                    Ok(m) => c.members.push(m),
                    Err(e) => problems.push(e),
                }
            }
            if problems.is_empty() {
                Ok(c)
            } else {
                Err(problems)
            }
        };
        let id = TypeId::of::<R>();
        let kept = self.compiled.get_or_init(|| {
            let stored: Arc<dyn std::any::Any + Send + Sync> = Arc::new(make());
            (id, stored)
        });
        if kept.0 == id {
            if let Ok(found) = Arc::clone(&kept.1).downcast::<Kept>() {
                return found;
            }
        }
        Arc::new(make())
    }

    /// The access `pick` gives from the compiled rules for `user`; the default (signed in)
    /// for a kind left out; nothing when the expressions do not compile for `R` (the mount
    /// refuses them first).
    fn access<R: Resource>(
        &self,
        user: Option<&CurrentUser>,
        pick: impl FnOnce(&Compiled) -> Option<&Rule>,
    ) -> Access {
        match &*self.compiled::<R>() {
            Ok(c) => match pick(c) {
                Some(rule) => rule.access(user),
                None => Access::authenticated(user),
            },
            Err(_) => Access::Forbidden,
        }
    }
}

impl<R: Resource> Rules<R> for Expr {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        self.access::<R>(user, |c| c.read.as_ref())
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        self.access::<R>(user, |c| c.update.as_ref())
    }

    fn delete(&self, user: Option<&CurrentUser>) -> Access {
        self.access::<R>(user, |c| c.delete.as_ref())
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let _ = body;
        // Administrators pass every rule (the create handler lets a create rule's 403 bind
        // them, for hand-written privilege rules).
        if user.is_some_and(CurrentUser::is_admin) {
            return Ok(());
        }
        self.access::<R>(user, |c| c.create.as_ref())
            .into_conds()
            .map(|_| ())
    }

    fn created(&self, user: Option<&CurrentUser>) -> Access {
        match self.access::<R>(user, |c| c.create.as_ref()) {
            // `create` refused these callers already.
            Access::Unauthenticated | Access::Forbidden => Access::All,
            rows => rows,
        }
    }

    fn problems(&self) -> Vec<String> {
        match &*self.compiled::<R>() {
            Ok(_) => Vec::new(),
            Err(problems) => problems.clone(),
        }
    }

    fn roles_named(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Ok(c) = &*self.compiled::<R>() {
            for rule in [&c.read, &c.update, &c.delete, &c.create]
                .into_iter()
                .flatten()
                .chain(c.members.iter().map(|m| &m.rule))
            {
                rule.roles(&mut out);
            }
        }
        out
    }

    fn as_expr(&self) -> Option<&Expr> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::RoleGrant;
    use crate::field::Kind;
    use crate::perms::{
        AdminOnly, DefaultRules, Open, OwnerRules, PublicRead, PublicReadAdminWrite,
    };

    static FIELDS: &[FieldInfo] = &[
        FieldInfo::new("owner_id", Kind::Uuid),
        FieldInfo::new("domain_id", Kind::Uuid).nullable(),
        FieldInfo::new("published", Kind::Bool),
        FieldInfo::new("seat", Kind::Integer),
        FieldInfo::new("starts_at", Kind::DateTime),
        FieldInfo::new("day", Kind::Date),
    ];

    /// `now` and `today` in a rule are read each time the rule is judged, not once when it
    /// is compiled (rules are compiled once per resource and kept).
    #[test]
    fn the_clock_in_a_rule_is_read_when_it_is_judged() {
        let compiled = rule("starts_at > now and day >= today and seat > 0");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let judged_after = chrono::Utc::now();
        let Folded::Rows(Condition::All(parts)) = compiled.fold(None) else {
            panic!("a condition on the rows")
        };
        let Condition::Is(starts) = &parts[0] else {
            panic!("a comparison: {parts:?}")
        };
        let Arg::DateTime(at) = starts.arg else {
            panic!("a date-time: {starts:?}")
        };
        assert!(
            at >= judged_after,
            "`now` was read at {at}, before {judged_after}"
        );
        assert_eq!(starts.op, Op::Gt);
        let Condition::Is(day) = &parts[1] else {
            panic!("a comparison: {parts:?}")
        };
        assert_eq!(day.arg, Arg::Date(chrono::Utc::now().date_naive()));
        // A literal stays a literal.
        let Condition::Is(seat) = &parts[2] else {
            panic!("a comparison: {parts:?}")
        };
        assert_eq!(seat.arg, Arg::Int(0));
    }

    fn rule(src: &str) -> Rule {
        parse_rule::<Rule>(FIELDS, &|_| None, src, ExprLimits::default()).unwrap()
    }

    fn user(roles: &[(&str, Option<uuid::Uuid>)]) -> CurrentUser {
        CurrentUser {
            id: uuid::Uuid::new_v4(),
            email: "u@example.com".into(),
            is_enabled: true,
            second_factor: false,
            roles: roles
                .iter()
                .map(|(r, d)| RoleGrant {
                    role: (*r).to_owned(),
                    domain_id: *d,
                })
                .collect(),
        }
    }

    /// What a stock rule set gives for each kind, next to the expressions said to be its
    /// equivalent (docs/auth.md lists them), for anonymous, signed-in and administrator
    /// callers.
    #[test]
    fn stock_rule_sets_are_these_expressions() {
        type R = ();
        let callers = [None, Some(user(&[])), Some(user(&[("ADMIN", None)]))];
        let same = |name: &str, rules: &dyn Rules<R>, read: &str, write: &str, create: &str| {
            for u in &callers {
                let u = u.as_ref();
                assert_eq!(rules.read(u), rule(read).access(u), "{name} read {u:?}");
                assert_eq!(rules.write(u), rule(write).access(u), "{name} write {u:?}");
                assert_eq!(
                    rules.delete(u),
                    rule(write).access(u),
                    "{name} delete {u:?}"
                );
                let allowed = rules.create(u, &mut Map::new()).map_err(|e| e.to_string());
                let expected = rule(create).access(u).into_conds().map(|_| ());
                assert_eq!(
                    allowed,
                    expected.map_err(|e| e.to_string()),
                    "{name} create"
                );
            }
        };
        same(
            "DefaultRules",
            &DefaultRules,
            "@signed_in",
            "@signed_in",
            "@signed_in",
        );
        same("Open", &Open, "true", "true", "true");
        same(
            "PublicRead",
            &PublicRead,
            "true",
            "@signed_in",
            "@signed_in",
        );
        same(
            "PublicReadAdminWrite",
            &PublicReadAdminWrite,
            "true",
            "@admin",
            "@admin",
        );
        same("AdminOnly", &AdminOnly, "@admin", "@admin", "@admin");
        // OwnerRules also fills the owner on create, which an expression does not.
        let owner = OwnerRules::new("owner_id");
        for u in &callers {
            let u = u.as_ref();
            let r = rule("owner_id = @me").access(u);
            assert_eq!(Rules::<R>::read(&owner, u), r);
            assert_eq!(Rules::<R>::write(&owner, u), r);
        }
    }

    /// A member rule's `@new.member`: the sent value, or the stored one when the write leaves
    /// the member out; null compares as in SQL.
    #[test]
    fn member_rules_read_what_the_write_sends() {
        let rule = |src: &str| {
            parse_member_rule::<Rule>(FIELDS, &|_| None, src, ExprLimits::default()).unwrap()
        };
        let fold = |r: &Rule, body: Value| r.fold_sent(None, Some(body.as_object().unwrap()));
        let seat = |op: Op, n: i64| {
            Folded::Rows(Condition::Is(Cond {
                field: "seat",
                op,
                arg: Arg::Int(n),
                param: "seat".to_owned(),
            }))
        };
        // A sent value against a literal: true or false now; left out, the stored value.
        let r = rule("@new.seat > 2");
        assert_eq!(fold(&r, serde_json::json!({"seat": 3})), Folded::True);
        assert_eq!(fold(&r, serde_json::json!({"seat": 2})), Folded::False);
        assert_eq!(fold(&r, serde_json::json!({"seat": null})), Folded::False);
        assert_eq!(fold(&r, serde_json::json!({})), seat(Op::Gt, 2));
        let r = rule("@new.seat in (1, 5)");
        assert_eq!(fold(&r, serde_json::json!({"seat": 5})), Folded::True);
        assert_eq!(fold(&r, serde_json::json!({"seat": 4})), Folded::False);
        let r = rule("@new.domain_id is null");
        assert_eq!(
            fold(&r, serde_json::json!({"domain_id": null})),
            Folded::True
        );
        let d = uuid::Uuid::new_v4().to_string();
        assert_eq!(
            fold(&r, serde_json::json!({ "domain_id": d })),
            Folded::False
        );
        let r = rule("@new.day >= '2026-01-01' and @new.published = true");
        assert_eq!(
            fold(
                &r,
                serde_json::json!({"day": "2026-03-01", "published": true})
            ),
            Folded::True
        );
        assert_eq!(
            fold(
                &r,
                serde_json::json!({"day": "2025-12-31", "published": true})
            ),
            Folded::False
        );
        // The stored value against the sent one: a condition on the row; left out, the member
        // compared with itself.
        let r = rule("seat <= @new.seat");
        assert_eq!(fold(&r, serde_json::json!({"seat": 7})), seat(Op::Lte, 7));
        assert_eq!(fold(&r, serde_json::json!({})), Folded::True);
        assert_eq!(fold(&r, serde_json::json!({"seat": null})), Folded::False);
        assert_eq!(
            fold(&rule("seat < @new.seat"), serde_json::json!({})),
            Folded::False
        );
        // Not in row rules.
        let e = parse_rule::<Rule>(FIELDS, &|_| None, "@new.seat > 2", ExprLimits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("belongs to member rules"), "{e}");
        // Ordered only where the server and the database order alike.
        let e = parse_member_rule::<Rule>(
            FIELDS,
            &|_| None,
            "owner_id = @new.seat",
            ExprLimits::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("compared with `seat` itself"), "{e}");
    }

    #[test]
    fn callers_fold_into_the_rule() {
        let anon = None;
        let plain = user(&[]);
        let d = uuid::Uuid::new_v4();
        let editor = user(&[("EDITOR", Some(d))]);
        // A branch without the caller lets anonymous callers in; without one they get 401,
        // and signed-in callers for whom the rule is false everywhere 403.
        let r = rule("published = true or owner_id = @me");
        assert!(matches!(r.access(anon), Access::Rows(Condition::Is(_))));
        assert!(matches!(
            r.access(Some(&plain)),
            Access::Rows(Condition::Any(_))
        ));
        assert_eq!(rule("owner_id = @me").access(anon), Access::Unauthenticated);
        assert_eq!(
            rule("owner_id != @me").access(anon),
            Access::Unauthenticated
        );
        let r = rule("@role = 'EDITOR' and seat > 2");
        assert_eq!(r.access(Some(&plain)), Access::Forbidden);
        assert!(matches!(
            r.access(Some(&editor)),
            Access::Rows(Condition::Is(_))
        ));
        assert_eq!(
            rule("@role != 'EDITOR'").access(Some(&editor)),
            Access::Forbidden
        );
        assert_eq!(
            rule("@role in ('X', 'EDITOR')").access(Some(&editor)),
            Access::All
        );
        assert_eq!(rule("not @signed_in").access(anon), Access::All);
        assert_eq!(
            rule("@admin or false").access(Some(&plain)),
            Access::Forbidden
        );
        // `@domains`: the domains of the caller's roles; none matches no row.
        match rule("domain_id in @domains").access(Some(&editor)) {
            Access::Rows(Condition::Is(c)) => assert_eq!(c.arg, Arg::List(vec![Arg::Uuid(d)])),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rule("domain_id in @domains").access(Some(&plain)),
            Access::Forbidden
        );
    }

    /// `@domains('ROLE', ...)`: the domains in which the caller holds one of the roles; a
    /// role granted without a domain holds in every domain (every row with one).
    #[test]
    fn domains_of_named_roles() {
        let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let editor_a_viewer_b = user(&[("EDITOR", Some(a)), ("VIEWER", Some(b))]);
        let domains_in = |src: &str, u: &CurrentUser| match rule(src).access(Some(u)) {
            Access::Rows(Condition::Is(c)) => c.arg,
            other => panic!("{src}: {other:?}"),
        };
        // The plain form lists every domain the caller holds a role in: the pitfall.
        assert_eq!(
            domains_in("domain_id in @domains", &editor_a_viewer_b),
            Arg::List(vec![Arg::Uuid(a), Arg::Uuid(b)])
        );
        assert_eq!(
            domains_in("domain_id in @domains('EDITOR')", &editor_a_viewer_b),
            Arg::List(vec![Arg::Uuid(a)])
        );
        assert_eq!(
            domains_in(
                "domain_id in @domains('OWNER', 'VIEWER')",
                &editor_a_viewer_b
            ),
            Arg::List(vec![Arg::Uuid(b)])
        );
        // Holding none of the roles anywhere: no row.
        assert_eq!(
            rule("domain_id in @domains('OWNER')").access(Some(&editor_a_viewer_b)),
            Access::Forbidden
        );
        assert_eq!(
            rule("domain_id in @domains('EDITOR')").access(None),
            Access::Unauthenticated
        );
        // A grant without a domain: every domain, so every row with a domain (nullable
        // `domain_id`), while plain `@domains` ignores it as before.
        let global = user(&[("EDITOR", None)]);
        match rule("domain_id in @domains('EDITOR')").access(Some(&global)) {
            Access::Rows(Condition::Is(c)) => {
                assert_eq!(
                    (c.field, c.op, c.arg),
                    ("domain_id", Op::IsNull, Arg::Bool(false))
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rule("domain_id in @domains").access(Some(&global)),
            Access::Forbidden
        );
        // A domain member that is never null: every row.
        static NOT_NULL: &[FieldInfo] = &[FieldInfo::new("domain_id", Kind::Uuid)];
        let r = parse_rule::<Rule>(
            NOT_NULL,
            &|_| None,
            "domain_id in @domains('EDITOR')",
            ExprLimits::default(),
        )
        .unwrap();
        assert_eq!(r.access(Some(&global)), Access::All);
    }

    #[test]
    fn mistakes_say_what_and_where() {
        for (src, want) in [
            ("seat = @me", "`@me` is a UUID"),
            ("seat > @me", "compared with `=` or `!=`"),
            ("owner_id = @domains", "compared with `@me`"),
            ("owner_id in @me", "`in` takes a list or `@domains`"),
            ("domain_id in @domains()", "expected a quoted role name"),
            ("domain_id in @domains('A' 'B')", "expected `,` or `)`"),
            ("domain_id in @domains(A)", "expected a quoted role name"),
            ("@me = owner_id", "`@me` is a value"),
            ("@role > 'A'", "after `@role`"),
            ("@role = EDITOR", "a quoted role name"),
            ("nope = 1", "`nope` is not a filterable field"),
        ] {
            let e = parse_rule::<Rule>(FIELDS, &|_| None, src, ExprLimits::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{src}: {e}");
        }
        // The `filter` parameter has no caller.
        let e = crate::crud::query::filter_expr::parse_filter_expr(
            FIELDS,
            "owner_id = @me",
            ExprLimits::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("belong to permission rules"), "{e}");
    }
}
