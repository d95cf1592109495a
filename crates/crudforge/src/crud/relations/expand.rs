//! `expand=rel` (and one level of nesting, `rel.sub`): the related items embedded in each
//! item, read with one query per relation whatever the number of items, through the related
//! resource's own read scope and `GET` rendering; `fields=` naming embedded members
//! (`habitat.name`).

use super::{reader, unreadable, Relation, RelationKind, HAS_MANY_EXPAND_MAX, MAX_EXPANSIONS};
use crate::condition::{Arg, Cond, Condition, Link, Op, Reach, Related};
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::rules::read::{self, Viewer};
use crate::crud::view::{embed, View};
use crate::crud::Resource;
use crate::db::{Conn, Database};
use crate::error::Error;
use actix_web::HttpRequest;
use futures_util::future::LocalBoxFuture;
use serde_json::Value;

/// One relation to expand, with the relations of its items to expand in turn.
#[derive(Debug, Clone)]
pub(crate) struct Expand {
    rel: &'static Relation,
    nested: Vec<&'static Relation>,
}

/// What an expansion reads with: the request (its caller) and the database (presenters).
pub(crate) struct Cx<'a> {
    pub(crate) req: &'a HttpRequest,
    pub(crate) db: &'a Database,
}

/// One relation's read: the related items whose field `key` holds one of `keys` (at most
/// `per_key` per value, for a has-many relation), with their own `nested` relations expanded.
pub(crate) struct Load<'a> {
    rel: &'static str,
    key: &'static str,
    keys: Vec<Arg>,
    per_key: Option<u32>,
    nested: &'a [&'static Relation],
    /// The condition that confines the related items to the caller's own, when the key is an
    /// owner's member of the related resource.
    only: Option<Cond>,
}

/// The read of one relation's items, for a target of any type: each item's value of the key
/// field and its rendered object.
pub(crate) type LoadFn = for<'a> fn(
    &'a Cx<'a>,
    &'a mut Conn,
    Load<'a>,
)
    -> LocalBoxFuture<'a, Result<Vec<(Option<Arg>, Value)>, Error>>;

/// The 400 of a malformed or unknown `expand`.
fn bad(detail: impl std::fmt::Display) -> Error {
    Error::bad_param("expand", detail)
}

