//! Domain deletion: a domain that roles still reference is kept (409) unless the
//! administrator asks for the cascade with `?cascade=true`.

use crate::crud::{CrudBlueprint, Resource};
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
pub async fn roles_in_domain(conn: &mut Conn, domain: Uuid) -> Result<i64, Error> {
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

/// Adds the deletion rule to a blueprint of a domain resource (any resource over the
/// `domains` table, keyed by `id`): DELETE of a domain that roles still reference answers 409
/// unless the query says `cascade=true`, which deletes those roles with the domain, in the
/// same transaction.
#[must_use]
pub fn guard_domain_delete<R: Resource>(bp: CrudBlueprint<R>) -> CrudBlueprint<R> {
    bp.before_delete(|conn, ctx, row| {
        Box::pin(async move {
            let Some(id) = row.key_of("id").and_then(|k| k.parse::<Uuid>().ok()) else {
                return Ok(());
            };
            let n = roles_in_domain(conn, id).await?;
            if n > 0 && !ctx.flag("cascade") {
                return Err(Error::Conflict(
                    format!(
                        "{n} role(s) are scoped to this domain; delete them first, or send \
                         `?cascade=true` to delete them with the domain."
                    )
                    .into(),
                ));
            }
            Ok(())
        })
    })
}
