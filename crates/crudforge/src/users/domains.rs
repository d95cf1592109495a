//! Domain deletion: a domain that roles still reference is kept (409) unless the
//! administrator asks for the cascade with `?cascade=true`, which removes those roles only
//! when the caller could remove each of them directly.

use super::guards::not_outranked;
use super::privilege::may_grant;
use crate::crud::{CrudBlueprint, HookCtx, Operation, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::schema::user_roles;
use crate::sql_types::Portable;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

/// How many roles are scoped to `domain`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn roles_in_domain(conn: &mut Conn, domain: Uuid) -> Result<i64, Error> {
    let n: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            user_roles::table
                .filter(user_roles::domain_id.eq(Portable(Some(domain))))
                .count(),
            c,
        )
        .await
    })?;
    Ok(n)
}

/// The (user, role) pairs scoped to `domain`, read on `conn` (inside the delete's
/// transaction).
async fn grants_in_domain(conn: &mut Conn, domain: Uuid) -> Result<Vec<(Uuid, String)>, Error> {
    let rows: Vec<(Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            user_roles::table
                .filter(user_roles::domain_id.eq(Portable(Some(domain))))
                .select((user_roles::user_id, user_roles::role)),
            c,
        )
        .await
    })?;
    Ok(rows)
}

/// Refuses (403) a cascade that would remove a role the caller could not remove through the
/// role resource: each role scoped to `domain` must pass [`may_grant`] and its holder
/// [`not_outranked`], exactly as a direct DELETE of that role row.
async fn may_remove_all(conn: &mut Conn, ctx: &HookCtx, domain: Uuid) -> Result<(), Error> {
    let Some(caller) = ctx.user.as_ref() else {
        return Ok(());
    };
    for (user, role) in grants_in_domain(conn, domain).await? {
        let why = match may_grant(caller, &role, Some(domain)) {
            Err(Error::Forbidden(why)) => Some(why),
            Err(e) => return Err(e),
            Ok(()) => match not_outranked(&ctx.db, Some(caller), user).await {
                Err(Error::Forbidden(why)) => Some(why),
                Err(e) => return Err(e),
                Ok(()) => None,
            },
        };
        if let Some(why) = why {
            return Err(Error::Forbidden(
                format!(
                    "The cascade would remove a {role} role you may not remove: {why} \
                     Nothing was deleted."
                )
                .into(),
            ));
        }
    }
    Ok(())
}

/// Adds the deletion rule to a blueprint of a domain resource (any resource over the
/// `domains` table, keyed by `id`): DELETE of a domain that roles still reference answers 409
/// unless the query says `cascade=true`, which deletes those roles with the domain, in the
/// same transaction. The cascade is refused as a whole (403, nothing deleted) when one of
/// those roles could not be deleted directly by the caller (see
/// [`guard_roles`](super::guard_roles)): a role it may not grant, or a role of a user who
/// outranks it.
#[must_use]
pub fn guard_domain_delete<R: Resource>(bp: CrudBlueprint<R>) -> CrudBlueprint<R> {
    bp.query_flag(
        Operation::Delete,
        "cascade",
        "`true`: also delete the roles scoped to this domain, in the same transaction (403, \
         nothing deleted, when the caller may not delete one of them). Without it, a domain \
         that roles reference is not deleted (409).",
    )
    .before_delete(|conn, ctx, row| {
        Box::pin(async move {
            let Some(id) = row.key_of("id").and_then(|k| k.parse::<Uuid>().ok()) else {
                return Ok(());
            };
            let n = roles_in_domain(conn, id).await?;
            if n == 0 {
                return Ok(());
            }
            if !ctx.flag("cascade") {
                return Err(Error::Conflict(
                    format!(
                        "{n} role(s) are scoped to this domain; delete them first, or send \
                         `?cascade=true` to delete them with the domain."
                    )
                    .into(),
                ));
            }
            may_remove_all(conn, ctx, id).await
        })
    })
}