/// Parses `expand` in `params` against `R`'s relations: empty when absent.
///
/// # Errors
///
/// A 400 naming `expand`: unknown relations (all of them), more than one level of nesting, or
/// more than [`MAX_EXPANSIONS`] relations.
pub(crate) fn parse<R: Resource>(params: &Params) -> Result<Vec<Expand>, Error> {
    let Some(value) = params.get("expand") else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Expand> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut count = 0usize;
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mut parts = item.split('.');
        let (first, second) = (parts.next().unwrap_or_default(), parts.next());
        if parts.next().is_some() {
            return Err(bad(format!(
                "`{item}` nests more than one level; expand `a` or `a.b`"
            )));
        }
        let Some(rel) = super::relation::<R>(first) else {
            unknown.push(format!("`{item}`"));
            continue;
        };
        let nested = match second {
            None => None,
            Some(sub) => match (rel.target)().relations.iter().find(|r| r.name == sub) {
                Some(n) => Some(n),
                None => {
                    unknown.push(format!("`{item}`"));
                    continue;
                }
            },
        };
        let at = match out.iter().position(|e| e.rel.name == rel.name) {
            Some(at) => at,
            None => {
                count += 1;
                out.push(Expand {
                    rel,
                    nested: Vec::new(),
                });
                out.len() - 1
            }
        };
        if let Some(n) = nested {
            if !out[at].nested.iter().any(|r| r.name == n.name) {
                count += 1;
                out[at].nested.push(n);
            }
        }
    }
    if !unknown.is_empty() {
        let known: Vec<&str> = R::RELATIONS.iter().map(|r| r.name).collect();
        return Err(bad(format!(
            "unknown or unreadable relations: {}; relations: {}",
            unknown.join(", "),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    }
    if count > MAX_EXPANSIONS {
        return Err(bad(format!(
            "{count} relations asked for; at most {MAX_EXPANSIONS} may be expanded at once"
        )));
    }
    Ok(out)
}

/// Refuses (400 naming `fields`) a `fields` member of a relation that is not expanded.
///
/// # Errors
///
/// The 400.
pub(crate) fn check_fields<R: Resource>(
    fields: Option<&[&str]>,
    expand: &[Expand],
    viewer: Viewer<'_>,
) -> Result<(), Error> {
    for f in fields.unwrap_or_default() {
        let rel = f.split_once('.').map_or(*f, |(r, _)| r);
        let is_rel = f.contains('.') || super::relation::<R>(rel).is_some();
        if is_rel && !expand.iter().any(|e| e.rel.name == rel) {
            return Err(Error::bad_param(
                "fields",
                format!("`{f}` names a relation that is not expanded; add `expand={rel}`"),
            ));
        }
        // A related member the caller may not read cannot be selected either.
        if let (Some((_, member)), Some(r)) = (f.split_once('.'), super::relation::<R>(rel)) {
            let rules = ((r.target)()).read_rules;
            read::check_related(rules, member, "fields", viewer)?;
        }
    }
    Ok(())
}

/// The members of `fields` that are the resource's own (not relations'), for the checks
/// that know only the resource's fields.
pub(crate) fn own_fields<R: Resource>(
    fields: Option<&[&'static str]>,
) -> Option<Vec<&'static str>> {
    fields.map(|f| {
        f.iter()
            .copied()
            .filter(|n| !n.contains('.') && super::relation::<R>(n).is_none())
            .collect()
    })
}

/// The embedded members of each of `items`: for each expanded relation, the related object
/// (or null) or the list of related objects. One query per relation (and one per nested
/// relation), whatever the number of items.
///
/// The relation's keys are read as `viewer` (who sees `items`) may read them: a key they never
/// read is a 400, as a filter on it would be; a key that is an owner's member links the
/// caller's own rows only (the others embed null, or an empty list).
///
/// # Errors
///
/// A 400 for a relation the caller cannot read; database errors.
pub(crate) async fn members<R: Resource>(
    cx: &Cx<'_>,
    conn: &mut Conn,
    items: &[R],
    expand: &[Expand],
    viewer: Viewer<'_>,
) -> Result<Vec<Vec<(&'static str, Value)>>, Error> {
    check_keys::<R>(expand, viewer)?;
    let mut out: Vec<Vec<(&'static str, Value)>> = items.iter().map(|_| Vec::new()).collect();
    for e in expand {
        let rel = e.rel;
        let mine = read::key_filter(R::READ_RULES, rel.local, "expand", viewer)?;
        let only = read::key_filter((rel.target)().read_rules, rel.remote, "expand", viewer)?;
        let own: Vec<Option<Arg>> = items
            .iter()
            .map(|i| match &mine {
                // An item whose key the caller may not read links nothing.
                Some(_) if read::hidden(i, viewer).contains(&rel.local) => None,
                _ => i.sort_value(rel.local).flatten(),
            })
            .collect();
        let mut keys: Vec<Arg> = Vec::new();
        for k in own.iter().flatten() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        let per_key = (rel.kind == RelationKind::HasMany).then_some(HAS_MANY_EXPAND_MAX);
        let load = Load {
            rel: rel.name,
            key: rel.remote,
            keys,
            per_key,
            nested: &e.nested,
            only,
        };
        let loaded = ((rel.target)().load)(cx, conn, load).await?;
        for (slot, k) in out.iter_mut().zip(&own) {
            let matching = loaded
                .iter()
                .filter(|(lk, _)| k.is_some() && lk.as_ref() == k.as_ref())
                .map(|(_, v)| v.clone());
            let value = match rel.kind {
                RelationKind::BelongsTo => matching.into_iter().next().unwrap_or(Value::Null),
                RelationKind::HasMany => Value::Array(matching.collect()),
            };
            slot.push((rel.name, value));
        }
    }
    Ok(out)
}

/// Refuses (400 naming `expand`) an expansion, nested ones included, through a key `viewer`
/// never reads, whatever the items (see [`members`]).
fn check_keys<R: Resource>(expand: &[Expand], viewer: Viewer<'_>) -> Result<(), Error> {
    let through = |rules, rel: &Relation| -> Result<(), Error> {
        read::key_filter(rules, rel.local, "expand", viewer)?;
        read::key_filter((rel.target)().read_rules, rel.remote, "expand", viewer)?;
        Ok(())
    };
    for e in expand {
        through(R::READ_RULES, e.rel)?;
        let rules = (e.rel.target)().read_rules;
        e.nested.iter().try_for_each(|n| through(rules, n))?;
    }
    Ok(())
}

/// Reads one relation's items of resource `R` (see [`Load`]): through `R`'s mounted
/// blueprint, with its read scope for the caller, shown as its `GET` shows them (its
/// [`View`] of [`Operation::Get`]).
pub(crate) async fn load<R: Resource>(
    cx: &Cx<'_>,
    conn: &mut Conn,
    l: Load<'_>,
) -> Result<Vec<(Option<Arg>, Value)>, Error> {
    let (shared, who, scope) = reader::<R>(cx.req, conn, "expand", l.rel).await?;
    if l.keys.is_empty() {
        return Ok(Vec::new());
    }
    let key = R::field(l.key)
        .filter(|f| f.filterable)
        .ok_or_else(|| unreadable("expand", l.rel))?;
    let mut conds = Condition::from(Cond {
        field: key.name,
        op: Op::In,
        arg: Arg::List(l.keys),
        param: "expand".to_owned(),
    })
    .and(scope);
    if let Some(only) = l.only {
        conds = conds.and(only);
    }
    if let Some(n) = l.per_key {
        let first = Condition::Related(Related {
            name: l.rel,
            reach: Reach::FirstPerKey(n),
            cond: Box::new(conds.clone()),
            link: Some(Link {
                outer_key: key.name,
                table: R::sql_table(),
                key: R::ID_FIELD,
                #[cfg(feature = "sqlite")]
                sqlite: R::where_sqlite,
                #[cfg(feature = "postgres")]
                pg: R::where_pg,
            }),
        });
        conds = conds.and(first);
    }
    let items = R::select(conn, &conds, &[], None).await?;
    let keys: Vec<Option<Arg>> = items
        .iter()
        .map(|i| i.sort_value(key.name).flatten())
        .collect();
    let nested: Vec<Expand> = l
        .nested
        .iter()
        .map(|rel| Expand {
            rel,
            nested: Vec::new(),
        })
        .collect();
    let extra = if nested.is_empty() {
        Vec::new()
    } else {
        members::<R>(cx, conn, &items, &nested, who.viewer()).await?
    };
    // Shown as the related resource's own GET shows them to this caller: the members its
    // read rules hide are left out.
    let view = View::new(&shared, Operation::Get, who.viewer());
    let mut out = Vec::with_capacity(items.len());
    let mut keys = keys.into_iter();
    let mut extra = extra.into_iter();
    view.each(cx.db, items, None, |body| {
        let obj = embed(body, extra.next().unwrap_or_default())?;
        out.push((keys.next().flatten(), Value::Object(obj)));
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The `fields` parameter of a `GET` of one item, if any, checked against `R`'s fields and
/// its relations' (see [`parse_fields_rel`](crate::crud::query::parse_fields_rel)).
///
/// # Errors
///
/// A 400 naming `fields`.
pub(crate) fn requested<R: Resource>(params: &Params) -> Result<Option<Vec<&'static str>>, Error> {
    params
        .get("fields")
        .map(|value| {
            crate::crud::query::parse_fields_rel(R::FIELDS, &super::rel_fields::<R>(), value)
        })
        .transpose()
}
