//! Who may call each generated operation, as the description tells it: the "Who may call"
//! sentence (read from the operation's options and from the rule objects themselves), the
//! `x-admin-only` and `x-public` marks, the 401/403/409 answers that follow, and the security
//! requirement.

use crate::crud::limits::Limited;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::rules::door::Gate;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::reference_or::ReferenceOr;
use apistos::security::SecurityRequirement;
use std::collections::BTreeMap;

/// Who may call the operation, as the description tells it: the `x-admin-only` and
/// `x-public` marks, the 401/403/409 answers that follow from the rules, and the security
/// requirement (optional when the rules let anonymous callers in).
pub(crate) fn callers<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) -> Callers {
    callers_with(doc, op, o, m, None, Limited::Operation(op), responses)
}

/// [`callers`] of a door that follows operation `op` (the export, the import, aggregates, the
/// feed, downloads), with the door's own access (`CrudBlueprint::door`) told too.
pub(crate) fn callers_at<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    door: Door,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) -> Callers {
    callers_with(
        doc,
        op,
        o,
        m,
        m.shared.gates.get(door),
        Limited::Door(door),
        responses,
    )
}

/// What [`callers`] gives an operation's description: its extensions (`x-admin-only`,
/// `x-public`), its "Who may call" sentence and its security requirement.
pub(crate) type Callers = (
    apistos::IndexMap<String, serde_json::Value>,
    Option<String>,
    Option<Vec<SecurityRequirement>>,
);

fn callers_with<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    gate: Option<&Gate>,
    limited: Limited,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) -> Callers {
    let shared = &m.shared;
    let mut extensions = apistos::IndexMap::new();
    let mut description = Some(who_may_call(op, o, shared.rules.as_ref(), gate));
    crate::crud::limits::document(
        doc,
        &shared.limits,
        limited,
        &mut description,
        &mut extensions,
        responses,
    );
    // A gate judges callers even where the operation is public.
    let public = o.public && gate.is_none();
    let admin_only = o.admin_only || matches!(gate, Some(Gate::Admins));
    if admin_only {
        responses.extend([
            problem_response(doc, StatusCode::UNAUTHORIZED),
            problem_response(doc, StatusCode::FORBIDDEN),
        ]);
        extensions.insert("x-admin-only".to_owned(), serde_json::Value::Bool(true));
    }
    // Rules that let anonymous callers in (a public-read resource, `Open`) make the token
    // optional rather than required.
    let anonymous_ok = !admin_only
        && gate.is_none_or(|g| lets_in(g.access(None)))
        && (o.public
            || match op {
                Operation::Index | Operation::Get => lets_in(shared.rules.read(None)),
                Operation::Patch | Operation::Restore => lets_in(shared.rules.write(None)),
                Operation::Delete => lets_in(shared.rules.delete(None)),
                Operation::Post => shared
                    .rules
                    .create(None, &mut serde_json::Map::new())
                    .is_ok(),
            });
    if public {
        extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
    } else {
        // Rules, privilege checks and hooks may refuse any signed-in caller (403).
        for status in [StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN] {
            if !responses.contains_key(status.as_str()) {
                let (k, v) = problem_response(doc, status);
                responses.insert(k, v);
            }
        }
    }
    // A write by key refuses a key that matches several rows, and hooks may refuse a write
    // that conflicts with other rows (409).
    if matches!(
        op,
        Operation::Patch | Operation::Delete | Operation::Restore
    ) && !responses.contains_key("409")
    {
        let (k, v) = problem_response(doc, StatusCode::CONFLICT);
        responses.insert(k, v);
    }
    let security = if anonymous_ok && !public {
        optional_security()
    } else {
        security(public)
    };
    (extensions, description, security)
}

/// Who may call a generated operation, in words: read from the operation's options and from
/// the very rule objects that decide each request (see [`who_by_rules`]). Members only
/// administrators may send are named too.
fn who_may_call<R: 'static>(
    op: Operation,
    o: &OpOptions<R>,
    rules: &dyn crate::perms::Rules<R>,
    gate: Option<&Gate>,
) -> String {
    let admins_only = o.admin_only || matches!(gate, Some(Gate::Admins));
    let who = if admins_only {
        "administrators only".to_owned()
    } else if o.public {
        // A public operation's rules let everyone in: only a door's gate judges.
        match gate {
            None => "anyone, without a token".to_owned(),
            Some(gate) => who_by_rules::<R>(op, &crate::perms::Open, Some(gate)),
        }
    } else {
        who_by_rules(op, rules, gate)
    };
    let mut text = format!("Who may call: {who}.");
    let mut admin_members: Vec<&str> = Vec::new();
    if matches!(op, Operation::Post | Operation::Patch) {
        admin_members.extend(rules.admin_fields());
    }
    if op == Operation::Patch {
        admin_members.extend(rules.admin_update_fields());
    }
    if !admin_members.is_empty() && !admins_only {
        let names: Vec<String> = admin_members.iter().map(|n| format!("`{n}`")).collect();
        text.push_str(&format!(
            " Only administrators may send {} (others get 403).",
            names.join(", ")
        ));
    }
    if !admins_only {
        text.push_str(&member_rules(op, rules));
    }
    text
}

