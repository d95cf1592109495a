//! Privilege: who may grant which role, and the rule that nobody changes a user who outranks
//! them. Used by [`super::rules::RoleRules`] and as hooks on the user and role blueprints.
//!
//! | Caller | May |
//! |---|---|
//! | SUPERADMIN | everything, including granting SUPERADMIN and unscoped ADMIN |
//! | unscoped ADMIN (global admin) | grant and remove any other role; change users not above them |
//! | ADMIN scoped to domain D | read, grant and remove roles scoped to D (never SUPERADMIN) |
//! | anyone else | read their own roles |

use super::model::{UserModel, UserRole};
use crate::auth::{load_user, CurrentUser, Rank};
use crate::crud::{CrudBlueprint, HookCtx, Resource};
use crate::db::Database;
use crate::error::Error;
use std::sync::Arc;
use uuid::Uuid;

/// The role names of the built-in [`super::Role`] set.
pub const DEFAULT_ROLES: &[&str] = &["SUPERADMIN", "ADMIN", "MODERATOR", "USER"];

/// Whether `caller` may grant (or remove) `role` in `domain` (`None`: every domain).
///
/// Only a SUPERADMIN grants SUPERADMIN or unscoped ADMIN; a global admin grants any other
/// role; an ADMIN scoped to a domain grants roles scoped to that domain.
///
/// # Errors
///
/// 403 when the caller may not.
pub fn may_grant(caller: &CurrentUser, role: &str, domain: Option<Uuid>) -> Result<(), Error> {
    let top = role == "SUPERADMIN" || (role == "ADMIN" && domain.is_none());
    if top {
        return if caller.is_superadmin() {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "Only a SUPERADMIN grants or removes SUPERADMIN or unscoped ADMIN.".into(),
            ))
        };
    }
    match domain {
        _ if caller.is_admin() => Ok(()),
        Some(d) if caller.administers_domain(d) => Ok(()),
        _ => Err(Error::Forbidden(
            "Only administrators grant or remove roles (domain administrators: in their domain)."
                .into(),
        )),
    }
}

/// The global rank of a stored user (`None`: no such user).
///
/// # Errors
///
/// Database errors.
pub async fn rank_of(db: &Database, user: Uuid) -> Result<Option<Rank>, Error> {
    Ok(load_user(db, user).await?.map(|u| u.rank()))
}

/// Refuses (403) when `target` outranks `caller`. Anonymous callers (public operations) and
/// unknown targets pass: the operation's own rules decide about them.
///
/// # Errors
///
/// 403, or database errors.
pub async fn not_outranked(
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

/// Adds the privilege checks to a blueprint of [`UserRole`]: a role name outside `roles` is
/// refused (422 naming `role`); granting or removing a role of a user who outranks the caller,
/// or a role the caller may not grant ([`may_grant`]), is refused (403). A second grant of the
/// same role in the same domain is refused by the database's unique index (409).
#[must_use]
pub fn guard_roles(
    bp: CrudBlueprint<UserRole>,
    roles: &'static [&'static str],
) -> CrudBlueprint<UserRole> {
    bp.before_create(
        move |ctx: HookCtx, input: <UserRole as Resource>::Create| async move {
            if !roles.contains(&input.role.as_str()) {
                return Err(Error::invalid_field(
                    "role",
                    format!("must be one of {}", roles.join(", ")),
                ));
            }
            if let Some(caller) = ctx.user.as_ref() {
                may_grant(caller, &input.role, input.domain_id)?;
            }
            not_outranked(&ctx.db, ctx.user.as_ref(), input.user_id).await?;
            Ok(input)
        },
    )
    .after_delete(|_conn, ctx, row| {
        Box::pin(async move {
            if let Some(caller) = ctx.user.as_ref() {
                may_grant(caller, &row.role, row.domain_id)?;
            }
            not_outranked(&ctx.db, ctx.user.as_ref(), row.user_id).await
        })
    })
}

#[cfg(test)]
mod tests {
    use super::may_grant;
    use crate::auth::{CurrentUser, RoleGrant};
    use uuid::Uuid;

    fn user(roles: &[(&str, Option<Uuid>)]) -> CurrentUser {
        CurrentUser {
            id: Uuid::new_v4(),
            email: "a@b.c".into(),
            is_enabled: true,
            roles: roles
                .iter()
                .map(|(r, d)| RoleGrant {
                    role: (*r).into(),
                    domain_id: *d,
                })
                .collect(),
        }
    }

    #[test]
    fn grants() {
        let d = Uuid::new_v4();
        let e = Uuid::new_v4();
        let domain_admin = user(&[("ADMIN", Some(d))]);
        assert!(may_grant(&domain_admin, "SUPERADMIN", None).is_err());
        assert!(may_grant(&domain_admin, "SUPERADMIN", Some(d)).is_err());
        assert!(may_grant(&domain_admin, "ADMIN", None).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", None).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", Some(e)).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", Some(d)).is_ok());
        assert!(may_grant(&domain_admin, "ADMIN", Some(d)).is_ok());
        let admin = user(&[("ADMIN", None)]);
        assert!(may_grant(&admin, "SUPERADMIN", None).is_err());
        assert!(may_grant(&admin, "ADMIN", None).is_err());
        assert!(may_grant(&admin, "ADMIN", Some(e)).is_ok());
        assert!(may_grant(&admin, "USER", None).is_ok());
        let sup = user(&[("SUPERADMIN", None)]);
        assert!(may_grant(&sup, "SUPERADMIN", None).is_ok());
        assert!(may_grant(&sup, "ADMIN", None).is_ok());
    }
}
