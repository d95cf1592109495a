//! The hooks that apply [privilege](super::privilege) on the user and role blueprints: nobody
//! changes a user who outranks them, and a role row is judged by what a write turns it into;
//! and the rules of role rows ([`RoleRules`]), whose blueprints get those checks by default.

use super::model::{UserModel, UserRole};
use super::privilege::may_grant;
use super::rules::RoleRules;
use crate::auth::{load_user, CurrentUser, Rank};
use crate::condition::{Arg, Cond, Condition};
use crate::crud::{CrudBlueprint, HookCtx, Resource};
use crate::db::Database;
use crate::error::Error;
use crate::perms::{Access, Rules};
use std::any::Any;
use std::sync::Arc;
use uuid::Uuid;

/// The global rank of a stored user (`None`: no such user).
///
/// # Errors
///
/// Database errors.
pub(super) async fn rank_of(db: &Database, user: Uuid) -> Result<Option<Rank>, Error> {
    Ok(load_user(db, user).await?.map(|u| u.rank()))
}

/// Refuses (403) when `target` outranks `caller`. Anonymous callers (public operations) and
/// unknown targets pass: the operation's own rules decide about them.
///
/// # Errors
///
/// 403, or database errors.
pub(super) async fn not_outranked(
    db: &Database,
    caller: Option<&CurrentUser>,
    target: Uuid,
) -> Result<(), Error> {
    let Some(caller) = caller else {
        return Ok(());
    };
    if caller.id == target {
        return Ok(());
    }
    match rank_of(db, target).await? {
        Some(r) if r > caller.rank() => Err(Error::Forbidden(
            "You may not change a user who outranks you.".into(),
        )),
        _ => Ok(()),
    }
}

fn id_of<R: Resource>(row: &R, field: &str) -> Option<Uuid> {
    row.key_of(field).and_then(|k| k.parse().ok())
}

/// Adds the privilege checks to a user blueprint: PATCH and DELETE of a user who outranks the
/// caller are refused (403). [`super::UserBlueprint`] applies it itself.
#[must_use]
pub fn guard_users<U: UserModel>(bp: CrudBlueprint<U>) -> CrudBlueprint<U> {
    bp.before_update(|ctx: HookCtx, input, current: Arc<U>| async move {
        if let Some(target) = id_of(&*current, "id") {
            not_outranked(&ctx.db, ctx.user.as_ref(), target).await?;
        }
        Ok(input)
    })
    .after_delete(|_conn, ctx, row| {
        Box::pin(async move {
            if let Some(target) = id_of(row, "id") {
                not_outranked(&ctx.db, ctx.user.as_ref(), target).await?;
            }
            Ok(())
        })
    })
}

/// Refuses (422 naming `role`) a role name outside the application's set `roles` (any name
/// passes when there is no set).
fn known_role(roles: Option<&[&str]>, role: &str) -> Result<(), Error> {
    let Some(roles) = roles else {
        return Ok(());
    };
    if roles.contains(&role) {
        Ok(())
    } else {
        Err(Error::invalid_field(
            "role",
            format!("must be one of {}", roles.join(", ")),
        ))
    }
}

/// Whether `caller` may grant `role` in `domain` to `user`: [`may_grant`] for the role (when
/// there is a caller) and [`not_outranked`] for the user.
async fn may_hold(
    ctx: &HookCtx,
    role: &str,
    domain: Option<Uuid>,
    user: Uuid,
) -> Result<(), Error> {
    if let Some(caller) = ctx.user.as_ref() {
        may_grant(caller, role, domain)?;
    }
    not_outranked(&ctx.db, ctx.user.as_ref(), user).await
}

/// Adds the privilege checks to a blueprint of [`UserRole`]: a role name outside `roles` is
/// refused (422 naming `role`); granting or removing a role of a user who outranks the caller,
/// or a role the caller may not grant ([`may_grant`]), is refused (403). A second grant of the
/// same role in the same domain is refused by the database's unique index (409).
///
/// A PATCH of a role row (offered by an unnested prefix unless the application leaves it
/// out) is judged as what it amounts to: the removal of the grant the row holds now and the
/// grant of the one it would hold afterwards. Both must pass; the checks run on the row as
/// read inside the write's transaction, every member of the row is then written as judged,
/// and on PostgreSQL a row changed concurrently since that read makes the PATCH fail (412)
/// rather than be overwritten.
///
/// A blueprint of [`UserRole`] mounted without `guard_roles` gets the same checks except the
/// role-name set (any name is accepted) when it is mounted, unless the application leaves
/// them out with [`unguarded_roles`].
#[must_use]
pub fn guard_roles(
    bp: CrudBlueprint<UserRole>,
    roles: &'static [&'static str],
) -> CrudBlueprint<UserRole> {
    role_checks(bp, Some(roles))
}