/// The member rules of `op` (a create's or an update's), in words: each group of members and
/// the expression the server judges it by.
fn member_rules<R: 'static>(op: Operation, rules: &dyn crate::perms::Rules<R>) -> String {
    let create = match op {
        Operation::Post => true,
        Operation::Patch => false,
        _ => return String::new(),
    };
    let Some(expr) = rules.as_expr() else {
        return String::new();
    };
    let clauses: Vec<String> = expr
        .members
        .iter()
        .filter(|m| m.create == create)
        .map(|m| {
            let names: Vec<String> = m.members.iter().map(|n| format!("`{n}`")).collect();
            format!("{} only where `{}`", names.join(", "), m.expr)
        })
        .collect();
    if clauses.is_empty() {
        return String::new();
    }
    let (verb, judged) = if create {
        ("set", "judged on the item as created")
    } else {
        (
            "change",
            "judged on the stored item, `@new.<member>` being the value sent; sending a \
             member's stored value back is always allowed",
        )
    };
    format!(
        " Members with rules of their own ({judged}; administrators pass them, others get 403 \
         naming the member): a caller may {verb} {}.",
        clauses.join("; ")
    )
}

/// Who the rules (and a door's `gate`, on top of them) let call `op`, in words: they are asked
/// about an anonymous caller, a signed-in user without roles, an administrator of one domain
/// and a holder of each role they name (global administrators pass every rule).
fn who_by_rules<R: 'static>(
    op: Operation,
    rules: &dyn crate::perms::Rules<R>,
    gate: Option<&Gate>,
) -> String {
    use crate::auth::{CurrentUser, RoleGrant};
    use crate::perms::Access;
    let user = CurrentUser {
        id: uuid::Uuid::new_v4(),
        email: String::new(),
        is_enabled: true,
        second_factor: false,
        roles: Vec::new(),
    };
    let domain = uuid::Uuid::new_v4();
    // The same caller, with an ADMIN role scoped to one domain.
    let domain_admin = CurrentUser {
        roles: vec![RoleGrant {
            role: "ADMIN".to_owned(),
            domain_id: Some(domain),
        }],
        ..user.clone()
    };
    let probes = Probes {
        caller: user.id,
        domain,
    };
    // A gate's rows narrow what a read door reaches; an import's are what it may create
    // (told with the create rule below).
    let access = |caller: Option<&CurrentUser>| {
        let ruled = access_of(op, rules, caller, domain);
        match gate.map(|g| g.access(caller)) {
            None => ruled,
            Some(Access::Rows(_)) if op == Operation::Post => ruled,
            Some(gated) => both(ruled, gated),
        }
    };
    let rows = |c: &crate::condition::Condition| describe_rows(c, &probes);
    let mut who = match (access(None), access(Some(&user))) {
        (Access::All, _) => "anyone, signed in or not".to_owned(),
        (Access::Rows(c), signed_in) => {
            let mut who = format!("anyone, signed in or not, on the items where {}", rows(&c));
            // What a signed-in caller may do beyond an anonymous one (an `@me` arm).
            match signed_in {
                Access::All => who.push_str("; signed-in users on every item"),
                Access::Rows(u) if u != c => {
                    who.push_str(&format!(
                        "; signed-in users on the items where {}",
                        rows(&u)
                    ));
                }
                _ => {}
            }
            who.push_str("; administrators on every item");
            who
        }
        (_, Access::All) => "any signed-in user".to_owned(),
        (_, Access::Rows(c)) => format!(
            "signed-in users on the items where {}; administrators on every item",
            rows(&c)
        ),
        (_, Access::Forbidden | Access::Unauthenticated) => "administrators only".to_owned(),
    };
    // What a domain's administrator may do beyond a plain user.
    if access(Some(&user)) != access(Some(&domain_admin)) {
        match access(Some(&domain_admin)) {
            Access::All => who.push_str("; also a domain's administrators, in their domain"),
            Access::Rows(c) => who.push_str(&format!(
                "; a domain's administrators on the items where {}",
                rows(&c)
            )),
            Access::Forbidden | Access::Unauthenticated => {}
        }
    }
    // What holding a role the rules (or the gate) name allows beyond a plain user.
    let mut named = rules.roles_named();
    for role in gate.map(Gate::roles).unwrap_or_default() {
        if !named.contains(&role) {
            named.push(role);
        }
    }
    let holders: Vec<(String, CurrentUser)> = named
        .into_iter()
        .map(|role| {
            let holder = CurrentUser {
                roles: vec![RoleGrant {
                    role: role.clone(),
                    domain_id: None,
                }],
                ..user.clone()
            };
            (role, holder)
        })
        .collect();
    let mut by_role = Vec::new();
    for (role, holder) in &holders {
        let theirs = access(Some(holder));
        if theirs == access(Some(&user)) {
            continue;
        }
        match theirs {
            Access::All => by_role.push(format!("holders of the role `{role}` on every item")),
            Access::Rows(c) => by_role.push(format!(
                "holders of the role `{role}` on the items where {}",
                rows(&c)
            )),
            Access::Forbidden | Access::Unauthenticated => {}
        }
    }
    if !by_role.is_empty() {
        if who == "administrators only" {
            "administrators on every item".clone_into(&mut who);
        }
        for clause in by_role {
            who.push_str("; ");
            who.push_str(&clause);
        }
    }
    // What the written row must be, judged on it as stored: the create rule, or an update
    // rule that asks more than the write rule.
    let written = match op {
        Operation::Post => "what it creates must be an item where",
        Operation::Patch | Operation::Restore => "the changed item must be one where",
        Operation::Index | Operation::Get | Operation::Delete => return who,
    };
    let scope = |caller: Option<&CurrentUser>| {
        if !lets_in(access(caller)) {
            return None;
        }
        let scope = if op == Operation::Post {
            match gate.map(|g| g.access(caller)) {
                Some(gated @ Access::Rows(_)) => both(rules.created(caller), gated),
                _ => rules.created(caller),
            }
        } else {
            let updated = rules.updated(caller);
            if updated == rules.write(caller) {
                return None;
            }
            updated
        };
        match scope {
            Access::Rows(c) => Some(c),
            Access::All | Access::Forbidden | Access::Unauthenticated => None,
        }
    };
    match (scope(None), scope(Some(&user))) {
        (Some(a), Some(u)) if a == u => {
            who.push_str(&format!("; for any caller, {written} {}", rows(&u)));
        }
        (a, u) => {
            if let Some(a) = a {
                who.push_str(&format!(
                    "; for an anonymous caller, {written} {}",
                    rows(&a)
                ));
            }
            if let Some(u) = u {
                who.push_str(&format!("; for a signed-in user, {written} {}", rows(&u)));
            }
        }
    }
    let plain = scope(Some(&user));
    for (role, holder) in &holders {
        let theirs = scope(Some(holder));
        if theirs == plain || !lets_in(access(Some(holder))) {
            continue;
        }
        match theirs {
            Some(c) => who.push_str(&format!(
                "; for a holder of the role `{role}`, {written} {}",
                rows(&c)
            )),
            None if op == Operation::Post => {
                who.push_str(&format!(
                    "; a holder of the role `{role}` may create any item"
                ));
            }
            None => who.push_str(&format!(
                "; a holder of the role `{role}` may change the item in any way"
            )),
        }
    }
    who
}

