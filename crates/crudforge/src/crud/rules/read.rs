//! Field-level read rules: members only some callers read (`#[resource(read = ...)]`). A
//! member a caller may not read is absent from every answer they get (items, lists, write
//! answers: the view of a row, [`crate::crud::view`], leaves out what [`hidden`] names), its
//! `ETag` is computed on what they get, and naming it in `fields`, `sort` or a filter is a 400,
//! so that no request can become an oracle for its values.

use crate::auth::CurrentUser;
use crate::condition::{Arg, Cond, Condition};
use crate::crud::query::ListQuery;
use crate::crud::Resource;
use crate::error::Error;

/// Who is looking at a rendered item: the caller's account (`None` when anonymous or on a
/// public operation, which identifies nobody).
pub(crate) type Viewer<'a> = Option<&'a CurrentUser>;

/// Who may read a member declared with `#[resource(read = ...)]`, besides administrators (who
/// read every member).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Readers {
    /// `read = admin`: administrators only.
    Admins,
    /// `read = owner(user_id)`: the user whose id the row's `user_id` member holds. Owner
    /// members are filtered on the caller's own rows only, and nobody but administrators sorts
    /// by them (an order would tell the hidden values apart).
    Owner(&'static str),
    /// `read = path::to::rule`: the callers the function accepts; it sees the caller's account
    /// (`None` when anonymous) and decides for every row alike.
    Rule(fn(Option<&CurrentUser>) -> bool),
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Readers::Admins => f.write_str("Admins"),
            Readers::Owner(field) => f.debug_tuple("Owner").field(field).finish(),
            Readers::Rule(_) => f.write_str("Rule(..)"),
        }
    }
}

/// What a caller may do with a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Read it on every row.
    Every,
    /// Read it on the rows whose owner member (the field) holds their id.
    Own(&'static str, uuid::Uuid),
    /// Never read it.
    None,
}

impl Readers {
    /// The words the OpenAPI description and errors use for who reads the member.
    pub(crate) fn describe(self) -> String {
        match self {
            Readers::Admins => "administrators only".to_owned(),
            Readers::Owner(f) => format!("the user whose id `{f}` holds, and administrators"),
            Readers::Rule(_) => {
                "the callers the resource's read rule accepts, and administrators".to_owned()
            }
        }
    }

    /// The `x-crudforge-read` value of the member in the OpenAPI description.
    pub(crate) fn extension(self) -> String {
        match self {
            Readers::Admins => "admin".to_owned(),
            Readers::Owner(f) => format!("owner:{f}"),
            Readers::Rule(_) => "rule".to_owned(),
        }
    }

    /// What `viewer` may do with the member.
    pub(crate) fn reach(self, viewer: Viewer<'_>) -> Reach {
        match (self, viewer) {
            (_, Some(u)) if u.is_admin() => Reach::Every,
            (Readers::Admins, _) | (Readers::Owner(_), None) => Reach::None,
            (Readers::Owner(f), Some(u)) => Reach::Own(f, u.id),
            (Readers::Rule(accepts), v) => {
                if accepts(v) {
                    Reach::Every
                } else {
                    Reach::None
                }
            }
        }
    }
}