/// Leaves a blueprint of [`UserRole`] without the privilege checks of [`guard_roles`], which
/// every blueprint of `UserRole` otherwise gets when it is mounted: its writes are then judged
/// by its rules alone ([`RoleRules`](super::RoleRules) by default, which cannot see what a
/// PATCH body would turn a row into, nor whether the row's holder outranks the caller). For an
/// application that judges role rows itself, in its own hooks or rules.
#[must_use]
pub fn unguarded_roles(mut bp: CrudBlueprint<UserRole>) -> CrudBlueprint<UserRole> {
    bp.hooks.role_guard = Some(false);
    bp
}

/// Gives a blueprint of [`UserRole`] the checks of [`guard_roles`] (without a role-name set)
/// unless [`guard_roles`] or [`unguarded_roles`] was applied to it; other blueprints are left
/// as they are. Run when a blueprint of a resource whose default rules are
/// [`RoleRules`](super::RoleRules) is mounted (`Rules::on_mount`).
pub(crate) fn guard_roles_by_default(bp: &mut dyn Any) {
    let Some(bp) = bp.downcast_mut::<CrudBlueprint<UserRole>>() else {
        return;
    };
    if bp.hooks.role_guard.is_some() {
        return;
    }
    let taken = std::mem::replace(bp, CrudBlueprint::new("/"));
    *bp = role_checks(taken, None);
}

/// The checks of [`guard_roles`]; `roles`: the application's role names, when it gave them.
fn role_checks(
    bp: CrudBlueprint<UserRole>,
    roles: Option<&'static [&'static str]>,
) -> CrudBlueprint<UserRole> {
    let mut bp = bp
        .before_create(
            move |ctx: HookCtx, input: <UserRole as Resource>::Create| async move {
                known_role(roles, &input.role)?;
                may_hold(&ctx, &input.role, input.domain_id, input.user_id).await?;
                Ok(input)
            },
        )
        .before_update(
            move |ctx: HookCtx, mut input: <UserRole as Resource>::Update, now: Arc<UserRole>| async move {
                let role = input.role.take().unwrap_or_else(|| now.role.clone());
                let domain = input.domain_id.unwrap_or(now.domain_id);
                let user = input.user_id.unwrap_or(now.user_id);
                known_role(roles, &role)?;
                // The grant the row holds now is removed ...
                may_hold(&ctx, &now.role, now.domain_id, now.user_id).await?;
                // ... and the one it will hold is given.
                may_hold(&ctx, &role, domain, user).await?;
                input.role = Some(role);
                input.domain_id = Some(domain);
                input.user_id = Some(user);
                Ok(input)
            },
        )
        .after_delete(|_conn, ctx, row| {
            Box::pin(async move { may_hold(ctx, &row.role, row.domain_id, row.user_id).await })
        });
    bp.hooks.serialized_update = true;
    bp.hooks.role_guard = Some(true);
    bp
}

/// The condition "the role's domain is one the caller administers".
fn in_admin_domains(user: &CurrentUser) -> Option<Condition> {
    let domains = user.admin_domains();
    if domains.is_empty() {
        return None;
    }
    Some(Condition::Any(
        domains
            .into_iter()
            .map(|d| Condition::Is(Cond::eq("domain_id", Arg::Uuid(d))))
            .collect(),
    ))
}

impl<U> Rules<U> for RoleRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        match (user, user.and_then(in_admin_domains)) {
            (Some(u), Some(domains)) => Access::Rows(Condition::Any(vec![
                Condition::Is(Cond::eq("user_id", Arg::Uuid(u.id))),
                domains,
            ])),
            _ => Access::owned_by(user, "user_id"),
        }
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        match user {
            None => Access::Unauthenticated,
            Some(u) if u.is_admin() => Access::All,
            Some(u) => in_admin_domains(u).map_or(Access::Forbidden, Access::Rows),
        }
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        let role = body.get("role").and_then(|v| v.as_str());
        let domain = body
            .get("domain_id")
            .and_then(|v| v.as_str())
            .and_then(|v| v.parse::<uuid::Uuid>().ok());
        may_grant(u, role.unwrap_or_default(), domain)
    }
    fn on_mount(&self) -> Option<fn(&mut dyn std::any::Any)> {
        Some(guard_roles_by_default)
    }
}