/// What two accesses give together: a refusal of either, or the rows both reach.
fn both(a: crate::perms::Access, b: crate::perms::Access) -> crate::perms::Access {
    use crate::perms::Access;
    match (a, b) {
        (Access::Unauthenticated, _) | (_, Access::Unauthenticated) => Access::Unauthenticated,
        (Access::Forbidden, _) | (_, Access::Forbidden) => Access::Forbidden,
        (Access::All, x) | (x, Access::All) => x,
        (Access::Rows(a), Access::Rows(b)) => Access::Rows(a.and(b)),
    }
}

/// What the rules give `caller` for `op`; a create is probed with a body in `domain`.
fn access_of<R: 'static>(
    op: Operation,
    rules: &dyn crate::perms::Rules<R>,
    caller: Option<&crate::auth::CurrentUser>,
    domain: uuid::Uuid,
) -> crate::perms::Access {
    use crate::perms::Access;
    match op {
        Operation::Index | Operation::Get => rules.read(caller),
        Operation::Patch | Operation::Restore => rules.write(caller),
        Operation::Delete => rules.delete(caller),
        Operation::Post => {
            // A domain's administrator creates in their domain.
            let mut body = serde_json::Map::new();
            body.insert("domain_id".to_owned(), domain.to_string().into());
            match rules.create(caller, &mut body) {
                Err(crate::error::Error::Unauthorized(_)) => Access::Unauthenticated,
                Err(crate::error::Error::Forbidden(_)) => Access::Forbidden,
                // Allowed, or refused only for what the probe's body lacks.
                _ => Access::All,
            }
        }
    }
}

