//! `grant-role` and `revoke-role`: a role given to or taken from the user with an e-mail
//! address, in every domain or in one, with the operator's authority (a SUPERADMIN's).

use super::journal::{Change, Journal, USER_ROLES};
use super::BoxError;
use crate::auth::{normalize_email, CurrentUser, RoleGrant};
use crate::db::tx::{self, TxMode};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::schema::{domains, user_roles, users};
use crate::sql_types::Portable;
use crate::users::may_grant;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

/// What `grant-role` and `revoke-role` act on, as given on the command line.
pub(crate) struct RoleChange<'a> {
    /// The holder's e-mail address (compared normalized).
    pub(crate) email: &'a str,
    /// The role name.
    pub(crate) role: &'a str,
    /// The domain, by id or name; `None`: every domain (an unscoped grant).
    pub(crate) domain: Option<&'a str>,
}

/// What a command did, for its line on stderr.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// The grant was written (or deleted).
    Changed(String),
    /// The user already held the role there: nothing was written.
    AlreadyHeld(String),
}

/// Who acts on the command line: the machine's operator, who could as well write the
/// database, with a SUPERADMIN's authority in every domain. Passed to the same
/// [`may_grant`] the role endpoints apply, so that the command follows their rules.
fn operator() -> CurrentUser {
    CurrentUser {
        id: Uuid::nil(),
        email: String::new(),
        is_enabled: true,
        second_factor: true,
        roles: vec![RoleGrant {
            role: "SUPERADMIN".to_owned(),
            domain_id: None,
        }],
    }
}

/// The user with e-mail `email` (normalized), read on `conn`. Two accounts sharing the
/// normalized address (stored before addresses were normalized, see
/// `normalize_stored_emails`) are refused rather than one of them picked.
async fn user_by_email(conn: &mut Conn, email: &str) -> Result<Result<Uuid, String>, Error> {
    let normalized = normalize_email(email);
    let ids: Vec<Uuid> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            users::table
                .filter(crate::db::functions::lower_text(users::email).eq(normalized.clone()))
                .select(users::id)
                .limit(2),
            c,
        )
        .await
    })?;
    Ok(match ids.as_slice() {
        [id] => Ok(*id),
        [] => Err(format!("no user with e-mail {email}")),
        _ => Err(format!(
            "several users have e-mail {email} (addresses stored before they were \
             normalized); resolve that first"
        )),
    })
}

/// The domain named by `given`: its id (when `given` is one) or its name. An id is looked
/// for first, then a name.
async fn domain_by_id_or_name(
    conn: &mut Conn,
    given: &str,
) -> Result<Result<(Uuid, String), String>, Error> {
    if let Ok(id) = given.parse::<Uuid>() {
        let found: Option<(Uuid, String)> = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(
                domains::table
                    .filter(domains::id.eq(Portable(id)))
                    .select((domains::id, domains::name)),
                c,
            )
            .await
            .optional()
        })?;
        if let Some(found) = found {
            return Ok(Ok(found));
        }
    }
    let name = given.to_owned();
    let found: Option<(Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            domains::table
                .filter(domains::name.eq(name.clone()))
                .select((domains::id, domains::name)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(found.ok_or_else(|| format!("no domain with id or name {given}")))
}

/// The ids of the grant rows of (`user`, `role`, `domain`): at most one (a unique index).
async fn grant_rows(
    conn: &mut Conn,
    user: Uuid,
    role: &str,
    domain: Option<Uuid>,
) -> Result<Vec<Uuid>, Error> {
    let role = role.to_owned();
    let rows: Vec<Uuid> = match domain {
        Some(d) => with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::load(
                user_roles::table
                    .filter(user_roles::user_id.eq(Portable(user)))
                    .filter(user_roles::role.eq(role.clone()))
                    .filter(user_roles::domain_id.eq(Portable(Some(d))))
                    .select(user_roles::id),
                c,
            )
            .await
        })?,
        None => with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::load(
                user_roles::table
                    .filter(user_roles::user_id.eq(Portable(user)))
                    .filter(user_roles::role.eq(role.clone()))
                    .filter(user_roles::domain_id.is_null())
                    .select(user_roles::id),
                c,
            )
            .await
        })?,
    };
    Ok(rows)
}