/// The members of `item` that `viewer` may not read (none for most resources, without any
/// allocation).
pub(crate) fn hidden<R: Resource>(item: &R, viewer: Viewer<'_>) -> Vec<&'static str> {
    if R::READ_RULES.is_empty() {
        return Vec::new();
    }
    R::READ_RULES
        .iter()
        .filter(|(_, readers)| match readers.reach(viewer) {
            Reach::Every => false,
            Reach::None => true,
            Reach::Own(field, id) => item.key_of(field) != Some(id.to_string()),
        })
        .map(|(name, _)| *name)
        .collect()
}

/// The error of a request that names a member its caller may not read.
fn unreadable(param: &str, name: &str, what: &str) -> Error {
    Error::bad_param(
        param,
        format!("`{name}` cannot be used in {what}: you may not read it"),
    )
}

/// Refuses (400 naming `param`) the member `name` of a related resource, whose read rules are
/// `rules`, unless `viewer` reads it on every row: a filter, a sort or `fields` across a
/// relation must not reveal what the related resource hides. An owner's member is refused
/// too, since the subquery cannot confine it to the caller's own related rows.
///
/// # Errors
///
/// The 400.
pub(crate) fn check_related(
    rules: &[(&'static str, Readers)],
    name: &str,
    param: &str,
    viewer: Viewer<'_>,
) -> Result<(), Error> {
    match rules.iter().find(|(n, _)| *n == name) {
        Some((_, r)) if r.reach(viewer) != Reach::Every => {
            Err(unreadable(param, name, "a request across a relation"))
        }
        _ => Ok(()),
    }
}

/// How a request across a relation may use the relation's key member `name` (a belongs-to
/// foreign key, or the member a has-many relation joins on), whose resource's read rules are
/// `rules`: as a direct filter on that member would. `None` when `viewer` reads it on every
/// row; the condition that confines the rows of its resource to the caller's own when it is
/// an owner's member (ANDed with each use of the relation, so the relation tells nothing about
/// other rows' keys); a 400 naming `param` when `viewer` never reads it.
///
/// # Errors
///
/// The 400.
pub(crate) fn key_filter(
    rules: &[(&'static str, Readers)],
    name: &str,
    param: &str,
    viewer: Viewer<'_>,
) -> Result<Option<Cond>, Error> {
    match rules
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, r)| r.reach(viewer))
    {
        None | Some(Reach::Every) => Ok(None),
        Some(Reach::Own(field, id)) => Ok(Some(owner_cond(field, id))),
        Some(Reach::None) => Err(unreadable(param, name, "a request across a relation")),
    }
}

/// The readers of `name`, if a read rule covers it.
fn readers_of<R: Resource>(name: &str) -> Option<Readers> {
    R::READ_RULES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, r)| *r)
}

/// How far `viewer` reads the member `name` of `R`: on every row when no read rule covers it.
pub(crate) fn reach_of<R: Resource>(name: &str, viewer: Viewer<'_>) -> Reach {
    readers_of::<R>(name).map_or(Reach::Every, |r| r.reach(viewer))
}

/// Whether `viewer` reads the member `name` of `R` on every row (no read rule covers it, or
/// its rule admits them everywhere): what grouping or aggregating a member needs, since an
/// aggregate mixes the values of many rows.
pub(crate) fn reads_every_row<R: Resource>(name: &str, viewer: Viewer<'_>) -> bool {
    readers_of::<R>(name).is_none_or(|r| r.reach(viewer) == Reach::Every)
}

/// Checks `fields` against the members `viewer` may read on some row: naming one they never
/// read is 400.
///
/// # Errors
///
/// A 400 naming `fields`.
pub(crate) fn check_fields<R: Resource>(
    fields: Option<&[&'static str]>,
    viewer: Viewer<'_>,
) -> Result<(), Error> {
    for name in fields.unwrap_or_default() {
        if readers_of::<R>(name).is_some_and(|r| r.reach(viewer) == Reach::None) {
            return Err(unreadable("fields", name, "`fields`"));
        }
    }
    Ok(())
}

/// Judges a list request by what `viewer` may read: `fields`, `sort` and the simple filters
/// naming a member they never read are 400; sorting by an owner's member is 400 for anyone
/// but administrators; a filter on an owner's member (simple, or inside the `filter`
/// expression) only matches the caller's own rows, so it says nothing about other rows.
///
/// # Errors
///
/// A 400 naming the parameter.
pub(crate) fn check_list<R: Resource>(q: &mut ListQuery, viewer: Viewer<'_>) -> Result<(), Error> {
    if R::READ_RULES.is_empty() {
        return Ok(());
    }
    check_fields::<R>(q.fields.as_deref(), viewer)?;
    for s in &q.sort {
        if readers_of::<R>(s.field).is_some_and(|r| r.reach(viewer) != Reach::Every) {
            return Err(unreadable("sort", s.field, "`sort`"));
        }
    }
    let mut own = None;
    for c in &q.conds {
        match readers_of::<R>(c.field).map(|r| r.reach(viewer)) {
            None | Some(Reach::Every) => {}
            Some(Reach::None) => return Err(unreadable(&c.param, c.field, "a filter")),
            Some(Reach::Own(field, id)) => own = Some(owner_cond(field, id)),
        }
    }
    // All simple filters combine with AND: one owner condition confines every one of them.
    q.conds.extend(own);
    if let Some(f) = q.filter.take() {
        q.filter = Some(guard::<R>(f, viewer)?);
    }
    Ok(())
}

fn owner_cond(field: &'static str, id: uuid::Uuid) -> Cond {
    Cond::eq(field, Arg::Uuid(id))
}

/// The `filter` expression with each comparison on an owner's member confined to the caller's
/// rows (`(c and owner = me)`), so that under `not` or `or` it is false on other rows whatever
/// their hidden value; 400 for a comparison on a member the caller never reads.
fn guard<R: Resource>(c: Condition, viewer: Viewer<'_>) -> Result<Condition, Error> {
    Ok(match c {
        Condition::All(v) => Condition::All(
            v.into_iter()
                .map(|c| guard::<R>(c, viewer))
                .collect::<Result<_, _>>()?,
        ),
        Condition::Any(v) => Condition::Any(
            v.into_iter()
                .map(|c| guard::<R>(c, viewer))
                .collect::<Result<_, _>>()?,
        ),
        Condition::Not(c) => Condition::Not(Box::new(guard::<R>(*c, viewer)?)),
        // The related resource's own read rules judge these (crud::relations::link).
        Condition::Related(r) => Condition::Related(r),
        Condition::Is(c) => match readers_of::<R>(c.field).map(|r| r.reach(viewer)) {
            None | Some(Reach::Every) => Condition::Is(c),
            Some(Reach::None) => return Err(unreadable(&c.param, c.field, "a filter")),
            Some(Reach::Own(field, id)) => {
                Condition::All(vec![Condition::Is(c), Condition::Is(owner_cond(field, id))])
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_follows_the_readers() {
        assert_eq!(Readers::Admins.reach(None), Reach::None);
        assert_eq!(Readers::Owner("user_id").reach(None), Reach::None);
        assert_eq!(Readers::Rule(|u| u.is_none()).reach(None), Reach::Every);
        assert_eq!(Readers::Rule(|u| u.is_some()).reach(None), Reach::None);
    }
}