/// The ids the probe callers of [`who_may_call`] carry, read back as words.
struct Probes {
    caller: uuid::Uuid,
    domain: uuid::Uuid,
}

/// A rule's row condition in words, with the probes' ids read as "the caller's id" and "a
/// domain they administer".
fn describe_rows(c: &crate::condition::Condition, probes: &Probes) -> String {
    use crate::condition::{Arg, Condition};
    let join = |parts: &[Condition], word: &str| {
        parts
            .iter()
            .map(|p| describe_rows(p, probes))
            .collect::<Vec<_>>()
            .join(word)
    };
    match c {
        Condition::All(parts) if parts.is_empty() => "every item".to_owned(),
        Condition::Any(parts) if parts.is_empty() => "no item".to_owned(),
        Condition::All(parts) | Condition::Any(parts) if parts.len() == 1 => {
            parts.iter().map(|p| describe_rows(p, probes)).collect()
        }
        Condition::All(parts) => join(parts, " and "),
        Condition::Any(parts) => format!("({})", join(parts, " or ")),
        Condition::Not(inner) => format!("not ({})", describe_rows(inner, probes)),
        Condition::Related(r) => match &*r.cond {
            Condition::All(parts) if parts.is_empty() => {
                format!("a `{}` the caller may read", r.name)
            }
            inner => format!(
                "a `{}` the caller may read, of which {}",
                r.name,
                describe_rows(inner, probes)
            ),
        },
        Condition::Is(cond) => {
            let clock = |w: &str| cond.param == crate::crud::query::clock::param_of(w);
            let value = match &cond.arg {
                Arg::DateTime(_) if clock("now") => "the current time".to_owned(),
                Arg::DateTime(_) if clock("today") => "the start of today (UTC)".to_owned(),
                Arg::Date(_) if clock("today") => "today's date".to_owned(),
                Arg::Uuid(u) if *u == probes.caller => "the caller's id".to_owned(),
                Arg::Uuid(u) if *u == probes.domain => "a domain they administer".to_owned(),
                Arg::Text(t) => format!("'{t}'"),
                Arg::Int(n) => n.to_string(),
                Arg::Float(n) => n.to_string(),
                Arg::Bool(b) => b.to_string(),
                Arg::Uuid(u) => u.to_string(),
                Arg::DateTime(t) => t.to_rfc3339(),
                Arg::Date(d) => d.to_string(),
                Arg::List(items) => format!("one of {} values", items.len()),
            };
            // The operator as an expression spells it (`>=` "is at least", not the query
            // parameter `__from` "is on or after (YYYY-MM-DD)").
            let verb = crate::condition::OPERATORS
                .iter()
                .find(|o| o.op == cond.op && !o.expression.is_empty())
                .or_else(|| crate::condition::OPERATORS.iter().find(|o| o.op == cond.op))
                .map_or("is", |o| o.description);
            let verb = if verb == "equals" { "is" } else { verb };
            format!("`{}` {verb} {value}", cond.field)
        }
    }
}

/// Whether the rules let the caller in (on every row or some).
fn lets_in(access: crate::perms::Access) -> bool {
    matches!(
        access,
        crate::perms::Access::All | crate::perms::Access::Rows(_)
    )
}

/// Either no credentials or the bearer token: for operations whose rules admit anonymous
/// callers but treat a token, when one is sent, as who is calling.
fn optional_security() -> Option<Vec<apistos::security::SecurityRequirement>> {
    let mut both = security(false).unwrap_or_default();
    both.insert(0, apistos::security::SecurityRequirement::default());
    Some(both)
}

/// The security requirement of an operation: none for public ones, the bearer token otherwise.
pub(crate) fn security(public: bool) -> Option<Vec<apistos::security::SecurityRequirement>> {
    if public {
        Some(Vec::new())
    } else {
        Some(vec![apistos::security::SecurityRequirement {
            requirements: BTreeMap::from([(crate::openapi::BEARER_SCHEME.to_owned(), Vec::new())]),
        }])
    }
}

#[cfg(test)]
mod who_tests {
    use super::{who_may_call, OpOptions, Operation};
    use crate::auth::CurrentUser;
    use crate::condition::{Arg, Cond, Condition, Related};
    use crate::perms::{
        Access, AdminOnly, DefaultRules, Open, OwnerRules, PublicReadAdminWrite, Rules,
    };