/// Deletes the grant rows `ids`.
async fn delete_rows(conn: &mut Conn, ids: Vec<Uuid>) -> Result<(), Error> {
    let ids: Vec<Portable<Uuid>> = ids.into_iter().map(Portable).collect();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(user_roles::table.filter(user_roles::id.eq_any(ids.clone()))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Which command runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `grant-role`.
    Grant,
    /// `revoke-role`.
    Revoke,
}

/// Grants or revokes `change.role` of the user with `change.email`, in one transaction: the
/// role name must be one of `roles` (the application's set, `DEFAULT_ROLES` unless
/// [`App::roles`](super::App::roles) says otherwise), the user and the domain must exist,
/// and the operator's authority must allow it ([`may_grant`], as the role endpoints apply
/// it). Nothing else of the user changes: roles are read afresh on every request, so the
/// change applies to the user's next request and its sessions continue, as after a grant
/// through the API. The grant's row is recorded for `feeds` in the same transaction.
///
/// # Errors
///
/// A role outside the set, an unknown user or domain, revoking a role not held, database
/// errors; each as one line, and nothing is written.
pub(crate) async fn change_role(
    db: &Database,
    roles: &[&str],
    kind: Kind,
    change: RoleChange<'_>,
    feeds: &Journal,
) -> Result<Done, BoxError> {
    let role = change.role;
    if !roles.contains(&role) {
        return Err(format!("role {role} is not one of {}", roles.join(", ")).into());
    }
    let mut conn = db.get().await?;
    tx::begin(&mut conn, TxMode::Write).await?;
    let work = in_transaction(&mut conn, kind, &change, feeds).await;
    match work {
        Ok(Ok(done)) => {
            tx::commit(&mut conn).await?;
            Ok(done)
        }
        Ok(Err(refusal)) => {
            tx::rollback(&mut conn).await;
            Err(refusal.into())
        }
        Err(e) => {
            tx::rollback(&mut conn).await;
            Err(e.into())
        }
    }
}

/// The checks and the write of [`change_role`], on `conn` inside its transaction: `Ok(Err)`
/// is a refusal (nothing to write), `Err` a database error.
async fn in_transaction(
    conn: &mut Conn,
    kind: Kind,
    change: &RoleChange<'_>,
    feeds: &Journal,
) -> Result<Result<Done, String>, Error> {
    let (email, role) = (change.email, change.role);
    let user = match user_by_email(conn, email).await? {
        Ok(user) => user,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let (domain, place) = match change.domain {
        None => (None, "in every domain".to_owned()),
        Some(given) => match domain_by_id_or_name(conn, given).await? {
            Ok((id, name)) => (Some(id), format!("in domain {name} ({id})")),
            Err(refusal) => return Ok(Err(refusal)),
        },
    };
    // The operator outranks everyone, so the rank check of the role endpoints always passes.
    if let Err(e) = may_grant(&operator(), role, domain) {
        return Ok(Err(e.to_string()));
    }
    let held = grant_rows(conn, user, role, domain).await?;
    Ok(Ok(match kind {
        Kind::Grant if !held.is_empty() => Done::AlreadyHeld(format!(
            "{email} already holds {role} {place}; nothing changed"
        )),
        Kind::Grant => {
            let grant = crate::users::grant_role_in(conn, user, role, domain).await?;
            feeds
                .record(conn, USER_ROLES, Change::Created, grant)
                .await?;
            Done::Changed(format!("granted {role} to {email} {place}"))
        }
        Kind::Revoke if held.is_empty() => {
            let scope = if domain.is_none() {
                " (unscoped grants only; name a domain to revoke a grant scoped to it)"
            } else {
                ""
            };
            return Ok(Err(format!(
                "{email} does not hold {role} {place}{scope}; nothing changed"
            )));
        }
        Kind::Revoke => {
            for grant in &held {
                feeds
                    .record(conn, USER_ROLES, Change::Deleted, *grant)
                    .await?;
            }
            delete_rows(conn, held).await?;
            Done::Changed(format!("revoked {role} from {email} {place}"))
        }
    }))
}