    fn who(op: Operation, o: &OpOptions<()>, rules: &dyn Rules<()>) -> String {
        who_may_call(op, o, rules, None)
    }

    #[test]
    fn the_words_come_from_the_rules_and_options() {
        let plain = OpOptions::<()>::default();
        let said = |op, rules: &dyn Rules<()>| who(op, &plain, rules);
        assert_eq!(
            said(Operation::Get, &DefaultRules),
            "Who may call: any signed-in user."
        );
        assert_eq!(
            said(Operation::Index, &Open),
            "Who may call: anyone, signed in or not."
        );
        assert_eq!(
            said(Operation::Index, &PublicReadAdminWrite),
            "Who may call: anyone, signed in or not."
        );
        assert_eq!(
            said(Operation::Patch, &PublicReadAdminWrite),
            "Who may call: administrators only."
        );
        assert_eq!(
            said(Operation::Post, &AdminOnly),
            "Who may call: administrators only."
        );
        assert_eq!(
            said(Operation::Delete, &OwnerRules::new("owner_id")),
            "Who may call: signed-in users on the items where `owner_id` is the caller's id; \
             administrators on every item."
        );
        // Options come before the rules.
        let admin = OpOptions::<()> {
            admin_only: true,
            ..Default::default()
        };
        assert_eq!(
            who(Operation::Get, &admin, &Open),
            "Who may call: administrators only."
        );
        let public = OpOptions::<()> {
            public: true,
            ..Default::default()
        };
        assert_eq!(
            who(Operation::Post, &public, &AdminOnly),
            "Who may call: anyone, without a token."
        );
    }

    /// Rules as expression rules fold them: `read = "status = 'active' or seller_id = @me or
    /// listing.seller_id = @me"`, `create = "buyer_id = @me and listing.status = 'active'"`.
    struct Expressions;

    fn is(field: &'static str, arg: Arg) -> Condition {
        Condition::Is(Cond::eq(field, arg))
    }

    impl Rules<()> for Expressions {
        fn read(&self, user: Option<&CurrentUser>) -> Access {
            let active = is("status", Arg::Text("active".into()));
            match user {
                None => Access::Rows(active),
                Some(u) => Access::Rows(Condition::Any(vec![
                    active,
                    is("seller_id", Arg::Uuid(u.id)),
                    Related::pending("listing", is("seller_id", Arg::Uuid(u.id))),
                ])),
            }
        }
        fn created(&self, user: Option<&CurrentUser>) -> Access {
            match user {
                None => Access::All,
                Some(u) => Access::Rows(Condition::All(vec![
                    is("buyer_id", Arg::Uuid(u.id)),
                    Related::pending("listing", is("status", Arg::Text("active".into()))),
                ])),
            }
        }
    }

    #[test]
    fn expression_rules_are_told_whole() {
        let plain = OpOptions::<()>::default();
        // What a signed-in caller may read beyond an anonymous one, and a crossing's own
        // condition, are said.
        assert_eq!(
            who(Operation::Index, &plain, &Expressions),
            "Who may call: anyone, signed in or not, on the items where `status` is 'active'; \
             signed-in users on the items where (`status` is 'active' or `seller_id` is the \
             caller's id or a `listing` the caller may read, of which `seller_id` is the \
             caller's id); administrators on every item."
        );
        // The create rule, judged on the stored row, is said with who may call.
        assert_eq!(
            who(Operation::Post, &plain, &Expressions),
            "Who may call: any signed-in user; for a signed-in user, what it creates must be an \
             item where `buyer_id` is the caller's id and a `listing` the caller may read, of \
             which `status` is 'active'."
        );
    }

    #[test]
    fn members_only_administrators_may_send_are_named() {
        struct Guarded;
        impl Rules<()> for Guarded {
            fn admin_fields(&self) -> &[&'static str] {
                &["is_enabled"]
            }
            fn admin_update_fields(&self) -> &[&'static str] {
                &["password"]
            }
        }
        let plain = OpOptions::<()>::default();
        let post = who(Operation::Post, &plain, &Guarded);
        assert!(
            post.ends_with("Only administrators may send `is_enabled` (others get 403)."),
            "{post}"
        );
        let patch = who(Operation::Patch, &plain, &Guarded);
        assert!(
            patch.ends_with(
                "Only administrators may send `is_enabled`, `password` (others get 403)."
            ),
            "{patch}"
        );
        assert!(!who(Operation::Get, &plain, &Guarded).contains("Only administrators"));
    }
}
